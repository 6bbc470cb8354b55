"""Hooks end to end: real shell scripts (tests/hooks/) registered as settings would register them,
the real loop against the loopback simulator, real tools. Each test asserts what the model was
sent, what ran, and what the hook received."""

import json
import shlex
from pathlib import Path

import pytest

from loopwright.agent import Agent
from loopwright.core.events import HookResponse, HookStarted, Notice
from loopwright.hooks import HookRunner
from loopwright.permissions.decide import PermissionRules
from loopwright.providers.anthropic import AnthropicModel
from loopwright.testing import Simulator
from loopwright.testing.clock import FakeClock

pytestmark = pytest.mark.anyio
HOOKS = Path(__file__).parent / "hooks"
ALLOW_BASH = PermissionRules(allow=("Bash",))


def sh(script, *args):
    return " ".join(shlex.quote(str(a)) for a in ("sh", HOOKS / script, *args))


def reply(log, out="", code=0, err=""):
    return sh("reply.sh", log, out if isinstance(out, str) else json.dumps(out), code, err)


def group(command, matcher=None, **extra):
    g = {"hooks": [{"type": "command", "command": command, **extra}]}
    return g if matcher is None else {"matcher": matcher, **g}


def read_log(path):
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def tool(command):
    return {"tool_use": {"name": "Bash", "input": {"command": command}}}


class Run:
    def __init__(self, result, sim, events, session):
        self.result, self.events, self.session = result, events, session
        self.json = result.to_json()
        self.requests = [r.body for r in sim.message_requests]

    def notices(self, level="warning"):
        return [e.text for e in self.events if isinstance(e, Notice) and e.level == level]

    def tool_results(self, n):
        """The tool_result blocks sent in request n."""
        return [b for b in self.requests[n]["messages"][-1]["content"] if b["type"] == "tool_result"]


@pytest.fixture
def project(tmp_path):
    p = tmp_path / "project"
    p.mkdir()
    return p


@pytest.fixture
def run(project):
    async def go(script, hooks, prompt="do it", permissions=ALLOW_BASH, env=None, end=True, policy=None, **kw):
        events = []
        runner = hooks if isinstance(hooks, HookRunner) else \
            HookRunner.from_settings({"hooks": hooks, "env": env or {}, "hookFailurePolicy": policy})
        with Simulator(script) as sim:
            agent = Agent(model_client=AnthropicModel(base_url=sim.base_url, api_key="sk-test"), cwd=project,
                          clock=FakeClock(), permissions=permissions, hooks=runner, **kw)
            async with agent.open() as running:
                result = await running.prompt(prompt, on_event=events.append)
                if end:
                    await running.end_session(on_event=events.append)
            out = Run(result, sim, events, running.session)
            assert not sim.unmatched, "the script did not cover a request"
        return out

    return go


# ------------------------------------------------------------ PreToolUse


async def test_pre_tool_use_deny_blocks_the_call_and_tells_the_model(run, project, tmp_path):
    (project / "keep").mkdir()
    r = await run([tool("rm -r keep"), {"text": "ok"}], {"PreToolUse": [group(sh("guard_rm.sh"), "Bash")]})
    assert (project / "keep").is_dir()
    [result] = r.tool_results(1)
    assert result["is_error"] and "removing files is not allowed here: rm -r keep" in result["content"]
    assert r.json["permission_denials"][0]["tool_name"] == "Bash"


async def test_pre_tool_use_allow_skips_asking(run, project):
    r = await run([tool("touch marker"), {"text": "ok"}], {"PreToolUse": [group(sh("guard_rm.sh"))]},
                  permissions=PermissionRules())  # no allow rule: without the hook Bash is denied
    assert (project / "marker").exists() and not r.json["permission_denials"]


async def test_without_the_hook_the_same_call_is_denied(run, project):
    r = await run([tool("touch marker"), {"text": "ok"}], {}, permissions=PermissionRules())
    assert not (project / "marker").exists() and r.json["permission_denials"]


async def test_pre_tool_use_ask_becomes_a_denial_headless(run, project, tmp_path):
    ask = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask",
                                  "permissionDecisionReason": "a person should look at this"}}
    r = await run([tool("touch marker"), {"text": "ok"}], {"PreToolUse": [group(reply(tmp_path / "log", ask))]})
    assert not (project / "marker").exists()
    assert r.json["permission_denials"] and r.tool_results(1)[0]["is_error"]


