"""Deferred sync (issue 14 part 5, issue 32 item 2), a session's default: its records are written at
once but fsynced in a worker thread, once a step, and the loop waits for that fsync before every
tool run, so the power-cut guarantee holds (a tool_started record is durable before its tool runs)
while many loops in one process do not stall each other on fsync."""

import functools
import json
from pathlib import Path

import anyio

from loopwright.agent import Agent, Session
from loopwright.core.ports import ToolContext
from loopwright.permissions.decide import PermissionRules
from loopwright.providers.anthropic import AnthropicModel
from loopwright.session.opening import open_session
from loopwright.stores.jsonl import JsonlLog, JsonlStore, read_records
from loopwright.testing import Simulator
from loopwright.tools import tool

EVENTS: list[tuple] = []


class WatchedLog(JsonlLog):
    """The real append handle, telling the test how many lines were on disk at each fsync."""

    def sync(self) -> None:
        super().sync()
        EVENTS.append(("sync", len(self.path.read_text().splitlines())))


class WatchedStore(JsonlStore):
    def create(self, session_id: str) -> JsonlLog:
        return WatchedLog(super().create(session_id).path)


def lines_in(path: str) -> list[dict]:
    return [json.loads(line) for line in open(path).read().splitlines()]


def test_records_are_fsynced_once_before_each_tool_run(tmp_path) -> None:
    EVENTS.clear()
    session = open_session(WatchedStore(tmp_path / "home", tmp_path), str(tmp_path))

    @tool(read_only=True)
    def mark(context: ToolContext) -> str:
        """Note that it ran."""
        records = lines_in(session.transcript_path)
        EVENTS.append(("tool", len(records), records[-1]["type"]))
        return "marked"

    script = [{"tool_use": {"name": "mark", "input": {}}, "repeat": 2}, {"text": "done"}]
    with Simulator(script) as sim:
        model = AnthropicModel(base_url=sim.base_url, api_key="sk-test")
        agent = Agent(model_client=model, cwd=tmp_path, tools=[mark], permissions=PermissionRules(allow=("mark",)))
        result = anyio.run(functools.partial(agent.run, "mark twice", session=Session.opened(session)))
        session.close()
        requests = len(sim.message_requests)
    assert result.result == "done" and requests == 3
    tools = [i for i, e in enumerate(EVENTS) if e[0] == "tool"]
    assert len(tools) == 2
    for i in tools:
        _, lines, last = EVENTS[i]
        assert last == "tool_started"
        # the fsync just before the run covered every line written so far, the tool_started too
        assert EVENTS[i - 1] == ("sync", lines)
    # one fsync before each of the 2 tool runs, none before a model call (a request lost to a
    # power cut is only sent again); the run's result record is fsynced as it is written
    assert [e[0] for e in EVENTS].count("sync") == 2
    records, warnings = read_records(Path(session.transcript_path))
    assert not warnings and records[-1]["subtype"] == "run_result"
