"""OpenTelemetry traces, metrics and events of loopwright's runs, for the tools operators already
run (docs/telemetry.md). Off unless `CLAUDE_CODE_ENABLE_TELEMETRY=1` or
`LOOPWRIGHT_ENABLE_TELEMETRY=1`; only then is OpenTelemetry imported (the `otel` extra)."""

from __future__ import annotations

import atexit
import sys
from contextlib import contextmanager
from typing import Any, Iterator, Mapping, TextIO

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
    """A span of work that starts runs elsewhere (a schedule fire, a routine item): the runs link
    to `traceparent` (None when telemetry is off); `set` adds what is learnt on the way."""

    def __init__(self, span: Any = None, parent: str | None = None) -> None:
        self.span = span
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


@contextmanager
def step(env: Mapping[str, str], name: str, attributes: Mapping[str, Any], *,
         parent: str | None = None) -> Iterator[Step]:
    """A span named `name` around the block when telemetry is on (a child of the traceparent
    `parent`, else a trace of its own); nothing, and nothing imported, when it is off."""
    sw = switches(env)
    pipeline = _start(sw, None) if sw is not None and sw.any else None
    if pipeline is None or pipeline.tracer is None:
        yield Step(parent=parent)
        return
    from .watcher import remote

    span = pipeline.tracer.start_span(name, context=remote(parent), attributes=dict(attributes))
    try:
        yield Step(span)
    except BaseException as exc:
        span.record_exception(exc)
        Step(span).failed(type(exc).__name__)
        raise
    finally:
        span.end()


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


__all__ = ["observe", "shutdown", "step", "Step", "links_of", "LINKS", "switches", "Switches"]
