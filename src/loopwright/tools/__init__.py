"""The built-in tools (Read, Write, Edit, Bash, Glob, Grep, with Claude Code's names and input
fields), the `BaseTool` base class and the `@tool` decorator for tools written in Python."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..ports import Tool
from .builtin import CLASSES, LazyTool

if TYPE_CHECKING:
    from .base import BaseTool, FunctionTool, ToolInput, tool
    from .paths import resolve_path
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

BUILTIN_TOOL_NAMES: tuple[str, ...] = tuple(CLASSES)

# Everything that needs pydantic loads on first use: start-up sends the first request before.
_LAZY = {
    "ReadTool": "files",
    "WriteTool": "files",
    "EditTool": "files",
    "BashTool": "shell",
    "GlobTool": "search",
    "GrepTool": "search",
    "BaseTool": "base",
    "FunctionTool": "base",
    "ToolInput": "base",
    "tool": "base",
    "resolve_path": "paths",
}


def builtin_tools() -> list[Tool]:
    """Fresh handles on the built-in tools, in `BUILTIN_TOOL_NAMES` order; each imports its
    implementation on first use."""
    return [LazyTool(name) for name in CLASSES]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'loopwright.tools' has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(f"{__name__}.{module}"), name)
