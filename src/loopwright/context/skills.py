"""Skills as Claude Code has them: `SKILL.md` folders under `~/.claude/skills`, `.claude/skills`
and the `.loopwright/skills` twins (the user's win a name clash, as there), and custom commands,
`.claude/commands/*.md`, which Claude Code lists and starts the same way. Only each skill's
name and description reach the model until it is used — through the `Skill` tool, or by the
person with `/name args` — and then its body, with the folder its supporting files are in.

The frontmatter is read leniently, as Claude Code reads it (a bad value does not drop the skill),
but every problem is said once, naming the file and the key. Each file is opened beneath where it
was found (`core.beneath`): the project for the project's, the home folder for the user's, the
plugin's folder for a plugin's; a skill folder or file that is a symlink leading out is left out
with one line naming it."""

from __future__ import annotations

import copy
import os
import re
import shlex
from pathlib import Path
from typing import Any, Callable, Sequence

from ..core.beneath import Unsafe, text_beneath
from ..core.events import Event, Notice
from ..core.fastclass import dataclass

MAX_DESCRIPTION = 1536
KNOWN_KEYS = frozenset("""name description when_to_use argument-hint arguments disable-model-invocation
user-invocable allowed-tools disallowed-tools model effort context agent background hooks paths shell
metadata license compatibility version hide-from-slash-command-tool""".split())  # (commands use a subset)
_BOOLS = {"true": True, "yes": True, "on": True, "1": True, "false": False, "no": False, "off": False, "0": False}
_INDEXED = re.compile(r"\$ARGUMENTS\[(\d+)\]|\$(\d+)")


@dataclass(frozen=True, slots=True)
class Skill:
    name: str
    folder: str
    description: str
    body: str
    model_invocable: bool = True
    user_invocable: bool = True
    fields: dict[str, Any] | None = None
    path: str = ""  # the SKILL.md or command file
    plugin_root: str = ""  # a plugin's folder: `${CLAUDE_PLUGIN_ROOT}`
    plugin_data: str = ""  # its data folder: `${CLAUDE_PLUGIN_DATA}` (made when first used)


def discover(cwd: str | Path, home: str | Path, own_home: str | Path | None, plugins: Sequence[Any] = (),
             project: bool = True) -> tuple[dict[str, Skill], list[str]]:
    """Every skill found, by name (the user's first: they win a clash), and the problems seen.
    `plugins` (`context.plugins.Plugin`) add theirs as `plugin:name`; `project` False: only those."""
    own = user_root(home, own_home) if own_home else ""
    roots = [(Path(home) / ".claude" / "skills", home), *([(Path(own_home) / "skills", own)] if own_home else []),
             (Path(cwd) / ".claude" / "skills", cwd), (Path(cwd) / ".loopwright" / "skills", cwd)] if project else []
    skills: dict[str, Skill] = {}
    problems: list[str] = []
    for root, beneath, prefix, plugin in [(r, b, "", None) for r, b in roots] + [
            (Path(d), p.root, f"{p.name}:", p) for p in plugins for d in p.skill_dirs]:
        for path in sorted(root.glob("*/SKILL.md")):
            skill = _read(path, beneath, problems, prefix + path.parent.name, plugin)
            if skill is not None and skill.name not in skills:
                skills[skill.name] = skill
    # Custom commands (`.claude/commands/NAME.md`, `sub/NAME.md` as `sub:NAME`) work as skills do;
    # a skill wins a name clash.
    command_roots = [(Path(home) / ".claude" / "commands", home, "", None),
                     (Path(cwd) / ".claude" / "commands", cwd, "", None)] if project else []
    for root, beneath, prefix, plugin in command_roots + [(Path(d), p.root, f"{p.name}:", p) for p in plugins
                                                          for d in p.command_dirs]:
        for path in sorted(root.rglob("*.md")) if root.is_dir() else [root] if root.suffix == ".md" else []:
            name = ":".join(path.relative_to(root).with_suffix("").parts) if root.is_dir() else root.stem
            command = _read(path, beneath, problems, prefix + name, plugin)
            if command is not None and command.name not in skills:
                skills[command.name] = command
    return skills, problems


def user_root(home: str | Path, own_home: str | Path) -> str | Path:
    """What a file of loopwright's own home is opened beneath: the home folder, like the user's
    other files, unless loopwright's home lies elsewhere."""
    own = os.path.realpath(own_home)
    return home if Path(own).is_relative_to(os.path.realpath(home)) else own


