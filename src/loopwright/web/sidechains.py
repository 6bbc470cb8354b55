"""A session's subagents on its page: each sidechain transcript (`<session-id>/subagents/
agent-<id>.jsonl`) shown, collapsed, right after the `Agent` call that started it — matched by the
task the call gave and the sidechain's first prompt, so calls made at once find their own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .html import esc, query
from .transcript import Renderer, lines


class Sidechains:
    def __init__(self, transcript: Path) -> None:
        folder = transcript.with_suffix("") / "subagents"
        self.waiting: list[tuple[str, Path]] = []  # (first prompt, file), in the order they started
        for path in sorted(folder.glob("agent-*.jsonl"), key=lambda p: p.stat().st_mtime) if folder.is_dir() else ():
            self.waiting.append((_first_prompt(path), path))
        self.calls: dict[str, str] = {}  # an Agent call's tool_use_id -> its task

    def after(self, record: dict[str, Any]) -> str:
        """The sidechains to show after `record` (an Agent call's result), as HTML."""
        kind = record.get("type")
        if kind == "tool_started" and record.get("name") == "Agent":
            task = (record.get("input") or {}).get("prompt")
            self.calls[str(record.get("toolUseId"))] = task if isinstance(task, str) else ""
            return ""
        if kind != "tool_finished" or str(record.get("toolUseId")) not in self.calls:
            return ""
        task = self.calls.pop(str(record.get("toolUseId")))
        found = next((i for i, (first, _) in enumerate(self.waiting) if task and first.startswith(task.strip())), None)
        if found is None:
            return ""
        _, path = self.waiting.pop(found)
        return render(path)

    def rest(self) -> str:
        """Sidechains no call claimed (a session cut short): shown at the end rather than lost."""
        return "".join(render(path) for _, path in self.waiting)


def render(path: Path) -> str:
    name = path.stem.removeprefix("agent-")
    page = path.parent.parent.name  # <session-id>/subagents/agent-<id>.jsonl: the session's page
    renderer = Renderer(raw=lambda at: query(f"/s/{page}/raw", agent=name, at=at))
    body = "".join(renderer.record(r, at) if r is not None else '<div class="rec damaged">a damaged line</div>'
                   for at, _, r in lines(path))
    return (f'<details class="sidechain" id="sidechain-{esc(name)}"><summary>subagent {esc(name)} · '
            f"{renderer.turn} turn(s)</summary>{body}</details>")


def _first_prompt(path: Path) -> str:
    for _, _, record in lines(path):
        if record is None or record.get("type") != "user":
            continue
        content = (record.get("message") or {}).get("content")
        if isinstance(content, str):
            return content.strip()
        if isinstance(content, list):
            return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict)).strip()
    return ""
