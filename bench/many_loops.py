"""Many concurrent loops in one process (issue 14 part 5): N loopwright loops, each five tool turns
of a cheap local tool and a final answer (6 model calls), every model reply delayed in the
simulator, against a bare asyncio + httpx client making the same streaming requests to the same
simulator in the same run (the simulator's own ceiling on this machine).

The simulator runs in a process of its own (`python -m loopwright.testing.simulator --delay S`)
and each side in a fresh child process, so the CPU and memory figures are the client's alone:
- wall: first request to last answer of all N loops; ideal = 6 model calls x delay;
- CPU per turn: the child's user + system CPU during the run / (N x 6 model calls);
- RSS per loop: (the child's peak RSS, `ru_maxrss`, minus its RSS once warmed up) / N. Warmed
  up means imports done and one loop already run, so lazily imported modules are not counted
  against the loops. tracemalloc is not used: it slows every allocation several times and
  misses what C libraries allocate;
- simulator CPU per turn: the simulator process's CPU while that side ran (from /proc; its warm-up
  loop included) / (N x 6): the same work for every side, on the machine's other core.

With --workers 1,2,4 the loops run instead on that many `loopwright worker` processes sharing a
queue in a fresh PostgreSQL database each (bench/on_workers.py), against the bare and raw clients
running the same N loops at once on the same simulator.

With --shared-client a third loopwright side runs too: the same N loops handed ONE `AnthropicModel`
(as a library user who makes one client for all their agents), beside the client-per-loop side.

With --http aiohttp the loopwright sides carry their calls on aiohttp (`LOOPWRIGHT_HTTP=aiohttp`),
and a bare aiohttp client making the same requests runs beside the bare httpx one.

Run: .venv/bin/python bench/many_loops.py [--loops 200] [--delay 0.2] [--runs 3] [--store jsonl|jsonl-deferred|none]
     .venv/bin/python bench/many_loops.py --shared-client --store none --loops 1000 --delay 5 --runs 1 [--http aiohttp]
     .venv/bin/python bench/many_loops.py --workers 1,2,4 [--concurrency 4] [--loops 32] [--delay 0.5] [--runs 1]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from loopwright.core.ports import ToolContext

sys.path.insert(0, str(Path(__file__).resolve().parent))
import on_workers  # noqa: E402  (bench/on_workers.py: the worker side)

TURNS = 5  # tool turns per loop; a loop makes TURNS + 1 model calls
CALLS = TURNS + 1
PROMPT = "tick until it says done"
STORES = ("jsonl", "jsonl-deferred", "none")


def script() -> dict:
    """Any number of loops: a tool call until the tool's result says the last tick, then done."""
    last = {"match": {"last_user_contains": f"tick {TURNS} of {TURNS}"}, "responses": [{"text": "done", "repeat": -1}]}
    tick = {"responses": [{"tool_use": {"name": "tick", "input": {}}, "repeat": -1}]}
    return {"rules": [last, on_workers.bash_rule(TURNS), tick]}


# --- the loopwright side ------------------------------------------------------------------------


def tick_tool():
    from loopwright.tools import tool

    counts: dict[str, int] = {}

    # async, as a tool that does no blocking work is written (a plain def runs on a worker thread)
    @tool(read_only=True)
    async def tick(context: ToolContext) -> str:
        """Count this session's ticks."""
        counts[context.session_id] = counts.get(context.session_id, 0) + 1
        return f"tick {counts[context.session_id]} of {TURNS}"

    return tick


async def staggered(n: int, spread: float, loop) -> list:
    """`n` copies of `loop()` at once; with `spread`, their starts evenly over that many seconds."""
    async def one(i: int) -> object:
        if spread:
            await asyncio.sleep(spread * i / n)
        return await loop()

    return await asyncio.gather(*(one(i) for i in range(n)))