def _read(path: Path, beneath: str | Path, problems: list[str], name: str = "", plugin: Any = None) -> Skill | None:
    """A SKILL.md (named by its folder) or a command file (`name` given), opened beneath
    `beneath`; `plugin`: the `context.plugins.Plugin` it comes with."""
    try:
        text = text_beneath(beneath, path)
    except Unsafe as exc:
        problems.append(f"{exc}; not loaded")
        return None
    except OSError as exc:
        problems.append(f"{path}: cannot be read ({exc.strerror or exc}); skipped")
        return None
    fields, body = frontmatter(text, str(path), problems)
    description = str(fields.get("description") or next((ln for ln in body.splitlines() if ln.strip()), "")).strip()
    if fields.get("when_to_use"):
        description += f" - {fields['when_to_use']}"
    if len(description) > MAX_DESCRIPTION:
        description = description[:MAX_DESCRIPTION - 1] + "…"
    flags = {key: _flag(fields, key, default, str(path), problems) for key, default in (
        ("disable-model-invocation", False), ("user-invocable", True), ("hide-from-slash-command-tool", False))}
    root, data = (plugin.root, plugin.data) if plugin is not None else ("", "")
    if root:
        description = description.replace("${CLAUDE_PLUGIN_ROOT}", root)
    return Skill(name or path.parent.name, str(path.parent), description, body.strip(),
                 not (flags["disable-model-invocation"] or flags["hide-from-slash-command-tool"]),
                 flags["user-invocable"], fields, str(path), root, data)


def frontmatter(text: str, where: str, problems: list[str]) -> tuple[dict[str, Any], str]:
    """The `---` block's fields (see `context.frontmatter`) and the body; keys no skill or
    command has are said as problems."""
    from .frontmatter import frontmatter as read

    return read(text, where, problems, KNOWN_KEYS)


def _flag(fields: dict[str, Any], key: str, default: bool, where: str, problems: list[str]) -> bool:
    value = fields.get(key)
    if value is None or value == "":
        return default
    found = _BOOLS.get(str(value).lower())
    if found is None:
        problems.append(f"{where}: {key} must be true or false, got {value!r}; {str(default).lower()} used")
        return default
    return found


def listing(skills: dict[str, Skill]) -> str | None:
    """The reminder that tells the model which skills exist: names and descriptions only."""
    shown = [s for s in skills.values() if s.model_invocable]
    if not shown:
        return None
    lines = "\n".join(f"- {s.name}: {s.description}" for s in shown)
    return ("<system-reminder>\nThese skills are available through the Skill tool; call it with a skill's name "
            f"when the task matches its description, and follow what it loads:\n\n{lines}\n</system-reminder>")


# A body's shell steps: `` !`cmd` `` (at the start, after a space or an opening bracket) and
# ```` ```! ```` blocks.
_FENCED = re.compile(r"^```!\s*\n(.*?)\n?```[ \t]*$", re.S | re.M)
_INLINE = re.compile(r"(?<![^\s(])!`([^`\n]+)`")
_PLACEHOLDER = re.compile(r"\$ARGUMENTS\[(\d+)\]|\$ARGUMENTS|\$(\d+)|\$\{(\w+)\}")


@dataclass(frozen=True, slots=True)
class Rendered:
    """One use of a skill: its text split around its shell steps. The steps are found in the
    file's own text before any placeholder is filled, so arguments can never add a step (a `!`
    they carry stays text); inside a step each argument is filled in as one quoted shell word,
    so it cannot add a command to the step either."""

    texts: tuple[str, ...]  # the text before, between and after the steps: one more than steps
    steps: tuple[str, ...]  # each step's command, its placeholders filled

    def text(self, outputs: Sequence[str]) -> str:
        """The whole, each step replaced by its output."""
        if len(outputs) != len(self.steps):
            raise ValueError(f"{len(self.steps)} step outputs expected, got {len(outputs)}")
        return "".join(t + o for t, o in zip(self.texts, outputs)) + self.texts[-1]


