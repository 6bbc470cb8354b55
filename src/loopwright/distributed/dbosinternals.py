"""The few things workers need from DBOS that DBOS 3.4 offers only through its internals, in one
place: an upgrade of DBOS checks this module (and tests/test_workers.py, which drives each of
them end to end) and nothing else.

- `ensure_schema`: a DBOSClient never creates or migrates the system tables; only a launched
  DBOS does, and `loopwright enqueue` may run before any worker ever has.
- `recover`: DBOS recovers another executor's workflows only through the internal
  `DBOS._recover_pending_workflows` (the public recovery is for conductor-managed apps). In 3.4
  it puts each PENDING workflow of the named executor back to ENQUEUED on the queue it was
  enqueued on (`reenqueue_for_recovery`: queue_name is kept; only a workflow that never had one
  goes to DBOS's internal queue), and only while the row still names the dead executor, so a
  duplicate recovery changes nothing. That is what keeps the queue's limits (`--concurrency`,
  `--queue-concurrency`) over recovered loops: they are handed out again by the queue. The
  public `DBOS.resume_workflow(id, queue_name=…)` would re-enqueue without that guard (it also
  revives a workflow cancelled in between), so it is not used here.
- `stop_taking_work`: DBOS has no public way to stop dequeuing while running workflows go on
  (`listen_queues` only works before launch); its background threads stop on events it keeps in
  a list, and setting them stops the queue threads (and the scheduler) but no running workflow.
"""

from __future__ import annotations


def ensure_schema(store: str) -> None:
    """DBOS's tables, created or brought up to date."""
    from dbos._serialization import DefaultSerializer
    from dbos._sys_db import SystemDatabase

    sys_db = SystemDatabase.create(system_database_url=store, engine_kwargs={}, engine=None, schema="dbos",
                                   serializer=DefaultSerializer(), executor_id=None)
    try:
        sys_db.run_migrations()
    finally:
        sys_db.destroy()


def recover(executor_id: str) -> int:
    """The gone executor's unfinished workflows, back on their queues; how many there were."""
    from dbos import DBOS

    return len(DBOS._recover_pending_workflows([executor_id]))


def stop_taking_work() -> None:
    """No more work dequeued by this process; what runs goes on."""
    from dbos._dbos import _get_dbos_instance

    dbos = _get_dbos_instance()
    dbos._listening_queues = []
    for event in list(dbos.background_thread_stop_events):
        event.set()
