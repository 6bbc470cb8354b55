"""Parallel attempts as DBOS workflows: one parent workflow, `loopwright.attempts`, whose attempts
are child workflows (each a `loopwright.goal_loop` in its own git worktree, its model and tool
calls steps as in any goal loop) and whose preparation, review, judge call and landing are steps.
The parent waits on the queue's companion (worker.runs_queue); each attempt is enqueued on the
run's queue, so the queue's limits count each attempt as one loop, on whichever worker takes it,
also once it is recovered (a recovered workflow goes back on the queue it was enqueued on).
A recovered parent replays its recorded steps and finds its children by their ids (a finished
attempt answers from its record; an unfinished one is recovered as any goal loop is), so no
attempt begins again and the winner's changes land once.

The worktrees live where `loopwright -p --attempts` puts them (`$TMPDIR/loopwright-attempts-UID/
<run>`): a worker that takes over finds them where the dead one left them only when the workers
of a queue share that folder and the project folder (one machine, or TMPDIR on a shared
filesystem)."""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dbos import DBOS, SetWorkflowID

from ..core.errors import LoopwrightError
from ..workflows import worktrees
from . import jobs

if TYPE_CHECKING:
    from ..compose.runspec import RunSpec

ATTEMPTS_NAME = "loopwright.attempts"


def attempt_flags(job: dict[str, Any]) -> dict[str, Any]:
    """What an attempt's goal loop changes in the run's flags (jobs._run reads it)."""
    return job.get("attempt") or {}


@DBOS.workflow(name=ATTEMPTS_NAME)
async def attempts_loop(job: dict[str, Any]) -> dict[str, Any]:
    worker = jobs._worker[0]
    workflow_id = DBOS.workflow_id or ""
    started = await worker.started(workflow_id, f"{job['label']} ({job['attempts']} attempts)", "")
    status = "crashed"
    try:
        result = await _run(job, workflow_id)
        status = "done"
        return result
    finally:
        await worker.ended(workflow_id, started, status)


async def _run(job: dict[str, Any], workflow_id: str) -> dict[str, Any]:
    opts = jobs.job_spec(job, jobs._worker[0].config.read_argv)
    n, prompt = job["attempts"], opts.prompt or opts.goal or ""
    plan = await _prepare(job["cwd"], workflow_id, n, list(opts.protect or []), opts.attempt_instructions)
    budget = opts.max_budget_usd / n if isinstance(opts.max_budget_usd, (int, float)) else None
    has_goal = bool(opts.goal or opts.goal_file or prompt.lstrip().startswith("/goal"))
    queue = await DBOS.retrieve_queue_async(job.get("queue") or jobs._worker[0].config.queue)
    if queue is None:
        raise LoopwrightError(f"the queue {job.get('queue')!r} of this run of attempts is not registered")
    handles = []
    for a in plan["attempts"]:
        child = jobs.new_job(opts, a["cwd"], a["session_id"], None, f"{job['label']} · attempt {a['number']}",
                             own_session=job.get("own_session", False))
        # each attempt's runs in the run's trace, side by side under the context it was enqueued with
        child["trace"] = {**(job.get("trace") or child["trace"]),
                          "attributes": {"loopwright.attempt.number": a["number"], "loopwright.attempt.of": n,
                                         "loopwright.attempt.run": workflow_id}}
        child["attempt"] = {"approach": a["instruction"], "budget": budget, "goal": has_goal,
                            "mark": {"type": "attempt", "run": workflow_id, "attempt": a["number"], "of": n,
                                     "branch": a["branch"]}}
        with SetWorkflowID(f"{workflow_id}-a{a['number']}"):
            handles.append(await queue.enqueue_async(jobs.goal_loop, child))
    results = await asyncio.gather(*(_result(h) for h in handles))
    result = await _decide(job, opts, plan, list(results), workflow_id)
    if not opts.keep_worktrees:  # only at the end: a run handed back or cut short needs them again
        _clean(plan)
    return result


async def _result(handle: Any) -> dict[str, Any]:
    try:
        return dict(await handle.get_result())
    except Exception as exc:  # the attempt's workflow failed: it cannot win
        return {"subtype": "error_during_execution", "is_error": True, "result": "", "num_turns": 0,
                "total_cost_usd": 0.0, "terminal_reason": "workflow_error", "errors": [str(exc)]}


@DBOS.step(name="loopwright.attempts_prepare")
async def _prepare(cwd: str, workflow_id: str, n: int, protect: list[str], instructions: str | None) -> dict[str, Any]:
    """The base commit, a worktree and branch per attempt, each attempt's session id, approach
    and protected files' digests (recorded: a replay gets the same plan back)."""
    return await asyncio.to_thread(_prepared, cwd, workflow_id, n, protect, instructions)