async def test_updated_input_replaces_the_call_and_context_reaches_the_model(run, project):
    r = await run([tool("touch original"), {"text": "ok"}], {"PreToolUse": [group(sh("rewrite_command.sh"))]})
    assert (project / "rewritten.txt").read_text().strip() == "rewritten"
    assert not (project / "original").exists()
    [result] = r.tool_results(1)
    assert "note from a hook: the command touch original was rewritten" in result["content"]


async def test_exit_2_blocks_with_stderr_even_if_its_json_says_allow(run, project, tmp_path):
    allow = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}
    r = await run([tool("touch marker"), {"text": "ok"}],
                  {"PreToolUse": [group(reply(tmp_path / "log", allow, 2, "blocked by policy X"))]})
    assert not (project / "marker").exists()
    assert "blocked by policy X" in r.tool_results(1)[0]["content"]


async def test_exit_1_is_a_visible_non_blocking_error(run, project, tmp_path):
    r = await run([tool("touch marker"), {"text": "ok"}],
                  {"PreToolUse": [group(reply(tmp_path / "log", "", 1, "oops: config missing"))]})
    assert (project / "marker").exists()
    assert any("Failed with non-blocking status code 1: oops: config missing" in n for n in r.notices())
    response = next(e for e in r.events if isinstance(e, HookResponse))
    assert response.exit_code == 1 and response.outcome == "error"


async def test_other_exit_code_with_valid_json_lets_the_json_decide(run, project, tmp_path):
    deny = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                   "permissionDecisionReason": "json decides"}}
    r = await run([tool("touch marker"), {"text": "ok"}], {"PreToolUse": [group(reply(tmp_path / "log", deny, 1))]})
    assert not (project / "marker").exists() and "json decides" in r.tool_results(1)[0]["content"]


async def test_invalid_json_is_a_warning_and_with_the_open_policy_the_call_proceeds(run, project, tmp_path):
    r = await run([tool("touch marker"), {"text": "ok"}],
                  {"PreToolUse": [group(reply(tmp_path / "log", "{not json"))]}, policy="open")
    assert (project / "marker").exists()
    assert any("invalid JSON output" in n for n in r.notices())


async def test_timed_out_hook_renders_no_decision_and_its_process_group_dies(run, project, tmp_path):
    pid_file = tmp_path / "child.pid"
    r = await run([tool("touch marker"), {"text": "ok"}],
                  {"PreToolUse": [group(sh("slow.sh", pid_file), timeout=1)]}, policy="open")
    assert (project / "marker").exists()  # the deny it would have printed never counted
    assert any("timed out after 1s" in n for n in r.notices())
    assert [e.outcome for e in r.events if isinstance(e, HookResponse)] == ["cancelled"]
    status = Path(f"/proc/{pid_file.read_text().strip()}/status")
    assert not status.exists() or "\tZ" in status.read_text()  # the hook's child was killed too


async def test_continue_false_ends_the_run_hook_stopped_before_the_tool_runs(run, project, tmp_path):
    halt = {"continue": False, "stopReason": "maintenance window"}
    r = await run([tool("touch marker")], {"PreToolUse": [group(reply(tmp_path / "log", halt))]})
    assert not (project / "marker").exists() and len(r.requests) == 1
    assert r.json["terminal_reason"] == "hook_stopped" and r.json["is_error"]
    assert "maintenance window" in r.json["errors"][0]


# ------------------------------------------------------------ matchers and merging


async def test_matchers_star_names_and_regex(run, project, tmp_path):
    logs = {name: tmp_path / name for name in ("star", "names", "regex", "partial", "glob_regex")}
    hooks = {"PreToolUse": [group(reply(logs["star"]), "*"), group(reply(logs["names"]), "Bash|Edit"),
                            group(reply(logs["regex"]), "B.*h"), group(reply(logs["partial"]), "Bas"),
                            group(reply(logs["glob_regex"]), "Gl.b")]}
    calls = [{"name": "Bash", "input": {"command": "true"}}, {"name": "Glob", "input": {"pattern": "*"}}]
    await run([{"tool_use": calls}, {"text": "ok"}], hooks)
    seen = {name: [e["tool_name"] for e in read_log(p)] if p.exists() else [] for name, p in logs.items()}
    assert seen == {"star": ["Bash", "Glob"], "names": ["Bash"], "regex": ["Bash"], "partial": [],
                    "glob_regex": ["Glob"]}


