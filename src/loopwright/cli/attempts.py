"""`loopwright -p PROMPT --attempts N`: N attempts at one task, each a full loop in its own git
worktree and branch started from the user's working tree (uncommitted changes included), run
concurrently; then the harness runs the checks and compares the protected files in every
worktree itself, an adversarial judge picks among the eligible ones (or none), and only the
winner's changes reach the user's working tree. `loopwright attempts clean` removes what an
interrupted run left."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import random
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import UsageError
from ..core.events import ModelUsage, RunResult
from ..core.ids import uuid4
from ..workflows import worktrees
from ..compose.goals import read_variations
from ..compose.render import visible

if TYPE_CHECKING:
    from ..agent.run import Run
    from .options import Options
    from ..session.opening import OpenedSession

MAX_ATTEMPTS = 8
MAX_DIFF = 20_000  # characters of an attempt's diff kept in the transcripts' record


@dataclass
class Attempt:
    number: int
    path: Path
    branch: str
    instruction: str = ""
    run: Run | None = None  # the attempt's agent on its own session
    session: OpenedSession | None = None  # the opened store session (closed when the attempt ends)
    baseline: dict[str, str] = field(default_factory=dict)  # protected files' digests at the start
    result: RunResult | None = None
    head: str = ""
    checks: list[Any] = field(default_factory=list)
    protected_changed: list[str] = field(default_factory=list)
    why_not: str = ""  # why it cannot win ("" when eligible)

    @property
    def live(self) -> Run:
        """The attempt's run, once opened (every attempt is opened before any runs)."""
        if self.run is None:
            raise RuntimeError(f"attempt {self.number} is not opened yet")
        return self.run

    def outcome(self) -> dict[str, Any]:
        r = self.result
        return {"attempt": self.number, "branch": self.branch, "instruction": self.instruction,
                "outcome": r.subtype if r is not None else "not_run",
                "terminal_reason": r.terminal_reason if r is not None else None,
                "turns": r.num_turns if r is not None else 0, "cost_usd": round(r.total_cost_usd, 6) if r else 0.0,
                "session_id": r.session_id if r is not None else None,
                "checks": [{"command": c.command, "exit_code": c.exit_code, "passed": c.exit_code == 0,
                            "output_tail": c.output_tail[-500:]} for c in self.checks],
                "protected_changed": self.protected_changed, "eligible": not self.why_not, "why_not": self.why_not}


def run_attempts(opts: Options, prompt: str) -> int:
    from .core import load_run_settings, print_result

    if opts.output_format == "stream-json":
        raise UsageError("--attempts prints one result: use --output-format text or json")
    check_attempts(opts)
    result = asyncio.run(attempts_run(opts, prompt, load_run_settings(opts)))
    print_result(result, opts.output_format)
    if opts.output_format == "text":
        print_table(result.attempts or {})
    return result.exit_code


def check_attempts(opts: Options) -> None:
    n = 1 if opts.attempts is None else opts.attempts  # --attempts 0 is refused, not taken as 1
    if not 1 <= n <= MAX_ATTEMPTS:
        raise UsageError(f"--attempts: expected a number from 1 to {MAX_ATTEMPTS}, got {n}")
    if opts.resuming:
        raise UsageError("--attempts starts fresh sessions: it cannot resume one")


async def attempts_run(opts: Options, prompt: str, settings: Any, register: Any = None) -> RunResult:
    """`opts.attempts` attempts at `prompt` from the current folder's repository, judged; the
    winner's changes reach the working tree. Shared by `-p --attempts` and routine items:
    `register(interrupt)` (answering an unregister function) hands Ctrl-C to a caller that owns
    the signals; without it the attempts own them."""
    n = opts.attempts or 1
    repo = worktrees.repo_root(Path.cwd())
    variations = read_variations(opts.attempt_instructions)
    base = worktrees.snapshot(repo)
    run_id = uuid4()
    where = Path.cwd().resolve().relative_to(repo.resolve())
    place = worktrees.private_root() / run_id
    attempts = [Attempt(k, place / str(k), f"loopwright/{run_id[:8]}/{k}",
                        variations[(k - 1) % len(variations)] if variations else "") for k in range(1, n + 1)]
    from ..telemetry import step

    try:
        # a span for the run of attempts (telemetry on), each attempt's run a child of it
        with step(os.environ, "attempts", {"loopwright.attempts.run": run_id, "loopwright.attempts.of": n}) as whole:
            for a in attempts:
                worktrees.add(repo, a.path, a.branch, base)
                _build(a, opts, settings, prompt, where, n, run_id, whole.traceparent)
            _say(f"{n} attempts started in {place} (branches loopwright/{run_id[:8]}/1…{n})")
            result = await _run_all(attempts, opts, prompt, repo, base, where, register, run_id, whole)
            ruled = result.attempts or {}
            whole.set({"loopwright.attempts.winner": ruled.get("winner") or 0,
                       "loopwright.attempts.applied": bool(ruled.get("applied")), "loopwright.cost_usd":
                       result.total_cost_usd, "loopwright.terminal_reason": result.terminal_reason})
            return result
    finally:
        for a in attempts:
            if a.session is not None:
                a.session.close()
        if not opts.keep_worktrees:
            for a in attempts:
                worktrees.remove(repo, a.path)
            shutil.rmtree(place, ignore_errors=True)
            worktrees.prune(repo)