async def run_loops(n: int, base_url: str, folder: Path, *, store: str = "jsonl", workers: int = 0,
                    spread: float = 0.0, concurrency: int = 4, shared: bool = False) -> list | dict:
    """Run `n` loopwright loops at once in this process (their starts spread over `spread` seconds);
    each loop's RunResult. `store` is where sessions are written: "jsonl" (a transcript file each,
    as the CLI writes them: each record that must survive a power cut fsynced as it is written),
    "jsonl-deferred" (the same files, those fsyncs done in worker threads before the loop's next
    model call or tool run: `open_session(defer_sync=True)`) or "none".
    With `workers` >= 1, `store` is an empty PostgreSQL database (postgresql://…): the loops go on
    its queue and that many `loopwright worker` processes of `concurrency` slots each drain it
    (bench/on_workers.py); the run's {"wall", "split"} (loops done by each worker).
    With `shared`, every loop is given the same model client, else each makes its own."""
    if workers:
        if not store.startswith("postgresql://"):
            raise ValueError(f"store: expected a postgresql:// URL with workers={workers}, got {store!r}")
        if spread:
            raise ValueError("spread: the worker side enqueues every loop at once; expected 0")
        return await asyncio.to_thread(on_workers.run_on_workers, n, base_url, folder, store=store,
                                       workers=workers, concurrency=concurrency, calls=CALLS)
    from loopwright import Agent, Session
    from loopwright.permissions.decide import PermissionRules
    from loopwright.policy.stop import Limits
    from loopwright.providers.anthropic import AnthropicModel
    from loopwright.session.opening import open_session
    from loopwright.stores.jsonl import JsonlStore

    if store not in STORES:
        raise ValueError(f"store: expected one of {STORES}, got {store!r}")
    sessions = JsonlStore(folder / "home", folder) if store != "none" else None
    defer = store == "jsonl-deferred"
    tools, rules = [tick_tool()], PermissionRules(allow=("tick",))
    one_client = AnthropicModel(base_url=base_url, api_key="sk-bench") if shared else None

    async def one() -> object:
        session = open_session(sessions, str(folder), defer_sync=defer) if sessions is not None else None
        client = one_client or AnthropicModel(base_url=base_url, api_key="sk-bench")
        agent = Agent(model_client=client, cwd=folder, tools=tools,
                      permissions=rules, system_prompt="You tick.", limits=Limits(max_turns=CALLS + 1))
        try:
            return await agent.run(PROMPT, session=Session.opened(session) if session is not None else None)
        finally:
            if one_client is None:
                await client.aclose()
            if session is not None:
                session.close()

    try:
        results = await staggered(n, spread, one)
    finally:
        if one_client is not None:
            await one_client.aclose()
    for result in results:
        assert result.num_turns == CALLS and result.result == "done", result.to_json()
    return results


# --- the bare side ------------------------------------------------------------------------------

TICK_TOOL = {"name": "tick", "description": "Count this session's ticks.", "input_schema": {"type": "object"}}


