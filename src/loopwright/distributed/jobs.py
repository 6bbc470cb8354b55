"""A goal loop as a DBOS workflow: the job (the run's `RunSpec` as JSON, its folder, its session id,
fixed when it was enqueued) runs as `loopwright -p` runs it (`compose.build`), with the model and the tools
behind recorded steps (durable.py). A recovered workflow runs again from the top: its transcript
is first cut back to where it stood when the workflow first began, and the replay writes the same
records again from the steps' records."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any, Callable

from dbos import DBOS

from . import transcripts

if TYPE_CHECKING:
    from ..compose.runspec import RunSpec

WORKFLOW_NAME = "loopwright.goal_loop"

# The worker of this process (worker.run_worker sets it): it records each execution it starts.
_worker: list[Any] = []


def use_worker(worker: Any) -> None:
    _worker[:] = [worker]


def new_job(spec: RunSpec, cwd: str, session_id: str, resume: str | None, label: str, *,
            own_session: bool = False, links: tuple[str, ...] = ()) -> dict[str, Any]:
    """What `loopwright enqueue` stores: JSON only (the run as `RunSpec.to_json`, versioned), so any
    worker of any version can read it. `own_session`: the spec names the session itself (a routine
    item's --session-id/--resume). `trace`: the loop's trace, fixed here (with telemetry on, the
    enqueue's span replaces it: client._put), so every worker that runs it (a survivor after a
    kill too) continues the same one; `links`: the traceparents of what started it
    (telemetry/carried)."""
    from ..telemetry.carried import new_traceparent

    return {"spec": spec.to_json(), "cwd": cwd, "session_id": session_id, "resume": resume, "label": label,
            "own_session": own_session, "trace": {"traceparent": new_traceparent(), "links": list(links)}}


ArgvReader = Callable[[list[str]], "RunSpec"]


def job_spec(job: dict[str, Any], read_argv: ArgvReader | None = None) -> RunSpec:
    """The run a job describes. A job enqueued before RunSpec (its `-p` flags as `args`) is read
    once with `read_argv`, the flags' reader the worker was started with (the CLI's parser: this
    package imports nothing of the CLI)."""
    from ..compose.runspec import RunSpec
    from ..core.errors import UsageError

    if "spec" in job:
        return RunSpec.from_json(job["spec"])
    args = job.get("args")
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise UsageError(f"job {job.get('label')!r}: expected a run spec (\"spec\") or the -p flags of an older "
                         f"release (\"args\", a list of strings), got {sorted(job)}")
    if read_argv is None:
        raise UsageError(f"job {job.get('label')!r} was enqueued by an older release (its -p flags as a command "
                         "line): only a worker started with a reader of those flags (`loopwright worker`) runs it")
    return read_argv(["-p", *args])


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
    from ..compose.build import build
    from .durable import DurableModel, ToolSteps

    worker = _worker[0]
    store, cwd, sid = worker.config.store, job["cwd"], job["resume"] or job["session_id"]
    spec = _as_attempt(job, _in_store(job, job_spec(job, worker.config.read_argv), store))
    at = await _transcript_mark(store, cwd, sid)
    _with_stores(store, cwd, lambda stores: transcripts.cut_back(stores, sid, at))
    here = os.getcwd()
    os.chdir(cwd)  # the spec is read against the job's folder; nothing else runs during this
    try:
        # the job's trace, carried from where it was enqueued
        built = build(spec, spec.prompt or "", announce=False, observer=_watcher(job))
    finally:
        os.chdir(here)
    try:
        mark = (job.get("attempt") or {}).get("mark")
        if mark and not built.opened.records and built.opened.recorder is not None:  # an attempt says so, once
            built.opened.recorder.attach(mark)
        run = built.start()
    except BaseException:
        built.close()
        raise
    try:
        steps = ToolSteps()
        # every model call a recorded step (through the client the run made, closed with it), and
        # every tool of every prompt: built-in, MCP, Skill, Agent, Workflow
        run.update(model_client=DurableModel(run.client()), tool_steps=steps.wrap)
        emit = steps.watching(built.emitter("json"))
        approach = (job.get("attempt") or {}).get("approach")
        text = f"{built.prompt}\n\nApproach for this attempt: {approach}" if approach else built.prompt
        result = await run.prompt(text, on_event=emit)
        await run.end_session("other", on_event=emit)
    finally:
        await run.aclose()
        built.close()
    print(f"loopwright worker: {job['label']}: {result.terminal_reason} (session {built.session.session_id})",
          file=sys.stderr, flush=True)
    return dict(result.to_json())


def _watcher(job: dict[str, Any]) -> Any:
    """Telemetry's observer of the job's runs, in the trace the job carries: the same on every
    worker that runs it (None when telemetry is off)."""
    from ..telemetry import observe
    from ..telemetry.carried import carried

    return observe(os.environ, "worker", carried=carried(job))


def _as_attempt(job: dict[str, Any], spec: RunSpec) -> RunSpec:
    """An attempt of a parallel run (distributed/attempts.py): the run in a session of its own,
    its share of the budget, and no checks or protected files unless the run has a goal."""
    attempt = job.get("attempt")
    if attempt is None:
        return spec
    import dataclasses

    spec = dataclasses.replace(spec, session_id=job["session_id"], resume=None, attempts=None,
                               attempt_instructions=None, judge_model=None, keep_worktrees=False,
                               max_budget_usd=attempt["budget"] if attempt["budget"] is not None
                               else spec.max_budget_usd)
    return spec if attempt["goal"] else dataclasses.replace(spec, check=(), protect=())


def _in_store(job: dict[str, Any], spec: RunSpec, store: str) -> RunSpec:
    """The run's session in the worker's store (PostgreSQL: any worker can resume it; SQLite: the
    JSONL files of this machine), under the job's session id unless the spec names its own."""
    import dataclasses

    if job["resume"] or job.get("own_session"):  # a resumed session's id is the spec's resume
        return dataclasses.replace(spec, store=store)
    return dataclasses.replace(spec, store=store, session_id=job["session_id"])
