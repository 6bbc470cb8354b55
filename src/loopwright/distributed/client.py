"""The outside of the workers: put a goal loop on a queue (a DBOS client, no executor of its
own), and read who is working on what."""

from __future__ import annotations

from typing import Any

from ..core.errors import LoopwrightError
from ..stores.urls import redact
from .registry import dbos_url, first_line, open_registry
from .worker import APP_NAME, APP_VERSION

WORKFLOW_NAME = "loopwright.goal_loop"  # jobs.WORKFLOW_NAME, without importing the workflow code
ATTEMPTS_NAME = "loopwright.attempts"  # attempts.ATTEMPTS_NAME: a job with "attempts" runs as one


def ensure_schema(store: str) -> None:
    """DBOS's tables, created or brought up to date (a client never migrates on its own)."""
    from dbos._serialization import DefaultSerializer
    from dbos._sys_db import SystemDatabase

    sys_db = SystemDatabase.create(system_database_url=dbos_url(store), engine_kwargs={}, engine=None, schema="dbos",
                                   serializer=DefaultSerializer(), executor_id=None)
    try:
        sys_db.run_migrations()
    finally:
        sys_db.destroy()


def enqueue(store: str, queue: str, job: dict[str, Any], workflow_id: str) -> str:
    """Put `job` on `queue`; a store that cannot be reached is one LoopwrightError naming it."""
    from dbos import DBOSClient

    open_registry(store).close()  # a bad URL or a store that is down: said here, clearly
    try:
        ensure_schema(store)
        client = DBOSClient(system_database_url=dbos_url(store), application_name=APP_NAME)
    except Exception as exc:  # SQLAlchemy's and the driver's errors (the store went away, no rights)
        raise LoopwrightError(f"cannot enqueue on the store {redact(store)}: "
                              f"{first_line(exc)}") from None
    try:
        name = ATTEMPTS_NAME if job.get("attempts") else WORKFLOW_NAME
        handle = client.enqueue({"workflow_name": name, "queue_name": queue, "workflow_id": workflow_id,
                                 "app_version": APP_VERSION}, job)
        return str(handle.get_workflow_id())
    finally:
        client.destroy()


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
