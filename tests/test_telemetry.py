"""Telemetry (issue 35): the real CLI on the simulator exports OTLP to a collector of our own
(tests/otlpwire.py, decoded with the official protobuf definitions); the span tree, attributes,
metrics and events of a scripted run with a retry, a subagent, a tool call and a goal
evaluation; content only with its opt-in; a collector that is gone or never answers costs one
line on stderr and never the run; off, nothing of OpenTelemetry is imported."""

import json
import os
import subprocess
import sys

import pytest
from otlpwire import GrpcCollector, HttpCollector, Silent, closed_port
from test_workers import wait_for

from loopwright.testing import Simulator

pytest.importorskip("opentelemetry.sdk")

SHOTS = os.environ.get("LOOPWRIGHT_SCREENSHOTS")  # a folder: the scripted run's trace is drawn there

EVALUATOR = "You decide whether an agent has met its goal"
SCRIPT = {"rules": [
    {"match": {"system_contains": EVALUATOR},
     "responses": [{"text": "{\"ok\": true, \"reason\": \"done.txt exists\"}"}]},
    {"match": {"last_user_contains": "SUB-TASK"}, "responses": [{"text": "SUB-ANSWER: all clear"}]},
    {"responses": [
        {"fault": {"status": 529, "error_type": "overloaded_error", "message": "busy"}},
        {"tool_use": {"name": "Agent", "input": {"description": "look", "prompt": "SUB-TASK look around"}}},
        {"tool_use": {"name": "Bash", "input": {"command": "touch done.txt"}}},
        {"text": "Created done.txt."},
    ]},
]}


def run(tmp_path, sim, args, env):
    home, project = tmp_path / "home", tmp_path / "proj"
    home.mkdir(exist_ok=True)
    project.mkdir(exist_ok=True)
    return subprocess.run([sys.executable, "-m", "loopwright", *args], env=environment(tmp_path, sim, **env),
                          cwd=project, capture_output=True, text=True, timeout=90)


def environment(tmp_path, sim, **more):
    """A loopwright process's environment: none of this machine's model, loopwright or telemetry
    variables, a home under `tmp_path`, the simulator as the API, metrics exported only at the end."""
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("ANTHROPIC_", "LOOPWRIGHT_", "OTEL_", "CLAUDE_CODE_"))}
    home = tmp_path / "home"
    return base | dict(HOME=str(home), LOOPWRIGHT_HOME=str(home / ".lw"), ANTHROPIC_API_KEY="k",
                       ANTHROPIC_BASE_URL=sim.base_url, OTEL_METRIC_EXPORT_INTERVAL="600000") | more


def otlp(endpoint, protocol="http/protobuf", **more):
    return {"CLAUDE_CODE_ENABLE_TELEMETRY": "1", "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
            "OTEL_EXPORTER_OTLP_PROTOCOL": protocol, **more}


def by_name(spans, name):
    return [s for s in spans if s["name"] == name]


def points(got, name, **where):
    return [p for p in got.points if p["name"] == name and all(p["attrs"].get(k) == v for k, v in where.items())]


GOAL_ARGS = ["-p", "/goal done.txt exists", "--check", "test -f done.txt", "--allowedTools", "Bash",
             "--output-format", "json"]


