"""Transcript records as data: the typed, versioned record bodies and their envelope, and
`replay()`, which rebuilds the conversation from them (compactions and crashes included)."""

from __future__ import annotations

from dataclasses import field
from typing import Any, Callable, Iterable, Literal, Mapping, Union, assert_never

from ..core.errors import SessionError
from ..core.events import RESENT_RESULTS_ONLY
from ..core.fastclass import dataclass
from ..core.types import Message, ToolResultBlock, Usage

SCHEMA_VERSION = 1
ENVELOPE = ("type", "uuid", "parentUuid", "sessionId", "timestamp", "cwd", "version", "isSidechain", "agentId")
# Upgrades of a raw record from schema N to N+1; replay reads every older version through them.
UPGRADES: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {}

UNKNOWN_OUTCOME = (
    "Outcome unknown: the session crashed while this {name} call was running, so it may have finished, "
    "partly run or not run at all. It was not run again. Before retrying, check its effects: read the "
    "files it would change, look for processes it started, and verify the state it was meant to reach.")
NOT_RUN = "Not run: the session stopped before this {name} call started, so it had no effect. You may call it again."


# ---------------------------------------------------------------- record bodies


@dataclass(frozen=True, slots=True)
class UserEntry:
    message: Message
    synthetic: bool = False  # tool results, continuations, hook feedback: not typed by a person
    type: Literal["user"] = "user"

    def fields(self) -> dict[str, Any]:
        return {"message": self.message.to_api(), "synthetic": self.synthetic}


@dataclass(frozen=True, slots=True)
class AssistantEntry:
    message: Message
    model: str = ""
    id: str = ""
    stop_reason: str | None = None
    usage: Usage = field(default_factory=Usage)
    type: Literal["assistant"] = "assistant"

    def fields(self) -> dict[str, Any]:
        # The Messages API response shape, as Claude Code stores it under `message`.
        return {"message": self.message.to_api() | {"id": self.id, "model": self.model,
                                                    "stop_reason": self.stop_reason, "usage": self.usage.to_api()}}


@dataclass(frozen=True, slots=True)
class SystemEntry:
    subtype: str
    content: str = ""
    level: str = "info"
    data: Mapping[str, Any] = field(default_factory=dict)  # the subtype's own fields, as on disk
    type: Literal["system"] = "system"

    def fields(self) -> dict[str, Any]:
        return {"subtype": self.subtype, "content": self.content, "level": self.level, **self.data}


@dataclass(frozen=True, slots=True)
class CompactEntry:
    """A `system` record, subtype `compact_boundary`: the whole conversation after compaction, so
    replay restarts from it and needs nothing older."""

    trigger: str
    pre_tokens: int
    post_tokens: int
    summary: str
    messages: tuple[Message, ...]
    type: Literal["system"] = "system"

    def fields(self) -> dict[str, Any]:
        return {"subtype": "compact_boundary", "content": "Conversation compacted", "level": "info",
                "compactMetadata": {"trigger": self.trigger, "preTokens": self.pre_tokens,
                                    "postTokens": self.post_tokens},
                "summary": self.summary, "messages": [m.to_api() for m in self.messages]}


@dataclass(frozen=True, slots=True)
class AttachmentEntry:
    attachment: Mapping[str, Any]  # has its own `type`, e.g. goal_status
    type: Literal["attachment"] = "attachment"

    def fields(self) -> dict[str, Any]:
        return {"attachment": dict(self.attachment)}


@dataclass(frozen=True, slots=True)
class ToolStartedEntry:
    tool_use_id: str
    name: str
    input: Mapping[str, Any]
    type: Literal["tool_started"] = "tool_started"

    def fields(self) -> dict[str, Any]:
        return {"toolUseId": self.tool_use_id, "name": self.name, "input": dict(self.input)}


