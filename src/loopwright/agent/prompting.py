"""How a `Run` prepares a typed prompt before the loop: the turn it starts (an MCP server's
prompt, a command, or text as typed), the files its `@path`s attach, and the shell a command's
steps run in."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.types import ModelText
from ..permissions.rules import PermissionRules

if TYPE_CHECKING:
    from .resources import Resources
    from .session import Session
    from .spec import AgentSpec


async def typed(agent: AgentSpec, session: Session, parts: Resources, prompt: str) -> Any:
    """The turn a prompt starts (`context.commands`): an MCP server's prompt, a command, as typed."""
    from ..context import Turn

    if isinstance(prompt, ModelText) or not prompt.lstrip().startswith("/"):
        return Turn(prompt)  # what the model scheduled is text, whatever it starts with
    if parts.mcp is not None and prompt.lstrip().startswith("/mcp__"):
        return Turn(await mcp_prompt(parts.mcp, prompt))
    from ..context.commands import start

    return await start(prompt, agent.skills, shell(agent, session, parts, agent.permissions))


async def attach_mentions(shell: Any, prompt: str) -> Any:
    """`Run.attach_mentions`: the Read rules are the agent's, through its `shell`."""
    from ..context.mentions import attach_mentions as attach

    return await attach(prompt, shell)


def shell(agent: AgentSpec, session: Session, parts: Resources, rules: PermissionRules) -> Any:
    """Where the shell steps of a command the person typed run (`context.commands.Shell`): the
    session's tools, through `tool_steps` as the loop's are (they run before the loop). Their
    Bash runs outside the sandbox: the person started the command, and its steps are the
    command file's own text (the arguments enter them as quoted words only), still judged by
    the gate — as Claude Code runs them, so a plugin's command that keeps its state under
    `.claude/` works unchanged. Steps the model starts (the Skill tool) stay in the sandbox."""
    from ..context.commands import Shell

    on_host = agent.outfitted().on_host  # the built-in Bash, outside the sandbox
    own = [on_host(t) for t in parts.tools()]
    tools = agent.tool_steps(own) if agent.tool_steps is not None else own
    return Shell(tools, rules, agent.cwd, agent.writable_roots(), agent.environment(session.env), session.session_id)


async def mcp_prompt(servers: Any, text: str) -> str:
    """`/mcp__server__prompt args` becomes the server's prompt (a name no server has stays as typed)."""
    from ..core.errors import UsageError

    try:
        expanded = await servers.expand_prompt(text)
    except Exception as exc:  # noqa: BLE001 - said as a usage error, nothing was sent yet
        raise UsageError(f"{text.split()[0]}: the MCP server could not give its prompt ({exc})") from None
    return text if expanded is None else expanded