def test_a_scripted_run_exports_its_span_tree_metrics_and_events_over_otlp_http(tmp_path):
    with Simulator(SCRIPT) as sim, HttpCollector() as collector:
        out = run(tmp_path, sim, GOAL_ARGS, otlp(collector.endpoint, OTEL_EXPORTER_OTLP_HEADERS="authorization=Bearer t0k",
                                                 OTEL_RESOURCE_ATTRIBUTES="deployment.environment=test"))
    result = json.loads(out.stdout)
    assert result["terminal_reason"] == "goal_met", out.stderr
    assert "telemetry" not in out.stderr  # the collector took everything: nothing to say
    got = collector.got
    assert {h.get("authorization") for h in got.headers} == {"Bearer t0k"}  # OTEL_EXPORTER_OTLP_HEADERS

    spans = got.spans
    assert len({s["trace"] for s in spans}) == 1  # one run, one trace, the subagent's spans too
    [root] = by_name(spans, "invoke_agent loopwright")
    assert root["parent"] == "" and root["resource"]["service.name"] == "loopwright"
    assert root["resource"]["deployment.environment"] == "test"  # OTEL_RESOURCE_ATTRIBUTES
    a = root["attrs"]
    assert a["session.id"] == result["session_id"] == a["gen_ai.conversation.id"]
    assert (a["loopwright.prompt.source"], a["loopwright.permission_mode"]) == ("headless", "default")
    assert (a["loopwright.outcome"], a["loopwright.terminal_reason"]) == ("success", "goal_met")
    assert a["loopwright.num_turns"] == result["num_turns"]

    chats = [s for s in spans if s["name"].startswith("chat ") and s["parent"] == root["id"]]
    assert [c["attrs"]["gen_ai.response.finish_reasons"] for c in chats] == [("tool_use",), ("tool_use",), ("end_turn",)]
    first = chats[0]
    assert first["attrs"]["gen_ai.operation.name"] == "chat" and first["attrs"]["gen_ai.request.model"] == "claude-sonnet-5"
    assert first["attrs"]["gen_ai.system"] == first["attrs"]["gen_ai.provider.name"] == "anthropic"
    assert first["attrs"]["gen_ai.usage.input_tokens"] > 0 and first["attrs"]["gen_ai.usage.output_tokens"] > 0
    assert "gen_ai.usage.cache_read.input_tokens" in first["attrs"]
    [retry] = first["events"]  # the 529 before the first answer, as an event of its call
    assert retry["name"] == "loopwright.api_retry" and retry["attrs"]["status_code"] == 529
    assert first["attrs"]["loopwright.retries"] == 1 and first["start"] <= first["end"]

    [agent_call] = by_name(spans, "execute_tool Agent")
    [bash] = by_name(spans, "execute_tool Bash")
    for tool in (agent_call, bash):
        assert tool["parent"] == root["id"] and tool["attrs"]["gen_ai.operation.name"] == "execute_tool"
        assert tool["attrs"]["loopwright.tool.decision"] == "allow" and tool["attrs"]["loopwright.tool.is_error"] is False
        assert "gen_ai.tool.call.arguments" not in tool["attrs"] and "gen_ai.tool.call.result" not in tool["attrs"]
    assert bash["attrs"]["gen_ai.tool.call.id"].startswith("toolu_")
    assert bash["attrs"]["loopwright.tool.decision_source"] == "rules"

    [sub] = by_name(spans, "invoke_agent general-purpose")  # the subagent: a child of the call that started it
    assert sub["parent"] == agent_call["id"] and sub["attrs"]["gen_ai.agent.id"].startswith("a")
    assert sub["attrs"]["loopwright.outcome"] == "success" and sub["attrs"]["loopwright.prompt.source"] == "subagent"
    [sub_chat] = [s for s in spans if s["parent"] == sub["id"]]
    assert sub_chat["name"].startswith("chat ") and sub_chat["attrs"]["gen_ai.response.finish_reasons"] == ("end_turn",)
    assert agent_call["start"] <= sub["start"] and sub["end"] <= agent_call["end"]

    [goal] = by_name(spans, "goal_evaluation")
    assert goal["parent"] == root["id"] and goal["attrs"]["loopwright.goal.verdict"] == "met"
    assert goal["attrs"]["loopwright.goal.evidence_chars"] > 0 and goal["attrs"]["loopwright.goal.evaluator_tokens"] > 0
    [judged] = [s for s in spans if s["parent"] == goal["id"]]  # the evaluator's model call, a chat span of its own
    assert judged["name"] == "chat claude-haiku-4-5" and judged["attrs"]["loopwright.model_call.role"] == "goal_evaluator"
    assert judged["attrs"]["gen_ai.usage.input_tokens"] + judged["attrs"]["gen_ai.usage.output_tokens"] == \
        goal["attrs"]["loopwright.goal.evaluator_tokens"]
    assert goal["start"] <= judged["start"] <= judged["end"] <= goal["end"]
    assert len(chats) == 3  # and not among the main loop's calls

    # metrics: Claude Code's, under loopwright's names and with its attributes, and the loop's own
    session = result["session_id"]
    assert [p["value"] for p in points(got, "loopwright.session.count", **{"session.id": session})] == [1]
    tokens = {p["attrs"]["type"]: p["value"] for p in points(got, "loopwright.token.usage")
              if p["attrs"]["model"] == "claude-sonnet-5"}
    assert tokens["input"] == result["modelUsage"]["claude-sonnet-5"]["inputTokens"] and tokens["output"] > 0
    cost = sum(p["value"] for p in points(got, "loopwright.cost.usage"))
    assert cost == pytest.approx(result["total_cost_usd"])
    stops = {p["attrs"]["stop_reason"]: p["value"] for p in points(got, "loopwright.model_call.count")}
    assert stops == {"tool_use": 2, "end_turn": 2}  # the main loop's three answers and the subagent's one
    [retried] = points(got, "loopwright.api_retry.count")
    assert retried["value"] == 1 and retried["attrs"]["error_kind"] == "overloaded"
    assert [p["value"] for p in points(got, "loopwright.goal.verdict.count", verdict="met")] == [1]
    decisions = points(got, "loopwright.tool.decision", decision="accept")
    assert {p["attrs"]["tool_name"] for p in decisions} == {"Agent", "Bash"}
    [turns] = points(got, "loopwright.run.turns", terminal_reason="goal_met")
    assert turns["kind"] == "histogram" and turns["value"] == result["num_turns"]
    assert points(got, "loopwright.active_time.total")[0]["unit"] == "s"

    # events, as log records in the run's trace
    names = [r["name"] for r in got.logs]
    assert {"loopwright.user_prompt", "loopwright.api_request", "loopwright.api_error", "loopwright.tool_result",
            "loopwright.tool_decision"} <= set(names)
    [prompt] = [r for r in got.logs if r["name"] == "loopwright.user_prompt" and r["trace"] == root["trace"]
                and r["span"] == root["id"]]
    assert prompt["attrs"]["prompt_length"] > 0 and "prompt" not in prompt["attrs"]  # no content without opt-in
    assert prompt["attrs"]["session.id"] == session
    if SHOTS:  # the picture of this trace in docs/telemetry.md
        from otlpwire import screenshot, timeline_html

        title = (f'loopwright -p "/goal done.txt exists" — one trace, {len(spans)} spans '
                 f'({(root["end"] - root["start"]) / 1e6:.0f} ms); red mark: a retried 529')
        screenshot(timeline_html(spans, title), os.path.join(SHOTS, "telemetry-trace.png"), 40 + 26 * len(spans))


STOP_ONCE = "test -f stopped-once || { touch stopped-once; echo 'check the file again' >&2; exit 2; }"


