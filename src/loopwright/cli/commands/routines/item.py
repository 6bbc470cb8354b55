"""One routine item run as an agent in this process, composed as every front end composes its run
(`compose.build`) from the `RunSpec` the routine's keys describe, its goal set here (a resumed
item's from its session, with the routine's checks); a resumed item carries on its session
(finished tool calls are not run again)."""

from __future__ import annotations

import dataclasses
import os
from typing import Any, Callable

from ....compose.runspec import RunSpec
from ....core.errors import UsageError
from ....compose.build import Built, attachments, build
from ....compose.goals import goal_from_options

CARRY_ON = ("This run was interrupted (its process stopped). Check what was already done, then carry on with "
            "the task; do not repeat work that is finished.")


def item_spec(routine: Any, session_id: str, mode: str, budget_usd: float | None, text: str) -> RunSpec:
    """The run the routine's keys describe for one item (checked when the routine was read), as
    `-p` would take it from the same flags. `mode`: new, reopen (a session that never began) or carry."""
    return RunSpec(
        session_id=session_id if mode == "new" else None, resume=None if mode == "new" else session_id,
        goal=text if routine.goal and mode != "carry" else None,
        check=tuple(routine.check) if routine.goal else (), protect=tuple(routine.protect) if routine.goal else (),
        allowed=tuple(routine.allowed_tools), permission_mode=routine.permission_mode, max_turns=routine.max_turns,
        max_duration=routine.max_duration, model=routine.model,
        max_budget_usd=None if budget_usd is None else float(budget_usd),
        attempts=routine.attempts if routine.attempts > 1 else None,
        attempt_instructions=routine.attempt_instructions or None, sandbox=routine.sandbox)


def item_runner(settings: Any, register: Callable[[Callable[[], None]], Callable[[], None]],
                queue: tuple[str, str] | None = None, fire_trace: str | None = None) -> Any:
    """The `RunItem` of a fire: `settings` loaded once for the fire; `register(interrupt)` lets
    Ctrl-C reach every running item (it answers the function that unregisters). `queue`: (store
    URL, queue name) to send items to workers (an item of attempts goes as one workflow of attempts).
    `fire_trace`: the fire's span (telemetry), each item's span goes under it."""
    from ....proactive.fire import ItemResult
    from ....telemetry import step

    async def run_item(run: Any) -> Any:
        # a span per item (telemetry on); the item's run links to it, here or on a worker
        with step(os.environ, f"routine_item {run.routine.name}", {
                "loopwright.routine.name": run.routine.name, "loopwright.routine.item.id": run.item.id,
                "loopwright.routine.item.resumed": run.resume, "session.id": run.session_id}, parent=fire_trace) as item:
            result = await one(run, item.traceparent)
            item.set({"loopwright.routine.item.status": result.status, "loopwright.cost_usd": result.cost_usd})
            if result.status == "failed":
                item.failed(result.note[:200])
            return result

    async def one(run: Any, link: str | None) -> Any:
        mode = _mode(run)
        if mode != "carry" and not run.text:
            return ItemResult("failed", note="its process died before the run began, and the item is no longer "
                              "in the source", subtype="lost")
        try:
            runspec = item_spec(run.routine, run.session_id, mode, run.budget_usd, run.text)
            spec, prompt = ((None, run.text) if not run.routine.goal or mode == "carry"
                            else goal_from_options(runspec, None, resuming=mode == "reopen"))
            if run.routine.skill and mode != "carry":
                prompt = f"/{run.routine.skill} {run.text}"
            if run.routine.attempts > 1 and queue is None:
                return await _attempted(runspec, prompt or run.text, settings, register)
            if queue is not None:
                said = CARRY_ON if mode == "carry" else None if run.routine.goal else prompt or run.text
                if run.routine.attempts > 1:  # one parent workflow of attempts, found again by a later fire
                    said = None if run.routine.goal else prompt or run.text
                # a goal's directive comes from the spec's goal
                return await _queued(queue, dataclasses.replace(runspec, prompt=said or None), run, register, link)
            observer = None
            if link:  # the item's run links to the item's span
                from ....telemetry import observe

                observer = observe(os.environ, "routine", carried={"links": [link]})
            # the item sets its own goal (`_arm`); its skills name the session opened here
            opening = CARRY_ON if mode == "carry" else prompt or run.text  # what the run starts with
            built = build(runspec, opening, goal=False, settings=settings, observer=observer)
        except UsageError as exc:
            return ItemResult("failed", note=f"cannot start: {exc}", subtype="usage")
        if run.routine.workflow:
            return await _workflowed(built, run, carry=mode == "carry", register=register)
        try:
            _arm(built, spec, run, carry=mode == "carry")
            live = built.start()
            unregister = register(live.interrupt)
            try:
                result = await live.prompt(built.prompt)
                await live.end_session("other")
            finally:
                unregister()
                await live.aclose()
        finally:
            built.close()
        if result.terminal_reason == "aborted":
            status = "interrupted"
        else:
            status = "failed" if result.is_error else "done"
        note = "; ".join(result.errors) if result.is_error and result.errors else result.result
        return ItemResult(status, float(result.total_cost_usd or 0.0), note, str(result.subtype))

    return run_item


