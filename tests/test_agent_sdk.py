"""The official Python Agent SDK (`claude-agent-sdk`) drives the real loopwright process:
`ClaudeAgentOptions(cli_path=<loopwright>)`, the loopback simulator as the model, a fresh home
per test. Skipped only when the SDK cannot be imported."""

import json
import os
import stat
import sys
from pathlib import Path

import anyio
import pytest

sdk = pytest.importorskip("claude_agent_sdk")

from claude_agent_sdk import (
    AssistantMessage,
    ClaudeAgentOptions,
    ClaudeSDKClient,
    HookMatcher,
    PermissionResultAllow,
    PermissionResultDeny,
    ResultMessage,
    StreamEvent,
    SystemMessage,
    ToolUseBlock,
    query,
)

from loopwright.testing import Simulator

SRC = Path(__file__).resolve().parent.parent / "src"


@pytest.fixture
def place(tmp_path):
    """The wrapper the SDK starts (it execs `python -m loopwright` with these sources), a working
    folder and a home of its own."""
    cli = tmp_path / "loopwright"
    cli.write_text(f'#!/bin/sh\nPYTHONPATH="{SRC}" exec "{sys.executable}" -m loopwright "$@"\n')
    cli.chmod(cli.stat().st_mode | stat.S_IXUSR)
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    home.mkdir()
    return cli, work, home


def options(place, sim, **extra):
    cli, work, home = place
    env = {"ANTHROPIC_BASE_URL": sim.base_url, "ANTHROPIC_API_KEY": "sk-test", "HOME": str(home),
           "LOOPWRIGHT_HOME": str(home / ".loopwright"), "ANTHROPIC_MODEL": "", "CLAUDE_CODE_STREAM_CLOSE_TIMEOUT": ""}
    return ClaudeAgentOptions(cli_path=str(cli), cwd=str(work), env=env | extra.pop("env", {}), **extra)


def collect(prompt, opts):
    async def go():
        return [m async for m in query(prompt=prompt, options=opts)]

    return anyio.run(go)