def _build(a: Attempt, opts: Options, settings: Any, prompt: str, where: Path, n: int, run_id: str,
           trace: str | None = None) -> None:
    """The attempt's agent, built as if loopwright had been started in its worktree; its
    transcript opens with an `attempt` attachment (run, number, how many, branch), so a session
    list tells it from an ordinary session even when the run never reached its ruling."""
    from ..compose.build import build
    from ..compose.goals import goal_from_options
    from ..tools.workspace import LocalWorkspace

    budget = opts.max_budget_usd / n if isinstance(opts.max_budget_usd, (int, float)) else opts.max_budget_usd
    mine = dataclasses.replace(opts, session_id=None, max_budget_usd=budget)
    observer = None
    if trace:
        from ..telemetry import observe

        observer = observe(os.environ, "attempt", carried={"traceparent": trace, "attributes": {
            "loopwright.attempt.number": a.number, "loopwright.attempt.of": n, "loopwright.attempt.run": run_id}})
    here = os.getcwd()
    os.chdir(a.path / where)
    try:
        has_goal = bool(opts.goal or opts.goal_file or prompt.lstrip().startswith("/goal"))
        spec, _ = goal_from_options(mine if has_goal else dataclasses.replace(mine, check=(), protect=()), prompt)
        # the settings read once for all attempts; its session among the folder's own
        built = build(mine, prompt, goal=False, settings=settings, observer=observer, project=Path(here))
        a.session = built.opened
        built.session.set_goal(spec)  # as it is: no bounds line for each attempt
        a.run = built.start()
        if a.session.recorder is not None:
            a.session.recorder.attach({"type": "attempt", "run": run_id, "attempt": a.number, "of": n,
                                       "branch": a.branch})
        a.baseline = LocalWorkspace(a.path / where).snapshot(list(opts.protect or []))
    finally:
        os.chdir(here)


async def _run_all(attempts: list[Attempt], opts: Options, prompt: str, repo: Path, base: str,
                   where: Path, register: Any = None, run_id: str = "", watch: Any = None) -> RunResult:
    from .core import foreground

    board = Board(attempts, live=opts.output_format == "text" and sys.stderr.isatty(), lines=bool(opts.verbose))

    async def one(a: Attempt) -> None:
        text = prompt if not a.instruction else f"{prompt}\n\nApproach for this attempt: {a.instruction}"
        a.result = await a.live.prompt(text, on_event=board.watch(a.number))
        board.clear()
        _say(f"attempt {a.number} ended: {a.result.subtype} after {a.result.num_turns} turn(s), "
             f"${a.result.total_cost_usd:.4f}")
        board.done(a.number)

    async def work() -> RunResult:
        await asyncio.gather(*(one(a) for a in attempts))
        for a in attempts[1:]:
            await a.live.aclose()
        return await _decide(attempts, opts, prompt, repo, base, where, run_id, watch)  # the first run's client judges

    def interrupt() -> None:
        for a in attempts:
            a.live.interrupt()

    if register is None:
        return await foreground(attempts[0].live, work, _quiet, interrupt)
    unregister = register(interrupt)
    try:
        return await work()
    finally:
        unregister()
        await attempts[0].live.aclose()


def _quiet(event: Any) -> None:
    """The attempts' own events stay in their transcripts; the person sees one line per attempt."""


