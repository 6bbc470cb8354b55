"""Transcript records, the recorder and replay, in memory: what is written for each event, when it
is synced, and how replay answers tool calls that a crash left without results."""

import json

import pytest

from loopwright.core.events import (
    AssistantMessage, CompactBoundary, GoalStatus, Notice, PartialEvent, SystemInit, ToolFinished, ToolStarted,
    UserMessage,
)
from loopwright.session import (
    NOT_RUN, SCHEMA_VERSION, AttachmentEntry, OtherEntry, Record, Recorder, SessionError, UserEntry, replay, restore,
)
from loopwright.core.types import BlockStop, Message, TextBlock, ToolResultBlock, ToolUseBlock, Usage


class MemoryLog:
    location = "memory"

    def __init__(self, fail=None):
        self.records, self.syncs, self.fail = [], [], fail

    def append(self, record, *, sync=False):
        if self.fail:
            raise self.fail
        self.records.append(record)
        self.syncs.append(sync)

    def close(self):
        pass


def recorder(log=None):
    return Recorder(log or MemoryLog(), "sid", "/w")


def assistant(*blocks):
    return AssistantMessage(Message("assistant", tuple(blocks)), "m", "tool_use", Usage(1, 1), "msg_1", 1)


def parsed(log):
    return [Record.from_json(json.loads(json.dumps(r))) for r in log.records]


def test_each_event_becomes_its_record_and_turn_boundaries_are_synced():
    rec = recorder()
    call = ToolUseBlock("t1", "Bash", {"command": "ls"})
    result = ToolResultBlock("t1", "a b", False)
    for event in [SystemInit("sid", "/w", "m", (), "default"), UserMessage(Message.user("go"), synthetic=False),
                  PartialEvent(BlockStop(0)), assistant(call), ToolStarted("t1", "Bash", {"command": "ls"}),
                  ToolFinished("t1", "Bash", False, "a b", result), UserMessage(Message("user", (result,))),
                  Notice("warning", "careful")]:
        rec(event)
    log = rec.log
    assert [(r["type"], r.get("subtype")) for r in log.records] == [
        ("user", None), ("assistant", None), ("tool_started", None), ("tool_finished", None), ("user", None),
        ("system", "informational")]
    # fsync after the prompt, the assistant message, the write-ahead tool_started and the results
    assert log.syncs == [True, True, True, False, True, False]
    chain = [r["parentUuid"] for r in log.records]
    assert chain == [None] + [r["uuid"] for r in log.records[:-1]]
    assert all(r["version"] == SCHEMA_VERSION and r["sessionId"] == "sid" and r["cwd"] == "/w" for r in log.records)
    assert log.records[0]["timestamp"].endswith("Z") and log.records[4]["synthetic"] is True
    assert log.records[3]["result"] == {"type": "tool_result", "tool_use_id": "t1", "content": "a b"}


def test_a_goal_status_event_becomes_a_goal_status_attachment():
    rec = recorder()
    rec(GoalStatus("tests pass", sentinel=True))
    record = rec.log.records[0]
    assert record["type"] == "attachment" and record["attachment"]["type"] == "goal_status"
    assert record["attachment"]["sentinel"] is True and record["attachment"]["condition"] == "tests pass"


def test_attach_appends_any_typed_attachment_and_replay_skips_it():
    rec = recorder()
    rec(UserMessage(Message.user("hi"), synthetic=False))
    written = rec.attach({"type": "goal_status", "met": True, "condition": "done"})
    assert isinstance(written.entry, AttachmentEntry) and rec.log.records[-1]["attachment"]["met"] is True
    assert replay(parsed(rec.log)) == [Message.user("hi")]
    with pytest.raises(ValueError, match="type"):
        rec.attach({"met": True})


def test_a_write_failure_stops_the_run_with_a_session_error():
    rec = recorder(MemoryLog(fail=OSError(28, "No space left on device")))
    with pytest.raises(SessionError, match="No space left"):
        rec(ToolStarted("t1", "Bash", {}))


def _records(*entries):
    rec = recorder()
    for entry in entries:
        entry(rec) if callable(entry) else rec(entry)
    return parsed(rec.log)


def test_replay_uses_the_ledger_of_the_last_assistant_message_only():
    """Tool ids can repeat across runs (a fresh API session numbers them again): an old run's
    tool_finished must not answer a new call that never started."""
    call = ToolUseBlock("toolu_1", "Bash", {"command": "rm -rf build"})
    old = ToolResultBlock("toolu_1", "removed", False)
    restored = restore(_records(
        UserMessage(Message.user("clean"), synthetic=False), assistant(call),
        ToolStarted("toolu_1", "Bash", call.input), ToolFinished("toolu_1", "Bash", False, "removed", old),
        UserMessage(Message("user", (old,))), UserMessage(Message.user("again"), synthetic=False),
        assistant(call)))
    last = restored.messages[-1].content[0]
    assert restored.recovered == (("Bash", "not_run"),)
    assert last.is_error and last.text == NOT_RUN.format(name="Bash")


