"""A collector of our own for the telemetry tests: OTLP over HTTP/protobuf (and gRPC) on
127.0.0.1, decoded with the official protobuf definitions (`opentelemetry-proto`), kept as
plain dicts: spans, metric points and log records, each with its resource's attributes."""

from __future__ import annotations

import gzip
import socket
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.logs.v1 import logs_service_pb2
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2


def value(v: Any) -> Any:
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return tuple(value(x) for x in v.array_value.values)
    if kind == "kvlist_value":
        return {kv.key: value(kv.value) for kv in v.kvlist_value.values}
    return getattr(v, kind) if kind else None


def attrs(kvs: Any) -> dict[str, Any]:
    return {kv.key: value(kv.value) for kv in kvs}


@dataclass
class Received:
    spans: list[dict[str, Any]] = field(default_factory=list)
    points: list[dict[str, Any]] = field(default_factory=list)  # one per data point: name, attributes, value
    logs: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    arrived: threading.Condition = field(default_factory=threading.Condition)

    def take(self, path: str, body: bytes) -> bytes:
        if path.endswith("/v1/traces"):
            request = trace_service_pb2.ExportTraceServiceRequest.FromString(body)
            self._spans(request)
            return trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
        if path.endswith("/v1/metrics"):
            request = metrics_service_pb2.ExportMetricsServiceRequest.FromString(body)
            self._metrics(request)
            return metrics_service_pb2.ExportMetricsServiceResponse().SerializeToString()
        request = logs_service_pb2.ExportLogsServiceRequest.FromString(body)
        self._logs(request)
        return logs_service_pb2.ExportLogsServiceResponse().SerializeToString()

    def _spans(self, request: Any) -> None:
        with self.arrived:
            for rs in request.resource_spans:
                resource = attrs(rs.resource.attributes)
                for ss in rs.scope_spans:
                    for s in ss.spans:
                        self.spans.append({
                            "name": s.name, "trace": s.trace_id.hex(), "id": s.span_id.hex(),
                            "parent": s.parent_span_id.hex(), "attrs": attrs(s.attributes),
                            "start": s.start_time_unix_nano, "end": s.end_time_unix_nano,
                            "status": s.status.code, "kind": s.kind, "resource": resource,
                            "events": [{"name": e.name, "attrs": attrs(e.attributes), "at": e.time_unix_nano}
                                       for e in s.events],
                            "links": [(link.trace_id.hex(), link.span_id.hex()) for link in s.links]})
            self.arrived.notify_all()

    def _metrics(self, request: Any) -> None:
        with self.arrived:
            for rm in request.resource_metrics:
                for sm in rm.scope_metrics:
                    for m in sm.metrics:
                        kind = m.WhichOneof("data")
                        for p in getattr(m, kind).data_points:
                            number = (p.as_int if p.WhichOneof("value") == "as_int" else p.as_double) \
                                if kind in ("sum", "gauge") else p.sum
                            self.points.append({"name": m.name, "unit": m.unit, "kind": kind,
                                                "attrs": attrs(p.attributes), "value": number,
                                                "count": getattr(p, "count", None)})
            self.arrived.notify_all()

    def _logs(self, request: Any) -> None:
        with self.arrived:
            for rl in request.resource_logs:
                for sl in rl.scope_logs:
                    for r in sl.log_records:
                        self.logs.append({"name": r.event_name, "attrs": attrs(r.attributes),
                                          "trace": r.trace_id.hex(), "span": r.span_id.hex()})
            self.arrived.notify_all()


class HttpCollector:
    """OTLP/HTTP with protobuf bodies: POST /v1/traces, /v1/metrics, /v1/logs."""

    def __init__(self) -> None:
        self.got = Received()
        got = self.got

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (the standard library's name)
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                got.headers.append({k.lower(): v for k, v in self.headers.items()})
                answer = got.take(self.path, body)
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> "HttpCollector":
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()


class GrpcCollector:
    """OTLP/gRPC: the collector's three services on one port."""

    def __init__(self) -> None:
        from concurrent import futures

        import grpc
        from opentelemetry.proto.collector.logs.v1 import logs_service_pb2_grpc
        from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2_grpc
        from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc

        self.got = got = Received()

        class Traces(trace_service_pb2_grpc.TraceServiceServicer):
            def Export(self, request: Any, context: Any) -> Any:  # noqa: N802 (the service's name)
                got.headers.append(dict(context.invocation_metadata()))
                got._spans(request)
                return trace_service_pb2.ExportTraceServiceResponse()

        class Metrics(metrics_service_pb2_grpc.MetricsServiceServicer):
            def Export(self, request: Any, context: Any) -> Any:  # noqa: N802
                got._metrics(request)
                return metrics_service_pb2.ExportMetricsServiceResponse()

        class Logs(logs_service_pb2_grpc.LogsServiceServicer):
            def Export(self, request: Any, context: Any) -> Any:  # noqa: N802
                got._logs(request)
                return logs_service_pb2.ExportLogsServiceResponse()

        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Traces(), self.server)
        metrics_service_pb2_grpc.add_MetricsServiceServicer_to_server(Metrics(), self.server)
        logs_service_pb2_grpc.add_LogsServiceServicer_to_server(Logs(), self.server)
        port = self.server.add_insecure_port("127.0.0.1:0")
        self.endpoint = f"http://127.0.0.1:{port}"

    def __enter__(self) -> "GrpcCollector":
        self.server.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.stop(0)


