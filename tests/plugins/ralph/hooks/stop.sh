#!/bin/sh
# Stop hook: reads the hook input (session_id, transcript_path) on stdin and the loop state from
# .claude/ralph-loop.local.md; blocks the stop with the loop's prompt until the last assistant
# text holds <promise>TEXT</promise> or the iterations run out, then removes the state.
# Always exits 0; it blocks only through its JSON answer.
set -eu
here=$(dirname "$0")
state=.claude/ralph-loop.local.md
input=$(cat)
[ -f "$state" ] || exit 0

field() { sed -n '2,/^---$/p' "$state" | sed -n "s/^$1: *//p" | sed 's/^"\(.*\)"$/\1/'; }
iteration=$(field iteration)
max=$(field max_iterations)
promise=$(field completion_promise)
owner=$(field session_id)

session=$(printf '%s' "$input" | python3 "$here/ralph.py" field session_id)
if [ -n "$owner" ] && [ "$owner" != "$session" ]; then exit 0; fi
case "$iteration:$max" in
  *[!0-9:]*|:*|*:) echo "ralph: the state file is corrupted" >&2; rm -f "$state"; exit 0;;
esac
if [ "$max" -gt 0 ] && [ "$iteration" -ge "$max" ]; then
  echo "ralph: $max iterations reached"; rm -f "$state"; exit 0
fi

transcript=$(printf '%s' "$input" | python3 "$here/ralph.py" field transcript_path)
if [ ! -f "$transcript" ]; then
  echo "ralph: no transcript at '$transcript'" >&2; rm -f "$state"; exit 0
fi
last=$(grep '"role":"assistant"' "$transcript" | tail -n 100 | python3 "$here/ralph.py" last-text || true)
if [ "$promise" != null ] && printf '%s' "$last" | grep -qF "<promise>$promise</promise>"; then
  echo "ralph: promise kept"; rm -f "$state"; exit 0
fi

next=$((iteration + 1))
sed "s/^iteration: .*/iteration: $next/" "$state" > "$state.tmp" && mv "$state.tmp" "$state"
sed '1,/^---$/d' "$state" | python3 "$here/ralph.py" block "$next"
