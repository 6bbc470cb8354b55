"""`@path` in a prompt typed at the interactive terminal: each file it names is attached to the
prompt as the Read tool shows it, judged first by the session's Read rules on the path it
resolves to (`~`, `..` and symlinks followed, as the gate does for a Read call). A path that is
denied, or that the rules would ask about (outside the project, in loopwright's own home, kept
private by an ask rule), is refused with the reason and nothing is sent; a name that is no file
(`@someone`, a folder) stays plain text. Code spans and fenced blocks are left alone."""

from __future__ import annotations

import os

from ..core.fastclass import dataclass
from .commands import CommandError, Shell
from .memory import imports

MAX_FILES = 10  # files one prompt may attach


@dataclass(frozen=True, slots=True)
class Mentioned:
    """The prompt to send (as typed, then each attached file) and the paths attached."""

    prompt: str
    attached: tuple[str, ...] = ()


async def attach_mentions(prompt: str, shell: Shell) -> Mentioned:
    """`prompt` with the files its `@path`s name attached; `CommandError` when one may not be read."""
    from ..core.ports import ToolContext
    from ..engine.gate import ToolGate

    refs = [(ref, path) for ref in imports(prompt) if os.path.isfile(path := _where(ref, str(shell.cwd)))]
    if not refs:
        return Mentioned(prompt)
    if len(refs) > MAX_FILES:
        raise CommandError(f"the prompt names {len(refs)} files with @; at most {MAX_FILES} are attached at once; "
                           "nothing was sent")
    read = next((t for t in shell.tools if t.name == "Read"), None)
    if read is None:
        raise CommandError(f"@{refs[0][0]} needs the Read tool, which this session does not offer (--tools); "
                           "nothing was sent")
    gate = ToolGate(shell.rules, shell.cwd, None, shell.env)  # no approver: an ask is a refusal here
    parts, attached = [prompt], []
    for ref, path in refs:
        call = {"file_path": path}
        decision = await gate.check(read, call)
        if not decision.allowed:
            hint = f"; to allow it: {decision.hint}" if decision.hint else ""
            raise CommandError(f"@{ref} may not be read ({decision.reason}){hint}; nothing was sent")
        context = ToolContext(cwd=shell.cwd, env=dict(shell.env), session_id=shell.session_id, guard=decision.guard)
        out = await read.run(read.validate(call), context)
        if out.is_error or not isinstance(out.content, str):
            why = out.content if out.is_error else "it is not text"
            raise CommandError(f"@{ref} could not be attached: {why}; nothing was sent")
        parts.append(f"Called the Read tool with the following input: {{\"file_path\": \"{path}\"}}\n\n"
                     f"Result of calling the Read tool:\n{out.content}")
        attached.append(path)
    return Mentioned("\n\n".join(parts), tuple(attached))


def _where(ref: str, cwd: str) -> str:
    """The absolute path `@ref` names (not resolved: the gate judges where it lands)."""
    return os.path.normpath(os.path.join(cwd, os.path.expanduser(ref)))


__all__ = ["Mentioned", "attach_mentions"]
