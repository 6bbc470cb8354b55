"""The `Recorder`: turns the loop's events into transcript records and appends them to a
`SessionLog`, synchronously, so each record is written before the effect it describes; the fsync
that makes them survive a power cut is one per step, before a tool runs, off the event loop."""

from __future__ import annotations

import time
from typing import Any, Callable, Mapping, assert_never

from ..core.events import (
    ApiRetry, AssistantMessage, CompactBoundary, Event, GoalStatus, HookResponse, HookStarted, LoopStatus, ModelCall,
    Notice, PartialEvent, ResultEvent, SystemInit, ToolFinished, ToolProgress, ToolStarted, UserMessage,
)
from ..core.ids import uuid4
from ..core.errors import SessionError
from ..core.storeports import DeferredSync, KeepsSidechains, SessionLog
from ..core.types import ToolResultBlock
from .records import (
    AssistantEntry, AttachmentEntry, CompactEntry, Entry, Record, SystemEntry, ToolFinishedEntry,
    ToolStartedEntry, UserEntry,
)


def iso_timestamp(seconds: float) -> str:
    """UTC, millisecond precision, `Z`-suffixed (`datetime` is not imported for it: start-up)."""
    whole = int(seconds)
    micros = round((seconds - whole) * 1_000_000)  # rounded as datetime.fromtimestamp rounds
    whole, micros = whole + micros // 1_000_000, micros % 1_000_000
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + f".{micros // 1000:03d}Z"