class Board:
    """The attempts side by side while they run: on a terminal one line, redrawn, with each
    attempt's turn and latest tool call; with --verbose a line per call instead."""

    def __init__(self, attempts: list[Attempt], *, live: bool, lines: bool) -> None:
        self.state = {a.number: "starting" for a in attempts}
        self.live, self.lines = live and not lines, lines
        self.drawn = False

    def watch(self, number: int) -> Any:
        from ..core.events import AssistantMessage
        from ..core.types import ToolUseBlock

        def on_event(event: Any) -> None:
            if not isinstance(event, AssistantMessage):
                return
            calls = [b for b in event.message.content if isinstance(b, ToolUseBlock)]
            doing = f"{calls[-1].name}({_gist(calls[-1].input)})" if calls else "answering"
            self.state[number] = f"turn {event.turn} {doing}"
            if self.lines:
                _say(f"attempt {number} · turn {event.turn} · {doing}")
            elif self.live:
                self.draw()

        return on_event

    def done(self, number: int) -> None:
        self.state[number] = "ended"
        if self.live:
            self.draw()

    def draw(self) -> None:
        width = shutil.get_terminal_size((100, 20)).columns - 1
        line = " │ ".join(f"{k}: {v}" for k, v in self.state.items())
        sys.stderr.write("\r\x1b[2K" + visible(line)[:width])
        sys.stderr.flush()
        self.drawn = True

    def clear(self) -> None:
        if self.drawn:
            sys.stderr.write("\r\x1b[2K")
            sys.stderr.flush()
            self.drawn = False


def _gist(tool_input: Any) -> str:
    if isinstance(tool_input, dict):
        for key in ("command", "file_path", "pattern", "prompt"):
            if isinstance(tool_input.get(key), str):
                text = " ".join(tool_input[key].split())
                return text if len(text) <= 40 else text[:39] + "…"
    return ""


async def _decide(attempts: list[Attempt], opts: Options, prompt: str, repo: Path, base: str,
                  where: Path, run_id: str, watch: Any = None) -> RunResult:
    """The checks and protected files of each attempt, the judge's ruling among the eligible ones,
    the winner's changes applied. `watch`: telemetry's span of the run (telemetry.Step), which
    the judge's model calls go under."""
    from ..tools.workspace import LocalWorkspace
    from ..workflows.judge import Candidate, describe_order, judge

    aborted = any(a.result is not None and a.result.terminal_reason == "aborted" for a in attempts)
    for a in attempts:
        a.head = worktrees.commit_all(a.path, f"loopwright attempt {a.number}")
        space = LocalWorkspace(a.path / where)
        a.checks = [await space.run_check(c, 300.0) for c in opts.check or []]
        now = space.snapshot(list(opts.protect or []))
        a.protected_changed = sorted(p for p in set(a.baseline) | set(now) if a.baseline.get(p) != now.get(p))
        a.why_not = _why_not(a, aborted)
    eligible = [a for a in attempts if not a.why_not]
    first = attempts[0].live
    ruling, began = None, 0
    if eligible:
        candidates = [Candidate(a.number, worktrees.diff(repo, base, a.head), _checks_text(a),
                                a.result.result if a.result is not None else "") for a in eligible]
        began = time.time_ns()
        ruling = await judge(first.client(), first.agent.model if opts.judge_model is None else model_id(opts.judge_model),
                             prompt, candidates, random.Random())
    applied, why = None, ""
    if ruling is not None and ruling.winner is not None:
        winner = next(a for a in attempts if a.number == ruling.winner)
        problem = worktrees.apply(repo, base, winner.head)
        applied, why = (winner, "") if problem is None else (None, f"the winner's changes could not be applied "
                                                               f"({problem}); they stay on branch {winner.branch}")
    elif ruling is not None:
        why = ruling.reasons or "the judge chose no attempt"
    else:
        why = "no attempt could win: " + "; ".join(f"{a.number}: {a.why_not}" for a in attempts)
    summary = {"run": run_id, "attempts": [a.outcome() for a in attempts],
               "winner": applied.number if applied is not None else None,
               "applied": applied is not None,
               "judge": None if ruling is None else {
                   "model": ruling.model, "reasons": ruling.reasons,
                   "defects": {str(k): v for k, v in ruling.defects.items()},
                   "verdicts": {str(k): v for k, v in ruling.verdicts.items()},
                   "shown_as": describe_order(ruling.order)}}
    _record(attempts, summary, repo, base)
    result = _combined(attempts, applied, why, summary, ruling)
    if watch is not None and ruling is not None:
        watch.model_calls("judge", ruling.calls, began, result.session_id)
    return result


