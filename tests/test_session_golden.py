"""Golden transcripts per record schema version: every fixture under tests/fixtures/sessions/v<N>/
replays to its expected conversation, and today's recorder writes the current version's files
byte for byte. Regenerate (only for a deliberate schema change, with a new version directory):
LOOPWRIGHT_REGEN_GOLDEN=1 pytest tests/test_session_golden.py"""

import json
import os
from pathlib import Path

import pytest

from loopwright.core.events import (
    ApiRetry, AssistantMessage, CompactBoundary, Notice, ResultEvent, RunResult, ToolFinished,
    ToolStarted, UserMessage,
)
from loopwright.session import SCHEMA_VERSION, Record, Recorder, restore
from loopwright.stores.jsonl import encode, read_records
from loopwright.core.types import Message, TextBlock, ToolResultBlock, ToolUseBlock, Usage

FIXTURES = Path(__file__).parent / "fixtures" / "sessions"
REGEN = os.environ.get("LOOPWRIGHT_REGEN_GOLDEN") == "1"
SID = "0b7c3a52-5f0e-4c43-9a57-6f3cbb1c2d11"


def _assistant(*blocks, stop="end_turn", n=1):
    return AssistantMessage(Message("assistant", tuple(blocks)), "claude-sonnet-5", stop,
                            Usage(100 * n, 10 * n), f"msg_{n:04d}", n)


def _result(text):
    return ResultEvent(RunResult("success", False, text, SID, 2, 1500, 900, 0.0123, Usage(300, 30), {}, "end_turn",
                                 "completed"))


def _call(i, name, tool_input):
    return ToolUseBlock(f"toolu_{i:02d}", name, tool_input)


def _done(call, output, is_error=False):
    block = ToolResultBlock(call.id, output, is_error)
    return ToolFinished(call.id, call.name, is_error, output, block)


def tools_session():
    bash = _call(1, "Bash", {"command": "pytest -q"})
    res = _done(bash, "3 passed")
    return [
        UserMessage(Message.user("run the tests"), synthetic=False),
        lambda rec: rec.attach({"type": "goal_status", "met": False, "sentinel": True, "condition": "the tests pass"}),
        _assistant(TextBlock("Running them."), bash, stop="tool_use", n=1),
        ToolStarted(bash.id, bash.name, bash.input), res,
        UserMessage(Message("user", (res.result,))),
        ApiRetry(1, 10, 0.5, "overloaded", 529, "Overloaded"),
        Notice("info", "continuing after max_tokens"),
        _assistant(TextBlock("All 3 tests pass."), n=2),
        lambda rec: rec.attach({"type": "goal_status", "met": True, "condition": "the tests pass"}),
        _result("All 3 tests pass."),
    ]


def compacted_session():
    read = _call(1, "Read", {"file_path": "/w/a.py"})
    res = _done(read, "1\tprint('a')")
    kept = (Message.user("This conversation was compacted ...\n<summary>\nRead a.py\n</summary>"),
            Message("assistant", (TextBlock("Read it."),)), Message.user("and now b"))
    return [
        UserMessage(Message.user("read a.py"), synthetic=False),
        _assistant(read, stop="tool_use", n=1),
        ToolStarted(read.id, read.name, read.input), res, UserMessage(Message("user", (res.result,))),
        _assistant(TextBlock("Read it."), n=2),
        UserMessage(Message.user("and now b"), synthetic=False),
        CompactBoundary("auto", 150_000, 2_000, "Read a.py", kept),
        _assistant(TextBlock("b is next."), n=3),
    ]


def crash_mid_tools_session():
    """Killed while the second of three tools ran: one finished, one started, one never started."""
    read, bash, write = (_call(1, "Read", {"file_path": "/w/a"}), _call(2, "Bash", {"command": "make deploy"}),
                         _call(3, "Write", {"file_path": "/w/b", "content": "x"}))
    return [
        UserMessage(Message.user("deploy"), synthetic=False),
        _assistant(read, bash, write, stop="tool_use", n=1),
        ToolStarted(read.id, read.name, read.input), _done(read, "contents of a"),
        ToolStarted(bash.id, bash.name, bash.input),
    ]


def crash_before_tools_session():
    bash = _call(1, "Bash", {"command": "ls"})
    return [UserMessage(Message.user("list"), synthetic=False), _assistant(bash, stop="tool_use", n=1)]


SCENARIOS = {"tools": tools_session, "compacted": compacted_session, "crash_mid_tools": crash_mid_tools_session,
             "crash_before_tools": crash_before_tools_session}


class MemoryLog:
    location = "memory"

    def __init__(self):
        self.records, self.syncs = [], []

    def append(self, record, *, sync=False):
        self.records.append(record)
        self.syncs.append(sync)

    def close(self):
        pass


def record(events):
    """The lines today's recorder writes for the events, with fixed ids and times."""
    log, ids, times = MemoryLog(), iter(range(1, 1000)), iter(range(1000))
    rec = Recorder(log, SID, "/w", now=lambda: 1_790_000_000 + next(times) * 0.25,
                   new_id=lambda: f"00000000-0000-4000-8000-{next(ids):012d}")
    for event in events:
        event(rec) if callable(event) else rec(event)  # a callable uses the recorder's own API
    return b"".join(encode(r) for r in log.records)


def expected_of(lines: bytes):
    restored = restore(Record.from_json(json.loads(line)) for line in lines.splitlines())
    return {"messages": [m.to_api() for m in restored.messages], "recovered": [list(r) for r in restored.recovered]}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_recorder_writes_the_current_golden_files(name):
    current = FIXTURES / f"v{SCHEMA_VERSION}"
    lines = record(SCENARIOS[name]())
    if REGEN:
        current.mkdir(parents=True, exist_ok=True)
        (current / f"{name}.jsonl").write_bytes(lines)
        (current / f"{name}.expected.json").write_text(json.dumps(expected_of(lines), indent=1) + "\n")
    assert lines == (current / f"{name}.jsonl").read_bytes(), "the record format changed: bump SCHEMA_VERSION"


def golden_files():
    return sorted(FIXTURES.glob("v*/*.jsonl"))


def test_there_is_a_golden_directory_for_every_version_up_to_the_current():
    versions = {int(p.parent.name[1:]) for p in golden_files()}
    assert versions == set(range(1, SCHEMA_VERSION + 1))


@pytest.mark.parametrize("path", golden_files(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_golden_transcript_replays_to_its_conversation(path):
    raw, warnings = read_records(path)
    restored = restore(Record.from_json(r) for r in raw)
    expected = json.loads(path.with_suffix("").with_suffix(".expected.json").read_text())
    assert [m.to_api() for m in restored.messages] == expected["messages"]
    assert [list(r) for r in restored.recovered] == expected["recovered"]
    assert len(warnings) == expected.get("torn_lines", 0)