def test_the_loops_own_metrics_count_refusals_empty_answers_api_errors_breakers_and_stop_blocks(tmp_path):
    """Five scripted runs into one collector, each ending or going on in a way an operator wants
    counted on its own: an edit accepted, an empty answer and a Stop hook's block; a refusal; an
    API error; a breaker (max turns); a refusal the fallback model answers instead."""
    (tmp_path / "proj" / ".claude").mkdir(parents=True)
    (tmp_path / "proj" / ".claude" / "settings.json").write_text(json.dumps({"hooks": {"Stop": [
        {"hooks": [{"type": "command", "command": STOP_ONCE}]}]}}))
    write = {"tool_use": {"name": "Write", "input": {"file_path": "notes.txt", "content": "x\n"}}}
    rules = [
        {"match": {"last_user_contains": "EDIT"}, "responses": [write]},
        {"match": {"last_user_contains": "check the file again"}, "responses": [{"text": "checked"}]},
        {"match": {"last_user_contains": "REFUSE"}, "responses": [{"text": "I will not.", "stop_reason": "refusal"}]},
        {"match": {"last_user_contains": "SWITCH", "model": "claude-haiku-4-5"}, "responses": [{"text": "fine"}]},
        {"match": {"last_user_contains": "SWITCH"}, "responses": [{"text": "No.", "stop_reason": "refusal"}]},
        {"match": {"last_user_contains": "FAIL"}, "responses": [
            {"fault": {"status": 400, "error_type": "invalid_request_error", "message": "bad request"}}]},
        {"match": {"last_user_contains": "LOOK"}, "responses": [{"tool_use": {"name": "Glob", "input": {"pattern": "*"}}}]},
        {"responses": [{"content": []}, {"text": "edited"}]},  # after the Write: empty, then an answer
    ]
    with Simulator({"rules": rules}) as sim, HttpCollector() as collector:
        results = {}
        for name, args in (("edit", ["-p", "EDIT notes", "--permission-mode", "acceptEdits"]), ("refuse", ["-p", "REFUSE"]),
                           ("fail", ["-p", "FAIL"]), ("look", ["-p", "LOOK around", "--max-turns", "1"]),
                           ("switch", ["-p", "SWITCH", "--fallback-model", "claude-haiku-4-5"])):
            out = run(tmp_path, sim, [*args, "--output-format", "json"], otlp(collector.endpoint))
            results[name] = json.loads(out.stdout)
            assert "Traceback" not in out.stderr, out.stderr
    got = collector.got
    assert [results[k]["terminal_reason"] for k in ("refuse", "fail", "look")] == ["refusal", "api_error", "max_turns"]
    assert results["edit"]["result"] == "checked" and (tmp_path / "proj" / "notes.txt").exists()
    assert results["switch"]["result"] == "fine"  # refused, then answered by the fallback model

    def counted(metric, run_name, **where):
        return sum(p["value"] for p in points(got, metric, **{"session.id": results[run_name]["session_id"]}, **where))

    assert counted("loopwright.code_edit_tool.decision", "edit", tool_name="Write", decision="accept") == 1
    assert counted("loopwright.model_call.count", "edit", stop_reason="empty") == 1  # counted on its own
    assert counted("loopwright.stop_hook.block.count", "edit") == 1
    [edited] = [s for s in by_name(got.spans, "invoke_agent loopwright")
                if s["attrs"]["session.id"] == results["edit"]["session_id"]]
    stops = [s for s in by_name(got.spans, "hook Stop") if s["parent"] == edited["id"]]  # the block, then the pass
    assert sorted(s["attrs"]["loopwright.hook.exit_code"] for s in stops) == [0, 2]
    assert counted("loopwright.model_call.count", "refuse", stop_reason="refusal") == 1
    assert counted("loopwright.model_call.count", "switch", stop_reason="refusal", model="claude-sonnet-5") == 1
    assert counted("loopwright.model_call.count", "switch", stop_reason="end_turn", model="claude-haiku-4-5") == 1
    assert counted("loopwright.api_error.count", "fail", terminal_reason="api_error", status_code=400) == 1
    assert counted("loopwright.breaker.trip.count", "look", kind="max_turns") == 1
    assert not points(got, "loopwright.breaker.trip.count", kind="api_error")  # an API error is not a breaker
    refused = [s for s in got.spans if s["name"].startswith("chat ") and s["attrs"].get(
        "gen_ai.response.finish_reasons") == ("refusal",)]
    assert [s["status"] for s in refused] == [2, 2]  # STATUS_CODE_ERROR: the model refused (both runs)
    assert all(s["start"] <= s["end"] and s["name"] == "chat claude-sonnet-5" for s in refused)
    failed = [s for s in by_name(got.spans, "invoke_agent loopwright") if s["attrs"]["loopwright.terminal_reason"] == "api_error"]
    assert [s["status"] for s in failed] == [2]


def test_content_is_exported_only_with_its_opt_in(tmp_path):
    script = [{"tool_use": {"name": "Bash", "input": {"command": "echo SECRET-OUTPUT"}}}, {"text": "ok"}]
    with Simulator(script) as sim, HttpCollector() as collector:
        out = run(tmp_path, sim, ["-p", "PROMPT-TEXT here", "--allowedTools", "Bash"],
                  otlp(collector.endpoint, OTEL_LOG_USER_PROMPTS="1", LOOPWRIGHT_OTEL_LOG_TOOL_CONTENT="1"))
    assert out.returncode == 0, out.stderr
    [prompt] = [r for r in collector.got.logs if r["name"] == "loopwright.user_prompt"]
    assert "PROMPT-TEXT here" in prompt["attrs"]["prompt"]
    [bash] = by_name(collector.got.spans, "execute_tool Bash")
    assert json.loads(bash["attrs"]["gen_ai.tool.call.arguments"]) == {"command": "echo SECRET-OUTPUT"}
    assert "SECRET-OUTPUT" in bash["attrs"]["gen_ai.tool.call.result"]


def test_a_denied_call_says_why_and_tool_details_bring_its_input_but_not_output(tmp_path):
    script = [{"tool_use": {"name": "Bash", "input": {"command": "touch DENIED-INPUT"}}}, {"text": "could not"}]
    with Simulator(script) as sim, HttpCollector() as collector:
        out = run(tmp_path, sim, ["-p", "say it"], otlp(collector.endpoint, OTEL_LOG_TOOL_DETAILS="1"))
    assert out.returncode == 0 and out.stdout.strip() == "could not", out.stderr
    got = collector.got
    [bash] = by_name(got.spans, "execute_tool Bash")
    a = bash["attrs"]
    assert (a["loopwright.tool.decision"], a["loopwright.tool.is_error"]) == ("deny", True)
    assert a["loopwright.tool.decision_reason"] and isinstance(a["loopwright.tool.duration_ms"], int)
    assert bash["status"] != 2  # a denial is the gate working, not a failed call
    assert json.loads(a["gen_ai.tool.call.arguments"]) == {"command": "touch DENIED-INPUT"}  # OTEL_LOG_TOOL_DETAILS
    assert "gen_ai.tool.call.result" not in a  # outputs need LOOPWRIGHT_OTEL_LOG_TOOL_CONTENT
    [denied] = points(got, "loopwright.tool.decision", tool_name="Bash")
    assert denied["attrs"]["decision"] == "reject" and denied["value"] == 1
    [event] = [r for r in got.logs if r["name"] == "loopwright.tool_decision"]
    assert (event["attrs"]["decision"], event["attrs"]["source"]) == ("reject", a["loopwright.tool.decision_source"])
    [result] = [r for r in got.logs if r["name"] == "loopwright.tool_result"]
    assert result["attrs"]["success"] is False and "error" not in result["attrs"]


def test_your_settings_env_switches_telemetry_on_a_projects_cannot(tmp_path):
    """As for Claude Code: the `env` of your own settings file configures loopwright itself; a
    project's reaches only the processes its tools start, so it cannot send your runs anywhere."""
    with Simulator([{"text": "one"}, {"text": "two"}]) as sim, HttpCollector() as collector:
        switched = {"env": {"CLAUDE_CODE_ENABLE_TELEMETRY": "1", "OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint,
                            "OTEL_METRICS_EXPORTER": "none", "OTEL_LOGS_EXPORTER": "none"}}
        (tmp_path / "proj" / ".claude").mkdir(parents=True)
        (tmp_path / "proj" / ".claude" / "settings.json").write_text(json.dumps(switched))
        from_project = run(tmp_path, sim, ["-p", "hi"], {})
        assert from_project.stdout.strip() == "one", from_project.stderr
        assert collector.got.spans == []
        (tmp_path / "proj" / ".claude" / "settings.json").unlink()
        (tmp_path / "home" / ".claude").mkdir(parents=True)
        (tmp_path / "home" / ".claude" / "settings.json").write_text(json.dumps(switched))
        from_yours = run(tmp_path, sim, ["-p", "hi"], {})
        assert from_yours.stdout.strip() == "two", from_yours.stderr
    assert sorted(s["name"] for s in collector.got.spans) == ["chat claude-sonnet-5", "invoke_agent loopwright"]


