#!/usr/bin/env python3
"""One entry for every event: reads the hook input on stdin, applies the rules of its kind, and
answers in Claude Code's JSON. A broken rule never blocks: it is said as a systemMessage."""

import json
import os
import sys

ROOT = os.environ.get("CLAUDE_PLUGIN_ROOT")
if ROOT and ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from core.rules import load, subject  # noqa: E402


def answer(data):
    event = data["hook_event_name"]
    kind, text = subject(event, data)
    hits = [r for r in load() if r.when == kind and (r.hits(text) if kind != "stop" else not r.hits(text))]
    if not hits:
        return {}
    said = "\n\n".join(f"[guardrail {r.name}] {r.message}" for r in hits)
    if event == "PreToolUse" and any(r.then == "deny" for r in hits):
        return {"hookSpecificOutput": {"hookEventName": event, "permissionDecision": "deny",
                                       "permissionDecisionReason": said}, "systemMessage": said}
    if event == "Stop":
        if data.get("stop_hook_active") and data.get("last_assistant_message", "").endswith("GIVE UP"):
            return {}
        return {"decision": "block", "reason": said, "systemMessage": said}
    if event in ("PostToolUse", "UserPromptSubmit"):
        return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": said}}
    return {"systemMessage": said}


try:
    print(json.dumps(answer(json.load(sys.stdin))))
except Exception as exc:  # the rules never stand in the way because of a bug of their own
    print(json.dumps({"systemMessage": f"guardrails failed: {type(exc).__name__}: {exc}"}))
sys.exit(0)