async def test_parallel_handlers_merge_deny_beats_allow(run, project, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    allow = json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow",
                                               "additionalContext": "from the allowing hook"}})
    deny = json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                              "permissionDecisionReason": "the denying hook wins",
                                              "additionalContext": "from the denying hook"}})
    # each waits for the other to have started: only a parallel run finishes in time
    hooks = {"PreToolUse": [group(sh("rendezvous.sh", a, b, allow), timeout=20),
                            group(sh("rendezvous.sh", b, a, deny), timeout=20)]}
    r = await run([tool("touch marker"), {"text": "ok"}], hooks)
    assert not (project / "marker").exists() and not r.notices()
    assert "the denying hook wins" in r.tool_results(1)[0]["content"]


async def test_contexts_of_all_handlers_reach_the_model(run, project, tmp_path):
    hooks = {"PreToolUse": [group(reply(tmp_path / "a", {"hookSpecificOutput": {"additionalContext": "context one"}})),
                            group(reply(tmp_path / "b", {"hookSpecificOutput": {"additionalContext": "context two"}}))]}
    r = await run([tool("touch marker"), {"text": "ok"}], hooks)
    content = r.tool_results(1)[0]["content"]
    assert (project / "marker").exists() and "context one" in content and "context two" in content


async def test_exec_form_passes_arguments_without_a_shell(run, project, tmp_path):
    log = tmp_path / "log"
    out = json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                             "permissionDecisionReason": "exec form; $HOME stays literal"}})
    handler = {"type": "command", "command": "/bin/sh", "args": [str(HOOKS / "reply.sh"), str(log), out]}
    r = await run([tool("touch marker"), {"text": "ok"}], {"PreToolUse": [{"hooks": [handler]}]})
    assert not (project / "marker").exists()
    assert "exec form; $HOME stays literal" in r.tool_results(1)[0]["content"]


async def test_identical_handlers_from_two_files_run_once(run, tmp_path):
    log = tmp_path / "log"
    hooks = {"Stop": [group(reply(log)), group(reply(log))]}
    await run([{"text": "ok"}], hooks)
    assert len(read_log(log)) == 1


async def test_environment_and_working_directory(run, project, tmp_path):
    out = tmp_path / "env.txt"
    r = await run([{"text": "ok"}], {"Stop": [group(sh("env.sh", out))]}, env={"FROM_SETTINGS": "yes"})
    seen = dict(line.split("=", 1) for line in out.read_text().splitlines())
    assert seen["pwd"] == str(project.resolve())
    assert seen["CLAUDE_PROJECT_DIR"] == seen["LOOPWRIGHT_PROJECT_DIR"] == str(project.resolve())
    assert seen["CLAUDE_CODE_SESSION_ID"] == r.session.session_id and seen["FROM_SETTINGS"] == "yes"


async def test_disable_all_hooks(project, tmp_path):
    log = tmp_path / "log"
    runner = HookRunner.from_settings({"hooks": {"Stop": [group(reply(log))]}, "disableAllHooks": True})
    with Simulator([{"text": "ok"}]) as sim:
        agent = Agent(model_client=AnthropicModel(base_url=sim.base_url, api_key="k"), cwd=project, hooks=runner)
        await agent.run("hi")
    assert not log.exists()


# ------------------------------------------------------------ after the tools


