"""Which subagents exist: a built-in general-purpose one, then `~/.claude/agents/**/*.md`,
`.claude/agents/**/*.md` and `--agents JSON` (later ones win a name clash, as in Claude Code). A
file's frontmatter gives `name` and `description` (required: a file without them is skipped with a
warning naming it), `tools` (an allowlist; unknown names are dropped), `disallowedTools` (taken
away first) and `model`; its body is the agent's prompt. `--agents` gives the same as JSON, with
`prompt`; a bad entry there is an error naming the flag and the key. A file is opened beneath where
it was found (the project, the home folder, the plugin's folder: `core.beneath`); one that is a
symlink leading out is skipped with a warning naming it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Sequence

from ..core.errors import UsageError
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
    disallowed: tuple[str, ...] = ()  # tools taken away, whatever `tools` says
    builtin: bool = False
    isolation: str | None = None  # "worktree": it works in a git worktree of its own
    spawns: tuple[str, ...] | None = None  # `Agent(a, b)` in its tools: the only types it may start

    def allows(self, tool: str) -> bool:
        return tool not in self.disallowed and (self.tools is None or tool in self.tools)

    def may_start(self, agents: dict[str, "AgentDef"]) -> dict[str, "AgentDef"]:
        """The definitions it may hand work to through its own Agent tool."""
        return agents if self.spawns is None else {k: v for k, v in agents.items() if k in self.spawns}


def builtins() -> dict[str, AgentDef]:
    return {"general-purpose": AgentDef("general-purpose", "A capable agent for any multi-step task",
                                        GENERAL_PURPOSE, builtin=True)}


def definitions(cwd: str | Path, home: str | Path, plugins: Sequence[Any] = (),
                project: bool = True) -> tuple[dict[str, AgentDef], list[str]]:
    """`plugins` (`context.plugins.Plugin`) add theirs as `plugin:name`, below the user's and the
    project's; `project` False: the plugins' only."""
    from ..context.frontmatter import frontmatter
    from ..core.beneath import Unsafe, text_beneath

    found = builtins()
    problems: list[str] = []
    roots = [(Path(d), p.root, f"{p.name}:", p) for p in plugins for d in p.agent_dirs]
    if project:
        roots += [(Path(home) / ".claude" / "agents", home, "", None), (Path(cwd) / ".claude" / "agents", cwd, "", None)]
    for root, beneath, prefix, plugin in roots:
        for path in sorted(root.rglob("*.md")) if root.is_dir() else [root] if root.suffix == ".md" else []:
            try:
                text = text_beneath(beneath, path)
            except Unsafe as exc:
                problems.append(f"{exc}; skipped")
                continue
            except OSError as exc:
                problems.append(f"{path}: cannot be read ({exc.strerror or exc}); skipped")
                continue
            if plugin is not None:
                from ..context.plugins import fill

                text = fill(text, plugin.root, plugin.data)
            fields, body = frontmatter(text, str(path), problems)
            made = _definition(fields, body, str(path), problems)
            if made is not None:
                found[prefix + made.name] = replace(made, name=prefix + made.name)
    return found, problems


def _definition(fields: dict[str, Any], body: str, where: str, problems: list[str]) -> AgentDef | None:
    name, description = str(fields.get("name") or "").strip(), str(fields.get("description") or "").strip()
    if not name or not description:
        problems.append(f"{where}: an agent needs both `name` and `description` in its frontmatter; skipped")
        return None
    tools, disallowed = _names(fields.get("tools")), _names(fields.get("disallowedTools"))
    model = str(fields.get("model") or "").strip() or None
    isolation = str(fields.get("isolation") or "").strip() or None
    if isolation not in (None, "worktree"):
        problems.append(f"{where}: isolation: expected worktree, got {isolation!r}; the agent works in place")
        isolation = None
    return AgentDef(name, description, body.strip() or GENERAL_PURPOSE, tools or None,
                    None if model == "inherit" else model, disallowed or (), isolation=isolation,
                    spawns=_spawns(fields.get("tools")))


def _spawns(value: Any) -> tuple[str, ...] | None:
    """The agent types `Agent(a, b)` (or the old `Task(…)`) in a tools list names; None: any."""
    from ..context.frontmatter import split_list

    given = split_list(value) if isinstance(value, str) else [str(t) for t in value or ()]
    named = [t.strip() for t in given if t.strip().startswith(("Agent(", "Task(")) and t.strip().endswith(")")]
    if not named:
        return None
    return tuple(k.strip() for t in named for k in split_list(t[t.index("(") + 1:-1]) if k.strip())


def _names(value: Any) -> tuple[str, ...]:
    """Tool names from `Read, Grep` or a list; `Agent(explore, review)` (a rule naming what the
    tool may be used for) counts as its tool's name."""
    from ..context.frontmatter import split_list

    given = split_list(value) if isinstance(value, str) else [str(t) for t in value or ()]
    names = (t.strip().partition("(")[0].strip() for t in given)
    return tuple(dict.fromkeys("Agent" if n == "Task" else n for n in names if n))  # Task: the old name