@dataclass(frozen=True, slots=True)
class ToolFinishedEntry:
    tool_use_id: str
    name: str
    result: ToolResultBlock
    type: Literal["tool_finished"] = "tool_finished"

    def fields(self) -> dict[str, Any]:
        return {"toolUseId": self.tool_use_id, "name": self.name, "result": self.result.to_api()}


@dataclass(frozen=True, slots=True)
class OtherEntry:
    """A record type this version does not know (written by a tool beside us); kept, not replayed."""

    type: str
    data: Mapping[str, Any]

    def fields(self) -> dict[str, Any]:
        return dict(self.data)


Entry = Union[UserEntry, AssistantEntry, SystemEntry, CompactEntry, AttachmentEntry, ToolStartedEntry,
              ToolFinishedEntry, OtherEntry]


def _parse_system(d: dict[str, Any]) -> Entry:
    if d.get("subtype") == "compact_boundary":
        meta = d.get("compactMetadata") or {}
        return CompactEntry(str(meta.get("trigger", "auto")), int(meta.get("preTokens", 0)),
                            int(meta.get("postTokens", 0)), str(d.get("summary", "")),
                            tuple(Message.from_api(m) for m in d["messages"]))
    data = {k: v for k, v in d.items() if k not in ("subtype", "content", "level")}
    return SystemEntry(str(d["subtype"]), str(d.get("content", "")), str(d.get("level", "info")), data)


def _parse_assistant(d: dict[str, Any]) -> Entry:
    m = d["message"]
    return AssistantEntry(Message.from_api(m), str(m.get("model", "")), str(m.get("id", "")),
                          m.get("stop_reason"), Usage.from_api(m.get("usage")))


def _parse_result(d: dict[str, Any]) -> ToolResultBlock:
    content = d.get("content", "")
    return ToolResultBlock(str(d["tool_use_id"]), content if isinstance(content, str) else tuple(content),
                           bool(d.get("is_error", False)))


PARSERS: dict[str, Callable[[dict[str, Any]], Entry]] = {
    "user": lambda d: UserEntry(Message.from_api(d["message"]), bool(d.get("synthetic", False))),
    "assistant": _parse_assistant,
    "system": _parse_system,
    "attachment": lambda d: AttachmentEntry(dict(d["attachment"])),
    "tool_started": lambda d: ToolStartedEntry(str(d["toolUseId"]), str(d["name"]), dict(d.get("input") or {})),
    "tool_finished": lambda d: ToolFinishedEntry(str(d["toolUseId"]), str(d["name"]), _parse_result(d["result"])),
}


# ---------------------------------------------------------------- records


@dataclass(frozen=True, slots=True)
class Record:
    """One transcript line: the envelope every record has, and its typed body."""

    entry: Entry
    uuid: str
    parent_uuid: str | None
    session_id: str
    timestamp: str
    cwd: str
    version: int = SCHEMA_VERSION

    @property
    def type(self) -> str:
        return self.entry.type

    def to_json(self) -> dict[str, Any]:
        return {"type": self.entry.type, "uuid": self.uuid, "parentUuid": self.parent_uuid,
                "sessionId": self.session_id, "timestamp": self.timestamp, "cwd": self.cwd,
                "version": self.version, **self.entry.fields()}

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> "Record":
        """Parse (and upgrade) one raw record; `SessionError` names what is wrong with it."""
        d = dict(data)
        version = d.get("version")
        if not isinstance(version, int) or isinstance(version, bool) or version < 1:
            raise SessionError(f"not a loopwright transcript record (version {version!r}): {_brief(d)}")
        if version > SCHEMA_VERSION:
            raise SessionError(f"this transcript was written by a newer loopwright (record schema {version}, "
                               f"this one reads up to {SCHEMA_VERSION}); upgrade loopwright to resume it")
        while d["version"] < SCHEMA_VERSION:
            d = UPGRADES[d["version"]](d)
        body = {k: v for k, v in d.items() if k not in ENVELOPE}
        parse = PARSERS.get(str(d.get("type")))
        try:
            entry = parse(body) if parse else OtherEntry(str(d.get("type")), body)
            return Record(entry, str(d["uuid"]), d.get("parentUuid"), str(d["sessionId"]), str(d["timestamp"]),
                          str(d.get("cwd", "")), SCHEMA_VERSION)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise SessionError(f"malformed {d.get('type')} record ({type(exc).__name__}: {exc}): {_brief(d)}") from None


