"""The `loopwright` command as a user runs it: a real process, talking HTTP to a loopback fake
of the Messages API (ours, and a minimal independent one), checked by output and exit code."""

import json
import os
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from loopwright.testing import Simulator

CLI = [sys.executable, "-m", "loopwright"]


def cli(args, sim_url=None, stdin=None, env=None, cwd=None, timeout=60):
    e = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    if sim_url:
        e.update(ANTHROPIC_BASE_URL=sim_url, ANTHROPIC_API_KEY="sk-test")
    e.update(env or {})
    return subprocess.run(CLI + args, input=stdin, capture_output=True, text=True, env=e, cwd=cwd, timeout=timeout)


def test_version_is_fast_path_and_prints():
    out = cli(["--version"])
    assert out.returncode == 0 and out.stdout.strip().endswith("(loopwright)")


def test_json_result_success(tmp_path):
    with Simulator([{"text": "hello there", "usage": {"input_tokens": 1000, "output_tokens": 100}}]) as sim:
        out = cli(["-p", "hi", "--output-format", "json"], sim.base_url, cwd=tmp_path)
        body = sim.message_requests[0].body
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["type"] == "result" and result["subtype"] == "success" and result["is_error"] is False
    assert result["result"] == "hello there" and result["num_turns"] == 1 and result["session_id"]
    assert result["usage"]["input_tokens"] == 1000 and result["total_cost_usd"] == pytest.approx(0.003)
    assert body["model"] == "claude-sonnet-5" and body["max_tokens"] == 64000 and body["stream"] is True
    assert {t["name"] for t in body["tools"]} == {"Read", "Write", "Edit", "Bash", "Glob", "Grep", "BashOutput", "KillShell",
                                                "Agent", "Workflow"}


def test_max_turns_against_a_model_that_always_calls_a_tool(tmp_path):
    with Simulator([{"tool_use": {"name": "Bash", "input": {"command": "echo hi"}}, "repeat": -1}]) as sim:
        out = cli(["-p", "loop", "--max-turns", "2", "--output-format", "json", "--allowedTools", "Bash"],
                  sim.base_url, cwd=tmp_path)
        calls = len(sim.message_requests)
    result = json.loads(out.stdout)
    assert out.returncode == 1 and calls == 2
    assert result["subtype"] == "error_max_turns" and result["errors"] == ["Reached maximum number of turns (2)"]


def test_stream_json_shape(tmp_path):
    script = [{"content": [{"type": "text", "text": "listing"},
                           {"type": "tool_use", "name": "Glob", "input": {"pattern": "*"}}]},
              {"text": "done"}]
    with Simulator(script) as sim:
        out = cli(["-p", "go", "--output-format", "stream-json", "--verbose"], sim.base_url, cwd=tmp_path)
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    kinds = [(d["type"], d.get("subtype")) for d in lines]
    assert kinds[0] == ("system", "init") and kinds[-1] == ("result", "success")
    assert ("assistant", None) in kinds and ("user", None) in kinds
    init = lines[0]
    assert init["session_id"] == lines[-1]["session_id"] and "Bash" in init["tools"]
    user = next(d for d in lines if d["type"] == "user")
    assert user["message"]["content"][0]["type"] == "tool_result"
    assert out.returncode == 0


def test_text_mode_prints_the_result_and_errors_exit_1(tmp_path):
    with Simulator([{"text": "plain answer"}]) as sim:
        out = cli(["-p", "q"], sim.base_url, cwd=tmp_path)
    assert out.stdout.strip() == "plain answer" and out.returncode == 0
    with Simulator([{"fault": {"status": 401}}]) as sim:
        out = cli(["-p", "q"], sim.base_url, cwd=tmp_path)
    assert out.returncode == 1 and "authentication" in out.stdout.lower()
    assert "Traceback" not in out.stderr


def test_prompt_from_stdin(tmp_path):
    with Simulator({"rules": [{"match": {"last_user_contains": "from the pipe"}, "responses": [{"text": "got it"}]}]}) as sim:
        out = cli(["-p"], sim.base_url, stdin="from the pipe", cwd=tmp_path)
    assert out.stdout.strip() == "got it", out.stderr


