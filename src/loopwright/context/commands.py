"""What a prompt the person types as `/name args` starts, as Claude Code runs custom commands
and skills: the body with its placeholders filled, each `` !`cmd` `` and ```` ```! ```` block of
the file (never one the arguments carry: `skills.render`) replaced by the command's output (run as
a Bash call would be: through the permission gate, the command's `allowed-tools` granted, then
under the sandbox), each `@file` it names attached (read under the Read rules), and its
`allowed-tools` and `model` for the turn. An unknown `/name` is refused before anything is sent;
a step that is denied or fails stops the command, saying why. When the model starts a skill, its
steps are Bash calls of the loop's (`model_use`)."""

from __future__ import annotations

import os
import re
from dataclasses import replace
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..core.errors import UsageError
from ..core.fastclass import dataclass
from ..core.ports import Tool, ToolContext
from ..permissions.rules import PermissionRules, parse_tool_list, rule_error
from . import Turn
from .memory import imports
from .skills import Skill, render

_NAME = re.compile(r"/([A-Za-z0-9:_-]+)(?=\s|$)")


class CommandError(UsageError):
    """A typed command that cannot start: unknown, or a step of it was refused or failed."""


@dataclass(frozen=True, slots=True)
class Shell:
    """Where a command's shell steps and file reads run: the session's tools (`Bash`, `Read`),
    rules, folders and environment for child processes."""

    tools: Sequence[Tool]
    rules: PermissionRules
    cwd: Path
    roots: tuple[str, ...]
    env: Mapping[str, str]
    session_id: str = ""


async def start(prompt: str, skills: Any, shell: Shell) -> Turn:
    """The turn `prompt` starts: a known `/name args` expanded, an unknown `/name` refused
    (`CommandError`), any other prompt as typed."""
    found = skills.typed(prompt) if skills is not None else None
    if found is None:
        refuse_unknown(prompt, skills)
        return Turn(prompt)
    skill, args = found
    allow = grants(skill)
    rendered = render(skill, args, skills.values)
    # what `@` names, in the text and not in the steps' outputs
    refs = [r for r in imports("\n".join(rendered.texts)) if not r.startswith("~")]
    runner = _Steps(skill, replace(shell.rules, allow=shell.rules.allow + allow), shell)
    body = rendered.text([await runner.run(command) for command in rendered.steps])
    attached = [text for ref in refs if (text := await runner.attach(ref)) is not None]
    text = "\n\n".join([f"<command-name>/{skill.name}</command-name>\n<command-args>{args}</command-args>\n\n{body}",
                        *attached])
    model = str((skill.fields or {}).get("model") or "").strip()
    home = os.path.realpath(os.path.expanduser("~"))
    source = "plugin" if skill.plugin_root else "user" if os.path.realpath(skill.path).startswith(home + "/.claude/") \
        else "project"
    return Turn(text, allow, None if model in ("", "inherit") else model, {
        "expansion_type": "slash_command", "command_name": skill.name, "command_args": args,
        "command_source": source, "prompt": prompt})


async def model_use(skills: Any, name: str, args: str, step: Any) -> tuple[str, bool]:
    """What the `Skill` tool returns when the model starts `name`: its body, each shell step of
    the file replaced by its output. Each step is a Bash call of the loop's (`step`:
    `ToolContext.step`), so PreToolUse and PostToolUse hooks, the permission gate under the
    session's own rules (a model-started skill's `allowed-tools` grant nothing), the sandbox and
    the transcript see it as they see the model's; a step refused or failing is the tool's error,
    and the steps after it do not run."""
    found = skills.use(name, args)
    if isinstance(found, str):
        return found, True
    outputs = []
    for command in found.steps:
        if step is None:
            return (f"The skill {name} could not start: its shell step `{command}` needs the loop to run it as a "
                    "Bash call, and nothing here does"), True
        done = await step("Bash", {"command": command})
        if done.refused or done.is_error:
            how = "was not allowed" if done.refused else "failed"
            return f"The skill {name} could not start: the shell step `{command}` {how}: {done.text.strip()}", True
        outputs.append("" if done.text == "(no output)" else done.text.rstrip("\n"))
    return f"Launching skill: {name}\n\n{found.text(outputs)}", False


def grants(skill: Skill) -> tuple[str, ...]:
    """The command's `allowed-tools` as permission rules (a list, or one comma/space-separated
    string), `${CLAUDE_PLUGIN_ROOT}` and `${CLAUDE_PLUGIN_DATA}` filled in; a malformed rule stops
    the command."""
    given = (skill.fields or {}).get("allowed-tools") or ()
    given = [given] if isinstance(given, str) else [str(g) for g in given]
    if skill.plugin_root:
        from .plugins import fill

        given = [fill(g, skill.plugin_root, skill.plugin_data) for g in given]
    rules = parse_tool_list(given)
    for rule in rules:
        if (why := rule_error(rule)) is not None:
            raise CommandError(f"{skill.path}: allowed-tools: {why}")
    return rules