# Fields of a Claude Code agent definition that loopwright accepts and does not act on (yet).
IGNORED_FIELDS = frozenset({"permissionMode", "maxTurns", "skills", "mcpServers", "hooks", "memory", "background",
                            "effort", "color", "initialPrompt"})
_TEXT_FIELDS = ("description", "prompt", "model")


def from_json(text: str, flag: str = "--agents") -> dict[str, AgentDef]:
    """`{"name": {"description": ..., "prompt": ..., "tools": [...], "model": ...}, ...}` as
    definitions; anything else is a UsageError naming `flag` and the key."""
    import json

    try:
        data = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"{flag}: expected a JSON object of agent definitions ({exc})") from None
    return from_data(data, flag)


def from_data(data: Any, flag: str) -> dict[str, AgentDef]:
    """The same from parsed JSON (the Agent SDK's `initialize` sends its `agents` so)."""
    if not isinstance(data, dict):
        raise UsageError(f"{flag}: expected a JSON object of agent name -> definition, got {type(data).__name__}")
    return {name: _from_entry(name, entry, flag) for name, entry in data.items()}


def _from_entry(name: str, entry: Any, flag: str) -> AgentDef:
    if not name.strip():
        raise UsageError(f"{flag}: an agent name must not be empty")
    if not isinstance(entry, dict):
        raise UsageError(f"{flag}: {name}: expected an object with description and prompt, got {type(entry).__name__}")
    unknown = sorted(set(entry) - {*_TEXT_FIELDS, "tools", "disallowedTools", "isolation"} - IGNORED_FIELDS)
    if unknown:
        raise UsageError(f"{flag}: {name}.{unknown[0]}: unknown field; expected description, prompt, tools, "
                         "disallowedTools, model")
    for key in _TEXT_FIELDS:
        value = entry.get(key)
        if (key != "model" or value is not None) and (not isinstance(value, str) or not value.strip()):
            raise UsageError(f"{flag}: {name}.{key}: expected non-empty text, got {json_brief(value)}")
    for key in ("tools", "disallowedTools"):
        value = entry.get(key)
        if value is not None and not (isinstance(value, str) or (
                isinstance(value, list) and all(isinstance(t, str) for t in value))):
            raise UsageError(f"{flag}: {name}.{key}: expected a list of tool names, got {json_brief(value)}")
    if entry.get("isolation") not in (None, "worktree"):
        raise UsageError(f"{flag}: {name}.isolation: expected \"worktree\", got {json_brief(entry['isolation'])}")
    model = entry["model"].strip() if entry.get("model") else None
    return AgentDef(name, entry["description"].strip(), entry["prompt"].strip(), _names(entry.get("tools")) or None,
                    None if model == "inherit" else model, _names(entry.get("disallowedTools")),
                    isolation=entry.get("isolation"))


def json_brief(value: Any) -> str:
    import json

    text = json.dumps(value)
    return text if len(text) <= 60 else text[:57] + "..."
