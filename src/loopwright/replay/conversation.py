"""What makes two requests "the same conversation so far" for a replay, and moving a recorded
session's paths to the scratch copy it replays in. A conversation is compared by what the model
reads: each turn's role, its text (whitespace aside), its tool calls (id, name, input) and tool
results (id, text); prompt-cache marks, thinking and images are left out, so a session recorded
on either wire (Messages or Chat Completions) is compared the same way."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any, Iterable

# The evaluator's evidence says how long the goal has been running: a replay takes its own time.
_ELAPSED = re.compile(r"(PROGRESS: evaluation \d+), \d+ s since the goal was set")


def text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = []
    for block in content if isinstance(content, list) else []:
        if isinstance(block, dict) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        elif isinstance(block, dict) and block.get("type") == "tool_result":
            parts.append(text_of(block.get("content", "")))
    return "\n".join(parts)


def _flat(text: str) -> str:
    return " ".join(text.split())


def turns(messages: Iterable[Any]) -> list[dict[str, Any]]:
    """The conversation as compared: one entry per turn (consecutive messages of one role merge,
    as both APIs merge them), tool results before text in a user turn, text before calls in an
    assistant turn (the order the Chat Completions wire forces)."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if not isinstance(message, dict):
            continue
        role = message.get("role")
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        texts, calls, results = [], [], []
        for block in blocks if isinstance(blocks, list) else []:
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "text" and block.get("text", "").strip():
                texts.append(block["text"])
            elif kind == "tool_use":
                calls.append([block.get("id"), block.get("name"), block.get("input")])
            elif kind == "tool_result":
                results.append([block.get("tool_use_id"), _flat(text_of(block.get("content", "")))])
        if out and out[-1]["role"] == role:
            turn = out[-1]
        else:
            turn = {"role": role, "text": [], "calls": [], "results": []}
            out.append(turn)
        turn["text"] += texts
        turn["calls"] += calls
        turn["results"] += results
    for turn in out:
        turn["text"] = _flat("\n".join(turn["text"]))
    return out


def key(messages: Iterable[Any]) -> str:
    """A short fingerprint of the conversation (see `turns`)."""
    data = json.dumps(turns(messages), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(data.encode("utf-8", "surrogatepass")).hexdigest()


def evidence_key(evidence: str) -> str:
    return hashlib.sha256(_flat(_ELAPSED.sub(r"\1", evidence)).encode("utf-8", "surrogatepass")).hexdigest()


# What a hook's event data says about where the session is kept, and a subagent's random id: a
# replay's session, and each subagent it starts, is another.
_WHERE_KEPT = re.compile(r'"(session_id|transcript_path|agent_id|agent_transcript_path)":\s*"(?:[^"\\]|\\.)*"')


def side_key(purpose: str, request: str) -> str:
    """The fingerprint of a model call beside the conversation (a prompt hook's, the classifier's):
    its purpose and its one message, whitespace, the session's id and transcript paths and a
    subagent's id aside."""
    text = _flat(_WHERE_KEPT.sub(lambda m: f'"{m.group(1)}":""', request))
    return hashlib.sha256(f"{purpose}\n{text}".encode("utf-8", "surrogatepass")).hexdigest()


def mover(old: str, new: str) -> Any:
    """A function that rewrites every string inside a JSON value, replacing the folder `old` (as a
    whole path: `/p` moves, `/proj` does not) with `new`. Identity when they are the same."""
    if not old or old == new:
        return lambda value: value
    pattern = re.compile(re.escape(old.rstrip("/")) + r"(?![\w.\-])")

    def move(value: Any) -> Any:
        if isinstance(value, str):
            return pattern.sub(lambda _m: new.rstrip("/"), value)
        if isinstance(value, list):
            return [move(v) for v in value]
        if isinstance(value, dict):
            return {k: move(v) for k, v in value.items()}
        return value

    return move
