#!/bin/sh
# Starts a child that outlives its patience (its pid goes to $1), then would deny, too late.
cat > /dev/null
sleep 30 &
echo $! > "$1"
wait
echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny"}}'
