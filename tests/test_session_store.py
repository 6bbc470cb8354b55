"""The JSONL store and opening sessions through it: paths, compact lines, torn and damaged files,
the single-writer lock, and new / resume / fork / no persistence from the library."""

import json
import os
import subprocess
from datetime import datetime, timezone
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopwright.agent import Agent, Session
from loopwright.core.events import AssistantMessage, ToolStarted, UserMessage
from loopwright.permissions.decide import PermissionRules
from loopwright.session import UNKNOWN_OUTCOME, Recorder, SessionError, iso_timestamp, open_session
from loopwright.stores.jsonl import JsonlLog, JsonlStore, home, project_name, read_records
from loopwright.testing.scripted import ScriptedModel, tool_call
from loopwright.tools import tool
from loopwright.core.types import Message, ToolUseBlock, Usage

pytestmark = pytest.mark.anyio


def test_home_and_project_directory_follow_claude_codes_rule(tmp_path):
    assert home({"LOOPWRIGHT_HOME": str(tmp_path)}) == tmp_path
    assert home({}) == Path("~/.loopwright").expanduser()
    assert project_name("/home/ann/my proj.v2") == "-home-ann-my-proj-v2"
    long = project_name("/" + "x" * 300)
    assert len(long) == 217 and long.startswith("-xxx") and long != project_name("/" + "x" * 301)
    store = JsonlStore(tmp_path, "/srv/app")
    assert store.location("abc") == str(tmp_path / "projects" / "-srv-app" / "abc.jsonl")


def test_lines_are_compact_json_that_grep_finds(tmp_path):
    log = JsonlLog(tmp_path / "p" / "s.jsonl")
    log.append({"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text", "text": "é"}]}})
    log.close()
    text = (tmp_path / "p" / "s.jsonl").read_text(encoding="utf-8")
    assert text == '{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"é"}]}}\n'
    assert oct((tmp_path / "p" / "s.jsonl").stat().st_mode & 0o777) == "0o600"


def test_a_torn_last_line_is_skipped_with_a_warning_and_cut_before_appending(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"a":1}\n{"b":2}\n{"type":"user","mess')
    records, warnings = read_records(path)
    assert records == [{"a": 1}, {"b": 2}] and len(warnings) == 1 and "cut off by a crash" in warnings[0]
    log = JsonlLog(path)
    log.append({"c": 3})
    log.close()
    assert path.read_bytes() == b'{"a":1}\n{"b":2}\n{"c":3}\n'


def test_a_whole_last_record_missing_its_newline_is_kept(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"a":1}\n{"b":2}')
    assert read_records(path) == ([{"a": 1}, {"b": 2}], [])
    log = JsonlLog(path)
    log.append({"c": 3})
    log.close()
    assert path.read_bytes() == b'{"a":1}\n{"b":2}\n{"c":3}\n'


def test_a_damaged_middle_line_is_an_error_not_a_silent_skip(tmp_path):
    """Skipping it could lose a tool_started record and so run a tool twice."""
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"a":1}\nnot json\n{"b":2}\n')
    with pytest.raises(ValueError, match="line 2"):
        read_records(path)


def test_a_second_writer_is_refused_while_the_first_holds_the_file(tmp_path):
    path = tmp_path / "s.jsonl"
    first, second = JsonlLog(path), JsonlLog(path)
    first.append({"a": 1})
    with pytest.raises(BlockingIOError, match="another loopwright process"):
        second.append({"b": 2})
    first.close()
    second.append({"b": 2})  # the lock dies with its holder
    second.close()


def test_ids_are_file_names_never_paths_and_latest_is_the_last_written(tmp_path):
    store = JsonlStore(tmp_path, "/w")
    assert store.find("../../etc/passwd") is None and store.load("../x") is None
    for name in ("old", "new"):
        log = store.open(name)
        log.append({"n": name})
        log.close()
    os.utime(store.location("old"), ns=(1, 1))
    assert store.latest() == "new"
    other = JsonlStore(tmp_path, "/elsewhere")
    assert other.latest() is None and other.find("old") == Path(store.location("old"))


