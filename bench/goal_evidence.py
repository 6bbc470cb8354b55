"""What a goal judgement costs: the evaluator's input tokens per judgement with loopwright's
bounded evidence window, against sending the whole transcript (Claude Code's way), on a generated
60-turn session; and the verdicts of both on the same labelled cases.

Both requests go to the loopback simulator, which counts their input tokens with one estimator
(about 4 characters a token). The evaluator here is a deterministic reader, not a model: it says
"met" exactly when the most recent test run it can see passed. That is the point of the labelled
cases: the window must keep the evidence that decides the verdict, however long the session.

Run: .venv/bin/python bench/goal_evidence.py [--turns 60]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics

import anyio

from loopwright.engine.goal import EVALUATOR_SYSTEM, GoalJudge, GoalSpec
from loopwright.policy.goal_verdict import VERDICT_SCHEMA
from loopwright.providers.anthropic import AnthropicModel
from loopwright.testing import Simulator
from loopwright.testing.clock import FakeClock
from loopwright.testing.simulator.wire import estimate_input_tokens
from loopwright.core.types import Message, ModelRequest, TextBlock, ToolResultBlock, ToolUseBlock

CONDITION = "all tests in tests/ pass"
QUESTION = "Based on the conversation above, has this condition been met? Condition: " + CONDITION


def session(turns: int, final_pass: bool, claim: str) -> list[Message]:
    """A long working session: reading files, editing, running tests (failing most of the time),
    with realistic tool output sizes; the last test run passes or fails as labelled."""
    msgs = [Message.user(f"Goal: {CONDITION}. Work until it holds.")]
    for t in range(turns):
        last = t == turns - 1
        kind = "test" if last or t % 3 == 2 else ("read" if t % 3 == 0 else "edit")
        if kind == "read":
            call = ToolUseBlock(f"t{t}", "Read", {"file_path": f"src/module_{t}.py"})
            out = "\n".join(f"{i:6}\tdef function_{t}_{i}(x):  return x * {i}  # helper" for i in range(1, 80))
        elif kind == "edit":
            call = ToolUseBlock(f"t{t}", "Edit", {"file_path": f"src/module_{t - 1}.py", "old_string": "x * 1",
                                                  "new_string": "x + 1"})
            out = f"Edited src/module_{t - 1}.py: replaced 1 occurrence."
        else:
            call = ToolUseBlock(f"t{t}", "Bash", {"command": "python -m pytest -q"})
            passed = final_pass if last else False
            dots = "." * 40 + ("" if passed else "F")
            tail = "41 passed in 0.52s" if passed else "FAILED tests/test_core.py::test_case - assert 3 == 4\n1 failed, 40 passed in 0.61s"
            out = dots + "\n" + ("=" * 30 + " FAILURES " + "=" * 30 + "\n" + "trace line\n" * 25 if not passed else "") + tail
        msgs.append(Message("assistant", (TextBlock(f"Step {t}: next I {kind} things."), call)))
        msgs.append(Message("user", (ToolResultBlock(call.id, out, kind == "test" and "failed" in out),)))
    msgs.append(Message("assistant", (TextBlock(claim),)))
    return msgs


CASES = [  # (label: is the goal met?, final test run passes, what the agent claims)
    (True, True, "All tests pass now."),
    (False, False, "All tests pass now."),  # a false claim
    (False, False, "Still one failure; stopping for now."),
    (True, True, "Done."),
]


def judge_text(prompt: str) -> str:
    """The deterministic evaluator: met iff the latest pytest summary it can see has no failure."""
    summaries = re.findall(r"(\d+ failed, )?\d+ passed in", prompt)
    ok = bool(summaries) and summaries[-1] == ""
    return json.dumps({"ok": ok, "reason": "latest test run passed" if ok else "latest test run failed"})


def prompt_text(request: ModelRequest) -> str:
    return "\n".join(m.text + "".join(b.text for b in m.content if isinstance(b, ToolResultBlock))
                     for m in request.messages)


class ReaderModel:
    """A `Model` that answers each request with `judge_text` of what it was shown, by way of the
    simulator (so the request's size is recorded there)."""

    def __init__(self, client: AnthropicModel, sim: Simulator) -> None:
        self.client, self.sim = client, sim

    def stream(self, request: ModelRequest):
        self.sim.reset([{"text": judge_text(prompt_text(request))}])
        return self.client.stream(request)

    async def aclose(self) -> None:
        await self.client.aclose()


class NoWorkspace:
    async def run_check(self, command: str, timeout_s: float):
        raise AssertionError("no checks in this bench")

    def snapshot(self, globs):
        return {}


async def measure(turns: int) -> None:
    ours_tokens, whole_tokens, rows = [], [], []
    with Simulator([]) as sim:
        reader = ReaderModel(AnthropicModel(base_url=sim.base_url, api_key="sk-bench"), sim)
        for label, final_pass, claim in CASES:
            msgs = session(turns, final_pass, claim)
            judge = GoalJudge(GoalSpec(CONDITION), reader, NoWorkspace(), FakeClock())
            judge.start()
            ours = await judge._evaluate(msgs)  # loopwright's real evaluator path
            ours_tokens.append(estimate_input_tokens(sim.message_requests[-1].body))
            whole = ModelRequest(model=judge.model, max_tokens=1024, system=EVALUATOR_SYSTEM,
                                 messages=(*msgs, Message.user(QUESTION)),
                                 extra={"output_config": {"format": {"type": "json_schema", "schema": VERDICT_SCHEMA}}})
            whole_met = (await judge._call(whole) or "").find('"ok": true') >= 0
            whole_tokens.append(estimate_input_tokens(sim.message_requests[-1].body))
            rows.append((label, ours.status == "met", whole_met))
        await reader.aclose()
    med = statistics.median
    print(f"goal evaluator input per judgement, {turns}-turn session (the simulator's token estimate)")
    print(f"  evidence window (loopwright)     median {med(ours_tokens):8.0f} tokens")
    print(f"  whole transcript (Claude Code)   median {med(whole_tokens):8.0f} tokens")
    print(f"  ratio window / whole             {med(ours_tokens) / med(whole_tokens):.3f}  (target <= 0.333)")
    print("labelled cases (label, window verdict, whole-transcript verdict):")
    for label, ours_met, whole_met in rows:
        mark = "same, correct" if ours_met == whole_met == label else "DIFFERENT"
        print(f"  met={label!s:5}  window={ours_met!s:5}  whole={whole_met!s:5}  {mark}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=60)
    anyio.run(measure, parser.parse_args().turns)


if __name__ == "__main__":
    main()
