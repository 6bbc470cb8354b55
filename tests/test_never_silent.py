"""Never silent (issue 19): a tool call whose input is not a JSON object, a stop or finish reason
loopwright does not know, an API that cannot be reached, and the HTTP status of the API error a
run ended on. Each case is driven over the wire through the simulator, on the Messages API and on
an OpenAI-compatible chat API, with a counting tool that proves what ran."""

from __future__ import annotations

import json
import socket

import pytest

from loopwright.agent import Agent
from loopwright.core.events import ApiRetry, Notice
from loopwright.permissions.decide import PermissionRules
from loopwright.providers import http as http_module
from loopwright.providers.anthropic import AnthropicModel
from loopwright.testing import Simulator
from loopwright.testing.clock import FakeClock
from loopwright.tools.base import tool
from test_cli import cli

pytestmark = pytest.mark.anyio

APIS = ["messages", "chat"]


def counting_tool(runs: list[str]):
    @tool(name="Mark")
    def mark(marker: str) -> str:
        """Record that this call ran."""
        runs.append(marker)
        return f"marked {marker}"

    return mark


class Outcome:
    def __init__(self, result, sim, runs, events, api):
        self.result, self.runs, self.events = result, runs, events
        self.json = result.to_json()
        raw = sim.message_requests if api == "messages" else sim.chat_requests
        self.bodies = [r.body for r in raw]
        self.statuses = [r.response_status for r in raw]

    def notices(self, subtype):
        return [e for e in self.events if isinstance(e, Notice) and e.subtype == subtype]


async def drive(api, script, monkeypatch, tmp_path, *, prompt="go"):
    runs, events = [], []
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    with Simulator(script) as sim:
        if api == "messages":
            kw = {"model_client": AnthropicModel(base_url=sim.base_url, api_key="sk-test")}
        else:
            kw = {"model": f"openai-compatible:{sim.base_url}/v1#local"}
        agent = Agent(cwd=tmp_path, clock=FakeClock(), tools=[counting_tool(runs)],
                      permissions=PermissionRules(allow=("Mark",)), **kw)
        async with agent.open() as running:
            result = await running.prompt(prompt, on_event=events.append)
        out = Outcome(result, sim, runs, events, api)
        assert not sim.unmatched and not sim.errors
    return out


def raw_call(raw, **extra):
    """A finished tool_use block whose streamed input (chat: `arguments`) is exactly `raw`."""
    return {"type": "tool_use", "name": "Mark", "partial_json": raw, **extra}


def good_call(marker, **extra):
    return {"type": "tool_use", "name": "Mark", "input": {"marker": marker}, **extra}


def results_sent(api, body):
    """(tool id, is_error, text) of the tool results that answer the previous call."""
    if api == "messages":
        return [(b["tool_use_id"], bool(b.get("is_error")), b["content"])
                for b in body["messages"][-1]["content"] if b["type"] == "tool_result"]
    answers = []
    for m in reversed(body["messages"]):
        if m["role"] != "tool":
            break
        answers.insert(0, (m["tool_call_id"], m["content"].startswith("Error: "), m["content"]))
    return answers


def calls_sent(api, body):
    """(id, input) of the tool calls of the last assistant message sent back."""
    assistant = [m for m in body["messages"] if m["role"] == "assistant"][-1]
    if api == "messages":
        return [(b["id"], b["input"]) for b in assistant["content"] if b["type"] == "tool_use"]
    return [(c["id"], json.loads(c["function"]["arguments"])) for c in assistant.get("tool_calls") or []]


# ------------------------------------------------------------ malformed tool input