def _prepared(cwd: str, workflow_id: str, n: int, protect: list[str], instructions: str | None) -> dict[str, Any]:
    from ..compose.goals import read_variations
    from ..core.ids import uuid4
    from ..tools.workspace import LocalWorkspace

    repo = worktrees.repo_root(Path(cwd))
    where = Path(cwd).resolve().relative_to(repo.resolve())
    variations = read_variations(str(Path(cwd) / instructions) if instructions else None)
    place = worktrees.private_root() / workflow_id  # TMPDIR's: one folder for every worker of the queue
    base = worktrees.snapshot(repo)
    attempts = []
    for k in range(1, n + 1):
        path, branch = place / str(k), f"loopwright/{workflow_id[:24]}/{k}"
        if path.exists():  # a preparation cut short before its record: begin it again
            worktrees.remove(repo, path)
            shutil.rmtree(path, ignore_errors=True)
            worktrees.delete_branch(repo, branch)
        worktrees.add(repo, path, branch, base)
        attempts.append({"number": k, "path": str(path), "branch": branch, "cwd": str(path / where),
                         "session_id": uuid4(), "instruction": variations[(k - 1) % len(variations)] if variations
                         else "", "baseline": LocalWorkspace(path / where).snapshot(protect)})
    return {"repo": str(repo), "base": base, "where": str(where), "place": str(place), "attempts": attempts}


@DBOS.step(name="loopwright.attempts_review")
async def _review(plan: dict[str, Any], checks: list[str], protect: list[str]) -> list[dict[str, Any]]:
    """Each attempt's work committed on its branch, its checks run and its protected files compared."""
    from ..tools.workspace import LocalWorkspace

    reviews = []
    for a in plan["attempts"]:
        head = await asyncio.to_thread(worktrees.commit_all, Path(a["path"]), f"loopwright attempt {a['number']}")
        space = LocalWorkspace(Path(a["cwd"]))
        ran = [await space.run_check(c, 300.0) for c in checks]
        now = space.snapshot(protect)
        baseline = a["baseline"]
        reviews.append({"head": head, "checks": [{"command": c.command, "exit_code": c.exit_code,
                                                  "output_tail": c.output_tail[-1500:]} for c in ran],
                        "protected_changed": sorted(p for p in set(baseline) | set(now)
                                                    if baseline.get(p) != now.get(p))})
    return reviews


@DBOS.step(name="loopwright.attempts_land")
async def _land(repo: str, base: str, head: str) -> str | None:
    """The winner's changes applied to the project's working tree, once: changes already there
    (a landing cut short before its record) are not applied again."""
    return await asyncio.to_thread(_landed, repo, base, head)


def _landed(repo: str, base: str, head: str) -> str | None:
    patch = worktrees.git(repo, "diff", "--no-ext-diff", "--no-textconv", "--binary", base, head)
    if patch.strip() and _applies_reversed(repo, patch):
        return None
    return worktrees.apply(Path(repo), base, head)


def _applies_reversed(repo: str, patch: str) -> bool:
    import subprocess

    out = subprocess.run(["git", *worktrees.SAFE, "apply", "--reverse", "--check", "-"], cwd=repo, input=patch,
                         capture_output=True, text=True)
    return out.returncode == 0


