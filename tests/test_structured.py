"""Structured output end to end: the real loop, the simulator and the StructuredOutput tool. An
answer that does not fit is sent back with its problems; a stop without an answer is sent back
to work; the run never ends as a success without the answer."""

from __future__ import annotations

import json

import pytest

from loopwright.agent import Agent
from loopwright.permissions.decide import PermissionRules
from loopwright.providers.anthropic import AnthropicModel
from loopwright.capabilities.structured import MAX_ATTEMPTS, NUDGE
from loopwright.testing import Simulator
from loopwright.testing.clock import FakeClock
from test_cli import cli

pytestmark = pytest.mark.anyio
REPORT = {"type": "object", "properties": {"passed": {"type": "integer", "minimum": 0}, "summary": {"type": "string"}},
          "required": ["passed", "summary"], "additionalProperties": False}


def answer(value):
    return {"tool_use": {"name": "StructuredOutput", "input": value}}


async def run(tmp_path, script, schema=REPORT, **kw):
    with Simulator(script) as sim:
        agent = Agent(model_client=AnthropicModel(base_url=sim.base_url, api_key="sk-test"), cwd=tmp_path,
                      clock=FakeClock(), tools=[], permissions=PermissionRules(), output_schema=schema, **kw)
        async with agent.open() as running:
            result = await running.prompt("count the passing tests")
        assert not sim.unmatched
        return result, [r.body for r in sim.message_requests]


async def test_a_misfit_is_sent_back_with_its_problems_then_the_answer_is_kept(tmp_path):
    result, bodies = await run(tmp_path, [answer({"passed": -1}), answer({"passed": 12, "summary": "all good"}),
                                          {"text": "Reported."}])
    assert result.subtype == "success" and result.structured_output == {"passed": 12, "summary": "all good"}
    assert result.to_json()["structured_output"] == {"passed": 12, "summary": "all good"}
    tool = next(t for t in bodies[0]["tools"] if t["name"] == "StructuredOutput")
    assert tool["input_schema"] == REPORT
    bounced = bodies[1]["messages"][-1]["content"][0]
    assert bounced["is_error"] and "$: missing required property 'summary'" in bounced["content"]
    assert "$.passed: expected >= 0, got -1" in bounced["content"]


async def test_a_schema_that_is_not_an_object_is_wrapped_and_unwrapped(tmp_path):
    schema = {"type": "array", "items": {"type": "string"}}
    result, bodies = await run(tmp_path, [answer({"value": ["a", "b"]}), {"text": "done"}], schema=schema)
    assert result.structured_output == ["a", "b"]
    tool = next(t for t in bodies[0]["tools"] if t["name"] == "StructuredOutput")
    assert tool["input_schema"]["properties"]["value"] == schema


async def test_stopping_without_an_answer_is_sent_back_then_ends_as_an_error(tmp_path):
    result, bodies = await run(tmp_path, [{"text": "I think 12 passed.", "repeat": -1}])
    assert len(bodies) == 1 + MAX_ATTEMPTS
    assert bodies[1]["messages"][-1]["content"][0]["text"] == NUDGE
    assert (result.subtype, result.terminal_reason, result.is_error) == (
        "error_max_structured_output_retries", "structured_output_retry_exhausted", True)
    assert result.structured_output is None and result.exit_code == 1


async def test_another_failure_keeps_its_own_reason(tmp_path):
    from loopwright.policy.stop import Limits

    result, _ = await run(tmp_path, [answer({"passed": "x"}), answer({"passed": "y"})], limits=Limits(max_turns=2))
    assert result.subtype == "error_max_turns" and result.structured_output is None


def test_cli_text_mode_prints_the_answer_as_json(tmp_path):
    with Simulator([answer({"passed": 3, "summary": "ok"}), {"text": "done"}]) as sim:
        out = cli(["-p", "count", "--json-schema", json.dumps(REPORT)], sim.base_url, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == {"passed": 3, "summary": "ok"}


def test_cli_schema_from_a_file_and_json_output(tmp_path):
    (tmp_path / "schema.json").write_text(json.dumps(REPORT))
    with Simulator([answer({"passed": 3, "summary": "ok"}), {"text": "done"}]) as sim:
        out = cli(["-p", "count", "--json-schema", "schema.json", "--output-format", "json"], sim.base_url,
                  cwd=tmp_path)
    result = json.loads(out.stdout)
    assert result["structured_output"] == {"passed": 3, "summary": "ok"} and result["result"] == "done"


@pytest.mark.parametrize(("schema", "needle"), [
    ("{not json", "--json-schema: not JSON"),
    ('{"type": "object", "if": {}}', "--json-schema: #: unsupported keyword 'if'"),
    ("missing.json", "--json-schema: cannot read 'missing.json'"),
])
def test_cli_bad_schema_is_one_clear_line(tmp_path, schema, needle):
    with Simulator([{"text": "never"}]) as sim:
        out = cli(["-p", "x", "--json-schema", schema], sim.base_url, cwd=tmp_path)
        requests = len(sim.message_requests)
    assert out.returncode == 2 and needle in out.stderr and requests == 0, out.stderr
