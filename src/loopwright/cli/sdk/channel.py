"""The stream-json control channel, loopwright's side: requests it sends the host (the Agent SDK)
correlated with their answers by `request_id`, bounded in time and withdrawn with
`control_cancel_request`; and what rides on it: `can_use_tool` as an `Approver`, the SDK's
hook callbacks as hooks of the session."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ...core.ids import uuid4
from ...core.ports import CURRENT_TOOL_USE_ID, Approval

if TYPE_CHECKING:
    from ...agent.run import Run

REQUEST_TIMEOUT_S = 600.0  # how long a question to the host may stay unanswered (LOOPWRIGHT_SDK_REQUEST_TIMEOUT)


class ControlError(Exception):
    """The host answered with an error, or not at all (timed out, stdin closed)."""


class ControlChannel:
    """`write` puts one JSON object on stdout as a line. Requests may be in flight in both
    directions at once; answers arrive through `answered` from the stdin reader."""

    def __init__(self, write: Callable[[dict[str, Any]], None], timeout: float | None = None) -> None:
        self.write = write
        self.timeout = timeout if timeout is not None else _env_timeout()
        self._pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._withdrawn: set[str] = set()
        self.closed = False

    async def request(self, body: dict[str, Any], timeout: float | None = None) -> dict[str, Any]:
        """Send a control request and wait for its answer's `response` object. A request still
        open when the waiting task is cancelled (an interrupt, a hook's timeout) is withdrawn."""
        if self.closed:
            raise ControlError("the host's input is closed: nobody can answer")
        rid = uuid4()
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[rid] = future
        self.write({"type": "control_request", "request_id": rid, "request": body})
        limit = self.timeout if timeout is None else timeout
        try:
            return await asyncio.wait_for(future, limit)
        except TimeoutError:
            self._withdraw(rid)
            raise ControlError(f"no answer to {body.get('subtype')} within {limit:g}s") from None
        except asyncio.CancelledError:
            self._withdraw(rid)
            raise
        finally:
            self._pending.pop(rid, None)

    def answered(self, message: dict[str, Any]) -> None:
        """A `control_response` from the host; one for no open request is ignored."""
        response = message.get("response")
        if not isinstance(response, dict):
            return
        future = self._pending.get(str(response.get("request_id")))
        if future is None or future.done():
            return
        if response.get("subtype") == "error":
            future.set_exception(ControlError(str(response.get("error") or "the host answered with an error")))
        else:
            body = response.get("response")
            future.set_result(body if isinstance(body, dict) else {})

    def withdraw_all(self) -> None:
        """Cancel every open request now (an interrupt: the host hears it before the answer)."""
        for rid in list(self._pending):
            self._withdraw(rid)

    def close(self) -> None:
        """stdin ended: no answer can come; open requests fail."""
        self.closed = True
        for future in self._pending.values():
            if not future.done():
                future.set_exception(ControlError("the host's input closed before it answered"))

    def _withdraw(self, rid: str) -> None:
        if rid in self._withdrawn or self.closed:
            return
        self._withdrawn.add(rid)
        self.write({"type": "control_cancel_request", "request_id": rid})
        future = self._pending.get(rid)
        if future is not None and not future.done():
            future.cancel()


def _env_timeout() -> float:
    try:
        return float(os.environ.get("LOOPWRIGHT_SDK_REQUEST_TIMEOUT", REQUEST_TIMEOUT_S))
    except ValueError:
        return REQUEST_TIMEOUT_S


class SdkApprover:
    """`--permission-prompt-tool stdio`: a call the rules would ask about is decided by the host's
    `can_use_tool`. Allow may change the input; deny says what the model is told, and with
    `interrupt` ends the turn. No answer (an error, a timeout) is a denial."""

    def __init__(self, channel: ControlChannel, interrupt: Callable[[], None], live: Run | None = None) -> None:
        """`live`: the run whose agent's rules an allow's `updatedPermissions` change."""
        self.channel, self.interrupt, self.live = channel, interrupt, live

    async def approve(self, tool_name: str, tool_input: dict[str, Any], reason: str) -> Approval:
        body = {"subtype": "can_use_tool", "tool_name": tool_name, "display_name": tool_name, "input": tool_input,
                "tool_use_id": CURRENT_TOOL_USE_ID.get() or uuid4(), "decision_reason": reason,
                "permission_suggestions": []}
        if isinstance(tool_input.get("description"), str):
            body["description"] = tool_input["description"]
        try:
            answer = await self.channel.request(body)
        except ControlError as exc:
            return Approval(False, message=f"Tool permission request failed: {exc}")
        if answer.get("behavior") == "allow":
            updated = answer.get("updatedInput")
            updates = answer.get("updatedPermissions") or []
            try:
                self._keep(updates)
            except ValueError as exc:  # fail closed: an allow whose rules cannot be read is no allow
                print(f"loopwright: warning: can_use_tool answer refused: {exc}", file=sys.stderr, flush=True)
                return Approval(False, message=f"The permission answer could not be used ({exc}); the call did not run.")
            return Approval(True, updated if isinstance(updated, dict) else None, updates=tuple(updates))
        if answer.get("interrupt") is True:
            asyncio.get_running_loop().call_soon(self.interrupt)
        message = answer.get("message")
        return Approval(False, message=message if isinstance(message, str) and message else
                        f"The user denied this {tool_name} call. Do not retry it.")


    def _keep(self, updates: Any) -> None:
        """The session's rules with the host's `updatedPermissions`, for this turn's gate and
        every later turn; a ValueError (nothing changed) when one cannot be read."""
        from ...permissions.rules import PermissionRules, apply_updates

        if not isinstance(updates, list):
            raise ValueError(f"updatedPermissions must be a list, got {type(updates).__name__}")
        kept = apply_updates(self.live.agent.permissions if self.live is not None else PermissionRules(), updates)
        if updates and self.live is not None:
            self.live.update(permissions=kept)


def register_sdk_hooks(runner: Any, config: Any, channel: ControlChannel) -> list[Any]:
    """The hooks of an `initialize` request (`{Event: [{matcher, hookCallbackIds, timeout?}]}`)
    added to `runner` as Python hooks that ask the host; returns their registrations. An event
    loopwright does not have is said on stderr and left out."""
    from ...hooks.spec import EVENTS

    before = len(runner.registrations)
    for event, matchers in (config or {}).items():
        if event not in EVENTS:
            print(f"loopwright: warning: SDK hook event {event!r} is not supported by loopwright; its callbacks "
                  "never run", file=sys.stderr, flush=True)
            continue
        for group in matchers or ():
            timeout = group.get("timeout")
            timeout = float(timeout) if isinstance(timeout, (int, float)) and timeout > 0 else None
            for callback_id in group.get("hookCallbackIds") or ():
                runner.on(event, _callback(channel, str(callback_id)), matcher=group.get("matcher"), timeout=timeout)
    return runner.registrations[before:]


def _callback(channel: ControlChannel, callback_id: str) -> Callable[[Any], Any]:
    async def ask_host(hook_input: Any) -> dict[str, Any]:
        payload = dict(hook_input.raw)
        tool_use_id = payload.get("tool_use_id") or uuid4()  # a Stop hook's id is a fresh one
        return await channel.request({"subtype": "hook_callback", "callback_id": callback_id, "input": payload,
                                      "tool_use_id": tool_use_id}, timeout=None)

    ask_host.__qualname__ = f"sdk hook {callback_id}"
    return ask_host