def _record(attempts: list[Attempt], summary: dict[str, Any], repo: Path, base: str) -> None:
    """The run's comparison in every attempt's transcript, as an `attempts` attachment (each
    attempt's diff cut to MAX_DIFF characters), so the web view can show them side by side."""
    diffs = {str(a.number): worktrees.diff(repo, base, a.head, MAX_DIFF) if a.head else "" for a in attempts}
    for a in attempts:
        recorder = a.run.session.recorder if a.run is not None else None
        if recorder is not None and hasattr(recorder, "attach"):
            recorder.attach({"type": "attempts", "this_attempt": a.number, **summary, "diffs": diffs})


def _why_not(a: Attempt, aborted: bool) -> str:
    if aborted:
        return "the attempts were interrupted"
    why = []  # every reason: an attempt that cheated and then stalled is out for both
    if a.result is None or a.result.is_error:
        why.append(f"its loop ended in error ({a.result.terminal_reason if a.result else 'not run'})")
    if a.protected_changed:
        why.append("it changed protected files: " + ", ".join(a.protected_changed))
    failed = [c.command for c in a.checks if c.exit_code != 0]
    if failed:
        why.append("its checks failed: " + ", ".join(failed))
    return "; ".join(why)


def _checks_text(a: Attempt) -> str:
    return "\n".join(f"$ {c.command}\nexit {c.exit_code}\n{c.output_tail[-1500:]}" for c in a.checks)


def model_id(name: str) -> str:
    from ..policy.models import resolve_model

    return resolve_model(name).id


def _combined(attempts: list[Attempt], winner: Attempt | None, why: str, summary: dict[str, Any],
              ruling: Any) -> RunResult:
    """One result for the whole run: the winner's (or the first attempt's, marked as an error),
    with the spend of every attempt and of the judge added up."""
    results = [a.result for a in attempts if a.result is not None]
    base = winner.result if winner is not None and winner.result is not None else results[0]
    model_usage = dict(base.model_usage)
    role_usage: dict[str, ModelUsage] = {}
    cost = sum(r.total_cost_usd for r in results)
    usage = base.usage
    for r in results:
        for role, mu in r.role_usage.items():
            role_usage[role] = role_usage.get(role, type(mu)()) + mu
        if r is not base:
            usage = usage + r.usage
            for m, mu in r.model_usage.items():
                model_usage[m] = model_usage.get(m, type(mu)()) + mu
    if ruling is not None and ruling.usage.calls:
        role_usage["judge"] = ruling.usage
        model_usage[ruling.model] = model_usage.get(ruling.model, type(ruling.usage)()) + ruling.usage
        cost += ruling.usage.cost_usd
    totalled = dataclasses.replace(base, total_cost_usd=cost, usage=usage, model_usage=model_usage,
                                   role_usage=role_usage, attempts=summary,
                                   num_turns=sum(r.num_turns for r in results), messages=())
    if winner is not None:
        return totalled
    aborted = any(r.terminal_reason == "aborted" for r in results)
    return dataclasses.replace(totalled, subtype="error_during_execution", is_error=True, result="",
                               terminal_reason="aborted" if aborted else "no_winner", errors=(why,),
                               structured_output=None)


def print_table(summary: dict[str, Any]) -> None:
    for row in summary.get("attempts", []):
        mark = "winner" if row["attempt"] == summary.get("winner") else ("eligible" if row["eligible"] else "out")
        checks = ", ".join(("pass " if c["passed"] else "FAIL ") + c["command"] for c in row["checks"]) or "no checks"
        _say(f"attempt {row['attempt']} [{mark}] {row['outcome']}, {row['turns']} turn(s), ${row['cost_usd']:.4f}, "
             f"{checks}{'; ' + row['why_not'] if row['why_not'] else ''}")


def _say(text: str) -> None:
    print(f"loopwright: {visible(text)}", file=sys.stderr, flush=True)


def clean(repo_dir: Path, say: Callable[[str], None] = print) -> int:
    """`loopwright attempts clean`: remove every attempt worktree a run left (its branches stay)."""
    repo = worktrees.repo_root(repo_dir)
    listed = worktrees.git(repo, "worktree", "list", "--porcelain")
    gone, path = 0, None
    for line in listed.splitlines():
        if line.startswith("worktree "):
            path = Path(line[9:])
        elif line.startswith("branch refs/heads/loopwright/") and path is not None:
            worktrees.remove(repo, path)
            shutil.rmtree(path, ignore_errors=True)
            gone += 1
    worktrees.prune(repo)
    say(f"removed {gone} attempt worktree(s); their branches are kept (git branch --list 'loopwright/*')")
    return 0
