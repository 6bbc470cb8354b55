"""The outside of the workers: put a goal loop on a queue (a DBOS client, no executor of its
own), and read who is working on what."""

from __future__ import annotations

import os
from typing import Any

from ..core.errors import LoopwrightError
from ..stores.urls import redact
from .dbosinternals import ensure_schema
from .registry import dbos_url, first_line, open_registry
from .worker import APP_NAME, APP_VERSION, runs_queue

WORKFLOW_NAME = "loopwright.goal_loop"  # jobs.WORKFLOW_NAME, without importing the workflow code
ATTEMPTS_NAME = "loopwright.attempts"  # attempts.ATTEMPTS_NAME: a job with "attempts" runs as one


# The stores whose tables this process has made sure of (a routine's fire enqueues many items).
_ready: set[str] = set()


def enqueue(store: str, queue: str, job: dict[str, Any], workflow_id: str) -> str:
    return enqueue_all(store, queue, [(job, workflow_id)])[0]


def enqueue_all(store: str, queue: str, jobs: list[tuple[dict[str, Any], str]]) -> list[str]:
    """Each (job, workflow id) on the queue, through one client; the workflow ids. A store that
    cannot be reached is one LoopwrightError naming it."""
    from dbos import DBOSClient

    try:
        if store not in _ready:
            open_registry(store).close()  # a bad URL or a store that is down: said here, clearly
            ensure_schema(dbos_url(store))
            _ready.add(store)
        client = DBOSClient(system_database_url=dbos_url(store), application_name=APP_NAME)
    except LoopwrightError:
        raise
    except Exception as exc:  # SQLAlchemy's and the driver's errors (the store went away, no rights)
        raise LoopwrightError(f"cannot enqueue on the store {redact(store)}: {first_line(exc)}") from None
    try:
        return [_put(client, queue, job, workflow_id) for job, workflow_id in jobs]
    finally:
        client.destroy()


def _put(client: Any, queue: str, job: dict[str, Any], workflow_id: str) -> str:
    from ..telemetry import step

    name, on = WORKFLOW_NAME, queue
    if job.get("attempts"):  # the run waits on the queue's companion; its attempts, on the queue
        name, on, job = ATTEMPTS_NAME, runs_queue(queue), {**job, "queue": queue}
    given = job.get("trace")
    trace: dict[str, Any] = given if isinstance(given, dict) else {}
    # The loop's trace opens here (telemetry on): a span for the enqueue whose context the job
    # carries, so the runs of every worker that takes the loop are its children. It links to
    # what started the loop (a schedule fire, a routine item), as the runs do. No prompt text.
    with step(os.environ, f"enqueue {queue}", {
            "messaging.system": "dbos", "messaging.operation.type": "send", "messaging.operation.name": "enqueue",
            "messaging.destination.name": queue, "messaging.message.id": workflow_id,
            "loopwright.workflow.id": workflow_id, "session.id": str(job.get("session_id") or ""),
            "loopwright.attempts.of": int(job.get("attempts") or 0)},
            links=[t for t in trace.get("links") or () if isinstance(t, str)], kind="producer") as sent:
        if sent.traceparent is not None:
            job = {**job, "trace": {**trace, "traceparent": sent.traceparent}}
        handle = client.enqueue({"workflow_name": name, "queue_name": on, "workflow_id": workflow_id,
                                 "app_version": APP_VERSION}, job)
        return str(handle.get_workflow_id())


def statuses(store: str, workflow_ids: list[str] | None = None, name: str | None = WORKFLOW_NAME) -> dict[str, str]:
    """DBOS's status of each goal loop (ENQUEUED, PENDING, SUCCESS, ERROR, …) by workflow id;
    `name`: the workflows of that name (None: every workflow)."""
    from dbos import DBOSClient

    client = DBOSClient(system_database_url=dbos_url(store), application_name=APP_NAME)
    try:
        found = client.list_workflows(workflow_ids=workflow_ids, name=name)
        return {w.workflow_id: w.status for w in found}
    finally:
        client.destroy()


async def run_queued(store: str, queue: str, job: dict[str, Any], workflow_id: str,
                     stop: Any) -> tuple[str, Any]:
    """Enqueue `job` (or find the workflow of that id, enqueued before) and wait for its end:
    ("done", the run's result JSON), ("error", why) or ("interrupted", None) once `stop` is set."""
    import asyncio

    from dbos import DBOSClient

    await asyncio.to_thread(enqueue, store, queue, job, workflow_id)
    client = await asyncio.to_thread(DBOSClient, system_database_url=dbos_url(store), application_name=APP_NAME)
    try:
        while not stop.is_set():
            found = await asyncio.to_thread(client.list_workflows, workflow_ids=[workflow_id])
            if found and found[0].status == "SUCCESS":
                return "done", found[0].output
            if found and found[0].status in ("ERROR", "CANCELLED", "MAX_RECOVERY_ATTEMPTS_EXCEEDED"):
                return "error", str(found[0].error or found[0].status)
            try:
                await asyncio.wait_for(stop.wait(), 0.5)
            except asyncio.TimeoutError:
                pass
        return "interrupted", None
    finally:
        await asyncio.to_thread(client.destroy)
