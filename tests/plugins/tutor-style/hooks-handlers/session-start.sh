#!/usr/bin/env bash
# Adds the tutor-mode instructions to the conversation as SessionStart additionalContext.
cat << 'JSON'
{
  "hookSpecificOutput": {
    "hookEventName": "SessionStart",
    "additionalContext": "TUTOR MODE: after each change, add a short note on why it was made.\n\nKeep the notes to two or three lines."
  }
}
JSON
exit 0
