"""The answer to the Agent SDK's `get_context_usage`: how the context window is spent now, by
category (system prompt, tools, memory files, messages, free space), with the window, the
auto-compact threshold and the last response's usage. Estimates, about 4 characters a token,
as the compactor's; the last request's `input_tokens`, once there is one, is the measured total."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ...agent.run import Run

CHARS_PER_TOKEN = 4


def context_usage(live: Run, last_usage: dict[str, Any] | None) -> dict[str, Any]:
    """`live`: the session's run."""
    from ...core.ports import tool_spec
    from ...engine.compaction import CompactionLimits, estimate_tokens
    from ...policy.models import resolve_model

    agent = live.agent
    model = resolve_model(agent.model)
    window = model.context_window
    history = list(live.session.history)
    tools = sum(len(json.dumps(tool_spec(t))) for t in live.tools()) // CHARS_PER_TOKEN
    loaded = sorted(agent.memory.loaded) if agent.memory is not None else []
    memory = [{"path": path, "tokens": _size(path) // CHARS_PER_TOKEN} for path in loaded]  # within messages
    parts = {"system_prompt": len(agent.system()) // CHARS_PER_TOKEN, "system_tools": tools,
             "messages": estimate_tokens(history)}
    names = {"system_prompt": "System prompt", "system_tools": "System tools", "messages": "Messages"}
    estimated = sum(parts.values())
    total = int(last_usage.get("input_tokens", 0)) if last_usage else estimated
    total = total or estimated
    categories = [{"id": key, "name": names[key], "tokens": tokens, "kind": "used"}
                  for key, tokens in parts.items() if tokens]
    categories.append({"id": "free_space", "name": "Free space", "tokens": max(window - total, 0), "kind": "free"})
    threshold = int(window * CompactionLimits().threshold)
    return {"categories": categories, "totalTokens": total, "maxTokens": window, "rawMaxTokens": window,
            "percentage": round(100 * total / window) if window else 0, "model": model.id,
            "memoryFiles": memory, "mcpTools": [], "agents": [], "autoCompactThreshold": threshold,
            "isAutoCompactEnabled": True, "apiUsage": last_usage, "estimated": last_usage is None}


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0