def refuse_unknown(prompt: str, skills: Any) -> None:
    """A prompt that opens with `/name` where no command is: a typo is refused, not sent. As in
    Claude Code, a name with other characters, or one that is a path (`/tmp is full`), is text."""
    match = _NAME.match(prompt.lstrip())
    if match is None or os.path.exists("/" + match.group(1)):
        return
    from ..policy.names import nearest

    name = match.group(1)
    found = skills.found if skills is not None else {}
    if name in found:  # user-invocable: false
        raise CommandError(f"/{name} is a skill only the model may start (user-invocable: false in "
                           f"{found[name].path}); ask for the task in words instead")
    startable = sorted(s.name for s in found.values() if s.user_invocable)
    # plugin commands are always namespaced, as in Claude Code: `/ralph-loop` means `/ralph-loop:ralph-loop`
    meant = next((n for n in startable if n.endswith(":" + name)), None) or nearest(name, startable, 3)
    hint = f"did you mean /{meant}? " if meant else ""
    known = f"commands here: {', '.join('/' + n for n in startable)}" if startable else "no custom commands are set up here"
    raise CommandError(f"Unknown command: /{name}; {hint}{known} (.claude/commands/*.md, skills, --plugin-dir). "
                       "To send text that starts with a slash, put a word before it")


class _Steps:
    """The shell steps and file reads of one command, judged by one gate holding its grants."""

    def __init__(self, skill: Skill, rules: PermissionRules, shell: Shell) -> None:
        from ..engine.gate import ToolGate

        self.skill, self.shell = skill, shell
        self.gate = ToolGate(rules, shell.cwd, None, shell.env)  # no approver: a step never asks
        self.tools = {t.name: t for t in shell.tools}

    async def run(self, command: str) -> str:
        bash = self._tool("Bash", f"its shell step `{command}`")
        decision = await self.gate.check(bash, {"command": command})
        if not decision.allowed:
            hint = f"; to allow it: {decision.hint}" if decision.hint else ""
            raise CommandError(f"{self.skill.path}: the shell step `{command}` was not allowed "
                               f"({decision.reason}){hint}, or list it in the command's allowed-tools, e.g. "
                               f"Bash({command.split()[0] if command.split() else command}:*); nothing was sent")
        extra = {"CLAUDE_CODE_SESSION_ID": self.shell.session_id, "CLAUDE_PROJECT_DIR": str(self.shell.cwd)}
        if self.skill.plugin_root:
            from .plugins import variables

            extra |= variables(self.skill.plugin_root, self.skill.plugin_data)
        out = await bash.run(bash.validate({"command": command}), self._context(decision, extra))
        text = out.content if isinstance(out.content, str) else str(out.content)
        if out.is_error:
            raise CommandError(f"{self.skill.path}: the shell step `{command}` failed: {text.strip()}; "
                               "nothing was sent")
        return "" if text == "(no output)" else text.rstrip("\n")

    async def attach(self, ref: str) -> str | None:
        """A file `@ref` names, as the Read tool shows it; None when no such file exists (the `@`
        was not a file reference)."""
        path = os.path.join(self.shell.cwd, ref)
        if not os.path.isfile(path):
            return None
        read = self._tool("Read", f"@{ref}")
        call = {"file_path": os.path.normpath(path)}
        decision = await self.gate.check(read, call)
        if not decision.allowed:
            raise CommandError(f"{self.skill.path}: @{ref} may not be read ({decision.reason}); nothing was sent")
        out = await read.run(read.validate(call), self._context(decision, {}))
        if out.is_error:
            raise CommandError(f"{self.skill.path}: @{ref} could not be read: {out.content}; nothing was sent")
        return (f"Called the Read tool with the following input: {{\"file_path\": \"{call['file_path']}\"}}\n\n"
                f"Result of calling the Read tool:\n{out.content}")

    def _tool(self, name: str, what: str) -> Any:
        tool = self.tools.get(name)
        if tool is None:
            raise CommandError(f"{self.skill.path}: {what} needs the {name} tool, which this session does not "
                               "offer (--tools); nothing was sent")
        return tool

    def _context(self, decision: Any, extra: Mapping[str, str]) -> ToolContext:
        env = {**self.shell.env, **decision.env, **extra}
        return ToolContext(cwd=self.shell.cwd, writable_roots=tuple(Path(r) for r in self.shell.roots), env=env,
                           session_id=self.shell.session_id, guard=decision.guard)