def test_missing_api_key_says_how_to_set_one_and_how_to_run_offline(tmp_path):
    out = cli(["-p", "hi"], cwd=tmp_path)
    assert out.returncode == 2 and "ANTHROPIC_API_KEY" in out.stderr and "loopwright demo" in out.stderr
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("args,needle", [
    (["--max-turns", "0"], "--max-turns"), (["--permission-mode", "yolo"], "--permission-mode"),
    (["--max-duration", "soon"], "--max-duration"), (["--tools", "Bash,Teleport"], "Teleport"),
    (["--output-format", "xml"], "xml"), (["--fallback-model", "a,b,c,d"], "--fallback-model"),
    # flags are spelled in full, as in Claude Code: a prefix is a typo, not a guess
    (["--max-turn", "3"], "--max-turn"), (["--verbos"], "--verbos"),
])
def test_bad_flags_are_one_clear_line_exit_2(tmp_path, args, needle):
    out = cli(["-p", "hi", *args], "http://127.0.0.1:9", cwd=tmp_path)
    assert out.returncode == 2 and needle in out.stderr and "Traceback" not in out.stderr


def run_until_tool_started(tmp_path, sim, flags=("-p", "go", "--output-format", "json"), stdin=None):
    """A real `loopwright -p` process, returned once the scripted Bash call has run `touch started`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env.update(ANTHROPIC_BASE_URL=sim.base_url, ANTHROPIC_API_KEY="sk-test")
    proc = subprocess.Popen(CLI + [*flags, "--allowedTools", "Bash"], cwd=tmp_path, env=env,
                            stdin=subprocess.PIPE if stdin else None, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    if stdin:
        proc.stdin.write(stdin)
        proc.stdin.flush()
    for _ in range(600):
        if (tmp_path / "started").exists():
            break
        time.sleep(0.05)
    return proc


def test_sigint_aborts_with_a_result_and_exit_130(tmp_path):
    with Simulator([{"tool_use": {"name": "Bash", "input": {"command": "touch started; sleep 30"}}}]) as sim:
        proc = run_until_tool_started(tmp_path, sim)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 130, stderr
    result = json.loads(stdout)
    assert result["terminal_reason"] == "aborted" and result["is_error"]


STREAM = ("-p", "--output-format", "stream-json", "--verbose")
USER_LINE = json.dumps({"type": "user", "message": {"role": "user", "content": "go"}}) + "\n"


@pytest.mark.parametrize("flags, stdin", [(("-p", "go", "--output-format", "json"), None), ((*STREAM, "go"), None),
                                          ((*STREAM, "--input-format", "stream-json"), USER_LINE)])
def test_ctrl_c_is_reported_as_the_users_interrupt_in_claude_codes_words_exit_130(tmp_path, flags, stdin):
    """As Claude Code: the cut call answered, then `[Request interrupted by user for tool use]` in
    the conversation (a stream-json user line), the result `error_during_execution` saying so.
    With stream-json input too: Ctrl-C ends the process with 130, as for `-p`."""
    with Simulator([{"tool_use": {"name": "Bash", "input": {"command": "touch started; sleep 30"}}}]) as sim:
        proc = run_until_tool_started(tmp_path, sim, flags, stdin)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 130, stderr
    lines = [json.loads(line) for line in stdout.splitlines() if line.strip()]
    result = lines[-1]
    said = "[Request interrupted by user for tool use]"
    assert result["subtype"] == "error_during_execution" and result["is_error"] and result["errors"] == [said]
    assert result["terminal_reason"] == "aborted"
    if len(lines) > 1:  # stream-json: the conversation's last user message says it, after the cut call's result
        last_user = [line for line in lines if line["type"] == "user"][-1]["message"]["content"]
        assert last_user[0]["type"] == "tool_result" and last_user[0]["is_error"]
        assert last_user[-1] == {"type": "text", "text": said}


class _MinimalFake(BaseHTTPRequestHandler):
    """Not our simulator: the least a Messages API fake does, written from the docs."""

    protocol_version = "HTTP/1.1"

    def do_POST(self):  # noqa: N802
        self.rfile.read(int(self.headers["content-length"]))
        events = [
            ("message_start", {"type": "message_start", "message": {
                "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-5", "content": [],
                "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 5, "output_tokens": 1}}}),
            ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hi from elsewhere"}}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None}, "usage": {"output_tokens": 4}}),
            ("message_stop", {"type": "message_stop"}),
        ]
        body = "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events).encode()
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_works_against_any_loopback_fake(tmp_path):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _MinimalFake)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        out = cli(["-p", "hi", "--output-format", "json"], f"http://127.0.0.1:{server.server_port}", cwd=tmp_path)
    finally:
        server.shutdown()
        server.server_close()
    result = json.loads(out.stdout)
    assert out.returncode == 0 and result["subtype"] == "success" and result["result"] == "hi from elsewhere"
    assert result["num_turns"] == 1 and result["total_cost_usd"] > 0 and result["session_id"]


def test_second_sigint_exits_at_once(tmp_path):
    # the tool ignores SIGTERM, so the clean abort after the first Ctrl-C has to wait out the
    # kill grace period; the second Ctrl-C leaves before any result is printed. On the host: in
    # the sandbox the TERM ends the whole sandbox at once, so there would be nothing to wait out
    command = "trap '' TERM; touch started; sleep 30"
    with Simulator([{"tool_use": {"name": "Bash", "input": {"command": command}}}]) as sim:
        proc = run_until_tool_started(tmp_path, sim, flags=("-p", "go", "--output-format", "json", "--no-sandbox"))
        proc.send_signal(signal.SIGINT)
        time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        stdout, _ = proc.communicate(timeout=30)
    assert proc.returncode == 130 and stdout == ""


def test_a_headless_prompt_imports_nothing_heavy_on_its_way_to_the_first_request(tmp_path):
    """Start-up: the terminal's, the web view's, MCP's, the routines' and the SDKs' packages load
    only on their own paths (the list comes from `python -X importtime`)."""
    import subprocess
    import sys

    from loopwright.testing import Simulator

    heavy = {"rich", "prompt_toolkit", "pydantic", "mcp", "anthropic", "openai", "yaml", "starlette", "uvicorn",
             "selenium", "dbos", "sqlalchemy", "psycopg", "click", "pygments", "croniter", "opentelemetry", "grpc"}
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "LOOPWRIGHT_", "OTEL_", "CLAUDE_CODE_"))}
    skill = tmp_path / ".claude" / "skills" / "tidy"  # a project with a skill offers the Skill tool too
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: tidy\ndescription: Tidy the docs\n---\nTidy them.\n")
    with Simulator([{"text": "hi"}]) as sim:
        out = subprocess.run([sys.executable, "-X", "importtime", "-m", "loopwright", "-p", "hi"], cwd=tmp_path,
                             env=env | {"ANTHROPIC_BASE_URL": sim.base_url, "ANTHROPIC_API_KEY": "k",
                                        "HOME": str(tmp_path), "LOOPWRIGHT_HOME": str(tmp_path / ".lw")},
                             capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "hi", out.stderr[-2000:]
    modules = {line.split("|")[-1].strip() for line in out.stderr.splitlines() if line.startswith("import time:")}
    loaded = {name.split(".")[0] for name in modules}
    assert loaded & heavy == set()
    # scrubbing the recorded command line needs loopwright.replay.export alone, not the replay
    # machinery and the simulator behind the package (~60 M instructions of the start-up)
    assert not {m for m in modules if m.startswith(("loopwright.testing", "loopwright.replay.compare", "difflib"))}


@pytest.mark.parametrize("variable, value, model, says", [
    ("ANTHROPIC_BASE_URL", "127.0.0.1:8080", None, "is not a URL: expected http:// or https://"),
    ("ANTHROPIC_BASE_URL", "localhost", None, "is not a URL"),
    ("ANTHROPIC_BASE_URL", "http://127.0.0.1:9/v1", None, "ends with /v1, which loopwright adds itself"),
    ("ANTHROPIC_BASE_URL", "https://gateway.example/v1/", None, "set it to https://gateway.example"),
    ("OPENAI_BASE_URL", "https://gateway.example/v1/chat/completions", "openai:gpt-5",
     "set it to https://gateway.example/v1"),
    ("OPENAI_BASE_URL", "gateway.example/v1", "openai:gpt-5", "is not a URL"),
])
def test_a_base_url_that_cannot_be_right_is_named_before_anything_is_sent(tmp_path, variable, value, model, says):
    # without the check: a URL with no scheme was reported as a missing API key, and a doubled /v1
    # reached the server as a bare 404 for /v1/v1/messages
    env = {variable: value, "OPENAI_API_KEY": "sk-test", "HOME": str(tmp_path)}
    args = ["-p", "hi"] + (["--model", model] if model else [])
    out = cli(args, env=env, cwd=tmp_path)
    assert out.returncode == 2, out.stderr
    assert variable in out.stderr and says in out.stderr
    assert "API key" not in out.stderr and "Internal error" not in out.stderr


def closed_pipe(args, sim_url, cwd, home):
    """The command with its stdout a real pipe whose reader has already gone (`… | head -1` once
    head has exited): every write to it fails."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env.update(ANTHROPIC_BASE_URL=sim_url, ANTHROPIC_API_KEY="sk-test", LOOPWRIGHT_HOME=str(home))
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run(CLI + args, stdout=write_end, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd,
                              timeout=60)
    finally:
        os.close(write_end)


