#!/bin/bash
# A Ralph-loop style Stop hook, written the way the Claude Code plugin's is: it reads only
# session_id and transcript_path from stdin, keeps its state in .claude/ralph-loop.local.md
# (relative to the working directory), finds the last assistant text by grepping the JSONL
# transcript, and re-sends the same prompt until the completion promise appears.
set -euo pipefail

input=$(cat)
state=".claude/ralph-loop.local.md"
[ -f "$state" ] || exit 0

front=$(sed -n '/^---$/,/^---$/{ /^---$/d; p; }' "$state")
field() { echo "$front" | grep "^$1:" | sed "s/^$1: *//" | sed 's/^"\(.*\)"$/\1/' || true; }
iteration=$(field iteration)
max_iterations=$(field max_iterations)
promise=$(field completion_promise)
owner=$(field session_id)

session=$(echo "$input" | jq -r '.session_id // ""')
if [ -n "$owner" ] && [ "$owner" != "$session" ]; then exit 0; fi

if ! [[ "$iteration" =~ ^[0-9]+$ && "$max_iterations" =~ ^[0-9]+$ ]]; then
  echo "Ralph loop: state file corrupted" >&2; rm -f "$state"; exit 0
fi
if [ "$max_iterations" -gt 0 ] && [ "$iteration" -ge "$max_iterations" ]; then
  echo "Ralph loop: max iterations ($max_iterations) reached."; rm -f "$state"; exit 0
fi

transcript=$(echo "$input" | jq -r '.transcript_path // ""')
if [ ! -f "$transcript" ]; then
  echo "Ralph loop: no transcript at '$transcript'" >&2; rm -f "$state"; exit 0
fi
if ! grep -q '"role":"assistant"' "$transcript"; then
  echo "Ralph loop: no assistant message in the transcript" >&2; rm -f "$state"; exit 0
fi
last=$(grep '"role":"assistant"' "$transcript" | tail -n 100 |
  jq -rs 'map(.message.content[]? | select(.type == "text") | .text) | last // ""')

if [ -n "$promise" ] && [ "$promise" != "null" ]; then
  said=$(printf '%s' "$last" | perl -0777 -pe 's/.*?<promise>(.*?)<\/promise>.*/$1/s; s/^\s+|\s+$//g; s/\s+/ /g')
  if [ "$said" = "$promise" ]; then
    echo "Ralph loop: detected <promise>$promise</promise>"; rm -f "$state"; exit 0
  fi
fi

prompt=$(awk '/^---$/{n++; next} n>=2' "$state")
[ -n "$prompt" ] || { rm -f "$state"; exit 0; }
next=$((iteration + 1))
sed "s/^iteration: .*/iteration: $next/" "$state" > "$state.tmp" && mv "$state.tmp" "$state"
jq -n --arg prompt "$prompt" --arg msg "Ralph iteration $next" '{decision: "block", reason: $prompt, systemMessage: $msg}'
