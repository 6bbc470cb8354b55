"""`loopwright demo`: the main job on embedded defaults. A loopback simulator plays a scripted
model that fixes a generated sample project; the tools, the files and the test runs are real."""

from __future__ import annotations

import shlex
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, TextIO

CALC = '''\
"""A tiny calculator with a bug for the demo to fix."""


def add(a, b):
    return a + b


def average(values):
    if not values:
        raise ValueError("average of nothing")
    return sum(values) / (len(values) - 1)
'''

TEST = '''\
import unittest

from calc import add, average


class CalcTest(unittest.TestCase):
    def test_add(self):
        self.assertEqual(add(2, 3), 5)

    def test_average(self):
        self.assertEqual(average([2, 4, 6]), 4)

    def test_average_empty(self):
        with self.assertRaises(ValueError):
            average([])


if __name__ == "__main__":
    unittest.main()
'''


def make_project(root: Path) -> Path:
    (root / "tests").mkdir(parents=True, exist_ok=True)
    (root / "calc.py").write_text(CALC, encoding="utf-8")
    (root / "tests" / "__init__.py").write_text("", encoding="utf-8")
    (root / "tests" / "test_calc.py").write_text(TEST, encoding="utf-8")
    return root


def test_command() -> str:
    return f"{shlex.quote(sys.executable)} -m unittest discover -s tests -t . 2>&1"


def script(project: Path) -> list[dict[str, Any]]:
    """What the scripted model says, turn by turn. It does not read the tool results; the
    harness runs every call for real, so the output you see is the project's."""
    run_tests = {"command": test_command(), "description": "Run the test suite"}
    return [
        {"content": [{"type": "text", "text": "I'll start by running the tests to see what fails."},
                     {"type": "tool_use", "name": "Bash", "input": run_tests}]},
        {"content": [{"type": "text", "text": "test_average fails. Let me read calc.py and the test."},
                     {"type": "tool_use", "name": "Read", "input": {"file_path": str(project / "calc.py")}},
                     {"type": "tool_use", "name": "Read",
                      "input": {"file_path": str(project / "tests" / "test_calc.py")}}]},
        {"content": [{"type": "text", "text": "average() divides by len(values) - 1; it should divide by len(values)."},
                     {"type": "tool_use", "name": "Edit", "input": {
                         "file_path": str(project / "calc.py"),
                         "old_string": "return sum(values) / (len(values) - 1)",
                         "new_string": "return sum(values) / len(values)"}}]},
        {"content": [{"type": "text", "text": "Now I'll run the tests again to check the fix."},
                     {"type": "tool_use", "name": "Bash", "input": run_tests}]},
        {"text": "Fixed the bug in `calc.average`: it divided by `len(values) - 1` instead of "
                 "`len(values)`. All 3 tests pass now."},
    ]


def run(out: TextIO | None = None, keep: Path | None = None) -> int:
    import anyio

    from .app import Agent
    from .cli.render import Progress
    from .policy.permissions import PermissionRules
    from .providers.anthropic import AnthropicModel
    from .testing import Simulator

    out = out or sys.stdout
    root = keep or Path(tempfile.mkdtemp(prefix="loopwright-demo-"))
    project = make_project(root)
    say = lambda text="": print(text, file=out, flush=True)  # noqa: E731
    say("loopwright demo — offline. The model is SCRIPTED: a loopback Messages API simulator plays it,")
    say("so its words are canned. The tools are real: they read and edit files and run the tests.")
    say(f"Sample project with a failing test: {project}")
    with Simulator(script(project)) as sim:
        client = AnthropicModel(base_url=sim.base_url, api_key="sk-demo-offline")
        agent = Agent(model="claude-sonnet-5", model_client=client, cwd=project,
                      permissions=PermissionRules(allow=("Edit", "Bash")))
        result = anyio.run(lambda: agent.run("The tests in this project fail. Find the bug and fix it.",
                                             on_event=Progress(out)))
        anyio.run(agent.aclose)
        calls = len(sim.message_requests)
    check = subprocess.run(test_command(), shell=True, cwd=project, capture_output=True, text=True)
    say(f"\nResult: {result.result}")
    say(f"Model calls: {calls} (to the simulator on 127.0.0.1) · tool results: "
        f"{sum(1 for m in result.messages for b in m.content if b.type == 'tool_result')}")
    verdict = "PASS" if check.returncode == 0 else "FAIL"
    say(f"Independent check, the project's tests run again by the demo itself: {verdict}")
    return 0 if (result.exit_code == 0 and check.returncode == 0) else 1
