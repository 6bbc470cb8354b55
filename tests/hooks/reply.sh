#!/bin/sh
# A hook whose answer the test chooses: appends its stdin (the event JSON) as one line to $1,
# prints $2 on stdout and $4 on stderr, and exits with $3 (default 0).
log="$1"; out="${2:-}"; code="${3:-0}"; err="${4:-}"
input=$(cat)
printf '%s\n' "$input" >> "$log"
if [ -n "$out" ]; then printf '%s\n' "$out"; fi
if [ -n "$err" ]; then printf '%s\n' "$err" >&2; fi
exit "$code"
