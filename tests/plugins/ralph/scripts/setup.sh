#!/bin/sh
# Starts a loop: every word that is not an option is the prompt. Writes the state the Stop hook
# reads to .claude/ralph-loop.local.md (relative to the working directory).
set -eu
prompt=""
max=0
promise=null
while [ $# -gt 0 ]; do
  case "$1" in
    --max-iterations)
      case "${2:-}" in ''|*[!0-9]*) echo "setup: --max-iterations needs a whole number, got '${2:-}'" >&2; exit 1;; esac
      max=$2; shift 2;;
    --completion-promise)
      [ -n "${2:-}" ] || { echo "setup: --completion-promise needs a text" >&2; exit 1; }
      promise=$2; shift 2;;
    *) prompt="${prompt:+$prompt }$1"; shift;;
  esac
done
[ -n "$prompt" ] || { echo "setup: no prompt given" >&2; exit 1; }
[ "$promise" = null ] || promise="\"$promise\""
mkdir -p .claude
{
  echo "---"
  echo "active: true"
  echo "iteration: 1"
  echo "session_id: ${CLAUDE_CODE_SESSION_ID:-}"
  echo "max_iterations: $max"
  echo "completion_promise: $promise"
  echo "started_at: \"$(date -u +%Y-%m-%dT%H:%M:%SZ)\""
  echo "---"
  echo "$prompt"
} > .claude/ralph-loop.local.md
echo "Loop started: iteration 1, at most $max (0: no cap)."
[ "$promise" = null ] || echo "When it is true, and only then, say <promise>$(echo "$promise" | tr -d '"')</promise>."
echo
echo "$prompt"