def render(skill: Skill, args: str, values: dict[str, str]) -> Rendered:
    """What a use of `skill` gives: its shell steps found in the body as written, then every
    placeholder filled in one pass (a filled-in value is never read again): `$ARGUMENTS`,
    `$ARGUMENTS[N]` and `$N` (the arguments split as a shell splits them, from 0),
    `${CLAUDE_SKILL_DIR}`, a plugin's `${CLAUDE_PLUGIN_ROOT}` and `${CLAUDE_PLUGIN_DATA}`, and the
    `values` given (`${CLAUDE_SESSION_ID}`, `${CLAUDE_PROJECT_DIR}`); arguments the body does not
    place are added at its end, as text."""
    try:
        words = shlex.split(args)
    except ValueError:
        words = args.split()
    body = skill.body
    names = {"CLAUDE_SKILL_DIR": skill.folder, **values}
    if skill.plugin_root:
        from .plugins import DATA_VAR, made

        names["CLAUDE_PLUGIN_ROOT"] = skill.plugin_root
        if skill.plugin_data and DATA_VAR in body:
            names["CLAUDE_PLUGIN_DATA"] = made(skill.plugin_data)
    texts, steps = _split_steps(body)
    texts = [_filled(t, args, words, names, quote=False) for t in texts]
    placed = "$ARGUMENTS" in body or _INDEXED.search(body) is not None
    if args and not placed:
        texts[-1] += f"\n\nARGUMENTS: {args}"
    texts[0] = f"Base directory for this skill: {skill.folder}\n\n{texts[0]}"
    return Rendered(tuple(texts), tuple(_filled(c, args, words, names, quote=True) for c in steps))


def _split_steps(body: str) -> tuple[list[str], list[str]]:
    """(texts, commands): `body` cut around its shell steps, in order; an inline form inside a
    fenced block is part of that block's command."""
    texts, commands, at = [], [], 0
    for match in sorted([*_FENCED.finditer(body), *_INLINE.finditer(body)], key=lambda m: m.start()):
        if match.start() < at:
            continue
        texts.append(body[at:match.start()])
        commands.append(match.group(1).strip())
        at = match.end()
    return texts + [body[at:]], commands


def _filled(text: str, args: str, words: list[str], names: dict[str, str], *, quote: bool) -> str:
    """`text` with its placeholders filled; `quote`: a shell step's, where each argument is one
    quoted word (`$ARGUMENTS` the words a shell would split the arguments into, each quoted)."""
    def one(match: re.Match[str]) -> str:
        index, number, name = match.group(1), match.group(2), match.group(3)
        if name is not None:
            return names.get(name, match.group(0))
        if index is None and number is None:  # $ARGUMENTS
            return " ".join(shlex.quote(w) for w in words) if quote else args
        at = int(index or number)
        if at >= len(words):
            return match.group(0)  # no such argument: left as written
        return shlex.quote(words[at]) if quote else words[at]

    return _PLACEHOLDER.sub(one, text)


class Skills:
    """One session's skills: found once, listed once, loaded on use."""

    def __init__(self, cwd: str | Path, home: str | Path, own_home: str | Path | None, session_id: str = "",
                 plugins: Sequence[Any] = (), project: bool = True) -> None:
        self.cwd = os.path.realpath(cwd)
        self.found, self.problems = discover(self.cwd, home, own_home, plugins, project)
        self.values = {"CLAUDE_SESSION_ID": session_id, "CLAUDE_PROJECT_DIR": self.cwd}

    def for_session(self, session_id: str) -> Skills:
        """These skills with `${CLAUDE_SESSION_ID}` naming `session_id` (the session they serve,
        known only once it is open); themselves when it already does."""
        if self.values["CLAUDE_SESSION_ID"] == session_id:
            return self
        other = copy.copy(self)
        other.values = {**self.values, "CLAUDE_SESSION_ID": session_id}
        return other

    def say_problems(self, emit: Callable[[Event], None]) -> None:
        for text in self.problems:
            emit(Notice("warning", f"skills: {text}", "skill_warning"))
        self.problems = []

    def use(self, name: str, args: str = "") -> Rendered | str:
        """What the Skill tool loads for `name`, its steps not run yet; or why it cannot (the text
        of the tool's error)."""
        skill = self.found.get(name)
        if skill is None:
            known = ", ".join(s.name for s in self.found.values() if s.model_invocable) or "none"
            return f"Unknown skill: {name}. Skills available: {known}"
        if not skill.model_invocable:
            return (f"The skill {name} may only be started by the user (/{name}); ask them to run it instead of "
                    "doing its steps yourself")
        return render(skill, args, self.values)

    def typed(self, prompt: str) -> tuple[Skill, str] | None:
        """`/name args` typed by the person, when `name` is a skill or command they may start."""
        head, *rest = prompt.strip().split(maxsplit=1)
        skill = self.found.get(head[1:]) if head.startswith("/") else None
        if skill is None or not skill.user_invocable:
            return None
        return skill, rest[0].strip() if rest else ""