def _brief(d: Mapping[str, Any]) -> str:
    text = repr(dict(d))
    return text if len(text) <= 120 else text[:117] + "..."


# ---------------------------------------------------------------- replay


@dataclass(frozen=True, slots=True)
class Restored:
    """The conversation rebuilt from records. `recovered` says how each tool call that a crash left
    without an answer was answered: (tool name, "finished" | "unknown" | "not_run")."""

    messages: tuple[Message, ...]
    recovered: tuple[tuple[str, str], ...] = ()
    last_uuid: str | None = None

    @property
    def recovery(self) -> Message | None:
        """The made-up tool results message (the last message), when there is one."""
        return self.messages[-1] if self.recovered else None


REWOUND = "conversation_rewound"  # `loopwright rewind --conversation`: later replays stop before `data.before`


def replay(records: Iterable[Record]) -> list[Message]:
    """The conversation the records describe, ready to send: compact boundaries honoured, and tool
    calls a crash left unanswered given a result (never run again)."""
    return list(restore(records).messages)


def restore(records: Iterable[Record]) -> Restored:
    messages: list[Message] = []
    # The tool ledger of the latest assistant message only: tool_use ids may repeat across runs.
    started: dict[str, ToolStartedEntry] = {}
    finished: dict[str, ToolResultBlock] = {}
    last_uuid = None
    where: dict[str, int] = {}  # a user record's uuid -> how many messages came before it
    for record in records:
        last_uuid = record.uuid
        match record.entry:
            case AssistantEntry(message=message):
                messages.append(message)
                started, finished = {}, {}
            case UserEntry(message=message):
                where[record.uuid] = len(messages)
                messages.append(message)
            case SystemEntry(subtype=subtype, data=data) if subtype == REWOUND and data.get("before") in where:
                messages = messages[:where[str(data["before"])]]  # the conversation as it was before that prompt
                started, finished = {}, {}
            case CompactEntry(messages=kept):
                messages = list(kept)
            case SystemEntry(subtype=subtype) if subtype == RESENT_RESULTS_ONLY and messages:
                messages[-1] = messages[-1].results_only() or messages[-1]
            case ToolStartedEntry(tool_use_id=tid):
                started[tid] = record.entry
            case ToolFinishedEntry(tool_use_id=tid, result=result):
                finished[tid] = result
            case SystemEntry() | AttachmentEntry() | OtherEntry():
                pass
            case _:
                assert_never(record.entry)
    answers = answer_dangling(messages[-1], started, finished) if messages else None
    if answers is None:
        return Restored(tuple(messages), (), last_uuid)
    message, how = answers
    return Restored((*messages, message), how, last_uuid)


def answer_dangling(last: Message, started: Mapping[str, ToolStartedEntry],
                    finished: Mapping[str, ToolResultBlock]) -> tuple[Message, tuple[tuple[str, str], ...]] | None:
    """Results for the tool calls of a last assistant message that has none: the recorded result
    if the tool finished; else an error saying whether it may have run (started) or did not."""
    if last.role != "assistant" or not last.tool_uses:
        return None
    results: list[ToolResultBlock] = []
    how: list[tuple[str, str]] = []
    for call in last.tool_uses:
        if call.id in finished:
            results.append(finished[call.id])
            how.append((call.name, "finished"))
        elif call.id in started:
            results.append(ToolResultBlock(call.id, UNKNOWN_OUTCOME.format(name=call.name), True))
            how.append((call.name, "unknown"))
        else:
            results.append(ToolResultBlock(call.id, NOT_RUN.format(name=call.name), True))
            how.append((call.name, "not_run"))
    return Message("user", tuple(results)), tuple(how)