async def test_post_tool_use_context_and_block_reason_reach_the_model(run, tmp_path):
    out = {"decision": "block", "reason": "The output shows a secret; do not repeat it.",
           "hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "post-hook context"}}
    log = tmp_path / "log"
    r = await run([tool("echo hello"), {"text": "ok"}], {"PostToolUse": [group(reply(log, out), "Bash")]})
    content = r.tool_results(1)[0]["content"]
    assert "hello" in content and "post-hook context" in content and "do not repeat it" in content
    [seen] = read_log(log)
    assert seen["tool_name"] == "Bash" and "hello" in json.dumps(seen["tool_response"]) and seen["tool_use_id"]


async def test_post_tool_use_failure_gets_the_error_and_adds_context(run, tmp_path):
    out = {"hookSpecificOutput": {"hookEventName": "PostToolUseFailure", "additionalContext": "try make check"}}
    log = tmp_path / "log"
    r = await run([tool("exit 3"), {"text": "ok"}], {"PostToolUseFailure": [group(reply(log, out))]})
    [seen] = read_log(log)
    assert "Exit code 3" in seen["error"]
    assert "try make check" in r.tool_results(1)[0]["content"]


async def test_post_tool_batch_continue_false_stops_before_the_next_call(run, project, tmp_path):
    log = tmp_path / "log"
    r = await run([tool("touch marker"), {"text": "never sent"}],
                  {"PostToolBatch": [group(reply(log, {"continue": False, "stopReason": "batch limit"}))]})
    assert (project / "marker").exists() and len(r.requests) == 1
    assert r.json["terminal_reason"] == "hook_stopped" and "batch limit" in r.json["errors"][0]
    [seen] = read_log(log)
    assert seen["tool_calls"][0]["tool_name"] == "Bash" and seen["tool_calls"][0]["tool_input"]["command"]


# ------------------------------------------------------------ prompts and stops


async def test_user_prompt_submit_block_ends_before_any_model_call(run, tmp_path):
    log = tmp_path / "log"
    r = await run([], {"UserPromptSubmit": [group(reply(log, "", 2, "prompts about X are not allowed"))]},
                  prompt="tell me about X")
    assert r.requests == [] and r.json["terminal_reason"] == "hook_stopped"
    assert "prompts about X are not allowed" in r.json["errors"][0]
    assert read_log(log)[0]["prompt"] == "tell me about X"


async def test_user_prompt_submit_plain_stdout_is_context_beside_the_prompt(run, tmp_path):
    r = await run([{"text": "ok"}], {"UserPromptSubmit": [group(reply(tmp_path / "log", "CTX-UPS: today is Friday"))]})
    first = r.requests[0]["messages"][-1]["content"]
    texts = [b["text"] for b in first if b["type"] == "text"]
    assert texts[0] == "do it" and "CTX-UPS: today is Friday" in texts[1:]


async def test_stop_block_reason_is_the_next_user_message(run, tmp_path):
    log, state = tmp_path / "log", tmp_path / "state"
    r = await run([{"text": "first answer"}, {"text": "tested and done"}],
                  {"Stop": [group(sh("stop_once.sh", log, state))]})
    assert len(r.requests) == 2
    last = r.requests[1]["messages"][-1]
    assert last["role"] == "user" and last["content"][0]["text"] == "Run the test suite before you stop."
    assert read_log(log) == [{"stop_hook_active": False, "last_assistant_message": "first answer"},
                             {"stop_hook_active": True, "last_assistant_message": "tested and done"}]
    assert r.json["result"] == "tested and done" and r.json["terminal_reason"] == "completed"


async def test_stop_block_cap_eight_honoured_ninth_ignored_counter_reset_by_a_tool(run, tmp_path):
    log = tmp_path / "log"
    script = [{"text": "attempt", "repeat": 3}, tool("true"),
              {"text": "still going", "repeat": 8}, {"text": "final answer"}]
    r = await run(script, {"Stop": [group(sh("stop_always.sh", log))]})
    active = Path(log).read_text().split()
    assert active == ["false", "true", "true"] + ["false"] + ["true"] * 8  # reset by the tool run
    assert len(r.requests) == 3 + 1 + 9
    assert r.json["subtype"] == "success" and r.json["terminal_reason"] == "stop_hook_cap"
    assert r.json["result"] == "final answer" and r.json["warnings"]
    assert r.requests[5]["messages"][-1]["content"][0]["text"] == "Not finished: keep going."


async def test_stop_failure_fires_on_an_api_error_with_a_matcher(run, tmp_path):
    log, other = tmp_path / "log", tmp_path / "other"
    r = await run([{"fault": {"status": 401}}],
                  {"StopFailure": [group(reply(log), "rate_limit|authentication_failed"),
                                   group(reply(other), "server_error")]})
    assert r.json["terminal_reason"] == "authentication_failed"
    [seen] = read_log(log)
    assert seen["error"] == "authentication_failed" and seen["hook_event_name"] == "StopFailure"
    assert seen["error_details"] and not other.exists()


# ------------------------------------------------------------ compaction

COMPACTING = [tool("true"), tool("true"), tool("true"),
              {"fault": {"status": 400, "message": "prompt is too long: 1012 tokens > 1000 maximum"}}]


async def test_pre_compact_block_stops_compaction(run, tmp_path):
    log = tmp_path / "log"
    r = await run(COMPACTING, {"PreCompact": [group(reply(log, "", 2, "keep the full history"), "auto")]})
    assert len(r.requests) == 4  # no summary request was made
    assert r.json["terminal_reason"] == "prompt_too_long"
    assert read_log(log)[0]["trigger"] == "auto"
    assert any("keep the full history" in n for n in r.notices())


async def test_post_compact_gets_the_summary(run, tmp_path):
    pre, post = tmp_path / "pre", tmp_path / "post"
    r = await run([*COMPACTING, {"text": "<summary>three runs of true</summary>"}, {"text": "done"}],
                  {"PreCompact": [group(reply(pre))], "PostCompact": [group(reply(post), "auto")]})
    assert r.json["result"] == "done"
    [seen] = read_log(post)
    assert seen["compact_summary"] == "three runs of true" and seen["trigger"] == "auto"


# ------------------------------------------------------------ session, notification


async def test_session_start_context_opens_the_conversation_once_and_session_end_fires(run, project, tmp_path):
    log, end = tmp_path / "start", tmp_path / "end"
    hooks = HookRunner.from_settings({"hooks": {"SessionStart": [group(sh("session_start.sh", log), "startup")],
                                                "SessionEnd": [group(reply(end))]}})
    events = []
    with Simulator([{"text": "one"}, {"text": "two"}]) as sim:
        agent = Agent(model_client=AnthropicModel(base_url=sim.base_url, api_key="k"), cwd=project, hooks=hooks)
        async with agent.open() as running:  # one session, two prompts
            await running.prompt("first", on_event=events.append)
            await running.prompt("second", on_event=events.append)
            assert not end.exists()
            await running.end_session(on_event=events.append)
            await running.end_session()  # once only
        requests = [r.body for r in sim.message_requests]
    first = requests[0]["messages"]
    assert "the build command is make check" in first[0]["content"][0]["text"]
    assert first[-1]["content"][0]["text"] == "first"
    assert len(read_log(log)) == 1 and read_log(log)[0]["source"] == "startup"
    assert read_log(log)[0]["model"] == "claude-sonnet-5"
    assert [e["reason"] for e in read_log(end)] == ["other"]
    assert [e.hook_event for e in events if isinstance(e, HookStarted)] == ["SessionStart", "SessionEnd"]


async def test_session_start_source_matcher(run, project, tmp_path):
    log = tmp_path / "start"
    hooks = HookRunner.from_settings({"hooks": {"SessionStart": [group(reply(log), "resume")]}})
    with Simulator([{"text": "one"}]) as sim:
        agent = Agent(model_client=AnthropicModel(base_url=sim.base_url, api_key="k"), cwd=project, hooks=hooks)
        await agent.run("first")
    assert not log.exists()  # the session started fresh ("startup"), not resumed


async def test_notification_fires_when_the_agent_asks_for_permission(run, project, tmp_path):
    log = tmp_path / "log"
    asked = []

    class Person:
        async def approve(self, tool_name, tool_input, reason):
            asked.append((tool_name, Path(log).exists()))  # the notification went out first
            return True

    r = await run([tool("touch marker"), {"text": "ok"}],
                  {"Notification": [group(reply(log), "permission_prompt")]},
                  permissions=PermissionRules(ask=("Bash",)), approver=Person())
    assert asked == [("Bash", True)] and (project / "marker").exists()
    [seen] = read_log(log)
    assert seen["notification_type"] == "permission_prompt" and "Bash" in seen["message"]
    assert seen["session_id"] == r.session.session_id and seen["hook_event_name"] == "Notification"


async def test_notifying_approver_alone(project, tmp_path):
    from loopwright.hooks import NotifyingApprover, base_payload

    log = tmp_path / "log"
    runner = HookRunner.from_settings({"hooks": {"Notification": [group(reply(log), "permission_prompt")]}})
    asked = []

    class Person:
        async def approve(self, tool_name, tool_input, reason):
            asked.append(tool_name)
            return True

    payload = base_payload("Notification", session_id="s-1", cwd=project)
    approver = NotifyingApprover(Person(), runner, lambda: payload)
    assert await approver.approve("Bash", {"command": "make"}, "needs a shell") is True
    [seen] = read_log(log)
    assert seen["notification_type"] == "permission_prompt" and "Bash" in seen["message"]
    assert seen["session_id"] == "s-1" and asked == ["Bash"]


# ------------------------------------------------------------ http and prompt hooks


@pytest.fixture
def hook_server():
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    seen, replies = [], []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers["Content-Length"]))
            seen.append({"path": self.path, "headers": dict(self.headers), "body": json.loads(body)})
            status, answer = replies.pop(0)
            data = json.dumps(answer).encode() if not isinstance(answer, str) else answer.encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", seen, replies
    server.shutdown()
    server.server_close()


