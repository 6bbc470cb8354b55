"""`StructuredOutput`: how the model hands over its final answer when the run has an output
schema (`--json-schema`). Its input schema is the answer's; an answer that does not fit comes
back as an error naming each problem, so the model can correct it."""

from __future__ import annotations

from typing import Any

from ..core.errors import ToolInputError
from ..core.ports import Access, OutputContract, ToolContext, ToolOutput


class StructuredOutputTool:
    name = "StructuredOutput"
    read_only = True
    description = ("Hand over the final answer of this task. Call it once you are done, with the answer as its "
                   "input; the input must match the schema exactly. If it does not, the problems are returned: "
                   "fix them and call it again.")

    def __init__(self, contract: OutputContract) -> None:
        self.contract = contract

    @property
    def input_schema(self) -> dict[str, Any]:
        return self.contract.input_schema

    def access(self, tool_input: dict[str, Any]) -> Access:
        return Access("session")  # it only records the answer

    def validate(self, raw: dict[str, Any]) -> dict[str, Any]:
        problems = self.contract.offer(raw)
        if problems:
            raise ToolInputError("The answer does not match the schema:\n" + "\n".join(f"- {p}" for p in problems)
                                 + "\nFix these and call StructuredOutput again.")
        return raw

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        return ToolOutput("Answer recorded. End your turn now with a one-line summary.")