def answered(messages: list[dict], blocks: list[dict], turn: int) -> bool:
    """A bare client's turn: the tick call answered (True), or the loop's last answer (False)."""
    uses = [b for b in blocks if b["type"] == "tool_use"]
    if not uses:
        assert turn == CALLS, turn
        return False
    messages.append({"role": "assistant", "content": blocks})
    messages.append({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": uses[0]["id"], "content": f"tick {turn} of {TURNS}"}]})
    return True


async def bare_loop(base_url: str) -> None:
    """The same requests with nothing around them: one keep-alive httpx client, streaming replies
    read as SSE, the tool's result built inline."""
    import httpx

    messages: list[dict] = [{"role": "user", "content": PROMPT}]
    headers = {"x-api-key": "sk-bench", "anthropic-version": "2023-06-01"}
    async with httpx.AsyncClient(base_url=base_url, headers=headers, timeout=600, verify=False) as http:
        for turn in range(1, CALLS + 1):
            body = {"model": "claude-sonnet-4-5", "max_tokens": 1024, "system": "You tick.", "tools": [TICK_TOOL],
                    "messages": messages, "stream": True}
            blocks: list[dict] = []
            async with http.stream("POST", "/v1/messages", json=body) as response:
                async for line in response.aiter_lines():
                    if line.startswith("data: ") and '"content_block_start"' in line:
                        blocks.append(json.loads(line[6:])["content_block"])
            if not answered(messages, blocks, turn):
                return
    raise AssertionError("the bare loop never finished")


async def run_bare(n: int, base_url: str, spread: float = 0.0) -> None:
    await staggered(n, spread, lambda: bare_loop(base_url))


async def bare_aiohttp_loop(base_url: str) -> None:
    """`bare_loop` on aiohttp: one keep-alive session, its C parser, nothing else."""
    import aiohttp

    messages: list[dict] = [{"role": "user", "content": PROMPT}]
    headers = {"x-api-key": "sk-bench", "anthropic-version": "2023-06-01"}
    async with aiohttp.ClientSession(base_url=base_url, headers=headers) as http:
        for turn in range(1, CALLS + 1):
            body = {"model": "claude-sonnet-4-5", "max_tokens": 1024, "system": "You tick.", "tools": [TICK_TOOL],
                    "messages": messages, "stream": True}
            blocks: list[dict] = []
            async with http.post("/v1/messages", json=body) as response:
                async for raw in response.content:  # line by line
                    line = raw.decode()
                    if line.startswith("data: ") and '"content_block_start"' in line:
                        blocks.append(json.loads(line[6:])["content_block"])
            if not answered(messages, blocks, turn):
                return
    raise AssertionError("the bare aiohttp loop never finished")


async def run_bare_aiohttp(n: int, base_url: str, spread: float = 0.0) -> None:
    await staggered(n, spread, lambda: bare_aiohttp_loop(base_url))


async def raw_loop(base_url: str) -> None:
    """The same requests over asyncio streams with HTTP/1.1 written by hand: no client library,
    so what is left is the simulator's and the kernel's share (the simulator's own ceiling)."""
    host, port = base_url.removeprefix("http://").rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    messages: list[dict] = [{"role": "user", "content": PROMPT}]
    try:
        for turn in range(1, CALLS + 1):
            body = json.dumps({"model": "claude-sonnet-4-5", "max_tokens": 1024, "system": "You tick.",
                               "tools": [TICK_TOOL], "messages": messages, "stream": True}).encode()
            writer.write(b"POST /v1/messages HTTP/1.1\r\nhost: sim\r\nx-api-key: sk-bench\r\n"
                         b"content-type: application/json\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body))
            await reader.readuntil(b"\r\n\r\n")
            blocks: list[dict] = []
            while size := int((await reader.readline()).strip(), 16):
                for line in (await reader.readexactly(size)).decode().splitlines():
                    if line.startswith("data: ") and '"content_block_start"' in line:
                        blocks.append(json.loads(line[6:])["content_block"])
                await reader.readline()
            await reader.readline()  # the end of the chunked body
            if not answered(messages, blocks, turn):
                return
    finally:
        writer.close()
    raise AssertionError("the raw loop never finished")


async def run_raw(n: int, base_url: str, spread: float = 0.0) -> None:
    await staggered(n, spread, lambda: raw_loop(base_url))


# --- one side in a child process ----------------------------------------------------------------


def rss_kb() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def child(kind: str, n: int, url: str, store: str, spread: float) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp).resolve()
        sides = {"loopwright": lambda k, s: run_loops(k, url, folder, store=store, spread=s),
                 "shared": lambda k, s: run_loops(k, url, folder, store=store, spread=s, shared=True),
                 "bare": lambda k, s: run_bare(k, url, s), "raw": lambda k, s: run_raw(k, url, s),
                 "bare-aiohttp": lambda k, s: run_bare_aiohttp(k, url, s)}
        work = sides[kind]
        asyncio.run(work(1, 0.0))  # warm-up: imports and first-use set-up are not the loops' cost
        base_rss, cpu0, t0 = rss_kb(), cpu(), time.perf_counter()
        asyncio.run(work(n, spread))
        wall, used = time.perf_counter() - t0, cpu() - cpu0
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    return {"wall": wall, "cpu": used, "rss_per_loop_kb": (peak - base_rss) / n}


HTTP = "httpx"  # the library the loopwright sides' model clients use (--http)
SIDE_KINDS = ("loopwright", "shared", "bare", "bare-aiohttp", "raw")


def side(kind: str, n: int, url: str, store: str, spread: float) -> dict:
    env = {**os.environ, "LOOPWRIGHT_HTTP": HTTP}
    out = subprocess.run([sys.executable, __file__, "--child", kind, "--loops", str(n), "--url", url, "--turns", str(TURNS),
                          "--store", store, "--spread", str(spread)], capture_output=True, text=True, timeout=3600,
                         env=env)
    if out.returncode != 0:
        raise SystemExit(f"{kind} child failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


class Served:
    """The simulator in a process of its own, with the model delay."""

    def __init__(self, delay: float, folder: Path) -> None:
        path = folder / "script.json"
        path.write_text(json.dumps(script()))
        self.proc = subprocess.Popen([sys.executable, "-m", "loopwright.testing.simulator", "--script", str(path),
                                      "--delay", str(delay)], stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if not line.startswith("listening on "):
            raise SystemExit(f"the simulator did not start: {line!r}")
        self.url = line.split()[-1]

    def cpu(self) -> float | None:
        """The simulator process's user + system CPU so far, in seconds (None where /proc has no say)."""
        try:
            with open(f"/proc/{self.proc.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            return None
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)


def served_side(served: Served, kind: str, loops: int, store: str, spread: float) -> dict:
    """One side's child run, with the simulator's own CPU during it (to see that it is not the
    limit: it runs on the machine's other core, and serves every side the same way)."""
    before = served.cpu()
    got = side(kind, loops, served.url, store, spread)
    after = served.cpu()
    got["sim_cpu"] = after - before if before is not None and after is not None else None
    return got


def measure(loops: int, delay: float, runs: int, store: str, spread: float,
            shared: bool = False) -> dict[str, list[dict]]:
    """Every side, interleaved `runs` times against one simulator process."""
    kinds = tuple(k for k in SIDE_KINDS if (k != "shared" or shared) and (k != "bare-aiohttp" or HTTP == "aiohttp"))
    got: dict[str, list[dict]] = {kind: [] for kind in kinds}
    with tempfile.TemporaryDirectory() as tmp:
        served = Served(delay, Path(tmp))
        try:
            for _ in range(runs):
                for kind in got:
                    got[kind].append(served_side(served, kind, loops, store, spread))
        finally:
            served.close()
    return got


def report(got: dict[str, list[dict]], loops: int, delay: float, runs: int, store: str, spread: float) -> None:
    ideal = CALLS * delay + spread * (loops - 1) / loops
    med = {kind: {k: statistics.median(r[k] for r in rs) if rs[0][k] is not None else None for k in rs[0]}
           for kind, rs in got.items()}
    print(f"{loops} concurrent loops x {TURNS} tool turns ({CALLS} model calls each), model delay {delay} s, "
          f"starts spread over {spread} s, sessions: {store}, loopwright's HTTP on {HTTP}; medians of {runs} interleaved runs; ideal wall {ideal:.2f} s")
    for kind, m in med.items():
        print(f"  {kind:12} wall {m['wall']:7.2f} s  ({ideal / m['wall']:6.1%} of ideal)  "
              f"{loops * CALLS / m['wall']:7.0f} requests/s  CPU/turn {m['cpu'] / (loops * CALLS) * 1000:6.2f} ms  "
              f"RSS/loop {m['rss_per_loop_kb']:6.0f} KB" + (
                  f"  simulator CPU/turn {m['sim_cpu'] / (loops * CALLS) * 1000:5.2f} ms" if m.get("sim_cpu") is not None
                  else ""))
    print(f"  loopwright / bare wall time: {med['loopwright']['wall'] / med['bare']['wall']:.2f}x   "
          f"bare / raw: {med['bare']['wall'] / med['raw']['wall']:.2f}x" + (
              f"   shared / per-loop client: {med['shared']['wall'] / med['loopwright']['wall']:.2f}x"
              if "shared" in med else ""))
    lw_cpu = med["shared" if "shared" in med else "loopwright"]["cpu"]
    print(f"  client CPU per call, loopwright{' (shared)' if 'shared' in med else ''} / bare httpx: "
          f"{lw_cpu / med['bare']['cpu']:.2f}x" + (
              f"   / bare aiohttp: {lw_cpu / med['bare-aiohttp']['cpu']:.2f}x" if "bare-aiohttp" in med else ""))


def measure_workers(loops: int, delay: float, runs: int, counts: list[int], concurrency: int) -> dict[str, list]:
    """For each worker count, `runs` runs on a fresh database each; the bare and raw sides with
    the same N loops at once, interleaved, against the same simulator process."""
    got: dict[str, list] = {**{f"w{w}": [] for w in counts}, "bare": [], "raw": []}
    with tempfile.TemporaryDirectory() as tmp:
        cluster = on_workers.Cluster()
        try:
            served = Served(delay, Path(tmp))
            try:
                for r in range(runs):
                    for w in counts:
                        folder = Path(tmp) / f"r{r}w{w}"
                        folder.mkdir()
                        # run_loops' worker side, called here, not in a thread: Ctrl-C stops it at once
                        got[f"w{w}"].append(on_workers.run_on_workers(loops, served.url, folder, store=cluster.fresh(),
                                                                      workers=w, concurrency=concurrency, calls=CALLS))
                    for kind in ("bare", "raw"):
                        got[kind].append(side(kind, loops, served.url, "none", 0.0))
            finally:
                served.close()
        finally:
            cluster.stop()
    return got


def report_workers(got: dict[str, list], loops: int, delay: float, runs: int, counts: list[int],
                   concurrency: int) -> None:
    wall = {kind: statistics.median(r["wall"] for r in rs) for kind, rs in got.items()}
    base = loops / wall[f"w{counts[0]}"]
    print(f"{loops} goal loops x {TURNS} Bash tool turns ({CALLS} model calls each), model delay {delay} s, "
          f"on a fresh PostgreSQL database per run, {concurrency} loops at a time per worker; medians of {runs} "
          f"run(s); ideal = ceil({loops} / (W x {concurrency})) waves x {CALLS} calls x {delay} s; with a poll a wave: "
          f"plus DBOS's {on_workers.POLL_S:g} s queue polling interval a wave")
    for w in counts:
        ideal = on_workers.ideal_wall(loops, w, concurrency, CALLS, delay)
        split = "/".join(str(k) for k in got[f"w{w}"][-1]["split"])
        polled = ideal + on_workers.waves(loops, w, concurrency) * on_workers.POLL_S
        print(f"  {w} worker(s)  wall {wall[f'w{w}']:7.2f} s  ideal {ideal:6.2f} s ({ideal / wall[f'w{w}']:6.1%}), "
              f"{polled:6.2f} s with a poll a wave ({polled / wall[f'w{w}']:6.1%})  "
              f"{loops / wall[f'w{w}']:6.2f} loops/s  x{loops / wall[f'w{w}'] / base:4.2f} of {counts[0]} worker(s)  "
              f"loops per worker (last run) {split}  database connections per worker, most at once (last run) "
              f"{'/'.join(str(c) for c in got[f'w{w}'][-1]['connections'])}")
    for kind in ("bare", "raw"):
        print(f"  {kind:10} all {loops} at once in one process: wall {wall[kind]:6.2f} s (ideal {CALLS * delay:.2f} s)  "
              f"{loops / wall[kind]:7.2f} loops/s  (the simulator's ceiling for these loops)")


def main() -> None:
    global TURNS, CALLS, HTTP
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("--loops", type=int, help="loops per run (default 200; with --workers 32)")
    parser.add_argument("--delay", type=float, help="model delay per reply, seconds (default 0.2; with --workers 0.5)")
    parser.add_argument("--runs", type=int, help="runs (default 3; with --workers 1)")
    parser.add_argument("--store", choices=STORES, default="jsonl", help="where sessions are written")
    parser.add_argument("--spread", type=float, default=0.0,
                        help="spread the loops' starts evenly over this many seconds (default 0: all at once)")
    parser.add_argument("--workers", type=worker_counts,
                        help="instead: the loops on this many worker processes on PostgreSQL, e.g. 1,2,4")
    parser.add_argument("--concurrency", type=int, default=4, help="with --workers: loops at a time per worker")
    parser.add_argument("--turns", type=int, default=TURNS, help=f"tool turns per loop (default {TURNS})")
    parser.add_argument("--shared-client", action="store_true",
                        help="also run the loops with one model client shared by all of them")
    parser.add_argument("--http", choices=("httpx", "aiohttp"), default="httpx",
                        help="the HTTP library of loopwright's model clients (default httpx)")
    parser.add_argument("--child", choices=SIDE_KINDS, help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.turns < 1:
        parser.error(f"--turns: expected a whole number of at least 1, got {args.turns}")
    TURNS, CALLS, HTTP = args.turns, args.turns + 1, args.http
    workers = args.workers
    loops, delay, runs = (args.loops or (32 if workers else 200), args.delay or (0.5 if workers else 0.2),
                          args.runs or (1 if workers else 3))
    if args.child:
        print(json.dumps(child(args.child, loops, args.url, args.store, args.spread)))
    elif workers:
        # Ctrl-C and SIGTERM end the run through its `finally`s (workers, simulator, cluster stopped by
        # pid), also when started in the background, where a shell has SIGINT ignored
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, lambda *_: sys.exit("many_loops: stopped by SIGTERM"))
        if args.concurrency < 1:
            parser.error(f"--concurrency: expected a whole number of at least 1, got {args.concurrency}")
        got = measure_workers(loops, delay, runs, workers, args.concurrency)
        report_workers(got, loops, delay, runs, workers, args.concurrency)
    else:
        got = measure(loops, delay, runs, args.store, args.spread, args.shared_client)
        report(got, loops, delay, runs, args.store, args.spread)


def worker_counts(text: str) -> list[int]:
    try:
        counts = [int(part) for part in text.split(",")]
    except ValueError:
        counts = []
    if not counts or min(counts) < 1:
        raise argparse.ArgumentTypeError(f"expected worker counts of at least 1, separated by commas (1,2,4), got {text!r}")
    return counts


if __name__ == "__main__":
    os.environ.pop("ANTHROPIC_BASE_URL", None)
    try:
        main()
    except KeyboardInterrupt:
        sys.exit("many_loops: interrupted (workers, simulator and cluster stopped)")