def test_grpc_carries_the_same_spans(tmp_path):
    pytest.importorskip("grpc")
    script = [{"tool_use": {"name": "Bash", "input": {"command": "true"}}}, {"text": "ok"}]
    with Simulator(script) as sim, GrpcCollector() as collector:
        out = run(tmp_path, sim, ["-p", "go", "--allowedTools", "Bash"], otlp(collector.endpoint, "grpc"))
    assert out.returncode == 0 and "telemetry" not in out.stderr, out.stderr
    names = sorted(s["name"] for s in collector.got.spans)
    assert names == ["chat claude-sonnet-5", "chat claude-sonnet-5", "execute_tool Bash", "invoke_agent loopwright"]
    assert points(collector.got, "loopwright.session.count")


@pytest.mark.parametrize("collector", ["closed port", "never answers"])
def test_a_collector_gone_or_silent_costs_one_line_and_never_the_run(tmp_path, collector):
    silent = Silent()
    endpoint = f"http://127.0.0.1:{closed_port()}" if collector == "closed port" else silent.endpoint
    with Simulator([{"text": "the answer"}]) as sim, silent:
        out = run(tmp_path, sim, ["-p", "hi"], otlp(endpoint, OTEL_EXPORTER_OTLP_TIMEOUT="1"))
        if collector == "never answers":
            assert silent.accepted.is_set()  # the exporter did reach it, and waited in vain
    assert out.returncode == 0 and out.stdout.strip() == "the answer", out.stderr
    said = [line for line in out.stderr.splitlines() if "telemetry" in line]
    assert len(said) == 1 and said[0].startswith("loopwright: telemetry: "), out.stderr
    assert "Traceback" not in out.stderr and "opentelemetry" not in out.stderr.lower().replace(
        "loopwright: telemetry", "")


def test_off_by_default_nothing_of_opentelemetry_is_imported(tmp_path):
    with Simulator([{"text": "hi"}, {"text": "hi"}]) as sim:
        for switch in ({}, {"CLAUDE_CODE_ENABLE_TELEMETRY": "0", "OTEL_TRACES_EXPORTER": "otlp"}):
            home, project = tmp_path / "home", tmp_path / "proj"
            home.mkdir(exist_ok=True)
            project.mkdir(exist_ok=True)
            env = {k: v for k, v in os.environ.items()
                   if not k.startswith(("ANTHROPIC_", "LOOPWRIGHT_", "OTEL_", "CLAUDE_CODE_"))}
            out = subprocess.run([sys.executable, "-X", "importtime", "-m", "loopwright", "-p", "hi"], cwd=project,
                                 env=env | switch | {"ANTHROPIC_BASE_URL": sim.base_url, "ANTHROPIC_API_KEY": "k",
                                                     "HOME": str(home), "LOOPWRIGHT_HOME": str(home / ".lw")},
                                 capture_output=True, text=True, timeout=60)
            assert out.stdout.strip() == "hi", out.stderr[-2000:]
            loaded = {line.split("|")[-1].strip().split(".")[0] for line in out.stderr.splitlines()
                      if line.startswith("import time:")}
            assert "loopwright" in loaded and not loaded & {"opentelemetry", "grpc", "google"}, switch


def test_console_exporters_write_to_stderr_and_leave_stdout_to_the_result(tmp_path):
    with Simulator([{"text": "the answer"}]) as sim:
        out = run(tmp_path, sim, ["-p", "hi"], {"CLAUDE_CODE_ENABLE_TELEMETRY": "1", "OTEL_TRACES_EXPORTER": "console",
                                                "OTEL_METRICS_EXPORTER": "none", "OTEL_LOGS_EXPORTER": "none"})
    assert out.returncode == 0 and out.stdout == "the answer\n", out.stderr
    assert '"name": "invoke_agent loopwright"' in out.stderr and "loopwright.session.count" not in out.stderr


def test_switched_on_without_the_otel_extra_says_so_once_and_runs(tmp_path):
    """OpenTelemetry made unimportable in the CLI's process (as if `loopwright[otel]` were not
    installed): one line on stderr, and the run as without telemetry."""
    with Simulator([{"text": "the answer"}]) as sim:
        base = {k: v for k, v in os.environ.items()
                if not k.startswith(("ANTHROPIC_", "LOOPWRIGHT_", "OTEL_", "CLAUDE_CODE_"))}
        (tmp_path / "home").mkdir()
        base.update(HOME=str(tmp_path / "home"), LOOPWRIGHT_HOME=str(tmp_path / "home" / ".lw"), ANTHROPIC_API_KEY="k",
                    ANTHROPIC_BASE_URL=sim.base_url, CLAUDE_CODE_ENABLE_TELEMETRY="1")
        hidden = ("import runpy, sys; sys.modules['opentelemetry'] = None; sys.argv = ['loopwright', '-p', 'hi']; "
                  "runpy.run_module('loopwright', run_name='__main__')")
        out = subprocess.run([sys.executable, "-c", hidden], env=base, cwd=tmp_path, capture_output=True, text=True,
                             timeout=60)
    assert out.returncode == 0 and out.stdout == "the answer\n", out.stderr
    said = [line for line in out.stderr.splitlines() if "telemetry" in line]
    assert said == ["loopwright: telemetry: it is switched on but OpenTelemetry is not installed "
                    "(pip install 'loopwright[otel]'); the run goes on without it"], out.stderr


@pytest.mark.parametrize("variable, value, says", [
    ("CLAUDE_CODE_ENABLE_TELEMETRY", "maybe", "CLAUDE_CODE_ENABLE_TELEMETRY='maybe': expected 1 or 0"),
    ("OTEL_TRACES_EXPORTER", "zipkin", "OTEL_TRACES_EXPORTER='zipkin': expected one of otlp, console, none"),
    ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json", "OTEL_EXPORTER_OTLP_PROTOCOL='http/json': expected http/protobuf or grpc"),
    ("OTEL_EXPORTER_OTLP_TIMEOUT", "soon", "OTEL_EXPORTER_OTLP_TIMEOUT='soon': expected a number of seconds"),
    ("LOOPWRIGHT_TRACE_LINKS", "00-abc-def-01", "LOOPWRIGHT_TRACE_LINKS='00-abc-def-01': expected W3C traceparent values"),
])
def test_a_switch_set_wrong_is_a_clear_error_before_the_run(tmp_path, variable, value, says):
    with Simulator([{"text": "never asked"}]) as sim:
        out = run(tmp_path, sim, ["-p", "hi"], {"LOOPWRIGHT_ENABLE_TELEMETRY": "1", variable: value})
        assert sim.message_requests == []
    assert out.returncode == 2 and says in out.stderr, out.stderr