def test_every_command_ends_quietly_with_141_when_its_reader_closed_the_pipe(tmp_path):
    """As `git log | head -1`: no error line, no crash log, the exit status of a closed pipe."""
    home = tmp_path / "home"
    env = {"LOOPWRIGHT_HOME": str(home)}
    with Simulator([{"text": "hello", "repeat": -1}]) as sim:
        assert cli(["-p", "hi"], sim.base_url, env=env, cwd=tmp_path).returncode == 0  # a session to list
        added = cli(["schedule", "add", "say hi", "--every", "1h", "--id", "nightly"], env=env, cwd=tmp_path)
        assert added.returncode == 0, added.stderr
        commands = [["-p", "hi"], ["-p", "hi", "--output-format", "json"],
                    ["-p", "hi", "--output-format", "stream-json", "--verbose"], ["sessions"], ["sessions", "--json"],
                    ["mcp", "list"], ["schedule", "list"], ["--version"]]
        for args in commands:
            out = closed_pipe(args, sim.base_url, tmp_path, home)
            assert out.returncode == 141, (args, out.returncode, out.stderr)
            assert "error" not in out.stderr.lower() and "Traceback" not in out.stderr, (args, out.stderr)
    assert not list(home.glob("logs/crash-*")), "a closed pipe is no crash"


