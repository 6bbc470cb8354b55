"""The built-in tools (Read, Write, Edit, Bash, Glob, Grep, with Claude Code's names and input
fields), the `BaseTool` base class and the `@tool` decorator for tools written in Python."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..ports import Tool
from .base import BaseTool, FunctionTool, ToolInput, tool
from .paths import resolve_path

if TYPE_CHECKING:
    from .files import EditTool, ReadTool, WriteTool
    from .search import GlobTool, GrepTool
    from .shell import BashTool

__all__ = [
    "BUILTIN_TOOL_NAMES",
    "BaseTool",
    "BashTool",
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

BUILTIN_TOOL_NAMES: tuple[str, ...] = ("Read", "Write", "Edit", "Bash", "Glob", "Grep")

# The tool classes load on first use: the shell tool pulls in asyncio's subprocess machinery.
_LAZY = {
    "ReadTool": "files",
    "WriteTool": "files",
    "EditTool": "files",
    "BashTool": "shell",
    "GlobTool": "search",
    "GrepTool": "search",
}


def builtin_tools() -> list[Tool]:
    """Fresh instances of the built-in tools, in `BUILTIN_TOOL_NAMES` order."""
    from .files import EditTool, ReadTool, WriteTool
    from .search import GlobTool, GrepTool
    from .shell import BashTool

    return [ReadTool(), WriteTool(), EditTool(), BashTool(), GlobTool(), GrepTool()]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'loopwright.tools' has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(f"{__name__}.{module}"), name)
