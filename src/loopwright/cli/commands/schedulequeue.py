"""Schedules onto worker queues: `loopwright schedule add … --queue Q --store URL` makes each fire
put a durable goal loop (or, with `--attempts N` among its flags, a workflow of attempts) on the
queue instead of starting a local process; the scheduler waits for the worker's outcome and records
it in the schedule's runs as any fire's. One scheduler can feed workers on many machines."""

from __future__ import annotations

import asyncio
from typing import Any

from ...core.errors import UsageError


def durable_store(flag: str = "--queue") -> str:
    """The durable store the fires go through: the schedule's own store (--store, passed on to
    LOOPWRIGHT_STORE), which must be a URL workers can reach."""
    from ...stores import store_url

    url = store_url(None)
    if not url.startswith(("postgresql://", "postgres://", "sqlite:///")):
        raise UsageError(f"{flag}: fires go to workers through a durable store; expected --store postgresql://… "
                         f"or sqlite:///PATH, got {url or 'the default store'!r}")
    from .worker import durable_libs

    return durable_libs(url)


def check_queued(queue: str, opts: Any) -> None:
    """What `schedule add --queue` refuses now rather than at the fire (`opts`: the fires' flags)."""
    from .worker import queue_name

    queue_name(queue)
    if opts.session_id or opts.continue_session or opts.fork_session or opts.resume:
        raise UsageError("--queue: each fire is a new loop with its own session; --session-id, --resume, "
                         "--continue and --fork-session do not go with it")
    if opts.input_format == "stream-json":
        raise UsageError("--queue: --input-format stream-json does not run on workers")
    durable_store()
    if opts.attempts is not None:
        from .worker import _check_attempts

        _check_attempts(opts)


async def run_queued_fire(schedule: Any, spec: Any, register: Any, link: str | None = None) -> Any:
    """One fire — the schedule's stored `spec` — as a workflow on the schedule's queue, waited for:
    its outcome, as a fire's. `link`: the fire's span, which the loop's runs link to."""
    from ...core.ids import uuid4
    from ...distributed.client import run_queued
    from ...distributed.jobs import new_job
    from ...proactive.scheduler import FireOutcome

    try:
        store = durable_store()
    except UsageError as exc:
        return FireOutcome("error", note=str(exc))
    session_id = uuid4()
    job = new_job(spec, schedule.cwd, session_id, None, f"schedule {schedule.id}", links=(link,) if link else ())
    attempts = spec.attempts
    if attempts:
        job["attempts"] = attempts
    workflow_id = f"{'attempts' if attempts else 'loop'}-{session_id}"
    stop = asyncio.Event()
    register(stop.set)
    try:
        outcome, value = await run_queued(store, schedule.options["queue"], job, workflow_id, stop)
    except Exception as exc:  # the store cannot be reached: the fire fails, the scheduler goes on
        return FireOutcome("error", session_id, note=f"cannot enqueue on {schedule.options['queue']!r}: {exc}")
    if outcome == "interrupted":
        return FireOutcome("interrupted", session_id, note=f"the scheduler stopped; workflow {workflow_id} may "
                           "still run on a worker")
    if outcome == "error":
        return FireOutcome("error", session_id, note=f"workflow {workflow_id} failed: {value}")
    return FireOutcome.of_result(value, session_id)
