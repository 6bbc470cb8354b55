#!/bin/sh
# UserPromptExpansion: reads which command expanded and answers with a banner and a reminder.
input=$(cat)
case "$input" in
  *'"command_name":"gitkit:save"'*) ;;
  *) exit 0 ;;
esac
printf '%s\n' '{"systemMessage": "gitkit: saving", "hookSpecificOutput": {"hookEventName": "UserPromptExpansion", "additionalContext": "Commit messages here start with a verb."}}'
