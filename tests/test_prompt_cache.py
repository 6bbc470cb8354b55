"""Prompt caching: every request marks the end of the system prompt and the last message block
for the API's prompt cache (as Claude Code does), the simulator checks the marks the way the API
does, and DISABLE_PROMPT_CACHING=1 turns the marks off."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import httpx
import pytest

from loopwright.core.types import Message, ModelRequest
from loopwright.providers.anthropic import with_cache_breakpoints
from loopwright.testing import Simulator
from loopwright.testing.simulator.validate import cache_breakpoints

BASH = {"tool_use": {"name": "Bash", "input": {"command": "echo hi"}}}


def run(tmp_path, sim, *args, extra=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "DISABLE_PROMPT"))}
    env |= {"HOME": str(tmp_path), "ANTHROPIC_API_KEY": "sk-test", "ANTHROPIC_BASE_URL": sim.base_url} | (extra or {})
    return subprocess.run([sys.executable, "-m", "loopwright", "-p", "go", "--allowedTools", "Bash", *args],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)


def test_each_turn_marks_the_system_prompt_and_the_newest_block(tmp_path) -> None:
    with Simulator([BASH, BASH, {"text": "done"}]) as sim:
        done = run(tmp_path, sim)
        bodies = [r.body for r in sim.message_requests]
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(bodies) == 3
    for body in bodies:
        last = len(body["messages"]) - 1
        newest = len(body["messages"][last]["content"]) - 1
        assert cache_breakpoints(body) == ["system.0", f"messages.{last}.content.{newest}"]
    # the breakpoint moves with the conversation: turn 2's prefix holds turn 1's marked block unmarked
    first, second = bodies[0]["messages"][0]["content"][-1], bodies[1]["messages"][0]["content"][-1]
    assert "cache_control" in first and "cache_control" not in second
    assert {k: v for k, v in first.items() if k != "cache_control"} == second


def test_disable_prompt_caching_sends_the_plain_body(tmp_path) -> None:
    with Simulator([BASH, {"text": "done"}]) as sim:
        done = run(tmp_path, sim, extra={"DISABLE_PROMPT_CACHING": "1"})
        bodies = [r.body for r in sim.message_requests]
    assert done.returncode == 0, done.stdout + done.stderr
    assert [cache_breakpoints(b) for b in bodies] == [[], []]
    assert all(isinstance(b["system"], str) for b in bodies)


def test_a_block_the_api_refuses_to_cache_gets_no_mark_and_the_request_is_not_changed() -> None:
    thinking = Message.from_api({"role": "assistant",
                                 "content": [{"type": "thinking", "thinking": "hm", "signature": "s"}]})
    request = ModelRequest(model="m", max_tokens=10, system="sys", messages=(Message.user("hi"), thinking))
    plain = request.to_api()
    marked = with_cache_breakpoints(plain)
    assert cache_breakpoints(marked) == ["system.0"]
    assert plain == request.to_api()  # nothing changed in place
    empty = ModelRequest(model="m", max_tokens=10, messages=(Message.user(""),))
    assert cache_breakpoints(with_cache_breakpoints(empty.to_api())) == []


def _post(sim: Simulator, body: dict) -> httpx.Response:
    return httpx.post(f"{sim.base_url}/v1/messages", json=body, headers={"x-api-key": "k", "anthropic-version": "2023-06-01"})


@pytest.mark.parametrize(("change", "error"), [
    (lambda b: b.update(tools=[{"name": f"t{i}", "input_schema": {"type": "object"},
                                                          "cache_control": {"type": "ephemeral"}} for i in range(5)]),
     "A maximum of 4 blocks with cache_control may be provided. Found 5."),
    (lambda b: b["messages"][0]["content"].append({"type": "text", "text": "", "cache_control": {"type": "ephemeral"}}),
     "messages.0.content.1: cache_control cannot be set for empty text blocks"),
    (lambda b: b["messages"][0]["content"][0].update(cache_control={"type": "persistent"}),
     "messages.0.content.0.cache_control.type: Input should be 'ephemeral'"),
    (lambda b: b["messages"][0]["content"][0].update(cache_control={"type": "ephemeral", "ttl": "2h"}),
     "messages.0.content.0.cache_control.ttl: Input should be '5m' or '1h'"),
])
def test_the_simulator_refuses_marks_the_api_refuses(change, error) -> None:
    body = {"model": "m", "max_tokens": 10, "tools": [],
            "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]}
    change(body)
    with Simulator([{"text": "never"}]) as sim:
        response = _post(sim, body)
    assert response.status_code == 400
    assert json.loads(response.text)["error"]["message"] == error


def _loop_json(tmp_path, sim, *extra_env):
    done = run(tmp_path, sim, "--output-format", "json", extra=dict(extra_env))
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)


def test_with_the_simulated_cache_each_turn_reads_what_the_last_one_wrote(tmp_path) -> None:
    with Simulator([BASH, BASH, BASH, {"text": "done"}], prompt_cache=True) as sim:
        result = _loop_json(tmp_path, sim)
        assert len(sim.message_requests) == 4
    usage = result["usage"]
    # turn 1 writes the prefix; turns 2-4 read it and write only what is new
    assert usage["cache_read_input_tokens"] > 0 and usage["cache_creation_input_tokens"] > 0
    assert usage["cache_read_input_tokens"] > usage["cache_creation_input_tokens"]
    with Simulator([BASH, BASH, BASH, {"text": "done"}], prompt_cache=True) as sim:
        plain = _loop_json(tmp_path, sim, ("DISABLE_PROMPT_CACHING", "1"))
    assert plain["usage"]["cache_read_input_tokens"] == plain["usage"]["cache_creation_input_tokens"] == 0
    assert result["total_cost_usd"] < plain["total_cost_usd"]  # the cache is what makes a long loop cheap


def test_the_cache_counts_as_the_api_does() -> None:
    from loopwright.testing.simulator.cache import PromptCache

    now = [0.0]
    cache = PromptCache(min_tokens=10, clock=lambda: now[0])
    system, first = "s" * 400, [{"role": "user", "content": [{"type": "text", "text": "hello " * 30}]}]
    one = with_cache_breakpoints({"model": "m", "system": system, "messages": first})
    written = cache.account(one)
    assert written["cache_read_input_tokens"] == written["input_tokens"] == 0  # all of it marked: all written
    assert written["cache_creation_input_tokens"] > 0
    longer = first + [{"role": "assistant", "content": [{"type": "text", "text": "ok " * 40}]},
                      {"role": "user", "content": [{"type": "text", "text": "more " * 30}]}]
    two = with_cache_breakpoints({"model": "m", "system": system, "messages": longer})
    counted = cache.account(two)
    assert counted["cache_read_input_tokens"] == written["cache_creation_input_tokens"]  # the first prefix, read
    assert counted["cache_creation_input_tokens"] > 0
    assert cache.account(two)["cache_creation_input_tokens"] == 0  # all of it read now
    changed = with_cache_breakpoints({"model": "m", "system": "x" + system, "messages": longer})
    assert cache.account(changed)["cache_read_input_tokens"] == 0  # a changed system prompt misses
    now[0] += 301  # past the 5-minute lifetime
    assert cache.account(two)["cache_read_input_tokens"] == 0
    short = PromptCache(min_tokens=10_000)
    assert short.account(two)["cache_creation_input_tokens"] == 0  # too short to be cached
