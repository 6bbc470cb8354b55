"""What telemetry costs per turn: the same 40-turn tool loop (each turn: a Read of a small file) on the loopback
simulator, with telemetry off and on (traces, metrics and events over OTLP/HTTP to a local
collector that answers at once), runs interleaved. The per-turn overhead is the gap between the
end of one response and the arrival of the next request (see bench/turn_overhead.py); printed
as medians and their ratio; beside it the time spent inside telemetry's observer itself (what it
adds to the loop's own path, steadier than the gaps on a loaded machine: the exporters' threads
run beside the loop), and the time the end-of-run export took.

Run: .venv/bin/python bench/telemetry_cost.py [--turns 40] [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from threading import Thread
from typing import Any

import anyio

from loopwright import telemetry
from loopwright.agent import Agent
from loopwright.permissions.decide import PermissionRules
from loopwright.providers.anthropic import AnthropicModel
from loopwright.testing import Simulator


class Sink(BaseHTTPRequestHandler):
    """A collector that takes every export and answers 200 with an empty body."""

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


class Timed:
    """The observer, with the time spent in it added up."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.seconds = inner, 0.0

    def __call__(self, event: Any) -> None:
        began = time.perf_counter()
        self.inner(event)
        self.seconds += time.perf_counter() - began

    def child(self, *args: Any) -> Any:
        return self.inner.child(*args)


def one_run(turns: int, cwd: Path, observer: Any) -> list[float]:
    path = str(cwd / "notes.txt")
    script = [{"tool_use": {"name": "Read", "input": {"file_path": path}}, "repeat": turns}, {"text": "done"}]
    with Simulator(script) as sim:
        agent = Agent(model_client=AnthropicModel(base_url=sim.base_url, api_key="sk-bench"), cwd=cwd,
                      permissions=PermissionRules(), observer=observer)
        result = anyio.run(agent.run, "read the notes over and over")
        assert result.num_turns == turns + 1, result.to_json()
        reqs = sim.message_requests
        return [(b.time - a.finished) * 1000 for a, b in zip(reqs, reqs[1:])]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Sink)
    Thread(target=server.serve_forever, daemon=True).start()
    env = {"LOOPWRIGHT_ENABLE_TELEMETRY": "1", "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{server.server_address[1]}",
           "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}
    os.environ.update(env)  # the SDK's exporters read the endpoint and interval from the environment
    off: list[float] = []
    on: list[float] = []
    inside = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        cwd = Path(tmp)
        (cwd / "notes.txt").write_text("a small file\n" * 20)
        one_run(3, cwd, None)  # warm-up: imports, the sandbox's first start
        for _ in range(args.runs):
            off += one_run(args.turns, cwd, None)
            timed = Timed(telemetry.observe(os.environ, "bench"))
            on += one_run(args.turns, cwd, timed)
            inside += timed.seconds
        began = time.perf_counter()
        telemetry.shutdown()
        flush_ms = (time.perf_counter() - began) * 1000
    server.shutdown()
    m_off, m_on = statistics.median(off), statistics.median(on)
    print(f"per-turn overhead, median of {len(off)} turns: off {m_off:.2f} ms, on {m_on:.2f} ms, "
          f"ratio {m_on / m_off:.2f} (+{m_on - m_off:.2f} ms a turn)")
    print(f"inside the observer: {inside * 1000 / len(on):.3f} ms a turn")
    print(f"end-of-run export (traces, metrics, events of {args.runs} runs): {flush_ms:.0f} ms")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
