"""What each built-in tool touches, read from its raw input for the permission gate. No pydantic
here: the start-up handles answer without loading the tools."""

from __future__ import annotations

import os
from typing import Any, Callable

from ..core.ports import Access
from ..sandbox.bwrap import SandboxConfig, escape_reason

_MAGIC = frozenset("*?[{")


def _path(kind: str, key: str, default: str | None = None) -> Callable[[dict[str, Any]], Access]:
    def access(tool_input: dict[str, Any]) -> Access:
        value = tool_input.get(key, default)
        return Access(kind, (value,) if isinstance(value, str) else ())  # type: ignore[arg-type]

    return access


def glob_access(tool_input: dict[str, Any]) -> Access:
    """The search root, and the literal start of the pattern when it leaves the root
    (`/etc/*`, `../../**`)."""
    root = tool_input.get("path") or "."
    pattern = tool_input.get("pattern")
    if not isinstance(root, str):
        return Access("read")
    paths = [root]
    if isinstance(pattern, str):
        literal = []
        for seg in pattern.split("/"):
            if any(c in seg for c in _MAGIC):
                break
            literal.append(seg)
        prefix = "/".join(literal)
        if prefix and (prefix.startswith(("/", "~")) or ".." in literal):
            paths.append(prefix if prefix.startswith(("/", "~")) else os.path.join(root, prefix))
    return Access("read", tuple(paths))


def bash_access(tool_input: dict[str, Any], sandbox: SandboxConfig | None = None) -> Access:
    """The command line, and whether it would leave the sandbox (`sandbox`: the session's)."""
    command = tool_input.get("command")
    why = escape_reason(tool_input, sandbox)
    return Access("exec", command=command if isinstance(command, str) else None, outside=why,
                  outside_refused=bool(why) and sandbox is not None and not sandbox.allow_unsandboxed)


ACCESS: dict[str, Callable[[dict[str, Any]], Access]] = {
    "Read": _path("read", "file_path"),
    "Write": _path("write", "file_path"),
    "Edit": _path("write", "file_path"),
    "Glob": glob_access,
    "Grep": _path("read", "path", "."),
    "Bash": bash_access,
    "BashOutput": lambda _input: Access("session"),
    "KillShell": lambda _input: Access("session"),
}