ROUTINE = """\
source:
  command: cat items.jsonl
prompt: "Handle report {id}"
allowed_tools: [Bash]
"""


def test_a_routine_fire_and_each_item_are_spans_the_item_runs_link_to(tmp_path):
    project = tmp_path / "proj"
    (project / ".loopwright" / "routines").mkdir(parents=True)
    (project / ".loopwright" / "routines" / "triage.yaml").write_text(ROUTINE)
    (project / "items.jsonl").write_text('{"id": "r1"}\n{"id": "r2"}\n')
    script = {"rules": [{"match": {"last_user_contains": "report r1"}, "responses": [{"text": "r1 handled"}]},
                        {"match": {"last_user_contains": "report r2"}, "responses": [{"text": "r2 handled"}]}]}
    with Simulator(script) as sim, HttpCollector() as collector:
        out = run(tmp_path, sim, ["routine", "run", "triage", "--once"], otlp(collector.endpoint))
    assert out.returncode == 0 and "2 done" in out.stdout, out.stdout + out.stderr
    spans = collector.got.spans
    [fire] = by_name(spans, "routine_fire triage")
    assert fire["parent"] == "" and (fire["attrs"]["loopwright.routine.found"], fire["attrs"]["loopwright.routine.done"]) == (2, 2)
    items = {s["attrs"]["loopwright.routine.item.id"]: s for s in by_name(spans, "routine_item triage")}
    assert set(items) == {"r1", "r2"}
    runs = by_name(spans, "invoke_agent loopwright")
    assert len(runs) == 2
    for item in items.values():
        assert (item["trace"], item["parent"]) == (fire["trace"], fire["id"])
        assert item["attrs"]["loopwright.routine.item.status"] == "done"
        # the item's run: a trace of its own, linked to the item that started it, in the item's session
        [started] = [r for r in runs if r["links"] == [(item["trace"], item["id"])]]
        assert started["attrs"]["session.id"] == item["attrs"]["session.id"] and started["trace"] != fire["trace"]
        assert started["attrs"]["loopwright.prompt.source"] == "routine"


@pytest.mark.timeout(240)
def test_a_durable_loop_taken_over_by_another_worker_continues_its_trace(tmp_path):
    """One goal loop on a SQLite-backed worker, killed (-9) while its model call after the tool
    call is under way; a new worker takes the loop over. The spans both workers sent are one trace,
    the survivor's run under the context the job was enqueued with."""
    import signal

    from procs import gone

    pytest.importorskip("dbos")
    from loopwright.distributed.client import statuses

    script = {"rules": [
        {"match": {"system_contains": EVALUATOR}, "responses": [{"text": "{\"ok\": true, \"reason\": \"marked\"}",
                                                                 "repeat": -1}]},
        {"match": {"last_user_contains": "[S1]"}, "responses": [{"text": "done", "delay": 3.0, "repeat": -1}]},
        {"match": {"last_user_contains": "go."}, "responses": [
            {"tool_use": {"name": "Bash", "input": {"command": "echo x >> mark; echo '[S1]'"}}}]},
    ]}
    store = f"sqlite:///{tmp_path / 'dbos.sqlite'}"
    (tmp_path / "proj").mkdir()
    workers = []
    with Simulator(script) as sim, HttpCollector() as collector:
        env = otlp(collector.endpoint, OTEL_BSP_SCHEDULE_DELAY="50")  # each ended span goes at once: one is killed
        out = run(tmp_path, sim, ["enqueue", "--store", store, "go.", "--goal", "mark exists", "--check", "test -f mark",
                                  "--allowedTools", "Bash", "--max-turns", "6"], env)
        assert out.returncode == 0, out.stderr
        workflow_id = out.stdout.split()[0]
        base = environment(tmp_path, sim, **env)
        log = open(tmp_path / "workers.log", "w")
        try:
            def worker():
                proc = subprocess.Popen([sys.executable, "-m", "loopwright", "worker", "--store", store, "--dead-after",
                                         "3", "--drain", "20"], env=base, cwd=tmp_path / "proj", stdout=log,
                                        stderr=subprocess.STDOUT)
                workers.append(proc)
                return proc

            first = worker()
            wait_for(lambda: by_name(collector.got.spans, "execute_tool Bash"), 90, "the first worker's tool call span")
            first.send_signal(signal.SIGKILL)
            assert gone(first.pid, 10)
            seen = len(collector.got.spans)
            second = worker()
            wait_for(lambda: statuses(store).get(workflow_id) == "SUCCESS", 120, "the loop, on the second worker")
            second.send_signal(signal.SIGINT)
            assert second.wait(timeout=60) == 0
        finally:
            for proc in workers:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait(timeout=30)
            log.close()
    spans = collector.got.spans
    before, after = spans[:seen], spans[seen:]
    assert before and not by_name(before, "invoke_agent loopwright")  # the killed worker's run never ended
    [survivor] = by_name(after, "invoke_agent loopwright")
    assert survivor["attrs"]["loopwright.terminal_reason"] == "goal_met", (tmp_path / "workers.log").read_text()
    assert survivor["attrs"]["loopwright.prompt.source"] == "worker"
    assert len({s["trace"] for s in spans}) == 1  # both workers, one trace
    [enqueued] = by_name(spans, "enqueue loopwright")
    assert survivor["parent"] == enqueued["id"]  # the job's context: its enqueue's span
    assert by_name(after, "goal_evaluation")[0]["parent"] == survivor["id"]