class Recorder:
    """Consumes the loop's events (call it from `emit`, before any renderer) and appends one record
    per event that changes the session. Synchronous on purpose: a record is written before the
    effect it describes (a tool_started before the tool runs), so a killed process loses none.

    Power cuts: a log that can `sync` (JSONL) is fsynced by `settle()`, which the loop awaits
    just before tools run, on the process's group-commit thread (`groupsync`), so other loops of
    the process go on meanwhile; one fsync covers every record of the step (the tool results,
    the answer, its tool_started records). The run's result is fsynced as it is written,
    `close()` fsyncs what is left. A power cut can lose only records written since the last tool
    started: a resume then answers that tool's call "outcome unknown" and never runs it again.
    `defer_sync=False` fsyncs each record that must survive as it is written, on the calling
    thread."""

    def __init__(self, log: SessionLog, session_id: str, cwd: str, *, parent: str | None = None,
                 now: Callable[[], float] = time.time, new_id: Callable[[], str] = uuid4,
                 marks: Mapping[str, Any] | None = None, defer_sync: bool = True,
                 opening: Mapping[str, Any] | None = None) -> None:
        self.log, self.session_id, self.cwd = log, session_id, cwd
        # a log that can sync later gets one fsync a step (settle); any other, one a record that must last
        self._syncs: DeferredSync | None = log if defer_sync and isinstance(log, DeferredSync) else None
        self._defer = self._syncs is not None
        self._dirty = False
        self.last_uuid = parent
        self._now, self._new_id = now, new_id
        self.marks = dict(marks or {})  # added to every record: a sidechain's `isSidechain` and `agentId`
        # added to the session's first record only: what the project was at the start (`gitHead`),
        # for a replay; the file still appears with the first record, not before
        self.opening = dict(opening or {})

    def sidechain(self, agent_id: str) -> "Recorder | None":
        """The recorder of a subagent's own transcript beside this one (the log's `sidechain`,
        e.g. `<session-id>/subagents/agent-<id>.jsonl`), every record marked `isSidechain` with
        its `agentId`, as Claude Code writes them; None when the log has no sidechains."""
        if not isinstance(self.log, KeepsSidechains):
            return None
        return Recorder(self.log.sidechain(agent_id), self.session_id, self.cwd, now=self._now, new_id=self._new_id,
                        marks={"isSidechain": True, "agentId": agent_id}, defer_sync=self._defer)

    def __call__(self, event: Event) -> None:
        match event:
            case UserMessage(message=message, synthetic=synthetic):
                self.append(UserEntry(message, synthetic), sync=True)
            case AssistantMessage():
                self.append(AssistantEntry(event.message, event.model, event.id, event.stop_reason, event.usage),
                            sync=True)
            case ToolStarted(tool_use_id=tid, name=name, input=tool_input):
                # Synced: this line is what stops a resume from running the tool a second time.
                self.append(ToolStartedEntry(tid, name, tool_input), sync=True)
            case ToolFinished(tool_use_id=tid, name=name):
                result = event.result or ToolResultBlock(tid, event.output, event.is_error)
                self.append(ToolFinishedEntry(tid, name, result))
            case CompactBoundary():
                self.append(CompactEntry(event.trigger, event.pre_tokens, event.post_tokens, event.summary,
                                         event.messages), sync=True)
            case Notice(level=level, text=text, subtype=subtype, data=data):
                self.append(SystemEntry(subtype, text, level, data))
            case ApiRetry():
                self.append(SystemEntry("api_retry", event.message, "warning", {
                    "attempt": event.attempt, "maxRetries": event.max_retries, "errorKind": event.error_kind,
                    "errorStatus": event.status, "retryDelayMs": int(event.delay_s * 1000)}))
            case GoalStatus():
                self.attach(event.attachment())
            case ModelCall():
                self.append(SystemEntry("model_call", event.purpose, "info", {
                    "purpose": event.purpose, "system": event.system, "request": event.request, "answer": event.answer}))
            case LoopStatus():
                self.append(SystemEntry("loop_status", event.note or event.reason, "info", event.to_json()))
            case ResultEvent(result=r):
                self.append(SystemEntry("run_result", r.result if not r.is_error else "; ".join(r.errors),
                                        "warning" if r.is_error else "info", {
                    "resultSubtype": r.subtype, "terminalReason": r.terminal_reason, "isError": r.is_error,
                    "numTurns": r.num_turns, "durationMs": r.duration_ms, "totalCostUsd": round(r.total_cost_usd, 8)}),
                    sync=True)
            case SystemInit() | PartialEvent() | HookStarted() | HookResponse() | ToolProgress():
                pass  # nothing of the session changes (hook outcomes show in the messages they shape)
            case _:
                assert_never(event)

    def attach(self, attachment: Mapping[str, Any]) -> Record:
        """Append an `attachment` record, e.g. `{"type": "goal_status", "met": False, ...}`."""
        if not isinstance(attachment.get("type"), str):
            raise ValueError("an attachment needs a string `type`, e.g. goal_status")
        return self.append(AttachmentEntry(dict(attachment)))

    def notice(self, text: str, level: str = "info", subtype: str = "informational", **data: Any) -> Record:
        return self.append(SystemEntry(subtype, text, level, data))

    def append(self, entry: Entry, *, sync: bool = False) -> Record:
        record = Record(entry, self._new_id(), self.last_uuid, self.session_id, iso_timestamp(self._now()), self.cwd)
        final = isinstance(entry, SystemEntry) and entry.subtype == "run_result"  # nothing awaits after it
        deferred = sync and self._defer and not final
        raw = record.to_json() | self.marks if self.marks else record.to_json()
        if self.opening:
            raw, self.opening = raw | self.opening, {}
        try:
            self.log.append(raw, sync=sync and not deferred)
        except OSError as exc:
            # Going on unrecorded would break the promise that resume never runs a tool twice.
            raise SessionError(f"cannot write the transcript {self.log.location}: {exc}") from exc
        self._dirty = deferred or (self._dirty and not sync)
        self.last_uuid = record.uuid
        return record

    async def settle(self) -> None:
        """Make the records written so far durable (one fsync, on the process's group-commit
        thread: `groupsync`); at once when none wait for it."""
        if not self._dirty or self._syncs is None:  # dirty only when deferring: never None then
            return
        from .groupsync import GROUP

        self._dirty = False
        try:
            await GROUP.sync(self._syncs)
        except OSError as exc:
            raise SessionError(f"cannot write the transcript {self.log.location}: {exc}") from exc

    def close(self) -> None:
        if self._dirty and self._syncs is not None:
            self._dirty = False
            self._syncs.sync()
        self.log.close()
