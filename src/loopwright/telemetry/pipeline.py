"""The OpenTelemetry SDK set up for one process: a tracer, a meter and an event logger whose
exporters the `OTEL_*` variables choose, and an end that never holds the process longer than
the export timeout. Imported only when telemetry is on. A collector that cannot be reached is
said once on stderr, and never fails the run."""

from __future__ import annotations

import logging
import sys
import threading
from typing import Any, TextIO

from opentelemetry.sdk.resources import OTELResourceDetector, Resource

from .switches import Switches

LOST = "loopwright: telemetry: {why}; telemetry is lost, the run is not (said once)"


class Once:
    """One line on stderr for the first export problem; the rest are the same problem."""

    def __init__(self, err: TextIO | None = None) -> None:
        self.err = err
        self.said = False
        self._lock = threading.Lock()

    def say(self, why: str) -> None:
        with self._lock:
            if self.said:
                return
            self.said = True
        err = self.err or sys.stderr
        try:
            print(LOST.format(why=why), file=err, flush=True)
        except (OSError, ValueError):  # stderr closed: nowhere left to say it
            pass


class _Complaints(logging.Handler):
    """The SDK's own warnings (an export that failed, a queue that overflowed) become our one
    line instead of log records on stderr."""

    def __init__(self, once: Once) -> None:
        super().__init__(logging.WARNING)
        self.once = once

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = record.getMessage()
        except Exception:  # a record that cannot format itself still means an export problem
            text = str(record.msg)
        self.once.say(f"could not export ({' '.join(text.split())[:240]})")


class Pipeline:
    """The providers of one process. `tracer`, `meter` and `logger` are None for a signal whose
    exporter is `none`."""

    def __init__(self, sw: Switches, version: str, err: TextIO | None = None) -> None:
        self.switches, self.once = sw, Once(err)
        self._closed = False
        quiet = logging.getLogger("opentelemetry")
        quiet.handlers[:] = [_Complaints(self.once)]
        quiet.propagate = False  # never Python's last-resort handler, which prints every record
        # our defaults first, then what OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME say
        resource = Resource.create({"service.name": "loopwright", "service.version": version}).merge(
            OTELResourceDetector().detect())
        self.providers: list[Any] = []
        self.tracer = self.meter = self.logger = None
        if sw.exporters["traces"]:
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import BatchSpanProcessor

            traces = TracerProvider(resource=resource, shutdown_on_exit=False)
            for exporter in self._exporters("traces"):
                traces.add_span_processor(BatchSpanProcessor(exporter))
            self.providers.append(traces)
            self.tracer = traces.get_tracer("loopwright", version)
        if sw.exporters["metrics"]:
            from opentelemetry.sdk.metrics import MeterProvider
            from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader

            readers = [PeriodicExportingMetricReader(e) for e in self._exporters("metrics")]  # OTEL_METRIC_EXPORT_INTERVAL
            metrics = MeterProvider(metric_readers=readers, resource=resource, shutdown_on_exit=False)
            self.providers.append(metrics)
            self.meter = metrics.get_meter("loopwright", version)
        if sw.exporters["logs"]:
            from opentelemetry.sdk._logs import LoggerProvider
            from opentelemetry.sdk._logs.export import BatchLogRecordProcessor

            logs = LoggerProvider(resource=resource, shutdown_on_exit=False)
            for exporter in self._exporters("logs"):
                logs.add_log_record_processor(BatchLogRecordProcessor(exporter))
            self.providers.append(logs)
            self.logger = logs.get_logger("loopwright", version)

    def _exporters(self, signal: str) -> list[Any]:
        return [_exporter(signal, kind, self.switches.protocols[signal]) for kind in self.switches.exporters[signal]]

    def close(self) -> None:
        """Send what is left and stop, within the export timeout whatever the collector does:
        the flush runs on a thread of its own that is left behind (a daemon) when it overruns."""
        if self._closed:
            return
        self._closed = True
        finished = threading.Event()

        def flush() -> None:
            for provider in self.providers:
                try:
                    provider.shutdown()
                except Exception as exc:  # an exporter's bug must not reach the command's exit
                    self.once.say(f"could not export ({type(exc).__name__}: {exc})")
            finished.set()

        threading.Thread(target=flush, name="loopwright-telemetry-flush", daemon=True).start()
        if not finished.wait(self.switches.timeout_s):
            self.once.say(f"the collector did not take the last export within {self.switches.timeout_s:g} s")


def _exporter(signal: str, kind: str, protocol: str) -> Any:
    """One exporter; OTLP exporters read their endpoint, headers, timeout and compression from
    the standard variables themselves. The console prints to stderr: stdout carries the result."""
    if kind == "console":
        return _console(signal)
    module = "grpc" if protocol == "grpc" else "http"
    if signal == "traces":
        if module == "grpc":
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
        else:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter  # type: ignore[assignment]
        return OTLPSpanExporter()
    if signal == "metrics":
        if module == "grpc":
            from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter
        else:
            from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter  # type: ignore[assignment]
        return OTLPMetricExporter()
    if module == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter
    else:
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter  # type: ignore[assignment]
    return OTLPLogExporter()


def _console(signal: str) -> Any:
    if signal == "traces":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        return ConsoleSpanExporter(out=sys.stderr)
    if signal == "metrics":
        from opentelemetry.sdk.metrics.export import ConsoleMetricExporter

        return ConsoleMetricExporter(out=sys.stderr)
    try:
        from opentelemetry.sdk._logs.export import ConsoleLogRecordExporter
    except ImportError:  # its name before 1.39
        from opentelemetry.sdk._logs.export import ConsoleLogExporter as ConsoleLogRecordExporter

    return ConsoleLogRecordExporter(out=sys.stderr)