@pytest.mark.timeout(180)
def test_enqueue_opens_the_loops_trace_and_the_workers_run_is_its_child(tmp_path):
    """`loopwright enqueue` sends a span of its own, the root of the loop's trace; the job carries
    its context, and the run on a SQLite-backed worker is its child."""
    import signal

    pytest.importorskip("dbos")
    from loopwright.distributed.client import statuses

    store = f"sqlite:///{tmp_path / 'dbos.sqlite'}"
    (tmp_path / "proj").mkdir()
    with Simulator([{"text": "all done"}]) as sim, HttpCollector() as collector:
        env = otlp(collector.endpoint)
        out = run(tmp_path, sim, ["enqueue", "--store", store, "--queue", "q1", "say it is done"], env)
        assert out.returncode == 0, out.stderr
        workflow_id, _, session_id = out.stdout.split()
        [enqueued] = wait_for(lambda: by_name(collector.got.spans, "enqueue q1"), 30, "the enqueue's span")
        base = environment(tmp_path, sim, **env)
        with open(tmp_path / "worker.log", "w") as log:
            worker = subprocess.Popen([sys.executable, "-m", "loopwright", "worker", "--store", store, "--queue", "q1"],
                                      env=base, cwd=tmp_path / "proj", stdout=log, stderr=subprocess.STDOUT)
            try:
                wait_for(lambda: statuses(store).get(workflow_id) == "SUCCESS", 120, "the loop, on the worker")
            finally:
                worker.send_signal(signal.SIGINT)
                worker.wait(timeout=60)
    assert worker.returncode == 0, (tmp_path / "worker.log").read_text()
    spans = collector.got.spans
    assert enqueued["parent"] == "" and enqueued["kind"] == 4  # a root, SPAN_KIND_PRODUCER
    a = enqueued["attrs"]
    assert (a["messaging.operation.name"], a["messaging.destination.name"]) == ("enqueue", "q1")
    assert a["messaging.message.id"] == a["loopwright.workflow.id"] == workflow_id and a["session.id"] == session_id
    assert not any("say it is done" in str(v) for v in a.values())  # no prompt text without its opt-in
    [ran] = by_name(spans, "invoke_agent loopwright")
    assert ran["parent"] == enqueued["id"] and ran["attrs"]["loopwright.prompt.source"] == "worker"
    assert ran["attrs"]["session.id"] == session_id and ran["attrs"]["loopwright.outcome"] == "success"
    assert {s["trace"] for s in spans} == {enqueued["trace"]}  # the enqueue and the worker's spans: one trace


FAN_OUT = '''
async def main(wf, args):
    a, b = await wf.parallel(wf.agent("TOPIC-ONE summarise"), wf.agent("TOPIC-TWO summarise"))
    return a + " + " + b
'''


def test_a_workflows_agents_are_child_spans_of_its_tool_call(tmp_path):
    from loopwright.sandbox.bwrap import availability

    if availability() is not None:
        pytest.skip(f"no sandbox here (a model-written workflow runs only under it): {availability()}")
    rules = [{"match": {"last_user_contains": "TOPIC-ONE"}, "responses": [{"text": "one"}]},
             {"match": {"last_user_contains": "TOPIC-TWO"}, "responses": [{"text": "two"}]},
             {"responses": [{"tool_use": {"name": "Workflow", "input": {"script": FAN_OUT}}}, {"text": "done"}]}]
    with Simulator({"rules": rules}) as sim, HttpCollector() as collector:
        out = run(tmp_path, sim, ["-p", "go", "--output-format", "json"], otlp(collector.endpoint))
    assert json.loads(out.stdout)["result"] == "done", out.stderr
    spans = collector.got.spans
    [call] = by_name(spans, "execute_tool Workflow")
    agents = [s for s in spans if s["parent"] == call["id"]]
    assert len(agents) == 2 and all(a["name"].startswith("invoke_agent ") for a in agents)
    for agent in agents:
        [chat] = [s for s in spans if s["parent"] == agent["id"]]
        assert chat["name"].startswith("chat ") and agent["attrs"]["loopwright.outcome"] == "success"
        assert agent["attrs"]["loopwright.prompt.source"] == "workflow"
        assert call["start"] <= agent["start"] and agent["end"] <= call["end"]


def attempts_repo(tmp_path):
    """A git repository (the project folder) whose add() two attempts fix, and their approaches."""
    repo = tmp_path / "proj"
    repo.mkdir()

    def git(*args):
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, check=True,
                       capture_output=True)

    git("init", "-q", "-b", "main")
    (repo / "app.py").write_text("def add(a, b):\n    return 0\n")
    git("add", "-A")
    git("commit", "-q", "-m", "start")
    (tmp_path / "ways.txt").write_text("approach 1\napproach 2\n")
    return repo


WRITE = {"tool_use": {"name": "Write", "input": {"file_path": "app.py", "content": "def add(a, b):\n    return a + b\n"}}}
RULING = {"text": json.dumps({"attempts": [{"label": "A", "defects": [], "verdict": "acceptable"},
                                           {"label": "B", "defects": [], "verdict": "acceptable"}],
                              "winner": "A", "reasons": "both fine"})}
ATTEMPTS_SCRIPT = {"rules": [{"match": {"system_contains": "reviewer of several independent attempts"}, "responses": [RULING]},
                             {"match": {"last_user_contains": "approach"}, "responses": [WRITE, WRITE]},
                             {"responses": [{"text": "done", "repeat": -1}]}]}


def test_parallel_attempts_are_one_span_with_each_attempts_run_and_the_judges_call_under_it(tmp_path):
    attempts_repo(tmp_path)
    with Simulator(ATTEMPTS_SCRIPT) as sim, HttpCollector() as collector:
        out = run(tmp_path, sim, ["-p", "make add() add", "--attempts", "2", "--attempt-instructions",
                                  str(tmp_path / "ways.txt"), "--permission-mode", "acceptEdits", "--output-format",
                                  "json"], otlp(collector.endpoint, TMPDIR=str(tmp_path)))
    result = json.loads(out.stdout)
    assert result["attempts"]["applied"], out.stderr
    spans = collector.got.spans
    [whole] = by_name(spans, "attempts")
    assert whole["parent"] == "" and whole["attrs"]["loopwright.attempts.of"] == 2
    assert whole["attrs"]["loopwright.attempts.winner"] == result["attempts"]["winner"]
    runs = by_name([s for s in spans if s["parent"] == whole["id"]], "invoke_agent loopwright")
    assert sorted(r["attrs"]["loopwright.attempt.number"] for r in runs) == [1, 2]
    for r in runs:
        assert r["attrs"]["loopwright.prompt.source"] == "attempt"
        assert r["attrs"]["loopwright.attempt.run"] == whole["attrs"]["loopwright.attempts.run"]
        assert by_name([s for s in spans if s["parent"] == r["id"]], "execute_tool Write")
    # the judge's model call: a chat span of its own under the run of attempts, after the attempts ended
    [judged] = [s for s in spans if s["parent"] == whole["id"] and s["name"].startswith("chat ")]
    assert judged["name"] == "chat claude-sonnet-5" and judged["attrs"]["loopwright.model_call.role"] == "judge"
    assert judged["attrs"]["gen_ai.operation.name"] == "chat" and judged["attrs"]["gen_ai.system"] == "anthropic"
    assert judged["attrs"]["gen_ai.usage.output_tokens"] == result["usageByRole"]["judge"]["outputTokens"] > 0
    assert judged["attrs"]["gen_ai.response.finish_reasons"] == ("end_turn",)
    assert max(r["end"] for r in runs) <= judged["start"] <= judged["end"] <= whole["end"]
    # and its spend in the metrics: the cost of the attempts and of the judge adds up to the result's
    assert sum(p["value"] for p in points(collector.got, "loopwright.cost.usage")) == pytest.approx(result["total_cost_usd"])
    judge_out = result["usageByRole"]["judge"]["outputTokens"]
    outputs = sum(p["value"] for p in points(collector.got, "loopwright.token.usage", type="output"))
    assert outputs == sum(r["outputTokens"] for r in result["usageByRole"].values()) and judge_out < outputs


