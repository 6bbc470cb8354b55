"""How an `Agent` prepares a typed prompt before the loop: the MCP servers it may name, the
turn it starts (an MCP server's prompt, a command, or text as typed), the files its `@path`s
attach, and the shell a command's steps run in. `agent` is the `loopwright.Agent` (its methods
are called, so a subclass's own are used)."""

from __future__ import annotations

from typing import Any

from ..core.types import ModelText
from ..policy.rules import PermissionRules


async def start_mcp(agent: Any) -> None:
    """Connect the configured MCP servers, once (each bounded by MCP_TIMEOUT, 30 s)."""
    if not agent.mcp_servers or agent._mcp is not None:
        return
    from ..mcp.toolset import McpServers

    agent._mcp = McpServers(agent.mcp_servers, str(agent.cwd), agent._child_environment())
    await agent._mcp.start()


async def typed(agent: Any, prompt: str) -> Any:
    """The turn a prompt starts (`context.commands`): an MCP server's prompt, a command, as typed."""
    from ..context import Turn

    if isinstance(prompt, ModelText) or not prompt.lstrip().startswith("/"):
        return Turn(prompt)  # what the model scheduled is text, whatever it starts with
    if agent._mcp is not None and prompt.lstrip().startswith("/mcp__"):
        return Turn(await agent._mcp_prompt(prompt))
    from ..context.commands import start

    return await start(prompt, agent.skills, agent._shell(agent.permissions))


async def attach_mentions(agent: Any, prompt: str) -> Any:
    """`Agent.attach_mentions`: the Read rules are the agent's, through its shell."""
    from ..context.mentions import attach_mentions as attach

    return await attach(prompt, agent._shell(agent.permissions))


def shell(agent: Any, rules: PermissionRules) -> Any:
    """Where a command's or skill's shell steps run (`context.commands.Shell`): the session's
    tools, through `tool_steps` as the loop's are (a typed command's steps run before the loop)."""
    from ..context.commands import Shell

    tools = agent.tool_steps(list(agent._tools())) if agent.tool_steps is not None else agent._tools()
    return Shell(tools, rules, agent.cwd, agent._writable_roots(), agent._child_environment(), agent.session_id)


async def mcp_prompt(agent: Any, text: str) -> str:
    """`/mcp__server__prompt args` becomes the server's prompt (a name no server has stays as typed)."""
    from ..core.errors import UsageError

    try:
        expanded = await agent._mcp.expand_prompt(text)
    except Exception as exc:  # noqa: BLE001 - said as a usage error, nothing was sent yet
        raise UsageError(f"{text.split()[0]}: the MCP server could not give its prompt ({exc})") from None
    return text if expanded is None else expanded