def closed_port() -> int:
    """A port nothing listens on (bound, then let go)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Silent:
    """A collector that accepts connections and never answers."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.endpoint = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.held: list[socket.socket] = []
        self.accepted = threading.Event()
        self.thread = threading.Thread(target=self._hold, daemon=True)

    def _hold(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)
            self.accepted.set()

    def __enter__(self) -> "Silent":
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.sock.close()
        for conn in self.held:
            conn.close()


# ---------------------------------------------------------------- a picture of one trace

SHOWN = ("loopwright.terminal_reason", "loopwright.permission_mode", "gen_ai.agent.id", "gen_ai.response.finish_reasons",
         "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens", "loopwright.model_call.role", "gen_ai.tool.call.id",
         "loopwright.tool.decision", "loopwright.goal.verdict", "loopwright.goal.evidence_chars")
COLOURS = {"invoke_agent": "#59a14f", "chat": "#4e79a7", "execute_tool": "#f28e2b", "goal_evaluation": "#b07aa1",
           "compaction": "#76b7b2"}


def timeline_html(spans: list[dict[str, Any]], title: str) -> str:
    """One trace's spans as a page: a row per span in tree order (children by start time), its bar
    on the trace's time axis, its duration and a few attributes; a retry is a red mark."""
    from html import escape

    ids = {s["id"] for s in spans}
    children: dict[str, list[dict[str, Any]]] = {}
    for s in spans:
        children.setdefault(s["parent"] if s["parent"] in ids else "", []).append(s)
    t0, t1 = min(s["start"] for s in spans), max(s["end"] for s in spans)
    width = max(t1 - t0, 1)
    rows: list[str] = []

    def walk(parent: str, depth: int) -> None:
        for s in sorted(children.get(parent, []), key=lambda x: x["start"]):
            left, size = (s["start"] - t0) / width * 100, max((s["end"] - s["start"]) / width * 100, 0.3)
            colour = COLOURS.get(s["name"].split(" ")[0], "#999")
            marks = "".join(f'<i style="left:{(e["at"] - t0) / width * 100:.2f}%"></i>' for e in s.get("events", [])
                            if e["name"] == "loopwright.api_retry" and "at" in e)
            shown = ", ".join(f"{k.split('.')[-1]}={_short(v)}" for k, v in s["attrs"].items() if k in SHOWN)
            rows.append(f'<tr><td class="n" style="padding-left:{8 + depth * 16}px">{escape(s["name"])}</td>'
                        f'<td class="t"><b style="left:{left:.2f}%;width:{size:.2f}%;background:{colour}"></b>{marks}</td>'
                        f'<td class="d">{(s["end"] - s["start"]) / 1e6:.0f} ms</td><td class="a">{escape(shown)}</td></tr>')
            walk(s["id"], depth + 1)

    walk("", 0)
    return ("<!doctype html><meta charset=utf-8><style>body{font:15px sans-serif;margin:16px}"
            "table{border-collapse:collapse;width:100%}td{border-bottom:1px solid #eee;padding:3px 6px;white-space:nowrap}"
            ".t{position:relative;width:50%}.t b{position:absolute;top:6px;height:12px;border-radius:2px}"
            ".t i{position:absolute;top:4px;width:4px;height:16px;background:#e15759}"
            ".d{text-align:right;color:#555}.a{font-size:11px;color:#444}h1{font-size:15px}</style>"
            f"<h1>{escape(title)}</h1><table>{''.join(rows)}</table>")


def _short(v: Any) -> str:
    if isinstance(v, tuple):
        return ",".join(map(str, v))
    return str(v)[:24]


def screenshot(html: str, png: str, height: int = 330) -> None:
    """`html` as a PNG, drawn by headless chromium (Debian's `chromium`)."""
    import os
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        page = os.path.join(tmp, "trace.html")
        with open(page, "w") as f:
            f.write(html)
        # (--no-sandbox: chromium's own sandbox refuses to start as root, as in this test container)
        subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                        f"--screenshot={png}", f"--window-size=1560,{height}", f"file://{page}"],
                       check=True, capture_output=True, timeout=120)