MALFORMED = {
    "trailing comma": ('{"marker": "a",}', "Expecting property name"),
    "cut off": ('{"marker": "ec', "Unterminated string"),
    "not JSON": ("ls -la", "Expecting value"),
    "a list": ("[1, 2]", "a JSON array"),
    "a string": ('"ls"', "a JSON string"),
    "null": ("null", "JSON null"),
    "bad escape": ('{"marker": "C:\\dir"}', "Invalid \\escape"),
}


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("case", sorted(MALFORMED))
async def test_a_malformed_call_never_runs_and_is_answered_with_an_error(api, case, monkeypatch, tmp_path):
    raw, problem = MALFORMED[case]
    out = await drive(api, [{"content": [raw_call(raw)]}, {"text": "fixed it"}], monkeypatch, tmp_path)
    assert out.runs == [] and len(out.bodies) == 2
    assert out.json["subtype"] == "success" and out.json["result"] == "fixed it" and not out.json["is_error"]
    [(call_id, call_input)] = calls_sent(api, out.bodies[1])
    assert call_input == {}  # the history carries a valid object; the raw text is in the transcript
    [(answered, is_error, text)] = results_sent(api, out.bodies[1])
    assert answered == call_id and is_error
    assert "Mark" in text and problem in text and raw[:200] in text
    assert "JSON object" in text and "again" in text
    assert "Usual causes: a backslash or a control character" in text and "trailing comma" in text
    [notice] = out.notices("malformed_tool_input")
    assert notice.data["rawInput"] == raw and notice.data["toolName"] == "Mark"


@pytest.mark.parametrize("api", APIS)
async def test_a_non_object_input_value_never_runs(api, monkeypatch, tmp_path):
    script = [{"content": [{"type": "tool_use", "name": "Mark", "input": ["a", "b"]}]}, {"text": "ok"}]
    out = await drive(api, script, monkeypatch, tmp_path)
    assert out.runs == [] and out.json["result"] == "ok"
    [(_, is_error, text)] = results_sent(api, out.bodies[1])
    assert is_error and "a JSON array" in text and '["a","b"]' in text.replace(" ", "")


async def test_the_error_shows_only_the_first_200_characters(monkeypatch, tmp_path):
    raw = '{"marker": "' + "x" * 5000
    out = await drive("messages", [{"content": [raw_call(raw)]}, {"text": "ok"}], monkeypatch, tmp_path)
    [(_, _, text)] = results_sent("messages", out.bodies[1])
    assert raw[:200] in text and raw[:201] not in text and "5012 characters" in text
    [notice] = out.notices("malformed_tool_input")
    assert notice.data["rawInput"] == raw  # kept whole in the transcript


@pytest.mark.parametrize("api", APIS)
async def test_valid_calls_of_the_same_response_run_in_order(api, monkeypatch, tmp_path):
    script = [{"content": [good_call("one"), raw_call("[1]"), good_call("two")]}, {"text": "done"}]
    out = await drive(api, script, monkeypatch, tmp_path)
    assert out.runs == ["one", "two"]
    answers = results_sent(api, out.bodies[1])
    assert [a[0] for a in answers] == [c[0] for c in calls_sent(api, out.bodies[1])]
    assert [a[1] for a in answers] == [False, True, False]
    assert out.json["result"] == "done"


@pytest.mark.parametrize("api", APIS)
async def test_three_responses_of_malformed_calls_in_a_row_end_the_run(api, monkeypatch, tmp_path):
    script = [{"content": [raw_call('{"marker": 1,'), raw_call("ls")], "repeat": -1}]
    out = await drive(api, script, monkeypatch, tmp_path)
    assert out.runs == [] and len(out.bodies) == 3
    assert out.json["subtype"] == "error_during_execution" and out.json["is_error"]
    assert out.json["terminal_reason"] == "malformed_tool_input" and out.result.exit_code == 1
    [error] = out.json["errors"]
    assert "3" in error and "Mark" in error and "ls" in error
    last = out.result.messages[-1]  # the conversation stays valid: the last calls are answered too
    assert last.role == "user" and all(b.type == "tool_result" and b.is_error for b in last.content)


async def test_a_valid_call_resets_the_count_of_malformed_responses(monkeypatch, tmp_path):
    bad = {"content": [raw_call("nope")]}
    script = [bad, bad, {"content": [good_call("ok")]}, bad, bad, {"text": "finished"}]
    out = await drive("messages", script, monkeypatch, tmp_path)
    assert out.runs == ["ok"] and len(out.bodies) == 6 and out.json["result"] == "finished"