async def _decide(job: dict[str, Any], opts: RunSpec, plan: dict[str, Any], results: list[dict[str, Any]],
                  workflow_id: str) -> dict[str, Any]:
    from ..workflows.judge import Candidate, describe_order, judge
    from .durable import DurableModel

    reviews = await _review(plan, list(opts.check or []), list(opts.protect or []))
    aborted = any(r.get("terminal_reason") == "aborted" for r in results)
    rows = [_row(a, r, v, aborted) for a, r, v in zip(plan["attempts"], results, reviews)]
    eligible = [(row, v) for row, v in zip(rows, reviews) if row["eligible"]]
    ruling, began = None, 0
    if eligible:
        candidates = [Candidate(row["attempt"], worktrees.diff(Path(plan["repo"]), plan["base"], v["head"]),
                                _checks_text(v), row["summary"]) for row, v in eligible]
        run, name = _judge_run(job, opts)
        began = time.time_ns()
        try:  # the order shown is seeded by the run, so a replay reads the recorded answer the same way
            ruling = await judge(DurableModel(run.client()), name, opts.prompt or opts.goal or "", candidates,
                                 random.Random(workflow_id))
        finally:
            await run.aclose()
    winner, why = None, ""
    if ruling is not None and ruling.winner is not None:
        head = reviews[ruling.winner - 1]["head"]
        problem = await _land(plan["repo"], plan["base"], head)
        winner = ruling.winner if problem is None else None
        if problem is not None:
            why = (f"the winner's changes could not be applied ({problem}); they stay on branch "
                   f"{plan['attempts'][ruling.winner - 1]['branch']}")
    elif ruling is not None:
        why = ruling.reasons or "the judge chose no attempt"
    else:
        why = "no attempt could win: " + "; ".join(f"{row['attempt']}: {row['why_not']}" for row in rows)
    summary = {"attempts": [{k: v for k, v in row.items() if k != "summary"} for row in rows], "winner": winner,
               "applied": winner is not None, "judge": None if ruling is None else {
                   "model": ruling.model, "reasons": ruling.reasons,
                   "defects": {str(k): v for k, v in ruling.defects.items()},
                   "verdicts": {str(k): v for k, v in ruling.verdicts.items()},
                   "shown_as": describe_order(ruling.order)}}
    combined = _combined(results, winner, why, summary, ruling)
    if ruling is not None:  # telemetry: the judge's calls beside the attempts' runs, in the run's trace
        from ..telemetry import model_calls
        from ..telemetry.carried import carried

        model_calls(os.environ, "judge", ruling.calls, began, parent=carried(job).get("traceparent"),
                    session_id=str(combined.get("session_id") or ""))
    return combined


def _row(a: dict[str, Any], r: dict[str, Any], v: dict[str, Any], aborted: bool) -> dict[str, Any]:
    why = []
    if aborted:
        why.append("the attempts were interrupted")
    elif r.get("is_error"):
        why.append(f"its loop ended in error ({r.get('terminal_reason')})")
    if v["protected_changed"]:
        why.append("it changed protected files: " + ", ".join(v["protected_changed"]))
    if failed := [c["command"] for c in v["checks"] if c["exit_code"] != 0]:
        why.append("its checks failed: " + ", ".join(failed))
    return {"attempt": a["number"], "branch": a["branch"], "instruction": a["instruction"],
            "outcome": r.get("subtype"), "terminal_reason": r.get("terminal_reason"), "turns": r.get("num_turns", 0),
            "cost_usd": round(float(r.get("total_cost_usd") or 0.0), 6), "session_id": a["session_id"],
            "checks": [{"command": c["command"], "exit_code": c["exit_code"], "passed": c["exit_code"] == 0,
                        "output_tail": c["output_tail"][-500:]} for c in v["checks"]],
            "protected_changed": v["protected_changed"], "eligible": not why, "why_not": "; ".join(why),
            "summary": str(r.get("result") or "")}


def _checks_text(v: dict[str, Any]) -> str:
    return "\n".join(f"$ {c['command']}\nexit {c['exit_code']}\n{c['output_tail']}" for c in v["checks"])


def _judge_run(job: dict[str, Any], opts: RunSpec) -> tuple[Any, str]:
    """A run of the agent `loopwright -p` would build, for the model client it makes (closed
    with it), and the judge's model name."""
    from ..compose.build import build_agent, load_run_settings
    from ..policy.models import resolve_model

    here = os.getcwd()
    os.chdir(job["cwd"])
    try:
        agent = build_agent(opts, load_run_settings(opts, announce=False))
    finally:
        os.chdir(here)
    return agent.open(), agent.model if opts.judge_model is None else resolve_model(opts.judge_model).id


def _combined(results: list[dict[str, Any]], winner: int | None, why: str, summary: dict[str, Any],
              ruling: Any) -> dict[str, Any]:
    """One result for the run: the winner's (or the first attempt's, marked as an error), with
    the spend of every attempt and of the judge added up."""
    base = dict(results[winner - 1] if winner is not None else results[0])
    cost = sum(float(r.get("total_cost_usd") or 0.0) for r in results)
    cost += ruling.usage.cost_usd if ruling is not None else 0.0
    base.update(total_cost_usd=round(cost, 8), num_turns=sum(int(r.get("num_turns") or 0) for r in results),
                attempts=summary)
    if winner is None:
        aborted = any(r.get("terminal_reason") == "aborted" for r in results)
        base.update(subtype="error_during_execution", is_error=True, result="", errors=[why],
                    terminal_reason="aborted" if aborted else "no_winner")
    return base


def _clean(plan: dict[str, Any]) -> None:
    repo = Path(plan["repo"])
    for a in plan["attempts"]:
        worktrees.remove(repo, Path(a["path"]))
    shutil.rmtree(plan["place"], ignore_errors=True)
    worktrees.prune(repo)
