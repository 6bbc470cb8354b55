"""OpenTelemetry traces, metrics and events of loopwright's runs, for the tools operators already
run (docs/telemetry.md). Off unless `CLAUDE_CODE_ENABLE_TELEMETRY=1` or
`LOOPWRIGHT_ENABLE_TELEMETRY=1`; only then is OpenTelemetry imported (the `otel` extra)."""

from __future__ import annotations

import atexit
import sys
from typing import Any, Mapping, TextIO

from .switches import Switches, switches

NOT_INSTALLED = ("loopwright: telemetry: it is switched on but OpenTelemetry is not installed "
                 "(pip install 'loopwright[otel]'); the run goes on without it")

_pipeline: Any = None  # one per process: every agent of it exports through the same providers


def observe(env: Mapping[str, str], source: str, *, err: TextIO | None = None) -> Any:
    """The `Observer` (core.ports) that exports a run's telemetry, or None when telemetry is off.
    `source`: where the run's prompts come from (headless, interactive, sdk, loop, ...). The
    process's exporters are made on the first call and flushed when it exits (`shutdown`)."""
    sw = switches(env)
    if sw is None or not sw.any:
        return None
    pipeline = _start(sw, err)
    if pipeline is None:
        return None
    from .. import __version__
    from .watcher import Watcher

    return Watcher(pipeline, source, __version__)


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


def shutdown() -> None:
    """Send what is left, within the export timeout (also run when the process exits)."""
    if _pipeline:
        _pipeline.close()


__all__ = ["observe", "shutdown", "switches", "Switches"]