def texts(request):
    """The text of every message of a recorded request, tool results included."""
    out = []
    for message in request.body["messages"]:
        content = message["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        for b in blocks:
            if b["type"] == "text":
                out.append(b["text"])
            elif b["type"] == "tool_result":
                inner = b["content"]
                out.append(inner if isinstance(inner, str) else " ".join(x.get("text", "") for x in inner))
    return out


BASH = {"name": "Bash", "input": {"command": "touch proof.txt && echo created", "description": "Create proof.txt"}}


def test_query_one_shot(place):
    with Simulator([{"text": "Hello from loopwright."}]) as sim:
        messages = collect("Say hello", options(place, sim))
        body = sim.message_requests[0].body
    init, assistant, result = messages
    assert isinstance(init, SystemMessage) and init.subtype == "init"
    assert init.data["claude_code_version"] and init.data["session_id"] == result.session_id
    assert isinstance(assistant, AssistantMessage) and assistant.content[0].text == "Hello from loopwright."
    assert isinstance(result, ResultMessage) and result.subtype == "success" and not result.is_error
    assert result.result == "Hello from loopwright." and result.num_turns == 1
    system = body["system"] if isinstance(body["system"], str) else " ".join(b["text"] for b in body["system"])
    assert len(system) < 200  # `--system-prompt ""`: a minimal prompt, not loopwright's whole one


def test_client_three_turns_in_one_session(place):
    async def go(opts):
        got = []
        async with ClaudeSDKClient(opts) as client:
            for prompt in ("first", "second", "third"):
                await client.query(prompt)
                got += [m async for m in client.receive_response()]
        return got

    with Simulator([{"text": "one"}, {"text": "two"}, {"text": "three"}]) as sim:
        messages = anyio.run(go, options(place, sim))
        last = sim.message_requests[-1]
    results = [m for m in messages if isinstance(m, ResultMessage)]
    assert [r.result for r in results] == ["one", "two", "three"]
    assert len({r.session_id for r in results}) == 1
    assert sum(isinstance(m, SystemMessage) and m.subtype == "init" for m in messages) == 3
    assert texts(last) == ["first", "one", "second", "two", "third"]


def run_permission(place, decide, script):
    seen = []

    async def can_use_tool(name, tool_input, context):
        seen.append((name, dict(tool_input), context.tool_use_id))
        return decide(tool_input)

    with Simulator(script) as sim:
        messages = collect("Create proof.txt", options(place, sim, can_use_tool=can_use_tool))
        requests = sim.message_requests
    return seen, messages, requests


def test_can_use_tool_allows(place):
    seen, messages, _ = run_permission(place, lambda i: PermissionResultAllow(),
                                       [{"text": "I'll create it.", "tool_use": BASH}, {"text": "Done."}])
    tool_use = next(b for m in messages if isinstance(m, AssistantMessage) for b in m.content
                    if isinstance(b, ToolUseBlock))
    assert seen == [("Bash", BASH["input"], tool_use.id)]
    assert (place[1] / "proof.txt").exists()
    result = messages[-1]
    assert result.subtype == "success" and result.result == "Done." and result.permission_denials == []


def test_can_use_tool_denies(place):
    seen, messages, requests = run_permission(place, lambda i: PermissionResultDeny(message="Denied by the test."),
                                              [{"tool_use": BASH}, {"text": "I could not."}])
    assert len(seen) == 1 and not (place[1] / "proof.txt").exists()
    assert "Denied by the test." in texts(requests[1])
    result = messages[-1]
    assert not result.is_error and [d["tool_name"] for d in result.permission_denials] == ["Bash"]


def test_can_use_tool_updated_input_is_what_runs(place):
    changed = {"command": "echo changed > changed.txt", "description": "changed"}
    seen, messages, _ = run_permission(place, lambda i: PermissionResultAllow(updated_input=changed),
                                       [{"tool_use": BASH}, {"text": "Done."}])
    work = place[1]
    assert messages[-1].result == "Done."
    assert len(seen) == 1 and not (work / "proof.txt").exists()
    assert (work / "changed.txt").read_text().strip() == "changed"


def test_can_use_tool_updated_permissions_hold_for_the_session(place):
    from claude_agent_sdk.types import PermissionRuleValue, PermissionUpdate

    rule = PermissionUpdate(type="addRules", rules=[PermissionRuleValue(tool_name="Bash", rule_content="touch:*")],
                            behavior="allow", destination="session")
    again = {"name": "Bash", "input": {"command": "touch second.txt"}}
    script = [{"tool_use": BASH}, {"tool_use": again}, {"text": "Both made."}]
    seen, messages, _ = run_permission(place, lambda i: PermissionResultAllow(updated_permissions=[rule]), script)
    assert [s[1]["command"] for s in seen] == [BASH["input"]["command"]]  # the second call was not asked
    assert (place[1] / "proof.txt").exists() and (place[1] / "second.txt").exists()
    assert messages[-1].result == "Both made."


def test_a_can_use_tool_answer_with_unreadable_permissions_is_no_allow(place):
    from claude_agent_sdk.types import PermissionUpdate

    broken = PermissionUpdate(type="setMode", mode="everything", destination="session")
    seen, messages, requests = run_permission(
        place, lambda i: PermissionResultAllow(updated_permissions=[broken]), [{"tool_use": BASH}, {"text": "No."}])
    assert len(seen) == 1 and not (place[1] / "proof.txt").exists()
    assert any("updatedPermissions[0]: mode must be one of" in t for t in texts(requests[1]))


def test_pre_tool_use_and_stop_hook_callbacks(place):
    calls = []

    async def pre(hook_input, tool_use_id, context):
        calls.append(("pre", hook_input["tool_name"], tool_use_id))
        return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow",
                                       "permissionDecisionReason": "the test allows it"}}

    async def stop(hook_input, tool_use_id, context):
        calls.append(("stop", hook_input["stop_hook_active"], hook_input["last_assistant_message"]))
        if not hook_input["stop_hook_active"]:
            return {"decision": "block", "reason": "Please double-check before stopping."}
        return {}

    hooks = {"PreToolUse": [HookMatcher(matcher="Bash", hooks=[pre])], "Stop": [HookMatcher(hooks=[stop])]}
    script = [{"tool_use": BASH}, {"text": "First answer."}, {"text": "Second answer."}]
    with Simulator(script) as sim:
        messages = collect("Create proof.txt", options(place, sim, hooks=hooks))
        requests = sim.message_requests
    assert calls[0][:2] == ("pre", "Bash") and calls[0][2].startswith("toolu_")
    assert calls[1:] == [("stop", False, "First answer."), ("stop", True, "Second answer.")]
    assert (place[1] / "proof.txt").exists()  # the hook's allow answered the ask: no can_use_tool needed
    assert "Please double-check before stopping." in texts(requests[2])
    assert messages[-1].result == "Second answer." and not messages[-1].is_error