async def test_a_malformed_call_under_another_stop_reason_is_answered_too(monkeypatch, tmp_path):
    script = [{"content": [raw_call("[]")], "stop_reason": "end_turn"}, {"text": "ok"}]
    out = await drive("messages", script, monkeypatch, tmp_path)
    assert out.runs == [] and out.json["result"] == "ok" and len(out.bodies) == 2


async def test_a_chat_server_sending_arguments_as_an_object_is_understood(monkeypatch, tmp_path):
    from loopwright.providers.openai import ChunkFold

    fold = ChunkFold(None)
    chunk = {"id": "c", "model": "m", "choices": [{"index": 0, "finish_reason": "tool_calls", "delta": {
        "tool_calls": [{"index": 0, "id": "call_1", "function": {"name": "Mark", "arguments": {"marker": "x"}}}]}}]}
    fold.feed(json.dumps(chunk))
    delta = [e for e in fold.finish() if getattr(e, "type", "") == "block_delta"][0]
    assert json.loads(delta.delta["partial_json"]) == {"marker": "x"}


def test_a_resumed_session_with_a_malformed_call_replays_a_valid_conversation(tmp_path):
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    env = {"LOOPWRIGHT_HOME": str(home), "HOME": str(tmp_path / "fakehome")}
    first = [{"content": [{"type": "tool_use", "name": "Bash", "partial_json": '{"command": "touch x",}'}]},
             {"text": "first done"}]
    with Simulator(first) as sim:
        out = cli(["-p", "go", "--output-format", "json", "--allowedTools", "Bash"], sim.base_url, env=env, cwd=work)
    assert out.returncode == 0, out.stderr
    assert not (work / "x").exists()
    from loopwright.stores.jsonl import project_name, read_records

    sid = json.loads(out.stdout)["session_id"]
    records, _ = read_records(home / "projects" / project_name(work) / f"{sid}.jsonl")
    kept = [r for r in records if r.get("subtype") == "malformed_tool_input"]
    assert kept and kept[0]["rawInput"] == '{"command": "touch x",}'
    with Simulator([{"text": "second done"}]) as sim:
        out = cli(["-p", "again", "-c", "--output-format", "json"], sim.base_url, env=env, cwd=work)
        [request] = sim.message_requests
    assert out.returncode == 0, out.stderr  # the strict simulator accepted the replayed history
    assert request.response_status == 200 and json.loads(out.stdout)["result"] == "second done"
    uses = [b for m in request.body["messages"] for b in m["content"] if isinstance(b, dict) and b["type"] == "tool_use"]
    assert [u["input"] for u in uses] == [{}]


# ------------------------------------------------------------ unknown stop and finish reasons


@pytest.mark.parametrize("api", APIS)
async def test_an_unknown_stop_reason_is_handled_by_content_and_named_once(api, monkeypatch, tmp_path):
    script = [{"content": [good_call("a")], "stop_reason": "brand_new_reason"},
              {"content": [good_call("b")], "stop_reason": "brand_new_reason"},
              {"text": "all done", "stop_reason": "brand_new_reason"}]
    out = await drive(api, script, monkeypatch, tmp_path)
    assert out.runs == ["a", "b"] and out.json["result"] == "all done" and out.json["subtype"] == "success"
    [warning] = out.json["warnings"]
    assert "brand_new_reason" in warning
    [notice] = out.notices("unknown_stop_reason")
    assert "brand_new_reason" in notice.text and notice.level == "warning"


@pytest.mark.parametrize("api", APIS)
def test_an_unknown_stop_reason_is_named_once_in_the_transcript_too(api, tmp_path):
    from loopwright.stores.jsonl import project_name, read_records

    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    env = {"LOOPWRIGHT_HOME": str(home), "HOME": str(tmp_path / "fakehome"), "OPENAI_API_KEY": "sk-test"}
    script = [{"content": [good_call("a")], "stop_reason": "brand_new_reason"},
              {"text": "done", "stop_reason": "brand_new_reason"}]
    with Simulator(script) as sim:
        model = [] if api == "messages" else ["--model", f"openai-compatible:{sim.base_url}/v1#local"]
        out = cli(["-p", "go", "--output-format", "json", "--tools", "", *model], sim.base_url, env=env, cwd=work)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["result"] == "done" and [w for w in result["warnings"] if "brand_new_reason" in w]
    records, _ = read_records(home / "projects" / project_name(work) / f"{result['session_id']}.jsonl")
    named = [r for r in records if r.get("subtype") == "unknown_stop_reason"]
    assert len(named) == 1 and "brand_new_reason" in json.dumps(named[0]), records