def test_a_new_session_is_created_in_this_project_without_a_search(tmp_path):
    """A fresh random id is in use nowhere: opening it must not search every project (one stat
    each, paid on every start). Even an id another project holds stays in this project."""
    elsewhere = JsonlStore(tmp_path, "/elsewhere")
    log = elsewhere.open("00000000-0000-4000-8000-000000000001")
    log.append({"n": 1})
    log.close()
    mine = JsonlStore(tmp_path, "/w")
    session = open_session(mine, "/w", new_id=lambda: "00000000-0000-4000-8000-000000000001")
    assert session.transcript_path == str(mine.project / "00000000-0000-4000-8000-000000000001.jsonl")
    with pytest.raises(SessionError, match="already in use"):  # an id the user chose is checked
        open_session(mine, "/w", session_id="00000000-0000-4000-8000-000000000001")


# ---------------------------------------------------------------- opening, from the library


def _agent(session, model, **kw):
    """An agent and the library's `Session` over the store's opened one."""
    return Agent(model_client=model, cwd=kw.pop("cwd"), **kw), Session.opened(session)


async def test_library_run_then_resume_replays_the_same_conversation(tmp_path):
    store = JsonlStore(tmp_path / "home", tmp_path)
    first = open_session(store, str(tmp_path))
    assert first.source == "startup" and first.history == [] and not Path(first.transcript_path).exists()
    agent, conversation = _agent(first, ScriptedModel(["hello"]), cwd=tmp_path, tools=[])
    await agent.run("hi", session=conversation)
    first.close()
    again = open_session(store, str(tmp_path), resume=first.session_id)
    assert again.source == "resume" and again.session_id == first.session_id
    assert again.history == conversation.history and again.transcript_path == first.transcript_path
    model = ScriptedModel(["more"])
    agent2, conversation2 = _agent(again, model, cwd=tmp_path, tools=[])
    await agent2.run("and?", session=conversation2)
    again.close()
    raw, _ = store.load(first.session_id)
    assert [r["message"]["content"][0]["text"] for r in raw if r["type"] in ("user", "assistant")] == [
        "hi", "hello", "and?", "more"]


async def test_tool_started_is_on_disk_before_the_tool_runs(tmp_path):
    store = JsonlStore(tmp_path / "home", tmp_path)
    session = open_session(store, str(tmp_path))
    seen = {}

    @tool()
    async def probe() -> str:
        """Reads its own transcript while it runs."""
        seen["types"] = [r["type"] for r in read_records(Path(session.transcript_path))[0]]
        return "ok"

    agent, conversation = _agent(session, ScriptedModel([tool_call("probe", {}), "done"]), cwd=tmp_path,
                                 tools=[probe], permissions=PermissionRules(allow=("probe",)))
    await agent.run("go", session=conversation)
    session.close()
    assert seen["types"] == ["user", "assistant", "tool_started"]


def _crashed(store, tmp_path, sid="s-crash"):
    """A transcript that ends the way a kill -9 during a tool leaves it."""
    log = store.open(sid)
    rec = Recorder(log, sid, str(tmp_path))
    call = ToolUseBlock("t1", "Bash", {"command": "deploy"})
    rec(UserMessage(Message.user("deploy"), synthetic=False))
    rec(AssistantMessage(Message("assistant", (call,)), "m", "tool_use", Usage(), "msg", 1))
    rec(ToolStarted("t1", "Bash", call.input))
    log.close()
    return sid


def test_resume_answers_the_interrupted_call_once_and_records_that_answer(tmp_path):
    store = JsonlStore(tmp_path / "home", tmp_path)
    sid = _crashed(store, tmp_path)
    session = open_session(store, str(tmp_path), resume=sid)
    session.close()
    last = session.history[-1].content[0]
    assert last.is_error and last.text == UNKNOWN_OUTCOME.format(name="Bash")
    assert "interrupted mid-turn" in session.warnings[0] and "Bash" in session.warnings[0]
    # the answer is now in the file: resuming again neither warns nor adds a second answer
    again = open_session(store, str(tmp_path), resume=sid)
    again.close()
    assert again.history == session.history and again.warnings == []


def test_fork_copies_the_history_into_a_new_id_and_leaves_the_old_file_alone(tmp_path):
    store = JsonlStore(tmp_path / "home", tmp_path)
    sid = _crashed(store, tmp_path)
    before = Path(store.location(sid)).read_bytes()
    fork = open_session(store, str(tmp_path), resume=sid, fork=True, session_id="forked-1")
    fork.close()
    assert fork.source == "fork" and fork.session_id == "forked-1" and fork.resumed_from == sid
    assert Path(store.location(sid)).read_bytes() == before
    raw, _ = store.load("forked-1")
    assert {r["sessionId"] for r in raw} == {"forked-1"}
    assert [r["type"] for r in raw] == ["user", "assistant", "tool_started", "system", "user"]
    assert open_session(store, str(tmp_path), resume="forked-1", persist=False).history == fork.history


