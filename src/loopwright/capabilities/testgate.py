"""A run that changed files ends only after the tests passed: `RequireTests("pytest -q")`
sends a stop back to work while a Write or Edit came after the last passing test run, at most
`max_nudges` times a run; a run that still stops unverified says so in a warning and its report.

A Bash call counts as a test run when one of its `&&`-joined parts starts with the command and
nothing else in it (`;`, `|`, `&`, a new line) could hide the tests' exit status. Changes made
through Bash (`sed -i`) are not seen: only the file tools' are."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Sequence

from ..core.events import RunResult
from ..core.fastclass import dataclass
from ..core.types import ToolResultBlock, ToolUseBlock
from ..engine.capability import Capability, RunView, StopAnswer, StopView

EDITING_TOOLS = frozenset({"Write", "Edit", "MultiEdit", "NotebookEdit"})
NOT_RUN = "You changed files and have not run the tests since. Run `{command}` and make sure it passes before you finish."
FAILED = "The tests (`{command}`) failed after your last change. Fix what fails and run them again before you finish."


@dataclass(frozen=True, slots=True)
class TestGateReport:
    """`result.reports["tests"]`: the test runs this run saw and whether its last change was tested."""

    __test__ = False  # not a pytest class, whatever its name

    command: str
    runs: int  # test runs seen
    passed: int  # of which passed
    nudges: int  # stops sent back to run them
    verified: bool  # no change came after the last passing run

    def to_json(self) -> dict[str, Any]:
        return {"command": self.command, "runs": self.runs, "passed": self.passed, "nudges": self.nudges,
                "verified": self.verified}


class RequireTests(Capability):
    name = "tests"

    def __init__(self, command: str, *, max_nudges: int = 3) -> None:
        if not isinstance(command, str) or not command.strip():
            raise ValueError(f"RequireTests: command must be the non-empty test command line, got {command!r}")
        if not isinstance(max_nudges, int) or max_nudges < 0:
            raise ValueError(f"RequireTests: max_nudges must be an integer >= 0, got {max_nudges!r}")
        self.command, self.max_nudges = " ".join(command.split()), max_nudges
        self.start(None)

    def system(self) -> str:
        return f"When you change files, run the tests with `{self.command}` and make them pass before you finish."

    def start(self, run: RunView | None) -> None:
        self.runs = self.passed = self.nudges = 0
        self.changed = False  # a file changed since the last passing test run
        self.failing = False  # the last test run failed

    async def after_batch(self, calls: Sequence[ToolUseBlock], results: Sequence[ToolResultBlock]) -> list[str]:
        failed = {r.tool_use_id for r in results if r.is_error}
        answered = {r.tool_use_id for r in results}
        for call in calls:  # in the order the model gave them, as they are answered
            ok = call.id in answered and call.id not in failed
            if call.name in EDITING_TOOLS and ok:
                self.changed = True
            elif call.name == "Bash" and call.id in answered and self.is_test_run(call.input):
                self.runs += 1
                self.passed += ok
                self.failing = not ok
                self.changed = self.changed and not ok
        return []

    def is_test_run(self, tool_input: Any) -> bool:
        line = tool_input.get("command") if isinstance(tool_input, dict) else None
        if not isinstance(line, str) or any(c in line.replace("&&", "") for c in ";|&\n"):
            return False
        return any(part.split()[:len(self.command.split())] == self.command.split() for part in line.split("&&"))

    async def at_stop(self, stop: StopView) -> StopAnswer:
        if not self.changed or self.nudges >= self.max_nudges:
            return None
        self.nudges += 1
        return (FAILED if self.failing else NOT_RUN).format(command=self.command)

    def report(self) -> TestGateReport:
        return TestGateReport(self.command, self.runs, self.passed, self.nudges, not self.changed)

    def shape(self, result: RunResult) -> RunResult:
        if not self.changed:
            return result
        return replace(result, warnings=(*result.warnings,
                                         f"The run ended without a passing `{self.command}` after its last change"))
