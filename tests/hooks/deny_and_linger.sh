#!/bin/sh
# PreToolUse: denies, and leaves a background child that keeps stdout and stderr open (its pid to $1).
cat > /dev/null
echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "guard says no"}}'
sleep 60 &
echo $! > "$1"
exit 0