@pytest.mark.timeout(240)
def test_attempts_on_a_worker_and_their_judges_call_are_children_of_the_enqueue(tmp_path):
    """`enqueue --attempts 2`: each attempt's run and the judge's model call, on the worker, are
    children of the enqueue's span, in one trace."""
    import signal

    pytest.importorskip("dbos")
    from loopwright.distributed.client import statuses

    repo = attempts_repo(tmp_path)
    store = f"sqlite:///{tmp_path / 'dbos.sqlite'}"
    with Simulator(ATTEMPTS_SCRIPT) as sim, HttpCollector() as collector:
        env = otlp(collector.endpoint, TMPDIR=str(tmp_path))
        out = run(tmp_path, sim, ["enqueue", "--store", store, "make add() add", "--attempts", "2",
                                  "--attempt-instructions", str(tmp_path / "ways.txt"), "--permission-mode",
                                  "acceptEdits"], env)
        assert out.returncode == 0, out.stderr
        workflow_id = out.stdout.split()[0]
        base = environment(tmp_path, sim, **env)
        with open(tmp_path / "worker.log", "w") as log:
            worker = subprocess.Popen([sys.executable, "-m", "loopwright", "worker", "--store", store], env=base,
                                      cwd=repo, stdout=log, stderr=subprocess.STDOUT)
            try:
                wait_for(lambda: statuses(store, [workflow_id], None).get(workflow_id) in ("SUCCESS", "ERROR"), 180,
                         "the run of attempts, on the worker")
            finally:
                worker.send_signal(signal.SIGINT)
                worker.wait(timeout=60)
    log = (tmp_path / "worker.log").read_text()
    assert statuses(store, [workflow_id], None)[workflow_id] == "SUCCESS", log
    assert "return a + b" in (repo / "app.py").read_text(), log  # the winner landed
    spans = collector.got.spans
    [enqueued] = by_name(spans, "enqueue loopwright")
    assert enqueued["parent"] == "" and enqueued["attrs"]["loopwright.attempts.of"] == 2
    assert {s["trace"] for s in spans} == {enqueued["trace"]}
    under = [s for s in spans if s["parent"] == enqueued["id"]]
    runs = by_name(under, "invoke_agent loopwright")
    assert sorted(r["attrs"]["loopwright.attempt.number"] for r in runs) == [1, 2], log
    [judged] = [s for s in under if s["name"].startswith("chat ")]
    assert judged["attrs"]["loopwright.model_call.role"] == "judge" and judged["attrs"]["gen_ai.usage.output_tokens"] > 0
    assert max(r["end"] for r in runs) <= judged["start"]