async def test_each_unknown_value_is_named(monkeypatch, tmp_path):
    script = [{"content": [good_call("a")], "stop_reason": "odd_one"}, {"text": "x", "stop_reason": "odd_two"}]
    out = await drive("messages", script, monkeypatch, tmp_path)
    assert [("odd_one" in w, "odd_two" in w) for w in out.json["warnings"]] == [(True, False), (False, True)]


async def test_known_stop_reasons_raise_no_warning(monkeypatch, tmp_path):
    out = await drive("messages", [{"content": [good_call("a")]}, {"text": "x"}], monkeypatch, tmp_path)
    assert out.json["warnings"] == []


# ------------------------------------------------------------ an API that cannot be reached


def closed_port():
    """A port nothing listens on, whose URL has not answered earlier in this process: the OS hands
    out ports again, and a URL an earlier test's simulator answered on counts as an outage."""
    while True:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        sock.close()  # nothing listens there now: a connection is refused
        if f"http://127.0.0.1:{port}" not in http_module._ANSWERED:
            return port


async def run_against(model_client, tmp_path, prompt="hi"):
    events, clock = [], FakeClock()
    agent = Agent(model_client=model_client, cwd=tmp_path, clock=clock, tools=[])
    async with agent.open() as running:
        result = await running.prompt(prompt, on_event=events.append)
    return result, [e for e in events if isinstance(e, ApiRetry)], clock


@pytest.mark.parametrize("host", ["127.0.0.1:{port}", "api.loopwright-test.invalid"])
async def test_an_unreachable_base_url_fails_after_two_quick_retries(host, tmp_path):
    url = "http://" + host.format(port=closed_port())
    model = AnthropicModel.from_env({"ANTHROPIC_API_KEY": "sk-test", "ANTHROPIC_BASE_URL": url})
    result, retries, clock = await run_against(model, tmp_path)
    assert len(retries) == 2 and len(clock.sleeps) == 2 and all(r.max_retries == 2 for r in retries)
    assert result.is_error and result.subtype == "error_during_execution"
    assert result.terminal_reason == "api_unreachable" and result.exit_code == 1
    [line] = result.errors
    assert "\n" not in line and url in line and "ANTHROPIC_BASE_URL" in line
    assert "check that the server is running and the address is right" in line  # what to do about it
    assert ("refused" if "127.0.0.1" in host else "name") in line
    assert result.to_json()["api_error_status"] is None


async def test_the_default_url_and_an_explicit_one_are_named_as_such(tmp_path):
    port = closed_port()
    model = AnthropicModel(base_url=f"http://127.0.0.1:{port}", api_key="k")
    result, _, _ = await run_against(model, tmp_path)
    assert result.terminal_reason == "api_unreachable" and f"127.0.0.1:{port}" in result.errors[0]
    assert "ANTHROPIC_BASE_URL" not in result.errors[0]


async def test_a_refused_connection_after_the_url_answered_is_an_outage(tmp_path):
    with Simulator([{"text": "first"}]) as sim:
        model = AnthropicModel(base_url=sim.base_url, api_key="k")
        result, _, _ = await run_against(model, tmp_path)
        assert result.result == "first"
    # the simulator is gone: its port now refuses, but this URL has answered before
    model = AnthropicModel(base_url=sim.base_url, api_key="k")
    result, retries, _ = await run_against(model, tmp_path)
    assert len(retries) == 10 and result.terminal_reason == "api_error" and result.retries["network"] == 10


@pytest.mark.parametrize("api", APIS)
async def test_a_chat_model_whose_server_is_down_names_the_model_string(api, tmp_path, monkeypatch):
    port = closed_port()
    if api == "chat":
        name = f"openai-compatible:http://127.0.0.1:{port}/v1#llama"
        agent = Agent(model=name, cwd=tmp_path, clock=FakeClock(), tools=[])
        where = "model name"
    else:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{port}/v1")
        agent = Agent(model="openai:gpt-5", cwd=tmp_path, clock=FakeClock(), tools=[])
        where = "OPENAI_BASE_URL"
    async with agent.open() as running:
        result = await running.prompt("hi")
    assert result.terminal_reason == "api_unreachable" and f"127.0.0.1:{port}" in result.errors[0]
    assert where in result.errors[0]