async def test_http_hook_posts_the_event_and_its_answer_decides(run, project, hook_server, monkeypatch):
    url, seen, replies = hook_server
    monkeypatch.setenv("HOOK_TOKEN", "t0ken")
    monkeypatch.setenv("OTHER_SECRET", "leak")
    replies += [(200, {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                              "permissionDecisionReason": "the policy server said no"}}),
                (500, "broken")]
    handler = {"type": "http", "url": f"{url}/pre", "allowedEnvVars": ["HOOK_TOKEN"],
               "headers": {"Authorization": "Bearer $HOOK_TOKEN", "X-Other": "${OTHER_SECRET}"}}
    r = await run([tool("touch marker"), tool("touch marker2"), {"text": "ok"}],
                  {"PreToolUse": [{"matcher": "Bash", "hooks": [handler]}]}, policy="open")
    assert not (project / "marker").exists() and (project / "marker2").exists()  # the 500 did not block
    assert "the policy server said no" in r.tool_results(1)[0]["content"]
    assert seen[0]["body"]["tool_input"] == {"command": "touch marker"} and seen[0]["path"] == "/pre"
    assert seen[0]["headers"]["Authorization"] == "Bearer t0ken" and seen[0]["headers"]["X-Other"] == ""
    assert any("HTTP 500" in n for n in r.notices())


