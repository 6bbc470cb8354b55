#!/bin/sh
# Stop: blocks the first stop (exit 2, the reason on stderr), then lets the agent stop. Logs
# stop_hook_active and last_assistant_message of each call to $1; $2 is its state file.
jq -c '{stop_hook_active, last_assistant_message}' >> "$1"
if [ -e "$2" ]; then exit 0; fi
touch "$2"
echo "Run the test suite before you stop." >&2
exit 2