def test_the_cli_says_in_one_line_which_url_and_where_it_came_from(tmp_path):
    url = f"http://127.0.0.1:{closed_port()}"
    out = cli(["-p", "hi", "--output-format", "json"], env={"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": url},
              cwd=tmp_path)
    result = json.loads(out.stdout)
    assert out.returncode == 1 and result["terminal_reason"] == "api_unreachable"
    assert url in result["errors"][0] and "ANTHROPIC_BASE_URL" in result["errors"][0]
    assert result["retries"]["network"] == 2
    settings = json.dumps({"env": {"ANTHROPIC_BASE_URL": url}})
    out = cli(["-p", "hi", "--settings", settings], env={"ANTHROPIC_API_KEY": "k"}, cwd=tmp_path)
    assert out.returncode == 1
    lines = [ln for ln in (out.stdout + out.stderr).splitlines() if url in ln]
    assert len(lines) == 1 and "settings" in lines[0] and "ANTHROPIC_BASE_URL" in lines[0]


# ------------------------------------------------------------ api_error_status


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("status", [400, 401, 404, 429, 500])
async def test_the_status_of_the_api_error_that_ended_the_run(api, status, monkeypatch, tmp_path):
    out = await drive(api, [{"fault": {"status": status}, "repeat": -1}], monkeypatch, tmp_path)
    assert out.json["is_error"] and out.json["api_error_status"] == status


async def test_no_api_error_status_without_an_api_error(monkeypatch, tmp_path):
    out = await drive("messages", [{"fault": {"status": 500}}, {"text": "ok"}], monkeypatch, tmp_path)
    assert out.json["result"] == "ok" and out.json["api_error_status"] is None


# ------------------------------------------------------------ found by the loop fuzz (test_loop_fuzz.py)


@pytest.mark.parametrize("api", ["messages"])
async def test_a_response_with_nothing_readable_is_an_empty_response_not_a_silent_success(api, monkeypatch, tmp_path):
    unreadable = {"content": [{"type": "mystery_block", "payload": {"x": 1}}]}
    out = await drive(api, [dict(unreadable, repeat=3)], monkeypatch, tmp_path)
    assert len(out.bodies) == 3 and out.json["is_error"] and out.json["terminal_reason"] == "empty_response"
    out = await drive(api, [unreadable, {"text": "now in words"}], monkeypatch, tmp_path)
    assert out.json["result"] == "now in words" and not out.json["is_error"]


async def test_an_empty_pause_turn_adds_no_empty_message_to_the_conversation(monkeypatch, tmp_path):
    script = [{"content": [], "stop_reason": "pause_turn"}, {"content": [good_call("a")]}, {"text": "done"}]
    out = await drive("messages", script, monkeypatch, tmp_path)
    assert out.runs == ["a"] and out.json["result"] == "done" and set(out.statuses) == {200}
    assert all(m["content"] for m in out.bodies[-1]["messages"])


async def test_tool_calls_in_a_response_that_filled_the_context_window_are_not_sent_back_unanswered(
        monkeypatch, tmp_path):
    script = [{"content": [good_call("a")]}, {"content": [good_call("b")]}, {"content": [good_call("c")]},
              {"content": [{"type": "text", "text": "next: "}, good_call("d")], "stop_reason": "model_context_window_exceeded"},
              {"text": "<summary>marked a, b and c</summary>"}, {"text": "done"}]
    out = await drive("messages", script, monkeypatch, tmp_path)
    assert set(out.statuses) == {200} and out.json["result"] == "done"
    assert out.runs == ["a", "b", "c"]  # d did not run: the model is told so and may call it again
    resumed = out.bodies[-1]["messages"]
    assert "Mark" in resumed[-2]["content"][-1]["text"] and "did not run" in resumed[-2]["content"][-1]["text"]
