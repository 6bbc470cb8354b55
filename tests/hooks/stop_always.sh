#!/bin/sh
# Stop: never satisfied. Logs stop_hook_active to $1 and blocks with a JSON decision.
jq -r '.stop_hook_active' >> "$1"
echo '{"decision": "block", "reason": "Not finished: keep going."}'
