"""Start-up-fast handles on the built-in tools. Their names, descriptions and JSON schemas are
kept in `builtin.json` (regenerated from the pydantic models, and a test checks they match), so
the first request goes out before pydantic and the tool modules are imported; the real tool loads
on its first call. Regenerate: `python -m loopwright.tools.builtin`."""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import import_module
from pathlib import Path
from typing import Any

from ..ports import Tool, ToolContext, ToolOutput

SPEC_FILE = Path(__file__).with_name("builtin.json")  # package data beside this module

# name -> (module, class)
CLASSES: dict[str, tuple[str, str]] = {
    "Read": ("files", "ReadTool"),
    "Write": ("files", "WriteTool"),
    "Edit": ("files", "EditTool"),
    "Bash": ("shell", "BashTool"),
    "Glob": ("search", "GlobTool"),
    "Grep": ("search", "GrepTool"),
}


@lru_cache(maxsize=1)
def specs() -> dict[str, dict[str, Any]]:
    data = json.loads(SPEC_FILE.read_text(encoding="utf-8"))
    return {spec["name"]: spec for spec in data}


def load(name: str) -> Tool:
    module, cls = CLASSES[name]
    return getattr(import_module(f"{__package__}.{module}"), cls)()


class LazyTool:
    """A built-in tool whose implementation is imported on first validate or run."""

    def __init__(self, name: str) -> None:
        spec = specs()[name]
        self.name: str = name
        self.description: str = spec["description"]
        self.read_only: bool = spec["read_only"]
        self._schema: dict[str, Any] = spec["input_schema"]
        self._tool: Tool | None = None

    @property
    def input_schema(self) -> dict[str, Any]:
        return self._schema

    @property
    def tool(self) -> Tool:
        if self._tool is None:
            self._tool = load(self.name)
        return self._tool

    def validate(self, raw: dict[str, Any]) -> Any:
        return self.tool.validate(raw)

    async def run(self, args: Any, ctx: ToolContext) -> ToolOutput:
        return await self.tool.run(args, ctx)


def generate() -> list[dict[str, Any]]:
    out = []
    for name in CLASSES:
        tool = load(name)
        out.append({"name": tool.name, "description": tool.description, "read_only": tool.read_only,
                    "input_schema": tool.input_schema})
    return out


if __name__ == "__main__":
    SPEC_FILE.write_text(json.dumps(generate(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {SPEC_FILE}")
