"""OpenTelemetry traces, metrics and events of loopwright's runs, for the tools operators already
run (docs/telemetry.md). Off unless `CLAUDE_CODE_ENABLE_TELEMETRY=1` or
`LOOPWRIGHT_ENABLE_TELEMETRY=1`; only then is OpenTelemetry imported (the `otel` extra)."""

from __future__ import annotations

import atexit
import sys
from contextlib import contextmanager
from typing import Any, Iterator, Mapping, Sequence, TextIO

from ..core.errors import UsageError
from .switches import Switches, switches

NOT_INSTALLED = ("loopwright: telemetry: it is switched on but OpenTelemetry is not installed "
                 "(pip install 'loopwright[otel]'); the run goes on without it")

_pipeline: Any = None  # one per process: every agent of it exports through the same providers


def observe(env: Mapping[str, str], source: str, *, err: TextIO | None = None,
            carried: Mapping[str, Any] | None = None) -> Any:
    """The `Observer` (core.ports) that exports a run's telemetry, or None when telemetry is off.
    `source`: where the run's prompts come from (headless, interactive, sdk, loop, worker, ...).
    `carried`: a trace context handed over with the work (`carried.py`): the runs become children
    of its `traceparent` and link to its `links`. The process's exporters are made on the first
    call and flushed when it exits (`shutdown`)."""
    sw = switches(env)
    if sw is None or not sw.any:
        return None
    pipeline = _start(sw, err)
    if pipeline is None:
        return None
    from .. import __version__
    from .watcher import Watcher, remote

    carried = carried or {}
    parent, links = remote(carried.get("traceparent")), [remote(t) for t in carried.get("links") or ()]
    attributes = carried.get("attributes")
    return Watcher(pipeline, source, __version__, parent=parent, links=[link for link in links if link is not None],
                   attributes=attributes if isinstance(attributes, dict) else None)


def _start(sw: Switches, err: TextIO | None) -> Any:
    global _pipeline
    if _pipeline is None:
        from .. import __version__

        try:
            from .pipeline import Pipeline
        except ImportError:
            print(NOT_INSTALLED, file=err or sys.stderr, flush=True)
            _pipeline = False
            return None
        _pipeline = Pipeline(sw, __version__, err)
        atexit.register(shutdown)
    return _pipeline or None


class Step:
    """A span of work around runs (a schedule fire, a routine item, a run of attempts, an
    enqueue): the runs it starts are its children or link to `traceparent` (None when telemetry
    is off); `set` adds what is learnt on the way, `model_calls` the model calls made for it."""

    def __init__(self, span: Any = None, parent: str | None = None, pipeline: Any = None) -> None:
        self.span, self.pipeline = span, pipeline
        if span is not None:
            from .watcher import traceparent

            self.traceparent: str | None = traceparent(span)
        else:
            self.traceparent = parent  # off here: the runs still link to what started this

    def set(self, attributes: Mapping[str, Any]) -> None:
        if self.span is not None:
            self.span.set_attributes({k: v for k, v in attributes.items() if v is not None})

    def failed(self, why: str) -> None:
        if self.span is not None:
            from opentelemetry.trace import Status, StatusCode

            self.span.set_status(Status(StatusCode.ERROR, why))

    def model_calls(self, role: str, calls: Sequence[Mapping[str, Any]], began: int, session_id: str = "") -> None:
        """Model calls made for this work itself (the attempts' judge): chat spans under its span
        (`loopwright.model_call.role`), back to back from `began` (time.time_ns()); their tokens
        and cost counted as a run's are, in the session `session_id`. `calls`: each one's model,
        id, stop_reason, usage as the API gives it, duration_ms and cost_usd."""
        if self.pipeline is None or not calls:
            return
        from .. import __version__
        from .watcher import side_calls

        side_calls(self.pipeline, self.span, role, calls, began, {"session.id": session_id, "app.version": __version__})


@contextmanager
def step(env: Mapping[str, str], name: str, attributes: Mapping[str, Any], *, parent: str | None = None,
         links: Sequence[str] = (), kind: str = "internal") -> Iterator[Step]:
    """A span named `name` around the block when telemetry is on (a child of the traceparent
    `parent`, else a trace of its own, linked to the traceparents `links`; `kind` an OpenTelemetry
    span kind, in lower case); nothing, and nothing imported, when it is off."""
    sw = switches(env)
    pipeline = _start(sw, None) if sw is not None and sw.any else None
    if pipeline is None or pipeline.tracer is None:
        yield Step(parent=parent, pipeline=pipeline)
        return
    from opentelemetry import trace

    from .watcher import remote

    linked = [trace.Link(trace.get_current_span(c).get_span_context()) for c in map(remote, links) if c is not None]
    span = pipeline.tracer.start_span(name, context=remote(parent), kind=trace.SpanKind[kind.upper()],
                                      attributes=dict(attributes), links=linked)
    try:
        yield Step(span, pipeline=pipeline)
    except BaseException as exc:
        span.record_exception(exc)
        Step(span).failed(type(exc).__name__)
        raise
    finally:
        span.end()


def model_calls(env: Mapping[str, str], role: str, calls: Sequence[Mapping[str, Any]], began: int, *,
                parent: str | None, session_id: str = "") -> None:
    """`Step.model_calls` for work with no span of its own in this process (the attempts' judge
    on a worker): the chat spans go under the traceparent `parent` (none without one)."""
    sw = switches(env)
    pipeline = _start(sw, None) if sw is not None and sw.any and calls else None
    if pipeline is None:
        return
    span = None
    if pipeline.tracer is not None:
        from opentelemetry import trace

        from .watcher import remote

        context = remote(parent)
        span = trace.get_current_span(context) if context is not None else None
    Step(span, pipeline=pipeline).model_calls(role, calls, began, session_id)


def links_of(env: Mapping[str, str]) -> list[str]:
    """The traceparents a process's runs link to (`LOOPWRIGHT_TRACE_LINKS`, comma-separated): what
    started the process (a schedule fire) says so through its environment. Read only when
    telemetry is on; a value that is not one is a `UsageError` naming the variable."""
    given = [t.strip() for t in env.get(LINKS, "").split(",") if t.strip()]
    if not given or switches(env) is None:
        return []
    from .carried import parse

    if any(parse(t) is None for t in given):
        raise UsageError(f"{LINKS}={env[LINKS]!r}: expected W3C traceparent values (00-<32 hex digits>-<16 hex "
                         "digits>-<2 hex digits>), comma-separated")
    return given


LINKS = "LOOPWRIGHT_TRACE_LINKS"


def shutdown() -> None:
    """Send what is left, within the export timeout (also run when the process exits)."""
    if _pipeline:
        _pipeline.close()


__all__ = ["observe", "shutdown", "step", "Step", "model_calls", "links_of", "LINKS", "switches", "Switches"]