async def _queued(queue: tuple[str, str], spec: RunSpec, run: Any, register: Any, link: str | None = None) -> Any:
    """The item — its run as a `RunSpec` — as a workflow on a worker's queue; this fire waits for its
    outcome. The workflow's id is the item's session's, so a later fire that resumes the item finds
    the same workflow."""
    import asyncio

    from ....distributed.client import run_queued
    from ....distributed.jobs import new_job
    from ....proactive.fire import ItemResult

    job = new_job(spec, os.getcwd(), run.session_id, None, f"{run.routine.name}: {run.item.id}", own_session=True,
                  links=(link,) if link else ())
    if run.routine.attempts > 1:
        job["attempts"] = run.routine.attempts
    stop = asyncio.Event()
    unregister = register(stop.set)
    try:
        outcome, value = await run_queued(*queue, job, f"item-{run.session_id}", stop)
    finally:
        unregister()
    if outcome == "interrupted":
        return ItemResult("interrupted", note="the fire stopped; a worker may still be running it")
    if outcome == "error":
        return ItemResult("failed", note=f"its workflow failed: {value}", subtype="workflow")
    status = "interrupted" if value.get("terminal_reason") == "aborted" else (
        "failed" if value.get("is_error") else "done")
    errors = value.get("errors") or []
    note = "; ".join(errors) if value.get("is_error") and errors else str(value.get("result") or "")
    return ItemResult(status, float(value.get("total_cost_usd") or 0.0), note, str(value.get("subtype") or ""))


async def _attempted(spec: RunSpec, prompt: str, settings: Any, register: Any) -> Any:
    """The item done as N attempts in git worktrees, judged; the winner's changes land here."""
    from ....proactive.fire import ItemResult
    from ...attempts import attempts_run, print_table, check_attempts
    from ...specrun import overlay

    opts = overlay(spec, [])  # the attempts' options, as `-p --attempts N` gives them
    check_attempts(opts)
    result = await attempts_run(opts, prompt, settings, register)
    print_table(result.attempts or {})  # a line per attempt: winner, eligible or out, and why
    note = "; ".join(result.errors) if result.is_error and result.errors else result.result
    status = "interrupted" if result.terminal_reason == "aborted" else "failed" if result.is_error else "done"
    return ItemResult(status, float(result.total_cost_usd or 0.0), note,
                      str(result.subtype))


async def _workflowed(built: Built, run: Any, *, carry: bool, register: Any) -> Any:
    """The item done by the routine's workflow in the item's session: the filled prompt's (or
    goal's) words as its `args`, the item, the goal and the routine's name as `wf.item`, `wf.goal`
    and `wf.routine`; a resumed item replays the steps that had finished. With `check:` or
    `protect:`, the item is done only when its checks pass and its protected files are as they
    were (`guard`)."""
    import shlex

    from ....proactive.fire import ItemResult
    from ...workflowturn import InConversation
    from . import guard

    try:
        words = shlex.split(run.text)
    except ValueError:
        words = run.text.split()
    context = {"item": {"id": run.item.id, **run.item.fields}, "goal": run.text if run.routine.goal else None,
               "routine": run.routine.name}
    session = built.opened  # the store's session: its records and recorder, for the guard
    live = built.start()
    doing = InConversation(live, run.routine.workflow, words, context=context, resume=carry)
    unregister = register(doing.stop)
    verdict = None
    try:
        guarded = bool(run.routine.check or run.routine.protect)
        baseline = guard.arm(live, run.routine, session.records, session.recorder) if guarded else {}
        result = await doing(lambda event: None, lambda status: None)
        if guarded and not result.is_error:  # the answer is held to the item's checks and protected files
            verdict = await guard.verify(live, run.routine, baseline, session.recorder)
        await live.end_session("other")
    except UsageError as exc:  # the workflow is missing or its file cannot be used
        return ItemResult("failed", note=f"cannot start: {exc}", subtype="usage")
    finally:
        unregister()
        await live.aclose()
        built.close()
    cost = float(result.total_cost_usd or 0.0)
    if verdict is not None and not verdict.held:
        return ItemResult("failed", cost, verdict.why, "unverified")
    status = "interrupted" if result.terminal_reason == "aborted" else "failed" if result.is_error else "done"
    note = "; ".join(result.errors) if result.is_error and result.errors else result.result
    return ItemResult(status, cost, note, str(result.subtype))


def _mode(run: Any) -> str:
    """new: a fresh session; carry: resume one that began; reopen: its process died before the
    first message was recorded, so it begins again in that session."""
    if not run.resume:
        return "new"
    from pathlib import Path

    from ...core import run_stores

    store = run_stores(None, Path.cwd()).sessions
    if not store.exists(run.session_id):
        return "new"
    loaded = store.load(run.session_id)
    began = loaded is not None and any(r.get("type") == "user" for r in loaded[0])
    return "carry" if began else "reopen"


def _arm(built: Built, spec: Any, run: Any, *, carry: bool) -> None:
    """A new item's goal (`spec`); a resumed item's goal from its session's records, with the
    routine's checks; set on the built run's session."""
    conversation, session, opts = built.session, built.opened, built.spec
    if not carry:
        conversation.set_goal(spec)
        return
    from ....engine.goal import resumed_goal, saved_goal
    from ....compose.goals import resume_goal_flags

    saved = saved_goal(attachments(session.records)) if session.records else None
    if saved is not None and saved.active:
        resumed, baseline, _ = resumed_goal(saved, list(run.routine.check), list(run.routine.protect),
                                            **resume_goal_flags(opts))
        conversation.set_goal(resumed, baseline)