@pytest.mark.parametrize("flag, offered", [
    ("Read", {"Read"}), ("", set()), ("Read,Agent", {"Read", "Agent"}), ("Task Bash", {"Agent", "Bash"}),
    ("Workflow", {"Workflow"}),
    ("default", {"Read", "Write", "Edit", "Bash", "Glob", "Grep", "BashOutput", "KillShell", "Agent", "Workflow"})])
def test_tools_offers_exactly_the_tools_named(tmp_path, flag, offered):
    """As Claude Code's `--tools`: "" none, "default" all, else the names given and no extras."""
    with Simulator([{"text": "ok"}]) as sim:
        out = cli(["-p", "hi", "--tools", flag, "--output-format", "stream-json", "--verbose"], sim.base_url,
                  cwd=tmp_path)
        body = sim.message_requests[0].body
    assert out.returncode == 0, out.stderr
    assert {t["name"] for t in body.get("tools", [])} == offered
    assert set(json.loads(out.stdout.splitlines()[0])["tools"]) == offered  # system/init says the same


def test_tools_names_an_unknown_tool_in_one_line(tmp_path):
    out = cli(["-p", "hi", "--tools", "Read,Raed"], cwd=tmp_path)
    assert out.returncode == 2 and "--tools: unknown tool(s) Raed" in out.stderr and "Workflow" in out.stderr
