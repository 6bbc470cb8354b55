"""MCP servers as tools, end to end: real servers written with the official `mcp` SDK's server
side (tests/mcpservers/toolbox.py, stdio and streamable HTTP on 127.0.0.1), the real `loopwright`
command, and the loopback simulator as the model."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from loopwright.testing import Simulator

pytest.importorskip("mcp")

CLI = [sys.executable, "-m", "loopwright"]
TOOLBOX = Path(__file__).parent / "mcpservers" / "toolbox.py"


def toolbox(name="tb", **extra):
    return {"mcpServers": {name: {"command": sys.executable, "args": [str(TOOLBOX)], **extra}}}


@pytest.fixture
def dirs(tmp_path):
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    return home, project


def cli(args, cwd, home, sim_url, env=None, timeout=90):
    e = {k: v for k, v in os.environ.items()
         if not k.startswith(("ANTHROPIC_", "LOOPWRIGHT_", "CLAUDE_", "MCP_", "MAX_MCP"))}
    e.update(HOME=str(home), LOOPWRIGHT_HOME=str(home / ".loopwright"), ANTHROPIC_BASE_URL=sim_url,
             ANTHROPIC_API_KEY="sk-test", **(env or {}))
    return subprocess.run(CLI + args, capture_output=True, text=True, env=e, cwd=cwd, timeout=timeout)


def lines(out):
    return [json.loads(line) for line in out.stdout.splitlines() if line.strip()]


def tool_results(request):
    last = request.body["messages"][-1]
    return [b for b in last["content"] if isinstance(b, dict) and b.get("type") == "tool_result"]


def text_of(block):
    c = block["content"]
    return c if isinstance(c, str) else "".join(x.get("text", "") for x in c)


def call(name, **inp):
    return {"tool_use": {"name": name, "input": inp}}


def test_a_stdio_tool_is_offered_called_and_its_result_returned(dirs):
    home, project = dirs
    script = [call("mcp__tb__add", a=2, b=3), {"text": "five"}]
    with Simulator(script) as sim:
        out = cli(["-p", "add", "--output-format", "stream-json", "--verbose", "--allowedTools", "mcp__tb",
                   "--mcp-config", json.dumps(toolbox())], project, home, sim.base_url)
        reqs = sim.message_requests
    assert out.returncode == 0, out.stderr
    init = lines(out)[0]
    assert init["subtype"] == "init" and {"name": "tb", "status": "connected"} in init["mcp_servers"]
    assert "mcp__tb__add" in init["tools"]
    offered = {t["name"]: t for t in reqs[0].body["tools"]}
    assert offered["mcp__tb__add"]["input_schema"]["properties"]["a"]["type"] == "integer"
    assert offered["mcp__tb__add"]["description"] == "Add two integers."
    [result] = tool_results(reqs[1])
    assert not result.get("is_error") and "5" in text_of(result)
    assert lines(out)[-1]["result"] == "five"


def test_without_a_rule_the_call_is_denied_and_never_reaches_the_server(dirs, tmp_path):
    home, project = dirs
    log = tmp_path / "calls.log"
    script = [call("mcp__tb__record", note="one"), {"text": "done"}]
    with Simulator(script) as sim:
        out = cli(["-p", "go", "--output-format", "json", "--mcp-config", json.dumps(toolbox())],
                  project, home, sim.base_url, env={"TOOLBOX_LOG": str(log)})
        reqs = sim.message_requests
    result = json.loads(out.stdout)
    assert [d["tool_name"] for d in result["permission_denials"]] == ["mcp__tb__record"]
    assert tool_results(reqs[1])[0]["is_error"] is True
    assert not log.exists()


@pytest.mark.parametrize("rule", ["mcp__tb", "mcp__tb__*", "mcp__tb__record"])
def test_allow_rules_name_a_server_its_tools_or_one_tool(dirs, tmp_path, rule):
    home, project = dirs
    log = tmp_path / "calls.log"
    script = [call("mcp__tb__record", note="one"), {"text": "done"}]
    with Simulator(script) as sim:
        out = cli(["-p", "go", "--output-format", "json", "--allowedTools", rule,
                   "--mcp-config", json.dumps(toolbox())], project, home, sim.base_url,
                  env={"TOOLBOX_LOG": str(log)})
    assert json.loads(out.stdout)["permission_denials"] == []
    assert log.read_text() == "one\n"


def test_a_bare_deny_of_the_server_removes_its_tools(dirs):
    home, project = dirs
    with Simulator([{"text": "no tools"}]) as sim:
        out = cli(["-p", "go", "--output-format", "json", "--disallowedTools", "mcp__tb",
                   "--mcp-config", json.dumps(toolbox())], project, home, sim.base_url)
        names = [t["name"] for t in sim.message_requests[0].body.get("tools", [])]
    assert out.returncode == 0, out.stderr
    assert names and not [n for n in names if n.startswith("mcp__")]


def test_a_server_that_cannot_start_is_reported_and_the_run_goes_on(dirs):
    home, project = dirs
    config = {"mcpServers": {"gone": {"command": "/nonexistent/server"}, **toolbox()["mcpServers"]}}
    with Simulator([{"text": "still here"}]) as sim:
        out = cli(["-p", "go", "--output-format", "stream-json", "--verbose", "--mcp-config", json.dumps(config)],
                  project, home, sim.base_url)
        text = cli(["-p", "go", "--mcp-config", json.dumps(config)], project, home, sim.base_url) \
            if sim.reset([{"text": "still here"}]) is None else None
    assert out.returncode == 0, out.stderr
    init = lines(out)[0]
    failed = [s for s in init["mcp_servers"] if s["name"] == "gone"]
    assert failed and failed[0]["status"] == "failed" and "/nonexistent/server" in failed[0]["error"]
    assert "mcp__tb__add" in init["tools"]
    assert lines(out)[-1]["result"] == "still here"
    assert text.returncode == 0 and "gone" in text.stderr and "failed" in text.stderr
    assert text.stdout.strip() == "still here"


def test_a_server_that_dies_mid_call_is_answered_for_and_started_again_once(dirs):
    home, project = dirs
    script = [call("mcp__tb__crash"), call("mcp__tb__add", a=1, b=1), {"text": "recovered"}]
    with Simulator(script) as sim:
        out = cli(["-p", "go", "--output-format", "json", "--allowedTools", "mcp__tb",
                   "--mcp-config", json.dumps(toolbox())], project, home, sim.base_url)
        reqs = sim.message_requests
    assert out.returncode == 0, out.stderr
    [dead] = tool_results(reqs[1])
    assert dead["is_error"] is True and "'tb'" in text_of(dead) and "crashing on purpose" in text_of(dead)
    [again] = tool_results(reqs[2])
    assert not again.get("is_error") and "2" in text_of(again)
    assert json.loads(out.stdout)["result"] == "recovered"


def test_a_hanging_call_times_out_as_an_error(dirs):
    home, project = dirs
    script = [call("mcp__tb__sleepy", seconds=60), {"text": "moved on"}]
    with Simulator(script) as sim:
        out = cli(["-p", "go", "--output-format", "json", "--allowedTools", "mcp__tb",
                   "--mcp-config", json.dumps(toolbox(timeout=1500))], project, home, sim.base_url)
        reqs = sim.message_requests
    [late] = tool_results(reqs[1])
    assert late["is_error"] is True and "timed out after 1.5 s" in text_of(late)
    assert json.loads(out.stdout)["result"] == "moved on"


def test_a_huge_output_is_cut_with_a_note(dirs):
    home, project = dirs
    script = [call("mcp__tb__huge", chars=50_000), {"text": "ok"}]
    with Simulator(script) as sim:
        cli(["-p", "go", "--output-format", "json", "--allowedTools", "mcp__tb",
             "--mcp-config", json.dumps(toolbox())], project, home, sim.base_url,
            env={"MAX_MCP_OUTPUT_TOKENS": "1000"})
        [big] = tool_results(sim.message_requests[1])
    body = text_of(big)
    assert len(body) < 5_000 and "output truncated" in body and "50,0" in body


def test_a_tool_list_change_shows_in_the_next_request_of_the_same_run(dirs):
    home, project = dirs
    script = [call("mcp__tb__grow"), call("mcp__tb__extra"), {"text": "used the new tool"}]
    with Simulator(script) as sim:
        out = cli(["-p", "go", "--output-format", "json", "--allowedTools", "mcp__tb",
                   "--mcp-config", json.dumps(toolbox())], project, home, sim.base_url)
        reqs = sim.message_requests
    assert out.returncode == 0, out.stderr
    assert "mcp__tb__extra" not in [t["name"] for t in reqs[0].body["tools"]]
    assert "mcp__tb__extra" in [t["name"] for t in reqs[1].body["tools"]]
    [ran] = tool_results(reqs[2])
    assert not ran.get("is_error") and "extra ran" in text_of(ran)


def test_hooks_see_mcp_calls_by_their_full_name(dirs, tmp_path):
    home, project = dirs
    seen = tmp_path / "seen.jsonl"
    hook = {"hooks": [{"type": "command", "command": f"(cat; echo) >> {seen}"}]}
    settings = {"hooks": {"PreToolUse": [{"matcher": "mcp__tb__.*", **hook}],
                          "PostToolUse": [{"matcher": "mcp__tb__add", **hook}]}}
    script = [call("mcp__tb__add", a=20, b=22), {"text": "ok"}]
    with Simulator(script) as sim:
        out = cli(["-p", "go", "--allowedTools", "mcp__tb", "--settings", json.dumps(settings),
                   "--mcp-config", json.dumps(toolbox())], project, home, sim.base_url)
    assert out.returncode == 0, out.stderr
    pre, post = [json.loads(x) for x in seen.read_text().splitlines()]
    assert pre["hook_event_name"] == "PreToolUse" and pre["tool_name"] == "mcp__tb__add"
    assert pre["tool_input"] == {"a": 20, "b": 22}
    assert post["hook_event_name"] == "PostToolUse" and "42" in json.dumps(post["tool_response"])


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve(kind):
    port = _free_port()
    proc = subprocess.Popen([sys.executable, str(TOOLBOX), f"--{kind}", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.1)
    try:
        yield f"http://127.0.0.1:{port}/{'mcp' if kind == 'http' else 'sse'}"
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)


@pytest.fixture
def http_toolbox():
    yield from _serve("http")


@pytest.fixture
def sse_toolbox():
    yield from _serve("sse")


def test_an_old_sse_server(dirs, sse_toolbox):
    home, project = dirs
    config = {"mcpServers": {"old": {"type": "sse", "url": sse_toolbox}}}
    with Simulator([call("mcp__old__echo", text="via sse"), {"text": "ok"}]) as sim:
        out = cli(["-p", "go", "--allowedTools", "mcp__old", "--mcp-config", json.dumps(config)],
                  project, home, sim.base_url)
        reqs = sim.message_requests
    assert out.returncode == 0, out.stderr
    [result] = tool_results(reqs[1])
    assert not result.get("is_error") and "via sse" in text_of(result)


def test_a_streamable_http_server_with_headers_from_the_environment(dirs, http_toolbox):
    home, project = dirs
    config = {"mcpServers": {"web": {"type": "http", "url": "${TOOLBOX_URL}",
                                     "headers": {"X-Trace": "${TRACE:-none}"}}}}
    script = [call("mcp__web__add", a=40, b=2), {"text": "ok"}]
    with Simulator(script) as sim:
        out = cli(["-p", "go", "--output-format", "json", "--allowedTools", "mcp__web",
                   "--mcp-config", json.dumps(config)], project, home, sim.base_url,
                  env={"TOOLBOX_URL": http_toolbox})
        reqs = sim.message_requests
    assert out.returncode == 0, out.stderr
    [result] = tool_results(reqs[1])
    assert not result.get("is_error") and "42" in text_of(result)


def test_project_mcp_json_is_read_and_strict_mode_ignores_it(dirs):
    home, project = dirs
    (project / ".mcp.json").write_text(json.dumps(toolbox("proj")))
    with Simulator([{"text": "a"}]) as sim:
        out = cli(["-p", "go", "--output-format", "stream-json", "--verbose"], project, home, sim.base_url)
        sim.reset([{"text": "b"}])
        strict = cli(["-p", "go", "--output-format", "stream-json", "--verbose", "--strict-mcp-config"],
                     project, home, sim.base_url)
    assert [s["name"] for s in lines(out)[0]["mcp_servers"]] == ["proj"]
    assert lines(strict)[0]["mcp_servers"] == []


def test_a_bad_entry_is_one_line_naming_the_file_and_the_key(dirs):
    home, project = dirs
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"x": {"command": "a", "args": "not a list"}}}))
    out = cli(["-p", "go"], project, home, "http://127.0.0.1:9")
    assert out.returncode == 2
    [error] = [line for line in out.stderr.splitlines() if line.startswith("loopwright: error:")]
    assert ".mcp.json" in error and "mcpServers.x.args" in error and "list of strings" in error


def _wait_for(condition, timeout=60.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.05)


def _popen(args, cwd, home, sim_url, env):
    e = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "LOOPWRIGHT_", "CLAUDE_", "MCP_"))}
    e.update(HOME=str(home), LOOPWRIGHT_HOME=str(home / ".loopwright"), ANTHROPIC_BASE_URL=sim_url,
             ANTHROPIC_API_KEY="sk-test", **env)
    return subprocess.Popen(CLI + args, cwd=cwd, env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def test_kill_9_during_an_mcp_call_then_resume_never_calls_it_again(dirs, tmp_path):
    from loopwright.session import UNKNOWN_OUTCOME

    home, project = dirs
    log, sid = tmp_path / "calls.log", "4b0c2a3e-2f7e-4a4e-9a53-6a4d7f0e9c11"
    config = ["--mcp-config", json.dumps(toolbox()), "--allowedTools", "mcp__tb"]
    first = [{"tool_use": {"name": "mcp__tb__record", "input": {"note": "once", "then_sleep": 60}, "id": "toolu_m"}}]
    with Simulator(first) as sim:
        proc = _popen(["-p", "go", "--session-id", sid, *config], project, home, sim.base_url,
                      {"TOOLBOX_LOG": str(log)})
        _wait_for(lambda: log.exists() and log.read_text())
        os.killpg(proc.pid, signal.SIGKILL)  # loopwright and the server it started
        proc.communicate(timeout=10)
    with Simulator([{"text": "the note may or may not be there"}]) as sim:
        out = cli(["-p", "-r", sid, "carry on", "--output-format", "json", *config], project, home, sim.base_url,
                  env={"TOOLBOX_LOG": str(log)})
        [req] = sim.message_requests
    assert out.returncode == 0, out.stderr
    assert log.read_text() == "once\n"  # the call was not made again
    answers = [b for m in req.body["messages"] if m["role"] == "user" and isinstance(m["content"], list)
               for b in m["content"] if b.get("type") == "tool_result"]
    assert answers == [{"type": "tool_result", "tool_use_id": "toolu_m", "is_error": True,
                        "content": UNKNOWN_OUTCOME.format(name="mcp__tb__record")}]


def test_an_interrupt_cancels_a_running_mcp_call(dirs, tmp_path):
    home, project = dirs
    log = tmp_path / "calls.log"
    script = [call("mcp__tb__record", note="slow", then_sleep=60)]
    with Simulator(script) as sim:
        proc = _popen(["-p", "go", "--output-format", "json", "--mcp-config", json.dumps(toolbox()),
                       "--allowedTools", "mcp__tb"], project, home, sim.base_url, {"TOOLBOX_LOG": str(log)})
        _wait_for(lambda: log.exists() and log.read_text())
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)  # it does not wait for the 60 s call
    assert proc.returncode == 130, err
    result = json.loads(out)
    assert result["terminal_reason"] == "aborted"


def test_resources_are_listed_and_read_through_two_tools(dirs):
    home, project = dirs
    script = [call("ListMcpResourcesTool"), call("ReadMcpResourceTool", server="tb", uri="notes://today"),
              call("ReadMcpResourceTool", server="nope", uri="x://y"), {"text": "ok"}]
    with Simulator(script) as sim:
        out = cli(["-p", "go", "--output-format", "json", "--mcp-config", json.dumps(toolbox())],
                  project, home, sim.base_url)
        reqs = sim.message_requests
    assert out.returncode == 0, out.stderr
    [listed] = tool_results(reqs[1])
    assert json.loads(text_of(listed)) == [{"name": "today", "uri": "notes://today", "description": "Today's note.",
                                            "mimeType": "text/plain", "server": "tb"}]
    [read] = tool_results(reqs[2])
    assert json.loads(text_of(read))["contents"][0]["text"] == "buy milk"
    [wrong] = tool_results(reqs[3])
    assert wrong["is_error"] and "no MCP server named 'nope'" in text_of(wrong)


def test_a_server_prompt_is_a_slash_command(dirs):
    home, project = dirs
    with Simulator([{"text": "reviewed"}]) as sim:
        out = cli(["-p", "/mcp__tb__review app.py focus=style", "--mcp-config", json.dumps(toolbox())],
                  project, home, sim.base_url)
        [req] = sim.message_requests
    assert out.returncode == 0, out.stderr
    first = req.body["messages"][-1]["content"]
    text = first if isinstance(first, str) else " ".join(b.get("text", "") for b in first)
    assert "Review app.py and look for style." in text


def test_a_post_tool_use_hook_may_replace_an_mcp_tools_output(dirs, tmp_path):
    home, project = dirs
    answer = tmp_path / "answer.json"
    answer.write_text(json.dumps({"hookSpecificOutput": {"hookEventName": "PostToolUse",
                                                         "updatedMCPToolOutput": "[redacted by policy]"}}))
    settings = {"hooks": {"PostToolUse": [{"matcher": "mcp__tb__echo|Bash",
                                           "hooks": [{"type": "command", "command": f"cat {answer}"}]}]}}
    script = [call("mcp__tb__echo", text="secret"), call("Bash", command="echo plain"), {"text": "ok"}]
    with Simulator(script) as sim:
        out = cli(["-p", "go", "--allowedTools", "mcp__tb", "Bash(echo *)", "--settings", json.dumps(settings),
                   "--mcp-config", json.dumps(toolbox())], project, home, sim.base_url)
        reqs = sim.message_requests
    assert out.returncode == 0, out.stderr
    [replaced] = tool_results(reqs[1])
    assert text_of(replaced) == "[redacted by policy]"
    [kept] = tool_results(reqs[2])
    assert "plain" in text_of(kept)  # only an MCP tool's output can be replaced


def test_subagents_get_the_mcp_tools_their_definition_allows(dirs):
    home, project = dirs
    agents = {"adder": {"description": "Adds", "prompt": "Add.", "tools": ["mcp__tb__add"]},
              "reader": {"description": "Reads", "prompt": "Read.", "tools": ["Read"]}}
    spawn = {"tool_use": [{"name": "Agent", "input": {"description": "add", "prompt": "ADD-TASK", "subagent_type": "adder"}},
                          {"name": "Agent", "input": {"description": "read", "prompt": "READ-TASK",
                                                      "subagent_type": "reader"}}]}
    script = {"rules": [
        {"match": {"last_user_contains": "ADD-TASK"}, "responses": [call("mcp__tb__add", a=2, b=3)]},
        {"match": {"last_user_contains": "READ-TASK"}, "responses": [{"text": "nothing to read"}]},
        {"match": {"last_user_contains": "5"}, "responses": [{"text": "it is 5"}]},
        {"responses": [spawn, {"text": "done"}]}]}
    with Simulator(script) as sim:
        out = cli(["-p", "go", "--output-format", "json", "--allowedTools", "mcp__tb", "--agents", json.dumps(agents),
                   "--mcp-config", json.dumps(toolbox())], project, home, sim.base_url)
        offered = {json.dumps(r.body["messages"][0])[:200]: {t["name"] for t in r.body["tools"]}
                   for r in sim.message_requests}
        answers = tool_results(sim.message_requests[-1])
    assert json.loads(out.stdout)["result"] == "done", out.stderr
    adder = next(v for k, v in offered.items() if "ADD-TASK" in k)
    reader = next(v for k, v in offered.items() if "READ-TASK" in k)
    assert adder == {"mcp__tb__add"} and reader == {"Read"}
    assert [text_of(a) for a in answers] == ["it is 5", "nothing to read"]


def test_progress_is_shown_and_keeps_a_long_call_alive_past_its_timeout(dirs):
    home, project = dirs
    script = [call("mcp__tb__count", steps=4, pause=0.8), {"text": "counted"}]
    with Simulator(script) as sim:
        out = cli(["-p", "count", "--output-format", "stream-json", "--verbose", "--allowedTools", "mcp__tb",
                   "--mcp-config", json.dumps(toolbox(timeout=1500))], project, home, sim.base_url)
        result = tool_results(sim.message_requests[-1])[0]
    frames = [f for f in lines(out) if f.get("subtype") == "tool_progress"]
    assert [(f["progress"], f["total"], f["message"]) for f in frames] == [(i, 4, f"step {i}") for i in range(1, 5)]
    assert {f["tool_name"] for f in frames} == {"mcp__tb__count"} and frames[0]["tool_use_id"]
    assert not result.get("is_error") and "counted to 4" in text_of(result)  # 3.2 s in all, never 1.5 s silent
    with Simulator(script) as sim:
        text = cli(["-p", "count", "--verbose", "--allowedTools", "mcp__tb", "--mcp-config", json.dumps(toolbox())],
                   project, home, sim.base_url)
    assert "… mcp__tb__count: 2/4 step 2" in text.stdout + text.stderr
