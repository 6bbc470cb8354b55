"""A trace context that travels with work handed to another process: a durable loop's job carries
the W3C `traceparent` its runs are children of, so whichever worker runs it (the first, or the
survivor that takes it over) continues the same trace; and the `traceparent`s of what started it
(a schedule fire, a routine item), which its run spans link to. Standard library only: making a
job must not import OpenTelemetry, and a job is made whether telemetry is on or not."""

from __future__ import annotations

import re
from typing import Any

_TRACEPARENT = re.compile(r"00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})")


def new_traceparent() -> str:
    """A fresh trace for a durable loop, fixed when it is enqueued (sampled): the context of a
    span nobody sends, kept when the enqueuing process has telemetry off, so the runs of workers
    that have it on are still one trace; with it on, the enqueue's own span replaces it
    (distributed/client.py)."""
    import secrets

    trace_id, span_id = secrets.token_hex(16), secrets.token_hex(8)
    return f"00-{trace_id}-{span_id}-01"


def parse(traceparent: Any) -> tuple[int, int, int] | None:
    """(trace id, span id, flags) of a W3C traceparent, or None for anything else: a job is read
    from a shared store, and a context that cannot be read is a new trace, never a failed run."""
    if not isinstance(traceparent, str):
        return None
    found = _TRACEPARENT.fullmatch(traceparent.strip().lower())
    if found is None:
        return None
    trace_id, span_id, flags = (int(part, 16) for part in found.groups())
    return (trace_id, span_id, flags) if trace_id and span_id else None


def carried(job: dict[str, Any]) -> dict[str, Any]:
    """The trace of a job (`jobs.new_job`): {"traceparent": ..., "links": [...]}; an older job
    without one gets none (its runs start traces of their own, as before)."""
    trace = job.get("trace")
    return trace if isinstance(trace, dict) else {}
