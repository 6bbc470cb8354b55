#!/bin/sh
# PreToolUse: deny Bash commands that remove files, allow every other call.
command=$(jq -r '.tool_input.command // ""')
case "$command" in
  *"rm "*)
    jq -n --arg c "$command" '{hookSpecificOutput: {hookEventName: "PreToolUse", permissionDecision: "deny",
      permissionDecisionReason: ("removing files is not allowed here: " + $c)}}' ;;
  *)
    echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}' ;;
esac
