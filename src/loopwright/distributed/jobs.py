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

WORKFLOW_NAME = "loopwright.goal_loop"

# The worker of this process (worker.run_worker sets it): it records each execution it starts.
_worker: list[Any] = []


def use_worker(worker: Any) -> None:
    _worker[:] = [worker]


def new_job(args: list[str], cwd: str, session_id: str, resume: str | None, label: str) -> dict[str, Any]:
    """What `loopwright enqueue` stores: JSON only, so any worker of any version can read it."""
    return {"args": list(args), "cwd": cwd, "session_id": session_id, "resume": resume, "label": label}


@DBOS.step(name="loopwright.transcript_mark")
async def _transcript_mark(path: str) -> int:
    """The transcript's size when the workflow first began (0: none yet)."""
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _cut_back(path: str, size: int) -> None:
    """Undo what an earlier execution of this workflow wrote to the transcript."""
    try:
        if size == 0:
            os.unlink(path)
        elif os.path.getsize(path) > size:
            os.truncate(path, size)
    except FileNotFoundError:
        pass


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
    from ..cli.core import build_agent, init_fields, load_cli_settings, make_emitter, open_cli_session
    from ..cli.goals import goal_from_options
    from ..cli.headless import _arm_goal
    from ..cli.options import parse_options
    from ..stores.jsonl import JsonlStore
    from .durable import DurableModel, durable_tools

    opts = parse_options(_session_flags(job))
    cwd = job["cwd"]
    path = JsonlStore.default(cwd).location(job["resume"] or job["session_id"])
    _cut_back(path, await _transcript_mark(path))
    here = os.getcwd()
    os.chdir(cwd)  # the flags are read against the job's folder; nothing else runs during this
    try:
        spec, prompt = goal_from_options(opts, opts.prompt or "", resuming=opts.resuming)
        settings = load_cli_settings(opts, announce=False)
        agent = build_agent(opts, settings)
        agent.model_client = DurableModel(agent._client())
        agent.tools = durable_tools(list(agent._tools()))
        session = open_cli_session(opts, agent)
    finally:
        os.chdir(here)
    try:
        _arm_goal(agent, spec, None, opts)
        emit = make_emitter("json", False, agent.session_id, False, init_fields(settings, agent))
        result = await agent.run(prompt or "", on_event=emit)
        await agent.end_session("other", on_event=emit)
    finally:
        await agent.aclose()
        session.close()
    print(f"loopwright worker: {job['label']}: {result.terminal_reason} (session {agent.session_id})",
          file=sys.stderr, flush=True)
    return dict(result.to_json())


def _session_flags(job: dict[str, Any]) -> list[str]:
    # Sessions stay in the embedded store (JSONL files the workers share): a replay cuts a
    # transcript file back before it writes it again (`_cut_back`).
    args = ["-p", *job["args"], "--store", "sqlite:"]  # a resumed session's --resume is among them
    return args if job["resume"] else [*args, "--session-id", job["session_id"]]