async def test_prompt_hook_on_stop_is_answered_by_a_small_model(run):
    script = {"rules": [
        {"match": {"system_contains": "You check a hook condition"},
         "responses": [{"text": '{"ok": false, "reason": "You did not run the tests."}'}, {"text": '{"ok": true}'}]},
        {"responses": [{"text": "all done"}, {"text": "ran the tests; all pass"}]},
    ]}
    handler = {"type": "prompt", "prompt": "Did the agent run the tests? Input: $ARGUMENTS"}
    r = await run(script, {"Stop": [{"hooks": [handler]}]})
    main = [b for b in r.requests if "You check a hook condition" not in json.dumps(b.get("system", ""))]
    judge = [b for b in r.requests if "You check a hook condition" in json.dumps(b.get("system", ""))]
    assert len(main) == 2 and len(judge) == 2
    assert judge[0]["model"] == "claude-haiku-4-5" and "tools" not in judge[0]
    asked = judge[0]["messages"][0]["content"][0]["text"]
    assert asked.startswith("Did the agent run the tests? Input: {") and '"last_assistant_message":"all done"' in asked
    assert main[1]["messages"][-1]["content"][0]["text"] == "You did not run the tests."
    assert r.json["result"] == "ran the tests; all pass"
    # the prompt hook's two calls are paid for and reported apart from the main loop
    assert r.json["usageByRole"]["hooks"]["costUSD"] > 0 and "claude-haiku-4-5" in r.json["modelUsage"]
    assert r.json["total_cost_usd"] == pytest.approx(sum(m["costUSD"] for m in r.json["modelUsage"].values()))


async def test_python_hooks_typed_input_and_output(run, project):
    from loopwright.hooks import HookOutput, PreToolUseInput, StopInput

    hooks = HookRunner()
    seen = []

    @hooks.on("PreToolUse", matcher="Bash")
    async def guard(event: PreToolUseInput):
        seen.append((type(event).__name__, event.tool_name, event["tool_input"]["command"]))
        if "rm" in event.tool_input["command"]:
            return HookOutput.deny("no removing")
        return HookOutput.allow(updated_input={"command": "touch from-python"})

    def stop_once(event: StopInput):  # plain functions work too
        return None if event.stop_hook_active else {"decision": "block", "reason": "say it again"}

    hooks.on("Stop", stop_once)
    r = await run([tool("rm x"), tool("touch y"), {"text": "a"}, {"text": "b"}], hooks, permissions=PermissionRules())
    assert seen == [("PreToolUseInput", "Bash", "rm x"), ("PreToolUseInput", "Bash", "touch y")]
    assert (project / "from-python").exists() and not (project / "y").exists()
    assert "no removing" in r.tool_results(1)[0]["content"]
    assert r.requests[3]["messages"][-1]["content"][0]["text"] == "say it again"


async def test_a_python_hook_that_raises_is_a_warning(run, project):
    hooks = HookRunner({"PreToolUse": lambda event: 1 / 0}, failure_policy="open")
    r = await run([tool("touch marker"), {"text": "ok"}], hooks)
    assert (project / "marker").exists() and any("ZeroDivisionError" in n for n in r.notices())
