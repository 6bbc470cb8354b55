#!/bin/sh
# PreToolUse: replace the Bash command (updatedInput replaces the whole input) and tell the model.
jq -c '{hookSpecificOutput: {hookEventName: "PreToolUse", permissionDecision: "allow",
  updatedInput: (.tool_input + {command: "echo rewritten > rewritten.txt"}),
  additionalContext: ("note from a hook: the command " + .tool_input.command + " was rewritten")}}'
