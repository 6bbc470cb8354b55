"""stdout for the Agent SDK: every engine event as its stream-json line (with the `uuid` and
`session_id` the SDK's parser requires), session state frames, and control lines. Nothing but
JSON lines goes to stdout; warnings go to stderr, without the progress view `--verbose` gives
a person (the SDK always passes it)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from ... import __version__
from ...core.events import AssistantMessage, Event, HookResponse, HookStarted, Notice, SystemInit, UserMessage
from ...core.ids import uuid4
from ...core.ports import EventRecorder
from ...compose.render import dumps, stream_json, visible

if TYPE_CHECKING:
    from ...agent.run import Run


class SdkOutput:
    def __init__(self, live: Run, hook_events: bool, init: dict[str, Any], state_frames: bool,
                 replay_prompts: bool = False) -> None:
        """`live`: the session's run (its session's id and recorder, its agent's mode)."""
        self.live, self.hook_events, self.state_frames = live, hook_events, state_frames
        self.replay_prompts = replay_prompts  # --replay-user-messages: each prompt echoed with its record's uuid
        known = live.agent.agents
        agents = list(known or {}) if isinstance(known, dict) else []
        self.init = {"slash_commands": [], "skills": [], "agents": agents, **init}
        self.mcp_servers: list[dict[str, Any]] = []
        self.last_usage: dict[str, Any] | None = None  # the last response's, for get_context_usage

    def line(self, obj: dict[str, Any]) -> None:
        sys.stdout.write(dumps(obj) + "\n")
        sys.stdout.flush()

    def emit(self, event: Event) -> None:
        if isinstance(event, SystemInit):
            self.mcp_servers = list(event.mcp_servers)
            for server in event.mcp_servers:
                if server.get("status") == "failed":
                    _warn(f"MCP server {server['name']!r} failed: {server.get('error', '')}; the run goes on "
                          "without its tools")
        elif isinstance(event, AssistantMessage):
            self.last_usage = event.usage.to_api()
        elif isinstance(event, Notice) and event.subtype in ("memory_warning", "skill_warning"):
            _warn(event.text)
        if isinstance(event, (HookStarted, HookResponse)) and not (self.hook_events or event.hook_event == "SessionStart"):
            return
        found = stream_json(event, self.live.session.session_id, __version__)
        if found is None and self.replay_prompts and isinstance(event, UserMessage) and not event.synthetic:
            recorder = self.live.session.recorder  # its last record is the prompt's: the id of the prompt's checkpoint
            recorded = recorder.last_uuid if isinstance(recorder, EventRecorder) else None
            found = {"type": "user", "message": event.message.to_api(), "parent_tool_use_id": None,
                     "uuid": recorded or uuid4(), "isReplay": True}
        if found is None:
            return
        if isinstance(event, SystemInit):
            found = {**found, **self.init, "permissionMode": self.live.agent.permissions.mode}
        self.line({**found, "uuid": found.get("uuid") or uuid4(), "session_id": self.live.session.session_id})

    def state(self, state: str) -> None:
        """`system/session_state_changed` (only when the host asked for them): `idle` after a
        result tells the SDK the run is over, so it may close stdin."""
        if self.state_frames:
            self.line({"type": "system", "subtype": "session_state_changed", "state": state, "sdk_host_only": True,
                       "uuid": uuid4(), "session_id": self.live.session.session_id})

    def status(self) -> None:
        self.line({"type": "system", "subtype": "status", "status": None, "permissionMode": self.live.agent.permissions.mode,
                   "uuid": uuid4(), "session_id": self.live.session.session_id})


def _warn(text: str) -> None:
    print(f"loopwright: warning: {visible(text)}", file=sys.stderr, flush=True)
