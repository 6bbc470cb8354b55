"""Structured output (`--json-schema`, `Agent(output_schema=…)`): the run ends with an answer
that fits a JSON Schema, handed over through the `StructuredOutput` tool. A Stop that comes
without one is sent back to work; after `MAX_ATTEMPTS` misfits and nudges together the run ends
as `error_max_structured_output_retries`. Never a silent success without the answer.
`StructuredOutput` is the capability: the tool, the nudge at a stop, the answer in the result."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..core.events import RunResult
from ..core.ports import Tool
from ..engine.capability import Capability, StopAnswer, StopView
from ..policy.jsonschema import schema_problems, validate

MAX_ATTEMPTS = 5
NUDGE = ("This task ends only when you call StructuredOutput with the final answer, matching its schema. "
         "Call it now.")


class StructuredAnswer:
    """One run's answer (`ports.OutputContract`). A schema whose top level is not an object is
    offered to the model wrapped as `{"value": …}` (a tool's input is always an object)."""

    def __init__(self, schema: Any) -> None:
        problems = schema_problems(schema)
        if problems:
            raise ValueError("; ".join(problems[:5]))
        self.schema = schema
        self.wrapped = not (isinstance(schema, dict) and schema.get("type") == "object")
        self.input_schema: dict[str, Any] = _wrapped(schema) if self.wrapped else schema
        self.value: Any = None
        self.answered = False
        self.attempts = 0

    def offer(self, value: dict[str, Any]) -> list[str]:
        if self.wrapped:
            problems = validate(value, self.input_schema)
            answer = value.get("value")
        else:
            problems, answer = validate(value, self.schema), value
        if problems:
            self.attempts += 1
            return problems
        self.value, self.answered = answer, True
        return []

    def nudge(self) -> str | None:
        """Keeps the run going while there is no answer and attempts are left."""
        if self.answered or self.attempts >= MAX_ATTEMPTS:
            return None
        self.attempts += 1
        return NUDGE

    def shape(self, result: RunResult) -> RunResult:
        if self.answered:
            return replace(result, structured_output=self.value)
        if result.is_error:
            return result  # it failed for another reason, which stays the reason
        return replace(result, subtype="error_max_structured_output_retries",
                       terminal_reason="structured_output_retry_exhausted", is_error=True,
                       errors=(f"No answer matching the output schema after {self.attempts} attempts",))


class StructuredOutput(Capability):
    """One run's structured output: `tool` (the StructuredOutput tool handing `answer` over, built
    by the composition root: tools are adapters) offered, a stop without an answer nudged (as a
    Stop hook's block is), the answer put in `result.structured_output`."""

    name = "structured"

    def __init__(self, answer: StructuredAnswer, tool: Tool) -> None:
        self.answer, self.tool = answer, tool

    def tools(self) -> tuple[Tool, ...]:
        return (self.tool,)

    async def at_stop(self, stop: StopView) -> StopAnswer:
        return self.answer.nudge()

    def shape(self, result: RunResult) -> RunResult:
        return self.answer.shape(result)


def _wrapped(schema: Any) -> dict[str, Any]:
    """`{"value": schema}` as an object schema; definitions stay at the root, where `$ref`s point."""
    if not isinstance(schema, dict):
        return {"type": "object", "properties": {"value": schema}, "required": ["value"], "additionalProperties": False}
    inner = {k: v for k, v in schema.items() if k not in ("$defs", "definitions")}
    defs = {k: schema[k] for k in ("$defs", "definitions") if k in schema}
    return {"type": "object", "properties": {"value": inner}, "required": ["value"], "additionalProperties": False,
            **defs}