def test_your_settings_env_switches_on_the_attempts_span_too(tmp_path):
    """The span around the attempts is made before any agent is built: your settings' env is
    applied when they are read, so it is there too."""
    attempts_repo(tmp_path)
    with Simulator(ATTEMPTS_SCRIPT) as sim, HttpCollector() as collector:
        (tmp_path / "home" / ".claude").mkdir(parents=True)
        (tmp_path / "home" / ".claude" / "settings.json").write_text(json.dumps({"env": {
            "CLAUDE_CODE_ENABLE_TELEMETRY": "1", "OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint}}))
        out = run(tmp_path, sim, ["-p", "make add() add", "--attempts", "2", "--attempt-instructions",
                                  str(tmp_path / "ways.txt"), "--permission-mode", "acceptEdits", "--output-format",
                                  "json"], {"TMPDIR": str(tmp_path)})
    assert json.loads(out.stdout)["attempts"]["applied"], out.stderr
    spans = collector.got.spans
    [whole] = by_name(spans, "attempts")
    under = [s["name"] for s in spans if s["parent"] == whole["id"]]
    assert sorted(under) == ["chat claude-sonnet-5", "invoke_agent loopwright", "invoke_agent loopwright"]


def test_compactions_summary_call_is_a_chat_span_under_it(tmp_path):
    bash = {"tool_use": {"name": "Bash", "input": {"command": "true"}}}
    script = [bash, bash, bash, {"text": "partial", "stop_reason": "model_context_window_exceeded"},
              {"text": "<summary>three calls of true</summary>"}, {"text": "done"}]
    with Simulator(script) as sim, HttpCollector() as collector:
        out = run(tmp_path, sim, ["-p", "go", "--allowedTools", "Bash", "--output-format", "json"],
                  otlp(collector.endpoint))
    result = json.loads(out.stdout)
    assert result["result"] == "done" and "compaction" in result["usageByRole"], out.stderr
    spans = collector.got.spans
    [root] = by_name(spans, "invoke_agent loopwright")
    [compaction] = by_name(spans, "compaction")
    assert compaction["parent"] == root["id"] and compaction["attrs"]["loopwright.compaction.trigger"] == "reactive"
    [summary] = [s for s in spans if s["parent"] == compaction["id"]]
    assert summary["name"] == "chat claude-sonnet-5" and summary["attrs"]["loopwright.model_call.role"] == "compaction"
    assert summary["attrs"]["gen_ai.usage.output_tokens"] == result["usageByRole"]["compaction"]["outputTokens"]
    assert summary["attrs"]["gen_ai.response.finish_reasons"] == ("end_turn",)
    assert compaction["start"] <= summary["start"] <= summary["end"] <= compaction["end"]


def test_the_auto_mode_classifiers_calls_are_chat_spans_under_the_tool_call_it_decided(tmp_path):
    write = {"name": "Bash", "input": {"command": "python3 -c \"open('made.txt', 'w').write('x')\""}}
    script = {"rules": [{"match": {"system_contains": "autonomous coding agent"},
                         "responses": [{"text": "no verdict here"}, {"text": "<block>no</block>"}]},
                        {"responses": [{"tool_use": write}, {"text": "Made it."}]}]}
    with Simulator(script) as sim, HttpCollector() as collector:
        out = run(tmp_path, sim, ["-p", "make the file with python", "--permission-mode", "auto", "--output-format",
                                  "json"], otlp(collector.endpoint))
    result = json.loads(out.stdout)
    assert result["result"] == "Made it.", out.stderr
    spans = collector.got.spans
    [bash] = by_name(spans, "execute_tool Bash")
    assert bash["attrs"]["loopwright.tool.decision_source"] == "classifier"
    asked = [s for s in spans if s["parent"] == bash["id"]]  # its unreadable first answer, then its verdict
    assert [s["name"] for s in asked] == ["chat claude-haiku-4-5"] * 2
    assert {s["attrs"]["loopwright.model_call.role"] for s in asked} == {"classifier"}
    assert sum(s["attrs"]["gen_ai.usage.input_tokens"] for s in asked) == result["usageByRole"]["classifier"]["inputTokens"]
    assert all(bash["start"] <= s["start"] <= s["end"] <= bash["end"] for s in asked)


def test_a_schedule_fire_is_a_span_the_run_it_starts_links_to(tmp_path):
    with Simulator([{"text": "hi back"}]) as sim, HttpCollector() as collector:
        added = run(tmp_path, sim, ["schedule", "add", "say hi", "--every", "1h", "--now"], {})
        assert added.returncode == 0, added.stderr
        schedule_id = added.stdout.strip()
        served = run(tmp_path, sim, ["scheduler", "--once"], otlp(collector.endpoint))
    assert served.returncode == 0 and f"■ {schedule_id} · run 1 success" in served.stdout, served.stdout + served.stderr
    spans = collector.got.spans
    [fire] = by_name(spans, f"schedule_fire {schedule_id}")
    assert fire["parent"] == "" and fire["attrs"]["loopwright.schedule.status"] == "success"
    [started] = by_name(spans, "invoke_agent loopwright")  # in the fire's own process
    assert started["links"] == [(fire["trace"], fire["id"])] and started["trace"] != fire["trace"]
    assert started["attrs"]["session.id"] == fire["attrs"]["loopwright.schedule.session_id"]
    assert fire["start"] <= started["start"] and started["end"] <= fire["end"]


@pytest.mark.parametrize("given, read", [
    ("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", True),
    (" 00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-00 ", True),
    ("00-00000000000000000000000000000000-00f067aa0ba902b7-01", False),  # an all-zero id is invalid
    ("00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", False),
    ("ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", False),  # a version we do not know
    ("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra", False),
    ({"traceparent": "x"}, False), (None, False), ("", False),
])
def test_a_carried_traceparent_is_read_strictly(given, read):
    """A job's trace comes from a shared store: what is not a W3C traceparent is a new trace."""
    from loopwright.telemetry.carried import new_traceparent, parse

    assert (parse(given) is not None) == read
    assert parse(new_traceparent()) is not None


@pytest.mark.timeout(180)
def test_a_routine_item_sent_to_a_worker_is_linked_from_the_run_there(tmp_path):
    """The item's span is in the fire's process; its run, on a worker, links to it through the job."""
    import signal

    pytest.importorskip("dbos")
    project = tmp_path / "proj"
    (project / ".loopwright" / "routines").mkdir(parents=True)
    (project / ".loopwright" / "routines" / "queued.yaml").write_text(ROUTINE)
    (project / "items.jsonl").write_text('{"id": "r1"}\n')
    store = f"sqlite:///{tmp_path / 'dbos.sqlite'}"
    with Simulator([{"text": "r1 handled"}]) as sim, HttpCollector() as collector:
        env = otlp(collector.endpoint)
        base = environment(tmp_path, sim, **env)
        with open(tmp_path / "worker.log", "w") as log:
            worker = subprocess.Popen([sys.executable, "-m", "loopwright", "worker", "--store", store], env=base,
                                      cwd=project, stdout=log, stderr=subprocess.STDOUT)
            try:
                fired = run(tmp_path, sim, ["routine", "run", "queued", "--once", "--queue", "loopwright", "--store",
                                            store], env)
            finally:
                worker.send_signal(signal.SIGINT)
                worker.wait(timeout=60)
    assert "1 done" in fired.stdout, fired.stdout + fired.stderr + (tmp_path / "worker.log").read_text()
    spans = collector.got.spans
    [item] = by_name(spans, "routine_item queued")
    [started] = by_name(spans, "invoke_agent loopwright")
    assert started["attrs"]["loopwright.prompt.source"] == "worker"
    assert started["links"] == [(item["trace"], item["id"])] and started["trace"] != item["trace"]
    [enqueued] = by_name(spans, "enqueue loopwright")  # the loop's trace opens at its enqueue, linked to the item
    assert started["parent"] == enqueued["id"] and enqueued["parent"] == ""
    assert enqueued["links"] == [(item["trace"], item["id"])]


def test_a_prompt_hooks_model_call_is_a_chat_span_under_its_hook(tmp_path):
    (tmp_path / "proj" / ".claude").mkdir(parents=True)
    (tmp_path / "proj" / ".claude" / "settings.json").write_text(json.dumps({"hooks": {"PreToolUse": [
        {"matcher": "Bash", "hooks": [{"type": "prompt", "prompt": "Allow only harmless echo commands. $ARGUMENTS"}]}]}}))
    script = {"rules": [{"match": {"last_user_contains": "Allow only harmless echo"},
                         "responses": [{"text": '{"ok": true}', "repeat": -1}]},
                        {"responses": [{"tool_use": {"name": "Bash", "input": {"command": "echo hi"}}}, {"text": "said hi"}]}]}
    with Simulator(script) as sim, HttpCollector() as collector:
        out = run(tmp_path, sim, ["-p", "say hi", "--allowedTools", "Bash", "--output-format", "json"],
                  otlp(collector.endpoint))
    result = json.loads(out.stdout)
    assert result["result"] == "said hi", out.stderr
    spans = collector.got.spans
    [hook] = by_name(spans, "hook PreToolUse")
    [asked] = [s for s in spans if s["parent"] == hook["id"]]
    assert asked["name"].startswith("chat ") and asked["attrs"]["loopwright.model_call.role"] == "prompt_hook"
    assert asked["attrs"]["gen_ai.response.finish_reasons"] == ("end_turn",)
    assert hook["start"] <= asked["start"] <= asked["end"] <= hook["end"]
