"""The host's control requests, answered: `initialize` (its hooks registered), `interrupt`,
`set_permission_mode`, `set_model`, `mcp_status`, `get_context_usage`, `rewind_files`, `stop_task`; any other subtype gets an error
answer, never silence (the SDK would wait a minute for it)."""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ...core.errors import LoopwrightError
from .channel import ControlChannel, register_sdk_hooks
from .emit import SdkOutput

if TYPE_CHECKING:
    from ...agent.run import Run


class Unsupported(Exception):
    pass


class HostRequests:
    def __init__(self, live: Run, channel: ControlChannel, out: SdkOutput) -> None:
        """`live`: the session's run; a request that changes the agent replaces it there."""
        self.live, self.channel, self.out = live, channel, out
        self.busy = False  # a turn is running
        self.stop_workflow: Callable[[], None] | None = None  # a running `/NAME` workflow's stop
        self._hooks: list[Any] = []  # registrations of the SDK's hooks (a second initialize replaces them)
        self._handlers: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
            "initialize": self.initialize, "interrupt": self.interrupt, "set_permission_mode": self.set_permission_mode,
            "set_model": self.set_model, "mcp_status": self.mcp_status, "stop_task": lambda body: {},
            "get_context_usage": self.context_usage, "rewind_files": self.rewind_files,
        }

    def handle(self, message: dict[str, Any]) -> None:
        """Exactly one `control_response` for every request that has an id to answer to: an error
        one naming the field when the request is malformed, or when answering it failed in a
        way nobody foresaw. A request without an id cannot be answered: that is said on stderr."""
        rid = message.get("request_id")
        body = message.get("request")
        subtype = body.get("subtype") if isinstance(body, dict) else None
        if isinstance(rid, bool) or not isinstance(rid, (str, int)) or rid == "":
            print(f"loopwright: warning: a control_request ({subtype or 'no subtype'}) has no request_id (expected "
                  f"a non-empty string, got {_shown(rid)}): it cannot be answered", file=sys.stderr, flush=True)
            return
        try:
            if not isinstance(body, dict):
                raise ValueError(f"control_request: request: expected an object with a \"subtype\", got {_shown(body)}")
            if not isinstance(subtype, str):
                raise ValueError(f"control_request: request.subtype: expected a string, got {_shown(subtype)}")
            handler = self._handlers.get(subtype)
            if handler is None:
                raise Unsupported(f"Unsupported control request subtype: {subtype}")
            answer = {"subtype": "success", "request_id": rid, "response": handler(body)}
        except (Unsupported, LoopwrightError, ValueError) as exc:
            answer = {"subtype": "error", "request_id": rid, "error": str(exc)}
            if isinstance(exc, Unsupported):
                answer["error_code"] = "unsupported_request"
        except Exception as exc:  # noqa: BLE001 - a bug of ours still answers, so the host never waits
            print(f"loopwright: error: answering control request {subtype!r} failed: {type(exc).__name__}: {exc}",
                  file=sys.stderr, flush=True)
            answer = {"subtype": "error", "request_id": rid,
                      "error": f"{subtype}: could not be answered ({type(exc).__name__}: {exc})"}
        self.channel.write({"type": "control_response", "response": answer})

    def cancel(self, request_id: str) -> None:
        """The host withdrew a request of its own: every one is answered at once, so none is open."""

    def initialize(self, body: dict[str, Any]) -> dict[str, Any]:
        check_initialize(body)  # nothing is registered from a request that is wrong anywhere
        hooks = body.get("hooks")
        if isinstance(hooks, dict) and hooks:
            from ...hooks import HookRunner

            runner = self.live.agent.hooks
            if runner is None:
                runner = HookRunner(project_dir=self.live.agent.cwd)
                self.live.update(hooks=runner)
            if not isinstance(runner, HookRunner):  # the command line's agents have loopwright's own
                raise LoopwrightError("initialize: hooks can be added only to loopwright's own hook runner")
            runner.registrations = [r for r in runner.registrations if r not in self._hooks]
            self._hooks = register_sdk_hooks(runner, hooks, self.channel)
        if body.get("agents"):  # as --agents: beside the project's, winning a name clash
            from ...subagents.definitions import builtins, from_data

            given = from_data(body["agents"], "initialize: agents")
            agents = self.live.update(agents=(self.live.agent.agents or builtins()) | given).agents
            self.out.init["agents"] = list(agents)
        return {"commands": [], "agents": self.out.init.get("agents", []), "output_style": "default",
                "available_output_styles": ["default"], "models": [], "account": {}, "pid": os.getpid(),
                "claude_code_version": self.out.init["claude_code_version"],
                "loopwright_version": self.out.init["loopwright_version"],
                "current_permission_mode": self.live.agent.permissions.mode, "hooks_applied": bool(self._hooks),
                "session_state": "running" if self.busy else "idle"}

    def interrupt(self, body: dict[str, Any]) -> dict[str, Any]:
        """Withdraw what loopwright asked the host, then abort the running turn (if any)."""
        self.channel.withdraw_all()
        self.live.interrupt()
        if self.stop_workflow is not None:
            self.stop_workflow()
        return {"still_queued": []}

    def set_permission_mode(self, body: dict[str, Any]) -> dict[str, Any]:
        from ...permissions.rules import MODES, normalise_mode

        mode = normalise_mode(str(body.get("mode")))
        if mode is None:
            raise ValueError(f"set_permission_mode: expected one of {', '.join(MODES)}, got {body.get('mode')!r}")
        # a new agent is checked as the flag's is (bypassPermissions as root refused); the old one stays on failure
        self.live.update(permissions=dataclasses.replace(self.live.agent.permissions, mode=mode))
        self.out.status()
        return {"mode": mode}

    def set_model(self, body: dict[str, Any]) -> dict[str, Any]:
        from ...policy.models import DEFAULT_MODEL, resolve_model

        given = body.get("model")
        if given is not None and (not isinstance(given, str) or not given.strip()):
            raise ValueError(f"set_model: expected a model name or null, got {given!r}")
        agent = self.live.update(model=resolve_model(given or os.environ.get("ANTHROPIC_MODEL") or DEFAULT_MODEL).id)
        return {"model": agent.model}

    def rewind_files(self, body: dict[str, Any]) -> dict[str, Any]:
        """The files Write and Edit changed since that prompt, put back (the conversation stays)."""
        store = self.live.session.checkpoints
        if store is None:
            raise ValueError("rewind_files: file checkpointing is not enabled (enable_file_checkpointing=True)")
        target = store.find(str(body.get("user_message_id") or ""))
        if target is None:
            raise ValueError(f"rewind_files: {body.get('user_message_id')!r} is not the id of a user prompt of this "
                             "session with a checkpoint (ids come from replayed user messages)")
        if self.busy:
            raise ValueError("rewind_files: a turn is running; interrupt it first")
        return {"rewound": store.rewind(target)}

    def context_usage(self, body: dict[str, Any]) -> dict[str, Any]:
        from .usage import context_usage

        return context_usage(self.live, self.out.last_usage)

    def mcp_status(self, body: dict[str, Any]) -> dict[str, Any]:
        if self.out.mcp_servers:  # as the last system/init said
            return {"mcpServers": [dict(s) for s in self.out.mcp_servers]}
        return {"mcpServers": [{"name": s.name, "status": "pending"} for s in self.live.agent.mcp_servers]}