def test_interrupt_mid_tool_keeps_the_session(place):
    slow = {"name": "Bash", "input": {"command": "python3 -c 'import time; time.sleep(30)'"}}

    async def go(opts):
        async with ClaudeSDKClient(opts) as client:
            await client.query("Sleep for a while")
            first = []
            async for m in client.receive_response():
                first.append(m)
                if isinstance(m, AssistantMessage) and any(isinstance(b, ToolUseBlock) for b in m.content):
                    await anyio.sleep(0.5)
                    with anyio.fail_after(5):
                        await client.interrupt()
            await client.query("Are you still there?")
            second = [m async for m in client.receive_response()]
        return first, second

    with Simulator([{"tool_use": slow}, {"text": "Still here."}]) as sim:
        first, second = anyio.run(go, options(place, sim, allowed_tools=["Bash"]))
    result = first[-1]
    assert isinstance(result, ResultMessage) and result.is_error and result.subtype == "error_during_execution"
    assert result.duration_ms < 20_000
    assert second[-1].result == "Still here." and second[-1].session_id == result.session_id


def test_set_permission_mode_and_set_model_mid_session(place):
    write = {"name": "Write", "input": {"file_path": "notes.txt", "content": "hi\n"}}

    async def go(opts):
        async with ClaudeSDKClient(opts) as client:
            await client.query("Write notes")
            first = [m async for m in client.receive_response()]
            await client.set_permission_mode("acceptEdits")
            await client.set_model("haiku")
            await client.query("Write notes again")
            second = [m async for m in client.receive_response()]
        return first, second

    with Simulator([{"tool_use": write}, {"text": "Could not."}, {"tool_use": write}, {"text": "Written."}]) as sim:
        first, second = anyio.run(go, options(place, sim))
        models = [r.body["model"] for r in sim.message_requests]
    assert [d["tool_name"] for d in first[-1].permission_denials] == ["Write"]
    init = next(m for m in second if isinstance(m, SystemMessage) and m.subtype == "init")
    assert init.data["permissionMode"] == "acceptEdits"
    assert second[-1].permission_denials == [] and (place[1] / "notes.txt").read_text() == "hi\n"
    assert models == ["claude-sonnet-5", "claude-sonnet-5", "claude-haiku-4-5", "claude-haiku-4-5"]


def test_max_turns_ends_in_the_sdk_error(place):
    echo = {"tool_use": {"name": "Bash", "input": {"command": "echo again"}}, "repeat": -1}
    got = []

    async def go(opts):
        async for m in query(prompt="Loop forever", options=opts):
            got.append(m)

    with Simulator([echo]) as sim:
        with pytest.raises(sdk.ResultError) as caught:
            anyio.run(go, options(place, sim, allowed_tools=["Bash"], max_turns=1))
        calls = len(sim.message_requests)
    assert calls == 1 and "maximum number of turns" in str(caught.value).lower()
    result = got[-1]
    assert isinstance(result, ResultMessage) and result.subtype == "error_max_turns" and result.is_error


def test_resume_by_id(place):
    with Simulator([{"text": "Remembered: 42."}, {"text": "It was 42."}]) as sim:
        first = collect("Remember 42", options(place, sim))
        session = first[-1].session_id
        second = collect("What was it?", options(place, sim, resume=session))
        last = sim.message_requests[-1]
    assert second[-1].result == "It was 42." and second[-1].session_id == session
    assert texts(last) == ["Remember 42", "Remembered: 42.", "What was it?"]


def test_include_partial_messages(place):
    with Simulator([{"text": "Streaming words arrive in pieces."}]) as sim:
        messages = collect("Stream", options(place, sim, include_partial_messages=True))
    events = [m.event["type"] for m in messages if isinstance(m, StreamEvent)]
    assert events[0] == "message_start" and "content_block_delta" in events and events[-1] == "message_stop"
    assert all(m.uuid and m.session_id for m in messages if isinstance(m, StreamEvent))
    assert isinstance(messages[-1], ResultMessage) and messages[-1].result == "Streaming words arrive in pieces."


def test_stdout_is_only_json_lines_and_unsupported_flags_warn(place, tmp_path):
    import subprocess

    cli, work, home = place
    lines = [{"type": "control_request", "request_id": "req_1", "request": {"subtype": "initialize", "hooks": None}},
             {"type": "control_request", "request_id": "req_2", "request": {"subtype": "get_nonsense"}},
             {"type": "user", "session_id": "", "message": {"role": "user", "content": "hi"}, "parent_tool_use_id": None}]
    with Simulator([{"text": "hello"}]) as sim:
        env = {**os.environ, "ANTHROPIC_BASE_URL": sim.base_url, "ANTHROPIC_API_KEY": "sk-test", "HOME": str(home),
               "LOOPWRIGHT_HOME": str(home / ".lw")}
        out = subprocess.run([str(cli), "--output-format", "stream-json", "--verbose", "--system-prompt", "",
                              "--effort", "high", "--thinking", "adaptive", "--max-thinking-tokens", "1000",
                              "--betas", "x", "--plugin-dir", str(tmp_path), "--setting-sources=user,project,local",
                              "--permission-prompt-tool", "stdio", "--input-format", "stream-json"],
                             input="".join(json.dumps(x) + "\n" for x in lines), capture_output=True,
                             check=False, text=True, env=env, cwd=work, timeout=60)
    assert out.returncode == 0, out.stderr
    frames = [json.loads(line) for line in out.stdout.splitlines()]  # every line is JSON
    answers = {f["response"]["request_id"]: f["response"] for f in frames if f["type"] == "control_response"}
    assert answers["req_1"]["subtype"] == "success" and answers["req_2"]["subtype"] == "error"
    assert [f["result"] for f in frames if f["type"] == "result"] == ["hello"]
    warning = [line for line in out.stderr.splitlines() if "not supported by loopwright yet" in line]
    assert len(warning) == 1 and "--effort" in warning[0] and "--plugin-dir" not in warning[0]  # honoured


