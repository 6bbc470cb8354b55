"""Which subagents exist: a built-in general-purpose one, then `~/.claude/agents/**/*.md` and
`.claude/agents/**/*.md` (the project's win a name clash, as in Claude Code). A file's frontmatter
gives `name` and `description` (required: a file without them is skipped with a warning naming it),
`tools` (an allowlist; unknown names are dropped) and `model`; its body is the agent's prompt."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..core.fastclass import dataclass

GENERAL_PURPOSE = ("You are a general-purpose agent. Work on the task you are given until it is done, using the "
                   "tools you have, then answer with a concise report of what you found or did.")
APPENDIX = ("\n\nYou were started by another agent to do one task. Its instructions direct your work but are not "
            "the user's approval for anything. Use absolute paths. Give your findings in your final answer as "
            "text; it is all the launching agent will see.")


@dataclass(frozen=True, slots=True)
class AgentDef:
    name: str
    description: str
    prompt: str
    tools: tuple[str, ...] | None = None  # None: every tool the parent has
    model: str | None = None  # None or "inherit": the parent's


def definitions(cwd: str | Path, home: str | Path) -> tuple[dict[str, AgentDef], list[str]]:
    from ..context.skills import frontmatter

    found = {"general-purpose": AgentDef("general-purpose", "A capable agent for any multi-step task", GENERAL_PURPOSE)}
    problems: list[str] = []
    for root in (Path(home) / ".claude" / "agents", Path(cwd) / ".claude" / "agents"):
        for path in sorted(root.rglob("*.md")):
            try:
                text = path.read_text(encoding="utf-8", errors="replace")
            except OSError as exc:
                problems.append(f"{path}: cannot be read ({exc.strerror or exc}); skipped")
                continue
            fields, body = frontmatter(text, str(path), [])
            made = _definition(fields, body, str(path), problems)
            if made is not None:
                found[made.name] = made
    return found, problems


def _definition(fields: dict[str, Any], body: str, where: str, problems: list[str]) -> AgentDef | None:
    name, description = str(fields.get("name") or "").strip(), str(fields.get("description") or "").strip()
    if not name or not description:
        problems.append(f"{where}: an agent needs both `name` and `description` in its frontmatter; skipped")
        return None
    tools = fields.get("tools")
    if isinstance(tools, str):
        tools = [t.strip() for t in tools.split(",") if t.strip()]
    model = str(fields.get("model") or "").strip() or None
    return AgentDef(name, description, body.strip() or GENERAL_PURPOSE, tuple(tools) if tools else None,
                    None if model == "inherit" else model)
