"""The built-in tools (Read, Write, Edit, Bash, Glob, Grep, BashOutput, KillShell, with Claude
Code's names and input fields), the `BaseTool` base class and the `@tool` decorator."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Protocol, runtime_checkable

from ..core.ports import BackgroundWork, Tool
from .builtin import CLASSES, LazyTool, Toolbox

if TYPE_CHECKING:
    from .base import BaseTool, FunctionTool, ToolInput, tool
    from .paths import resolve_path
    from .files import EditTool, ReadTool, WriteTool
    from .search import GlobTool, GrepTool
    from .shell import BashTool
    from .background import BashOutputTool, KillShellTool, ShellRegistry
    from ..sandbox import SandboxConfig

__all__ = [
    "BUILTIN_TOOL_NAMES",
    "BaseTool",
    "BashOutputTool",
    "BashTool",
    "KillShellTool",
    "ShellRegistry",
    "Toolbox",
    "background_work",
    "EditTool",
    "FunctionTool",
    "GlobTool",
    "GrepTool",
    "ReadTool",
    "ToolInput",
    "WriteTool",
    "builtin_tools",
    "resolve_path",
    "tool",
]

BUILTIN_TOOL_NAMES: tuple[str, ...] = tuple(CLASSES)

# Everything that needs pydantic loads on first use: start-up sends the first request before.
_LAZY = {
    "ReadTool": "files",
    "WriteTool": "files",
    "EditTool": "files",
    "BashTool": "shell",
    "BashOutputTool": "background",
    "KillShellTool": "background",
    "ShellRegistry": "background",
    "GlobTool": "search",
    "GrepTool": "search",
    "BaseTool": "base",
    "FunctionTool": "base",
    "ToolInput": "base",
    "tool": "base",
    "resolve_path": "paths",
}


def builtin_tools(*, sandbox: SandboxConfig | None = None, toolbox: Toolbox | None = None) -> list[Tool]:
    """Fresh handles on the built-in tools, in `BUILTIN_TOOL_NAMES` order, sharing one `Toolbox`
    (the sandbox settings and one registry of background shells); each imports its
    implementation on first use."""
    box = toolbox or Toolbox(sandbox)
    return [LazyTool(name, box) for name in CLASSES]


@runtime_checkable
class _SharesShells(Protocol):
    """A tool holding the session's background shells (Bash, BashOutput, KillShell)."""

    shells: object


def background_work(tools: Iterable[Tool]) -> BackgroundWork | None:
    """The background work (shells) of a set of built-in tools, or None when there are none:
    `running()` gives the Stop hook's `background_tasks`, `await stop_all()` ends it all."""
    for t in tools:
        if isinstance(t, LazyTool):
            return t.box
        if isinstance(t, _SharesShells) and isinstance(t.shells, BackgroundWork):
            return t.shells
    return None


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'loopwright.tools' has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(f"{__name__}.{module}"), name)