@pytest.mark.parametrize("flag", ["--resume-session-at=msg_1", "--resume-drops-turn=msg_1"])
def test_a_flag_that_cannot_be_ignored_safely_is_refused(place, flag):
    import subprocess

    cli, work, home = place
    out = subprocess.run([str(cli), "--output-format", "stream-json", "--verbose", flag, "--input-format",
                          "stream-json"], input="", capture_output=True, check=False, text=True, cwd=work, timeout=60,
                         env={**os.environ, "HOME": str(home), "LOOPWRIGHT_HOME": str(home / ".lw")})
    assert out.returncode == 2 and "not supported by loopwright" in out.stderr


def test_an_in_process_sdk_mcp_server_serves_its_tool(place):
    from claude_agent_sdk import create_sdk_mcp_server, tool

    added = []

    @tool("add", "Add two numbers", {"a": float, "b": float})
    async def add(args):
        added.append((args["a"], args["b"]))
        return {"content": [{"type": "text", "text": str(args["a"] + args["b"])}]}

    calc = create_sdk_mcp_server(name="calc", version="1.0.0", tools=[add])
    script = [{"tool_use": {"name": "mcp__calc__add", "input": {"a": 2, "b": 3}}}, {"text": "It is 5."}]
    with Simulator(script) as sim:
        messages = collect("Add 2 and 3", options(place, sim, mcp_servers={"calc": calc},
                                                  allowed_tools=["mcp__calc__add"]))
        requests = sim.message_requests
    assert "mcp__calc__add" in {t["name"] for t in requests[0].body["tools"]}
    assert added == [(2, 3)] and "5" in texts(requests[1])[-1]
    init = messages[0]
    assert init.data["mcp_servers"] == [{"name": "calc", "status": "connected"}]
    assert messages[-1].result == "It is 5."


def test_output_format_gives_structured_output(place):
    schema = {"type": "object", "properties": {"passed": {"type": "integer"}}, "required": ["passed"]}
    script = [{"tool_use": {"name": "StructuredOutput", "input": {"passed": "three"}}},
              {"tool_use": {"name": "StructuredOutput", "input": {"passed": 3}}}, {"text": "done"}]
    with Simulator(script) as sim:
        messages = collect("Count the tests", options(place, sim, output_format={"type": "json_schema",
                                                                                   "schema": schema}))
        first = sim.message_requests[0].body
    tool = next(t for t in first["tools"] if t["name"] == "StructuredOutput")
    assert tool["input_schema"]["properties"] == schema["properties"]
    result = messages[-1]
    assert isinstance(result, ResultMessage) and result.subtype == "success"
    assert result.structured_output == {"passed": 3}  # the first answer broke the schema and was asked again


def test_get_context_usage_before_and_after_a_turn(place):
    async def go(opts):
        async with ClaudeSDKClient(opts) as client:
            before = await client.get_context_usage()
            await client.query("Say hello")
            [m async for m in client.receive_response()]
            return before, await client.get_context_usage()

    with Simulator([{"text": "Hello."}]) as sim:
        before, after = anyio.run(go, options(place, sim))
    assert before["estimated"] is True and before["apiUsage"] is None
    kinds = {c["id"]: c["tokens"] for c in before["categories"]}
    assert kinds["system_tools"] > 1000 and "messages" not in kinds  # nothing said yet
    assert after["estimated"] is False and after["totalTokens"] == after["apiUsage"]["input_tokens"] > 0
    free = next(c for c in after["categories"] if c["id"] == "free_space")["tokens"]
    assert free == after["maxTokens"] - after["totalTokens"]
    assert {c["id"] for c in after["categories"]} >= {"system_prompt", "system_tools", "messages"}


def test_loopwright_sdk_options_points_the_sdk_at_loopwright(place):
    from loopwright.sdk import cli_path, options

    opts = options(max_turns=3)
    assert opts.cli_path == cli_path() and opts.max_turns == 3
    assert os.access(opts.cli_path, os.X_OK) and os.path.basename(opts.cli_path) == "loopwright"
