"""A goal loop as a DBOS workflow: the job (the `-p` flags of the run, its folder, its session id,
fixed when it was enqueued) runs as `loopwright -p` would run it, with the model and the tools
behind recorded steps (durable.py). A recovered workflow runs again from the top: its transcript
is first cut back to where it stood when the workflow first began, and the replay writes the same
records again from the steps' records."""

from __future__ import annotations

import os
import sys
from typing import Any

from dbos import DBOS

from . import transcripts

WORKFLOW_NAME = "loopwright.goal_loop"

# The worker of this process (worker.run_worker sets it): it records each execution it starts.
_worker: list[Any] = []


def use_worker(worker: Any) -> None:
    _worker[:] = [worker]


def new_job(args: list[str], cwd: str, session_id: str, resume: str | None, label: str, *,
            own_session: bool = False, links: tuple[str, ...] = ()) -> dict[str, Any]:
    """What `loopwright enqueue` stores: JSON only, so any worker of any version can read it.
    `own_session`: the args name the session themselves (a routine item's --session-id/--resume).
    `trace`: the loop's trace, fixed here, so every worker that runs it (a survivor after a kill
    too) continues the same one; `links`: the traceparents of what started it (telemetry/carried)."""
    from ..telemetry.carried import new_traceparent

    return {"args": list(args), "cwd": cwd, "session_id": session_id, "resume": resume, "label": label,
            "own_session": own_session, "trace": {"traceparent": new_traceparent(), "links": list(links)}}


@DBOS.step(name="loopwright.transcript_mark")
async def _transcript_mark(store: str, cwd: str, session_id: str) -> int:
    """Where the transcript stood when the workflow first began (recorded: a replay gets it back)."""
    return _with_stores(store, cwd, lambda stores: transcripts.mark(stores, session_id))


def _with_stores(store: str, cwd: str, use: Any) -> Any:
    from ..stores import open_store

    return use(open_store(store, cwd))  # a database store shares one connection a process: nothing to close


@DBOS.workflow(name=WORKFLOW_NAME)
async def goal_loop(job: dict[str, Any]) -> dict[str, Any]:
    worker = _worker[0]
    workflow_id = DBOS.workflow_id or ""
    sid = job["resume"] or job["session_id"]
    started = await worker.started(workflow_id, job["label"], sid)
    status = "crashed"
    try:
        result = await _run(job)
        status = "done"
        return result
    finally:
        await worker.ended(workflow_id, started, status)


async def _run(job: dict[str, Any]) -> dict[str, Any]:
    from ..compose.build import (
        attachments,
        build_agent,
        init_fields,
        load_run_settings,
        make_emitter,
        open_run_session,
    )
    from ..compose.goals import arm_goal, goal_from_options
    from ..cli.options import parse_options
    from .durable import DurableModel, ToolSteps

    store, cwd, sid = _worker[0].config.store, job["cwd"], job["resume"] or job["session_id"]
    opts = _as_attempt(job, parse_options(_session_flags(job, store)))
    at = await _transcript_mark(store, cwd, sid)
    _with_stores(store, cwd, lambda stores: transcripts.cut_back(stores, sid, at))
    here = os.getcwd()
    os.chdir(cwd)  # the flags are read against the job's folder; nothing else runs during this
    try:
        spec, prompt = goal_from_options(opts, opts.prompt or "", resuming=opts.resuming)
        settings = load_run_settings(opts, announce=False)
        agent = build_agent(opts, settings)
        agent = agent.replace(observer=_watcher(job))  # the job's trace, carried from where it was enqueued
        session, conversation = open_run_session(opts, agent)
        run = agent.open(conversation)
        steps = ToolSteps()
        # every model call a recorded step (through the client the run made, closed with it), and
        # every tool of every prompt: built-in, MCP, Skill, Agent, Workflow
        run.update(model_client=DurableModel(run.client()), tool_steps=steps.wrap)
    finally:
        os.chdir(here)
    try:
        from ..engine.goal import saved_goal

        saved = saved_goal(attachments(session.records)) if session.records else None  # a resumed goal
        mark = (job.get("attempt") or {}).get("mark")
        if mark and not session.records and session.recorder is not None:  # an attempt says so, once
            session.recorder.attach(mark)
        arm_goal(conversation, agent.model, spec, saved, opts)
        emit = steps.watching(make_emitter("json", False, conversation.session_id, False,
                                           init_fields(settings, agent)))
        approach = (job.get("attempt") or {}).get("approach")
        text = f"{prompt}\n\nApproach for this attempt: {approach}" if approach else prompt or ""
        result = await run.prompt(text, on_event=emit)
        await run.end_session("other", on_event=emit)
    finally:
        await run.aclose()
        session.close()
    print(f"loopwright worker: {job['label']}: {result.terminal_reason} (session {conversation.session_id})",
          file=sys.stderr, flush=True)
    return dict(result.to_json())


def _watcher(job: dict[str, Any]) -> Any:
    """Telemetry's observer of the job's runs, in the trace the job carries: the same on every
    worker that runs it (None when telemetry is off)."""
    from ..telemetry import observe
    from ..telemetry.carried import carried

    return observe(os.environ, "worker", carried=carried(job))


def _as_attempt(job: dict[str, Any], opts: Any) -> Any:
    """An attempt of a parallel run (distributed/attempts.py): the run's flags in a session of its
    own, its share of the budget, and no checks or protected files unless the run has a goal."""
    attempt = job.get("attempt")
    if attempt is None:
        return opts
    import dataclasses

    opts = dataclasses.replace(opts, session_id=job["session_id"], resume=None, attempts=None,
                               attempt_instructions=None, judge_model=None, keep_worktrees=False,
                               max_budget_usd=attempt["budget"] if attempt["budget"] is not None
                               else opts.max_budget_usd)
    return opts if attempt["goal"] else dataclasses.replace(opts, check=(), protect=())


def _session_flags(job: dict[str, Any], store: str) -> list[str]:
    """The run's flags: its session in the worker's store (PostgreSQL: any worker can resume it;
    SQLite: the JSONL files of this machine)."""
    args = ["-p", "--store", store]
    if not (job["resume"] or job.get("own_session")):  # a resumed session's --resume is among the args
        args += ["--session-id", job["session_id"]]
    return [*args, *job["args"]]