def test_no_persistence_reads_but_never_writes(tmp_path):
    store = JsonlStore(tmp_path / "home", tmp_path)
    sid = _crashed(store, tmp_path)
    before = Path(store.location(sid)).read_bytes()
    session = open_session(store, str(tmp_path), resume=sid, persist=False)
    assert session.recorder is None and session.transcript_path == "" and session.history[-1].role == "user"
    assert Path(store.location(sid)).read_bytes() == before
    fresh = open_session(store, str(tmp_path), persist=False)
    assert fresh.recorder is None and not Path(store.location(fresh.session_id)).exists()


def test_opening_errors_are_one_clear_sentence(tmp_path):
    store = JsonlStore(tmp_path / "home", tmp_path)
    with pytest.raises(SessionError, match="No conversation found with session ID: nope"):
        open_session(store, str(tmp_path), resume="nope")
    with pytest.raises(SessionError, match="No conversation found to continue"):
        open_session(store, str(tmp_path), continue_last=True)
    sid = _crashed(store, tmp_path)
    with pytest.raises(SessionError, match="already in use"):
        open_session(store, str(tmp_path), session_id=sid)
    holder = open_session(store, str(tmp_path), resume=sid)
    with pytest.raises(SessionError, match="another loopwright process"):
        open_session(store, str(tmp_path), resume=sid)
    holder.close()


def test_grep_finds_assistant_records_in_a_real_file(tmp_path):
    store = JsonlStore(tmp_path / "home", tmp_path)
    sid = _crashed(store, tmp_path)
    out = subprocess.run(["grep", '"role":"assistant"', store.location(sid)], capture_output=True, text=True)
    lines = out.stdout.splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["message"]["content"][0]["name"] == "Bash"


@settings(max_examples=2000, deadline=None)
@given(st.floats(min_value=0, max_value=4e9, allow_nan=False))
def test_timestamps_read_as_datetime_writes_them(seconds):
    expected = datetime.fromtimestamp(seconds, timezone.utc).isoformat(timespec="milliseconds")
    assert iso_timestamp(seconds) == expected.replace("+00:00", "Z")


async def test_resume_after_an_empty_response_replays_what_the_model_was_last_sent(tmp_path):
    """An empty answer after tool results followed by text is resent with the results alone; the
    transcript says so, and a resume rebuilds that conversation, not the one with the text."""
    from loopwright.hooks import HookOutput, HookRunner
    from loopwright.providers.anthropic import AnthropicModel
    from loopwright.testing import Simulator

    store = JsonlStore(tmp_path / "home", tmp_path)
    session = open_session(store, str(tmp_path))
    hooks = HookRunner()
    hooks.on("PostToolBatch", lambda event: HookOutput(additional_context="remember the style guide"))

    @tool(read_only=True)
    async def look() -> str:
        """Look around."""
        return "all quiet"

    script = [{"tool_use": {"name": "look", "input": {}}}, {"content": [], "stop_reason": "end_turn"},
              {"text": "done"}]
    with Simulator(script) as sim:
        agent, conversation = _agent(session, AnthropicModel(base_url=sim.base_url, api_key="sk-test"), cwd=tmp_path,
                       tools=[look], hooks=hooks)
        result = await agent.run("go", session=conversation)
        sent = [r.body["messages"] for r in sim.message_requests]
    session.close()
    assert result.result == "done"
    assert sent[1][-1]["content"][-1] == {"type": "text", "text": "remember the style guide",
                                          "cache_control": {"type": "ephemeral"}}  # the newest block is marked
    assert all(b["type"] == "tool_result" for b in sent[2][-1]["content"])  # resent without the text
    again = open_session(store, str(tmp_path), resume=session.session_id)
    again.close()
    unmarked = [{**m, "content": [{k: v for k, v in b.items() if k != "cache_control"} for b in m["content"]]}
                for m in sent[2]]  # the cache marks are the wire's, not the conversation's
    assert [m.to_api() for m in again.history] == [*unmarked, {"role": "assistant", "content": [
        {"type": "text", "text": "done"}]}]
