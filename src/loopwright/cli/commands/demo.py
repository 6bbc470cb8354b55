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
    # -B: no __pycache__ under the protected tests/ (a machine without PYTHONDONTWRITEBYTECODE
    # would otherwise see "protected files changed" on every check)
    return f"{shlex.quote(sys.executable)} -B -m unittest discover -s tests -t . 2>&1"


GOAL = "make the tests pass without changing anything under tests/"
JUDGE_SYSTEM = "You decide whether an agent has met its goal"


def _say(text: str, *tools: tuple[str, dict[str, Any]], **extra: Any) -> dict[str, Any]:
    content = [{"type": "text", "text": text}] + [{"type": "tool_use", "name": n, "input": i} for n, i in tools]
    return {"content": content, **extra}


def script(project: Path) -> dict[str, Any]:
    """What the scripted model says, turn by turn, and what the scripted evaluator answers. The
    model does not read the tool results; the harness runs every call, check and comparison for
    real, so what you see about the project is true."""
    tests, calc = str(project / "tests" / "test_calc.py"), str(project / "calc.py")
    run_tests = ("Bash", {"command": test_command(), "description": "Run the test suite"})
    worker = [
        _say("I'll start by running the tests.", run_tests),
        _say("All done: the tests should pass now."),  # too early: the check catches it
        _say("The average test is wrong, I'll fix the test instead.",
             ("Edit", {"file_path": tests, "old_string": "average([2, 4, 6]), 4", "new_string": "average([2, 4, 6]), 6"})),
        _say("The tests pass now."),  # they do, but tests/ is protected: caught
        {"fault": {"status": 529, "message": "Overloaded"}},  # an injected overload: retried
        _say("Understood, I'll restore the test exactly.",
             ("Edit", {"file_path": tests, "old_string": "average([2, 4, 6]), 6", "new_string": "average([2, 4, 6]), 4"}),
             ("Read", {"file_path": calc})),
        _say("The bug is in average(): it divides by len(values) - 1 where it", stop_reason="max_tokens"),  # cut
        _say("The bug is in average(): it divides by len(values) - 1 where it should divide by len(values).",
             ("Edit", {"file_path": calc, "old_string": "return sum(values) / (len(values) - 1)",
                       "new_string": "return sum(values) / len(values)"}), run_tests),
        {"text": "Fixed calc.average (it divided by len(values) - 1). The tests pass and tests/ is unchanged."},
    ]
    judge = [{"text": '{"ok": true, "reason": "the check passes (3 tests OK) and no protected file changed"}'}]
    return {"rules": [{"match": {"system_contains": JUDGE_SYSTEM}, "responses": judge}, {"responses": worker}]}


def run(out: TextIO | None = None, keep: Path | None = None) -> int:
    import anyio

    from ...agent import Agent
    from ...core.events import ApiRetry, GoalStatus
    from ...engine.goal import GoalSpec
    from ...permissions.rules import PermissionRules
    from ...providers.anthropic import AnthropicModel
    from ...testing import Simulator
    from ...compose.render import Progress, plural

    out = out or sys.stdout
    root = keep or Path(tempfile.mkdtemp(prefix="loopwright-demo-"))
    project = make_project(root)
    say = lambda text="": print(text, file=out, flush=True)  # noqa: E731
    say("loopwright demo (offline). The model's decisions are SCRIPTED: a loopback Messages API simulator")
    say("plays the agent and the evaluator. The tools, the checks and the file protection are REAL.")
    say(f"Project with a failing test: {project}")
    say(f"Goal: {GOAL}   check: the test suite   protected: tests/**\n")
    progress, seen = Progress(out), []

    def on_event(event: Any) -> None:
        seen.append(event)
        progress(event)

    spec = GoalSpec(GOAL, checks=(test_command(),), protect=("tests/**",), check_timeout_s=120)
    with Simulator(script(project)) as sim:
        client = AnthropicModel(base_url=sim.base_url, api_key="sk-demo-offline")
        agent = Agent(model="claude-sonnet-5", model_client=client, cwd=project, goal=spec,
                      permissions=PermissionRules(allow=("Edit", "Bash")))
        result = anyio.run(lambda: agent.run(spec.directive(), on_event=on_event))  # its run closes what it opened
        calls = len(sim.message_requests)
    check = subprocess.run(test_command(), shell=True, cwd=project, capture_output=True, text=True)
    verdicts = [e for e in seen if isinstance(e, GoalStatus) and not e.sentinel]
    goal = result.to_json()["goal"]
    say("\n── summary " + "─" * 60)
    say(f"result: {result.terminal_reason} · {plural(result.num_turns, 'turn')} · {plural(calls, 'API request')} · "
        f"${result.total_cost_usd:.4f} (evaluator ${goal['evaluator']['costUSD']:.4f})")
    say("stops judged: " + " → ".join("MET" if v.met else "not met (" + v.reason + ")" for v in verdicts))
    say(f"retries: {sum(1 for e in seen if isinstance(e, ApiRetry))} (an injected 529) · "
        f"max_tokens cuts recovered: {result.stop_reason_counts.get('max_tokens', 0)}")
    verdict = "PASS" if check.returncode == 0 else "FAIL"
    say(f"independent check (the demo runs the tests itself): {verdict}; tests/ unchanged: "
        f"{(project / 'tests' / 'test_calc.py').read_text(encoding='utf-8') == TEST}")
    return 0 if (result.terminal_reason == "goal_met" and check.returncode == 0) else 1
