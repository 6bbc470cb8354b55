"""An MCP transport to a server that lives in the host process (the Agent SDK's
`create_sdk_mcp_server`): each JSON-RPC message goes to `ask`, which carries it to the host and
returns the host's JSON-RPC answer (None or an ack for a notification)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio

Ask = Callable[[dict[str, Any]], Awaitable[Any]]
INTERNAL_ERROR = -32603


@asynccontextmanager
async def bridged(ask: Ask) -> AsyncIterator[tuple[Any, Any]]:
    """The (read, write) streams the `mcp` client speaks over; requests are carried
    concurrently, so a slow tool call holds up no other request."""
    import mcp_types as types
    from mcp.shared.message import SessionMessage

    to_client, from_bridge = anyio.create_memory_object_stream[Any](32)
    to_bridge, from_client = anyio.create_memory_object_stream[Any](32)

    async def carry(message: Any) -> None:
        data = message.message.model_dump(by_alias=True, mode="json", exclude_unset=True)
        try:
            answer = await ask(data)
        except Exception as exc:  # noqa: BLE001 - the host's failure is the request's error
            answer = {"jsonrpc": "2.0", "id": data.get("id"), "error": {"code": INTERNAL_ERROR, "message": str(exc)}}
        if "method" not in data or data.get("id") is None or not isinstance(answer, dict):
            return  # a notification (acknowledged by the host) or a reply of ours: nothing comes back
        answer = {**answer, "id": data["id"]}
        await to_client.send(SessionMessage(types.jsonrpc_message_adapter.validate_python(answer)))

    async def pump() -> None:
        async with anyio.create_task_group() as tg:
            async for message in from_client:
                tg.start_soon(carry, message)

    async with anyio.create_task_group() as tg:
        tg.start_soon(pump)
        try:
            yield from_bridge, to_bridge
        finally:
            tg.cancel_scope.cancel()
