"""The web view at real sizes: a generated store of 10,000 sessions (about 20 records each, in
the transcript format `loopwright -p` writes) and one session of 5,000 events, served by a real
`loopwright serve` subprocess. Reports the sessions list's time (the first request, which builds
the index cache, and later ones, each of which stats every file) and the 5,000-event session
page's time to first byte and to the last byte (it streams).

Run: .venv/bin/python bench/serve_scale.py [--sessions 10000] [--events 5000] [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from servekit import Server, make_env  # noqa: E402

PROJECTS = 20


def envelope(kind: str, sid: str, cwd: str, n: int, **fields) -> str:
    record = {"type": kind, "uuid": str(uuid.UUID(int=n)), "parentUuid": None, "sessionId": sid,
              "timestamp": f"2026-11-{1 + n % 28:02d}T10:{n % 60:02d}:00.000Z", "cwd": cwd, "version": 1, **fields}
    return json.dumps(record, separators=(",", ":")) + "\n"


def turn(sid: str, cwd: str, n: int, i: int) -> str:
    use = f"toolu_{i:05d}"
    model = "claude-sonnet-5" if n % 3 else "claude-haiku-4-5"
    usage = {"input_tokens": 1200 + i, "output_tokens": 80, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    return (envelope("assistant", sid, cwd, n + i, message={
                "role": "assistant", "content": [{"type": "text", "text": f"Step {i}: reading the file."},
                                                 {"type": "tool_use", "id": use, "name": "Read",
                                                  "input": {"file_path": f"{cwd}/src/mod{i}.py"}}],
                "id": f"msg_{i}", "model": model, "stop_reason": "tool_use", "usage": usage})
            + envelope("tool_started", sid, cwd, n + i, toolUseId=use, name="Read", input={"file_path": "x"})
            + envelope("tool_finished", sid, cwd, n + i, toolUseId=use, name="Read", result={
                "type": "tool_result", "tool_use_id": use, "content": "1\tdef f():\n2\t    return 42\n" * 5})
            + envelope("user", sid, cwd, n + i, synthetic=True, message={"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": use, "content": "…"}]}))


def session(sid: str, cwd: str, n: int, turns: int) -> str:
    body = envelope("user", sid, cwd, n, message={"role": "user", "content": f"task {n}: fix the tests"})
    body += "".join(turn(sid, cwd, n, i) for i in range(turns))
    return body + envelope("system", sid, cwd, n, subtype="run_result", content="done", level="info",
                           resultSubtype="success", terminalReason="completed", isError=False, numTurns=turns,
                           durationMs=1000 * turns, totalCostUsd=0.004 * turns)


def generate(home: Path, sessions: int, events: int) -> str:
    for n in range(sessions):
        cwd = f"/work/project{n % PROJECTS}"
        folder = home / "projects" / cwd.replace("/", "-")
        folder.mkdir(parents=True, exist_ok=True)
        sid = str(uuid.UUID(int=n + 1))
        (folder / f"{sid}.jsonl").write_text(session(sid, cwd, n, 5))
    big = str(uuid.UUID(int=10**9))
    (home / "projects" / "-work-project0" / f"{big}.jsonl").write_text(session(big, "/work/project0", 0, events // 4))
    return big


def timed(url: str) -> tuple[float, float, int]:
    start = time.perf_counter()
    with urllib.request.urlopen(url, timeout=600) as response:
        response.read(1)
        first = time.perf_counter() - start
        size = 1 + len(response.read())
    return first, time.perf_counter() - start, size


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--sessions", type=int, default=10_000)
    p.add_argument("--events", type=int, default=5_000)
    p.add_argument("--runs", type=int, default=5)
    opts = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        env = make_env(Path(tmp))
        home = Path(env["LOOPWRIGHT_HOME"])
        t0 = time.perf_counter()
        big = generate(home, opts.sessions, opts.events)
        print(f"generated {opts.sessions:,} sessions in {PROJECTS} projects and one of {opts.events:,} events "
              f"in {time.perf_counter() - t0:.1f}s")
        server = Server(env, tmp, "--all", "--no-token")
        try:
            report(server, big, opts.runs)
        finally:
            server.stop()
        server = Server(env, tmp, "--all", "--no-token")  # a new launch: the cache on disk is still good
        try:
            print(f"sessions list, first request after a restart (the cache kept): {timed(server.base + '/')[1]:.3f}s")
        finally:
            server.stop()


def report(server: Server, big: str, runs: int) -> None:
    _, cold, _ = timed(server.base + "/")
    print(f"sessions list, first request (builds the index cache): {cold:.2f}s")
    warm = []
    for _ in range(runs):
        time.sleep(1.1)  # past the refresh interval: every request stats every file
        warm.append(timed(server.base + "/")[1])
    print(f"sessions list, later requests: median {statistics.median(warm):.3f}s, max {max(warm):.3f}s "
          f"({runs} runs; target < 0.3s)")
    filtered = timed(server.base + "/?model=claude-haiku-4-5&q=task&page=3")[1]
    print(f"sessions list, filtered, page 3: {filtered:.3f}s")
    pages = [timed(f"{server.base}/s/{big}") for _ in range(runs)]
    first = statistics.median(p[0] for p in pages)
    total = statistics.median(p[1] for p in pages)
    print(f"{big[:8]}… ({pages[0][2] / 1e6:.1f} MB of HTML): first byte {first * 1000:.0f} ms, "
          f"whole page {total:.2f}s (median of {runs})")


if __name__ == "__main__":
    main()
