"""`Outfit`: the standard parts an agent's run takes from the outside world (`core.ports.Outfit`)
— the model APIs, the built-in tools, MCP servers, bubblewrap, the local folder, the crash log
and httpx — the adapters the agent layer may not import. Each adapter is imported when its part
is first asked for, so an agent that never runs a command never loads the sandbox."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from ..core.ports import Model, Tool, Workspace
from ..core.sandboxconfig import SandboxConfig


class Outfit:
    """The standard outfit (`core.ports.Outfit`); stateless, so one serves every agent."""

    def model_client(self, model: str, env: Mapping[str, str], env_origins: Mapping[str, str]) -> Model:
        from ..providers.routing import ModelRouter

        router = ModelRouter(env, env_origins)
        router.client_for(model)  # a missing key is said now, before the run starts
        return router

    def builtin_tools(self, sandbox: SandboxConfig | None) -> Sequence[Tool]:
        from ..tools import builtin_tools

        return builtin_tools(sandbox=sandbox)

    def background_work(self, tools: Sequence[Tool]) -> Any:
        from ..tools import background_work

        return background_work(tools)

    def on_host(self, tool: Tool) -> Tool:
        """The built-in Bash tool as one whose commands run outside the sandbox (the same
        background shells); any other tool as it is."""
        from ..tools.builtin import LazyTool
        from ..tools.shell import BashTool

        if isinstance(tool, LazyTool) and tool.name == "Bash":
            return BashTool(replace(tool.box.sandbox, enabled=False), tool.box.shells)
        if isinstance(tool, BashTool):
            return BashTool(replace(tool.sandbox, enabled=False), tool.shells)
        return tool

    def mcp_servers(self, specs: Sequence[Any], cwd: str, env: Mapping[str, str]) -> Any:
        from ..mcp.toolset import McpServers

        return McpServers(specs, cwd, dict(env))

    def sandbox_unavailable(self) -> str | None:
        from ..sandbox import availability

        return availability()

    def sandbox_active(self, sandbox: SandboxConfig | None) -> bool:
        from ..sandbox import active

        return active(sandbox)

    def sandbox_warning(self, sandbox: SandboxConfig | None) -> str | None:
        from ..sandbox import unavailable_warning

        return unavailable_warning(sandbox)

    def check_wrapper(self, sandbox: SandboxConfig | None, cwd: Path, roots: tuple[str, ...]) -> Callable[[str], list[str]] | None:
        """Goal checks run in the Bash sandbox when it is on and works here; where it cannot guard
        the project, the check fails saying why (never runs unguarded)."""
        from ..sandbox import active, wrap

        if sandbox is None or not active(sandbox):
            return None

        def wrapped(command: str) -> list[str]:
            from ..sandbox.protect import Unprotectable
            from ..sandbox.seccomp import UnsupportedMachine

            try:
                return wrap(["/bin/bash", "-c", command], cwd=str(cwd), roots=roots + sandbox.writable,
                            network=sandbox.network, sockets_open=sandbox.sockets_open, deny_read=sandbox.deny_read,
                            deny_write=sandbox.deny_write)
            except (Unprotectable, UnsupportedMachine, OSError) as exc:
                return ["/bin/sh", "-c", 'echo "$0" >&2; exit 126', f"the sandbox cannot guard this project: {exc}"]

        return wrapped

    def python_jail(self) -> list[str] | str:
        from ..sandbox.pyjail import python_jail

        return python_jail()

    def skill_tool(self, use: Callable[[str, str, Any], Any]) -> Tool:
        from ..tools.skill import SkillTool

        return SkillTool(use)

    def structured_output_tool(self, answer: Any) -> Tool:
        from ..tools.structured import StructuredOutputTool

        return StructuredOutputTool(answer)

    def workspace(self, cwd: Path, wrap: Callable[[str], list[str]] | None, env: Mapping[str, str]) -> Workspace:
        from ..tools.workspace import LocalWorkspace

        return LocalWorkspace(cwd, wrap, env)

    def crash_log(self, exc: BaseException) -> str | None:
        from ..stores.crashlog import write_crash_log

        return write_crash_log(exc)

    async def post_json(self, url: str, headers: Mapping[str, str], body: bytes, timeout: float) -> tuple[int, bytes]:
        """The transport of http hooks (`loopwright.hooks.PostJson`). A body longer than a command
        hook's output may be is refused (ValueError) as soon as it is, not read to its end."""
        import httpx

        from ..hooks.command import MAX_OUTPUT_BYTES

        async with httpx.AsyncClient(timeout=timeout) as client:
            async with client.stream("POST", url, content=body, headers=dict(headers)) as response:
                content = bytearray()
                async for chunk in response.aiter_bytes():
                    content += chunk
                    if len(content) > MAX_OUTPUT_BYTES:
                        raise ValueError(f"the response body went past {MAX_OUTPUT_BYTES} bytes")
                return response.status_code, bytes(content)


STANDARD = Outfit()