def check_initialize(body: dict[str, Any]) -> None:
    """`initialize` as the protocol has it, else a ValueError naming the field:
    `hooks` null or {Event: [{matcher?, hookCallbackIds: [str], timeout?}]}, `agents` null or an object."""
    hooks = body.get("hooks")
    if hooks is not None:
        if not isinstance(hooks, dict):
            raise ValueError(f"initialize: hooks: expected null or an object of events, got {_shown(hooks)}")
        for event, groups in hooks.items():
            where = f"initialize: hooks.{event}"
            if not isinstance(groups, list):
                raise ValueError(f"{where}: expected a list of matchers, got {_shown(groups)}")
            for i, group in enumerate(groups):
                at = f"{where}[{i}]"
                if not isinstance(group, dict):
                    raise ValueError(f"{at}: expected an object with \"hookCallbackIds\", got {_shown(group)}")
                if group.get("matcher") is not None and not isinstance(group["matcher"], str):
                    raise ValueError(f"{at}.matcher: expected a string or null, got {_shown(group['matcher'])}")
                ids = group.get("hookCallbackIds")
                if not isinstance(ids, list) or not all(isinstance(x, str) for x in ids):
                    raise ValueError(f"{at}.hookCallbackIds: expected a list of strings, got {_shown(ids)}")
                timeout = group.get("timeout")
                if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))):
                    raise ValueError(f"{at}.timeout: expected a number of seconds, got {_shown(timeout)}")
    agents = body.get("agents")
    if agents is not None and not isinstance(agents, dict):
        raise ValueError(f"initialize: agents: expected null or an object of agent definitions, got {_shown(agents)}")


def _shown(value: Any) -> str:
    kind = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "nothing"}.get(
        type(value), "a number" if isinstance(value, (int, float)) else type(value).__name__)
    return kind if value is None or isinstance(value, (dict, list)) else f"{kind} ({str(value)[:60]!r})"