def test_replay_restarts_from_a_compact_boundary():
    kept = (Message.user("summary"), Message("assistant", (TextBlock("ok"),)))
    messages = replay(_records(UserMessage(Message.user("a" * 100), synthetic=False),
                               CompactBoundary("auto", 100, 10, "s", kept), UserMessage(Message.user("next"), False)))
    assert messages == [*kept, Message.user("next")]


def test_a_finished_tool_keeps_its_recorded_result_even_without_the_results_message():
    call = ToolUseBlock("t1", "Read", {"file_path": "/a"})
    result = ToolResultBlock("t1", "content", False)
    restored = restore(_records(UserMessage(Message.user("go"), False), assistant(call),
                                ToolStarted("t1", "Read", call.input), ToolFinished("t1", "Read", False, "", result)))
    assert restored.recovery == Message("user", (result,)) and restored.recovered == (("Read", "finished"),)


def test_record_round_trip_and_version_checks():
    rec = recorder()
    rec(UserMessage(Message.user("hi"), synthetic=False))
    raw = rec.log.records[0]
    assert Record.from_json(raw).to_json() == raw
    with pytest.raises(SessionError, match="newer loopwright"):
        Record.from_json(raw | {"version": SCHEMA_VERSION + 1})
    with pytest.raises(SessionError, match="not a loopwright transcript"):
        Record.from_json({k: v for k, v in raw.items() if k != "version"})
    with pytest.raises(SessionError, match="malformed user record"):
        Record.from_json(raw | {"message": {"content": "no role"}})


def test_unknown_record_types_are_kept_but_not_replayed():
    rec = recorder()
    rec(UserMessage(Message.user("hi"), synthetic=False))
    other = rec.log.records[0] | {"type": "custom-title", "title": "t", "uuid": "u2"}
    other.pop("message")
    records = [Record.from_json(rec.log.records[0]), Record.from_json(other)]
    assert isinstance(records[1].entry, OtherEntry) and records[1].to_json()["title"] == "t"
    assert replay(records) == [Message.user("hi")]


def test_recorder_continues_a_chain_from_a_parent():
    rec = Recorder(MemoryLog(), "sid", "/w", parent="prev-uuid")
    record = rec.append(UserEntry(Message.user("x")))
    assert record.parent_uuid == "prev-uuid" and rec.last_uuid == record.uuid


def _samples():
    from loopwright.core.events import (ApiRetry, HookResponse, HookStarted, LoopStatus, ModelCall, ResultEvent, RunResult,
                                        ToolProgress)

    result = RunResult("success", False, "ok", "sid", 1, 1, 1, 0.0, Usage(), {}, "end_turn", "completed")
    return {
        SystemInit: (SystemInit("sid", "/w", "m", (), "default"), None),
        AssistantMessage: (assistant(TextBlock("hi")), "assistant"),
        UserMessage: (UserMessage(Message.user("hi")), "user"),
        PartialEvent: (PartialEvent(BlockStop(0)), None),
        ToolStarted: (ToolStarted("t", "Bash", {}), "tool_started"),
        ToolFinished: (ToolFinished("t", "Bash", False, "out"), "tool_finished"),
        ToolProgress: (ToolProgress("t", "mcp__s__job", 1, 4, "step 1"), None),  # shown, not recorded
        ApiRetry: (ApiRetry(1, 3, 0.5, "overloaded", 529, "busy"), "system"),
        Notice: (Notice("info", "note"), "system"),
        CompactBoundary: (CompactBoundary("auto", 10, 1, "s", (Message.user("s"),)), "system"),
        GoalStatus: (GoalStatus("c"), "attachment"),
        LoopStatus: (LoopStatus(2, "schedule", 1_800_000_300.0), "system"),
        HookStarted: (HookStarted("h1", "Stop", "Stop"), None),
        HookResponse: (HookResponse("h1", "Stop", "Stop", "success"), None),
        ModelCall: (ModelCall("classifier", "sys", "asked", {"content": [{"type": "text", "text": "ok"}]}), "system"),
        ResultEvent: (ResultEvent(result), "system"),
    }


def test_the_recorder_decides_for_every_event_type():
    """A new event type must get a sample here, and a decision in the recorder: record or skip."""
    import typing

    from loopwright.core.events import Event

    samples = _samples()
    assert set(samples) == set(typing.get_args(Event)), "add the new event type to this table"
    for kind, (event, written) in samples.items():
        rec = recorder()
        rec(event)
        assert [r["type"] for r in rec.log.records] == ([written] if written else []), kind.__name__
        for raw in rec.log.records:
            Record.from_json(raw)  # everything written reads back
