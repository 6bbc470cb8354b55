"""Start-up-fast handles on the built-in tools. Their names, descriptions and JSON schemas are
kept in `builtin.json` (regenerated from the pydantic models, and a test checks they match), so
the first request goes out before pydantic and the tool modules are imported; the real tool loads
on its first call. Regenerate: `python -m loopwright.tools.builtin`."""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.ports import Access, Tool, ToolContext, ToolOutput
from ..sandbox.bwrap import SandboxConfig
from .access import ACCESS, bash_access

if TYPE_CHECKING:
    from .background import ShellRegistry

SPEC_FILE = Path(__file__).with_name("builtin.json")  # package data beside this module

# name -> (module, class)
CLASSES: dict[str, tuple[str, str]] = {
    "Read": ("files", "ReadTool"),
    "Write": ("files", "WriteTool"),
    "Edit": ("files", "EditTool"),
    "Bash": ("shell", "BashTool"),
    "Glob": ("search", "GlobTool"),
    "Grep": ("search", "GrepTool"),
    "BashOutput": ("background", "BashOutputTool"),
    "KillShell": ("background", "KillShellTool"),
}
# Constructor arguments taken from the session's Toolbox.
SHARED: dict[str, tuple[str, ...]] = {"Bash": ("sandbox", "shells"), "BashOutput": ("shells",),
                                      "KillShell": ("shells",)}


class Toolbox:
    """What one session's built-in tools share: the sandbox settings and the background shells.
    It is the session's `BackgroundWork`: `running()` for the Stop hook's `background_tasks`,
    `stop_all()` at session end."""

    def __init__(self, sandbox: SandboxConfig | None = None) -> None:
        self.sandbox = sandbox or SandboxConfig()
        self._shells: ShellRegistry | None = None

    @property
    def shells(self) -> ShellRegistry:
        if self._shells is None:  # first use only: the registry's module loads pydantic
            from .background import ShellRegistry

            self._shells = ShellRegistry()
        return self._shells

    def running(self) -> list[dict[str, Any]]:
        return self._shells.running() if self._shells is not None else []

    async def stop_all(self) -> None:
        if self._shells is not None:
            await self._shells.stop_all()


@lru_cache(maxsize=1)
def specs() -> dict[str, dict[str, Any]]:
    data = json.loads(SPEC_FILE.read_text(encoding="utf-8"))
    return {spec["name"]: spec for spec in data}


def load(name: str, box: Toolbox | None = None) -> Tool:
    module, cls = CLASSES[name]
    box = box or Toolbox()
    kwargs = {arg: getattr(box, arg) for arg in SHARED.get(name, ())}
    return getattr(import_module(f"{__package__}.{module}"), cls)(**kwargs)


class LazyTool:
    """A built-in tool whose implementation is imported on first validate or run."""

    def __init__(self, name: str, box: Toolbox | None = None) -> None:
        spec = specs()[name]
        self.box = box or Toolbox()
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
            self._tool = load(self.name, self.box)
        return self._tool

    def access(self, tool_input: dict[str, Any]) -> Access:
        if self.name == "Bash":  # answered without loading the tool
            return bash_access(tool_input, self.box.sandbox)
        return ACCESS[self.name](tool_input)

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
