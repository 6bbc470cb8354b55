"""Per-turn client overhead of loopwright against bare clients, on the same loopback simulator.

A 50-turn tool loop (each turn: one Read of a small file), and a 50-turn Bash loop (each turn:
`true`) beside its floor, a bare httpx loop that runs the command with `subprocess.run`. The per-turn overhead is the gap
between the end of one response (the simulator's last byte out) and the arrival of the next
request: everything the client does in between (parse, fold, decide, run the tool, build and
send the next request). Printed beside the same gap for a bare httpx loop and, if installed, the
official anthropic SDK, as ratios measured in this one run, and the same loop on an
OpenAI-compatible chat model (the simulator's chat endpoint). Also: the start-to-first-request
time of `loopwright -p` and the wall time of `loopwright --version`.

The Bash loop again with a JSONL transcript, as the CLI writes it (issue 32 item 2): one fsync a
step on the group-commit thread just before the command runs (the default), and each durable
record fsynced as written on the event loop (`defer_sync=False`, as before), beside a floor that writes
the same records to a file and fsyncs it once before running the command (the same durability:
a command's start is on disk before it runs). And the CLI's own turn, sandboxed as by default,
beside a floor that runs the command under bwrap started bare with the same mounts and socket
filter (the sandbox's work without loopwright's launcher), with and without the transcript.

Run: .venv/bin/python bench/turn_overhead.py [--turns 50] [--runs 5] [--only jsonl]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
import httpx

from loopwright import Agent, Session
from loopwright.permissions.decide import PermissionRules
from loopwright.providers.anthropic import AnthropicModel
from loopwright.testing import Simulator


def script(turns: int, path: str) -> list[dict]:
    return [{"tool_use": {"name": "Read", "input": {"file_path": path}}, "repeat": turns}, {"text": "done"}]


BASH_COMMAND = "true"


def bash_script(turns: int) -> list[dict]:
    return [{"tool_use": {"name": "Bash", "input": {"command": BASH_COMMAND}}, "repeat": turns}, {"text": "done"}]


def gaps_ms(sim: Simulator, chat: bool = False) -> list[float]:
    reqs = sim.chat_requests if chat else sim.message_requests
    return [(b.time - a.finished) * 1000 for a, b in zip(reqs, reqs[1:])]


def run_loopwright(turns: int, path: str, cwd: Path) -> list[float]:
    with Simulator(script(turns, path)) as sim:
        agent = Agent(model_client=AnthropicModel(base_url=sim.base_url, api_key="sk-bench"), cwd=cwd,
                      permissions=PermissionRules())
        result = anyio.run(agent.run, "read the file over and over")
        assert result.num_turns == turns + 1, result.to_json()
        return gaps_ms(sim)


def run_loopwright_bash(turns: int, cwd: Path) -> list[float]:
    """The loop with a Bash call a turn (the shell tool's whole path: gate, process group, output
    cap, transcript-safe result)."""
    with Simulator(bash_script(turns)) as sim:
        agent = Agent(model_client=AnthropicModel(base_url=sim.base_url, api_key="sk-bench"), cwd=cwd,
                      permissions=PermissionRules(allow=("Bash",)))
        result = anyio.run(agent.run, "run it over and over")
        assert result.num_turns == turns + 1, result.to_json()
        return gaps_ms(sim)


def run_loopwright_bash_jsonl(turns: int, cwd: Path, defer: bool = True, sandboxed: bool = False,
                              helper: bool = True) -> list[float]:
    """The Bash loop with its session written as the CLI writes it (a JSONL transcript); without
    the sandbox unless `sandboxed` (the floor runs its command unsandboxed too); `helper=False`:
    sandboxed through the launcher, a fresh interpreter per command (as before the warm helper)."""
    if not helper:
        os.environ["LOOPWRIGHT_SANDBOX_HELPER"] = "off"
        try:
            return run_loopwright_bash_jsonl(turns, cwd, defer, sandboxed)
        finally:
            os.environ.pop("LOOPWRIGHT_SANDBOX_HELPER", None)
    from loopwright.sandbox import SandboxConfig
    from loopwright.session.opening import open_session
    from loopwright.stores.jsonl import JsonlStore

    session = open_session(JsonlStore(cwd / "home", cwd), str(cwd), defer_sync=defer)
    with Simulator(bash_script(turns)) as sim:
        client = AnthropicModel(base_url=sim.base_url, api_key="sk-bench")
        agent = Agent(model_client=client, cwd=cwd, permissions=PermissionRules(allow=("Bash",)),
                      sandbox=None if sandboxed else SandboxConfig(enabled=False))

        async def go():
            try:
                return await agent.run("run it over and over", session=Session.opened(session))
            finally:
                await client.aclose()

        result = anyio.run(go)
        session.close()
        assert result.num_turns == turns + 1, result.to_json()
        return gaps_ms(sim)


def floor_run(command: str, cwd: Path, sandbox: tuple | None) -> subprocess.CompletedProcess:
    """The floor's command: `bash -c` as is, or, with `sandbox` (`sandbox_cost.bwrap_floor`'s spec
    and guarded line, built for this command), under bwrap started bare with the launcher's mounts
    and socket filter: the sandbox's work without the launcher."""
    if sandbox is None:
        return subprocess.run(["bash", "-c", command], cwd=cwd, capture_output=True, text=True)
    from sandbox_cost import with_seccomp

    spec, guarded = sandbox
    argv, read = with_seccomp(spec, guarded)
    try:
        return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, pass_fds=(read,),
                              stdin=subprocess.DEVNULL, start_new_session=True)
    finally:
        os.close(read)


def run_bare_bash_jsonl(turns: int, cwd: Path, sandbox: tuple | None = None) -> list[float]:
    """The floor for a shell turn with a transcript: the bare loop, appending the records the CLI
    writes (the answer, the command's start, its end, the results message) to a file, one write
    each, fsynced once just before the command runs."""
    import uuid

    path = cwd / f"floor-{uuid.uuid4().hex}.jsonl"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    last = None

    def record(kind: str, **fields) -> None:
        nonlocal last
        me = str(uuid.uuid4())
        line = {"type": kind, **fields, "uuid": me, "parentUuid": last, "sessionId": "floor",
                "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()), "cwd": str(cwd)}
        os.write(fd, json.dumps(line, ensure_ascii=False, separators=(",", ":")).encode() + b"\n")
        last = me

    try:
        with Simulator(bash_script(turns)) as sim, httpx.Client(base_url=sim.base_url) as client:
            messages = [{"role": "user", "content": "run it over and over"}]
            record("user", message=messages[0])
            tools = [{"name": "Bash", "description": "run", "input_schema": {"type": "object"}}]
            for _ in range(turns):
                body = {"model": "claude-sonnet-5", "max_tokens": 64000, "messages": messages, "stream": True,
                        "tools": tools}
                with client.stream("POST", "/v1/messages", json=body, headers={"x-api-key": "sk-bench"}) as r:
                    events = [json.loads(line[6:]) for line in r.iter_lines() if line.startswith("data: ")]
                blocks = assistant_blocks(events)
                call = next(b for b in blocks if b["type"] == "tool_use")
                record("assistant", message={"role": "assistant", "content": blocks})
                record("tool_started", toolUseId=call["id"], name="Bash", input=call["input"])
                os.fsync(fd)  # the command's start is durable before it runs
                done = floor_run(call["input"]["command"], cwd, sandbox)
                result = {"type": "tool_result", "tool_use_id": call["id"], "content": done.stdout + done.stderr}
                record("tool_finished", toolUseId=call["id"], name="Bash", result=result)
                messages = messages + [{"role": "assistant", "content": blocks},
                                       {"role": "user", "content": [result]}]
                record("user", message=messages[-1])
            client.post("/v1/messages", json={"model": "claude-sonnet-5", "max_tokens": 64000, "messages": messages},
                        headers={"x-api-key": "sk-bench"})
            return gaps_ms(sim)
    finally:
        os.close(fd)


def run_bare_bash(turns: int, cwd: Path, sandbox: tuple | None = None) -> list[float]:
    """The floor for a shell turn: a bare httpx loop that runs the same command with
    `subprocess.run(["bash", "-c", …])` (under bare bwrap with `sandbox`) and sends its output back."""
    with Simulator(bash_script(turns)) as sim, httpx.Client(base_url=sim.base_url) as client:
        messages = [{"role": "user", "content": "run it over and over"}]
        tools = [{"name": "Bash", "description": "run", "input_schema": {"type": "object"}}]
        for _ in range(turns):
            body = {"model": "claude-sonnet-5", "max_tokens": 64000, "messages": messages, "stream": True,
                    "tools": tools}
            with client.stream("POST", "/v1/messages", json=body, headers={"x-api-key": "sk-bench"}) as r:
                events = [json.loads(line[6:]) for line in r.iter_lines() if line.startswith("data: ")]
            blocks = assistant_blocks(events)
            call = next(b for b in blocks if b["type"] == "tool_use")
            done = floor_run(call["input"]["command"], cwd, sandbox)
            messages = messages + [{"role": "assistant", "content": blocks},
                                   {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call["id"],
                                                                 "content": done.stdout + done.stderr}]}]
        client.post("/v1/messages", json={"model": "claude-sonnet-5", "max_tokens": 64000, "messages": messages},
                    headers={"x-api-key": "sk-bench"})
        return gaps_ms(sim)


def run_loopwright_chat(turns: int, path: str, cwd: Path) -> list[float]:
    """The same loop on an OpenAI-compatible model (the simulator's chat endpoint)."""
    with Simulator(script(turns, path)) as sim:
        os.environ.setdefault("OPENAI_API_KEY", "sk-bench")
        agent = Agent(model=f"openai-compatible:{sim.base_url}/v1#bench", cwd=cwd, permissions=PermissionRules())
        result = anyio.run(agent.run, "read the file over and over")
        assert result.num_turns == turns + 1, result.to_json()
        return gaps_ms(sim, chat=True)


def assistant_blocks(events: list[dict]) -> list[dict]:
    """From raw SSE event dicts: the assistant's content blocks, tool inputs parsed."""
    blocks, parts = [], {}
    for e in events:
        if e["type"] == "content_block_start":
            blocks.append(dict(e["content_block"]))
            parts[e["index"]] = []
        elif e["type"] == "content_block_delta" and e["delta"]["type"] == "input_json_delta":
            parts[e["index"]].append(e["delta"]["partial_json"])
    for i, b in enumerate(blocks):
        if b["type"] == "tool_use":
            b["input"] = json.loads("".join(parts[i]) or "{}")
    return blocks


def _tool_result_turn(events: list[dict]) -> tuple[dict, dict]:
    """From raw SSE event dicts: the assistant message and the matching tool_result message."""
    blocks = assistant_blocks(events)
    call = next(b for b in blocks if b["type"] == "tool_use")
    content = Path(call["input"]["file_path"]).read_text()
    return ({"role": "assistant", "content": blocks},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call["id"], "content": content}]})


def run_bare_httpx(turns: int, path: str) -> list[float]:
    """The least a client can do: stream, parse each frame, run the tool, send the next turn."""
    with Simulator(script(turns, path)) as sim, httpx.Client(base_url=sim.base_url) as client:
        messages = [{"role": "user", "content": "read the file over and over"}]
        for _ in range(turns):
            body = {"model": "claude-sonnet-5", "max_tokens": 64000, "messages": messages, "stream": True,
                    "tools": [{"name": "Read", "description": "read", "input_schema": {"type": "object"}}]}
            with client.stream("POST", "/v1/messages", json=body, headers={"x-api-key": "sk-bench"}) as r:
                events = [json.loads(line[6:]) for line in r.iter_lines() if line.startswith("data: ")]
            messages = messages + list(_tool_result_turn(events))
        client.post("/v1/messages", json={"model": "claude-sonnet-5", "max_tokens": 64000, "messages": messages},
                    headers={"x-api-key": "sk-bench"})
        return gaps_ms(sim)


def run_sdk(turns: int, path: str) -> list[float] | None:
    try:
        import anthropic
    except ImportError:
        return None
    with Simulator(script(turns, path)) as sim:
        client = anthropic.Anthropic(base_url=sim.base_url, api_key="sk-bench", max_retries=0)
        messages: list = [{"role": "user", "content": "read the file over and over"}]
        tools = [{"name": "Read", "description": "read", "input_schema": {"type": "object"}}]
        for _ in range(turns):
            with client.messages.stream(model="claude-sonnet-5", max_tokens=64000, messages=messages, tools=tools) as s:
                final = s.get_final_message()
            call = next(b for b in final.content if b.type == "tool_use")
            content = Path(call.input["file_path"]).read_text()
            messages = messages + [{"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in final.content]},
                                   {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id,
                                                                 "content": content}]}]
        client.messages.create(model="claude-sonnet-5", max_tokens=1000, messages=messages, tools=tools)
        client.close()
        return gaps_ms(sim)


BARE_FIRST_REQUEST = """
import asyncio, os, httpx
async def main():
    async with httpx.AsyncClient(base_url=os.environ["ANTHROPIC_BASE_URL"]) as client:
        body = {"model": "claude-sonnet-5", "max_tokens": 1000, "stream": True,
                "messages": [{"role": "user", "content": "hi"}]}
        headers = {"x-api-key": os.environ["ANTHROPIC_API_KEY"], "anthropic-version": "2023-06-01"}
        async with client.stream("POST", "/v1/messages", json=body, headers=headers) as response:
            async for _ in response.aiter_lines():
                pass
asyncio.run(main())
"""


def start_to_first_request(runs: int, cwd: Path) -> tuple[list[float], list[float], list[float]]:
    """Process start to the first request's arrival: `loopwright -p hi`, the least an asyncio +
    httpx script can do (the floor), and the same script told not to load certificates
    (`verify=False`: loopwright builds no TLS context for a plain-http URL, so this is the
    like-for-like floor), in turn. One warm-up run each first, with bytecode writing allowed, so
    each starts as it does once installed (pip compiles bytecode; loopwright keeps its compiled
    dataclass methods beside it on the first run). `trio` is hidden from all of them: httpcore
    imports it whenever it is installed, and it is here only as a test tool's dependency."""
    env = dict(os.environ, ANTHROPIC_API_KEY="sk-bench", LOOPWRIGHT_HOME=str(cwd / "home"))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    hide = cwd / "hidden"
    hide.mkdir(exist_ok=True)
    (hide / "trio.py").write_text("raise ImportError('not installed where loopwright is (a test dependency)')\n")
    env["PYTHONPATH"] = str(hide)
    no_tls = BARE_FIRST_REQUEST.replace('base_url=os.environ["ANTHROPIC_BASE_URL"])',
                                        'base_url=os.environ["ANTHROPIC_BASE_URL"], verify=False)')
    assert no_tls != BARE_FIRST_REQUEST
    commands = [[sys.executable, "-m", "loopwright", "-p", "hi"], [sys.executable, "-c", BARE_FIRST_REQUEST],
                [sys.executable, "-c", no_tls]]
    times: tuple[list[float], list[float], list[float]] = ([], [], [])
    for run in range(runs + 1):
        for command, into in zip(commands, times):
            with Simulator([{"text": "hi"}]) as sim:
                env["ANTHROPIC_BASE_URL"] = sim.base_url
                started = time.monotonic()
                subprocess.run(command, env=env, cwd=cwd, capture_output=True, check=True)
                if run:
                    into.append((sim.message_requests[0].time - started) * 1000)
    return times


def version_wall(runs: int) -> list[float]:
    exe = Path(sys.executable).with_name("loopwright")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "loopwright"]
    times = []
    for _ in range(runs):
        started = time.monotonic()
        subprocess.run(cmd + ["--version"], capture_output=True, check=True)
        times.append((time.monotonic() - started) * 1000)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--only", choices=("jsonl", "start"),
                        help="only the Bash loops with a JSONL transcript, or only the start to the first request")
    opts = parser.parse_args()
    if opts.only == "jsonl":
        return jsonl_only(opts.turns, opts.runs)
    if opts.only == "start":
        return start_only(opts.runs)
    with tempfile.TemporaryDirectory() as tmp:
        cwd = Path(tmp)
        target = cwd / "notes.txt"
        target.write_text("\n".join(f"line {i}" for i in range(40)))
        run_loopwright(5, str(target), cwd)  # warm-up
        lw = run_loopwright(opts.turns, str(target), cwd)
        chat = run_loopwright_chat(opts.turns, str(target), cwd)
        bare = run_bare_httpx(opts.turns, str(target))
        sdk = run_sdk(opts.turns, str(target))
        run_loopwright_bash(5, cwd)  # warm-up
        lw_bash, bare_bash = [], []
        for _ in range(opts.runs):  # interleaved, so both meet the same load on a shared machine
            lw_bash += run_loopwright_bash(opts.turns, cwd)
            bare_bash += run_bare_bash(opts.turns, cwd)
        start, floor, _ = start_to_first_request(opts.runs, cwd)
        version = version_wall(opts.runs)
    med = statistics.median
    print(f"per-turn client overhead, {opts.turns}-turn Read loop (median ms; end of response → next request)")
    print(f"  loopwright              {med(lw):7.2f} ms   (p90 {sorted(lw)[int(len(lw) * 0.9)]:.2f})")
    print(f"  loopwright, chat model  {med(chat):7.2f} ms   (OpenAI-compatible adapter, same loop)")
    print(f"  bare httpx loop         {med(bare):7.2f} ms   ratio loopwright/bare = {med(lw) / med(bare):.2f}")
    if sdk:
        print(f"  anthropic SDK loop      {med(sdk):7.2f} ms   ratio loopwright/SDK  = {med(lw) / med(sdk):.2f}")
    print(f"per-turn client overhead, {opts.turns}-turn Bash loop (`{BASH_COMMAND}` a turn; median ms of "
          f"{opts.runs} interleaved runs)")
    print(f"  loopwright              {med(lw_bash):7.2f} ms   (p90 {sorted(lw_bash)[int(len(lw_bash) * 0.9)]:.2f})")
    print(f"  bare httpx + subprocess {med(bare_bash):7.2f} ms   ratio loopwright/floor = "
          f"{med(lw_bash) / med(bare_bash):.2f}   (target <= 1.5)")
    print(f"start of `loopwright -p` to first request: median {med(start):.0f} ms over {opts.runs} runs")
    print(f"  bare asyncio+httpx script, same measure:  median {med(floor):.0f} ms   "
          f"ratio loopwright/bare = {med(start) / med(floor):.2f}")
    print(f"`loopwright --version` wall time:          median {med(version):.0f} ms over {opts.runs} runs")
    print("targets: per-turn < 5 ms, start to first request < 300 ms, --version < 150 ms")


def start_only(runs: int) -> None:
    """Start of `loopwright -p hi` to its first request against the bare script's, interleaved."""
    med = statistics.median
    with tempfile.TemporaryDirectory() as tmp:
        start, floor, no_tls = start_to_first_request(runs, Path(tmp))
    print(f"start of `loopwright -p` to first request: median {med(start):.0f} ms over {runs} interleaved runs")
    print(f"  bare asyncio+httpx script, same measure:  median {med(floor):.0f} ms   "
          f"ratio loopwright/bare = {med(start) / med(floor):.2f}")
    print(f"  the same, no certificates (verify=False): median {med(no_tls):.0f} ms   "
          f"ratio loopwright/bare = {med(start) / med(no_tls):.2f}   (target <= 1.25)")


def jsonl_only(turns: int, runs: int) -> None:
    """The Bash loop with a JSONL transcript: fsync a step off the event loop (the default), each
    durable record fsynced on the event loop (as before), the floor; then the CLI's own turn, the
    same loop sandboxed (as by default: the warm helper), the same through the launcher (the
    helper off, as before it), against a floor that runs the command under bare bwrap with the
    same mounts; and both without a transcript. Interleaved `runs` times."""
    from sandbox_cost import bwrap_floor

    med = statistics.median
    names = ("step", "each", "floor", "cli", "cli_launcher", "floor_bwrap", "none", "bare_bwrap", "bare")
    got: dict[str, list[float]] = {name: [] for name in names}
    with tempfile.TemporaryDirectory() as tmp:
        cwd = Path(tmp)
        subprocess.run(["git", "init", "-q", str(cwd)], check=True)  # a repository, as most projects are
        spec, _, guarded = bwrap_floor(cwd, BASH_COMMAND)
        sandbox = (spec, guarded)
        sides = {"step": lambda: run_loopwright_bash_jsonl(turns, cwd),
                 "each": lambda: run_loopwright_bash_jsonl(turns, cwd, defer=False),
                 "floor": lambda: run_bare_bash_jsonl(turns, cwd),
                 "cli": lambda: run_loopwright_bash_jsonl(turns, cwd, sandboxed=True),
                 "cli_launcher": lambda: run_loopwright_bash_jsonl(turns, cwd, sandboxed=True, helper=False),
                 "floor_bwrap": lambda: run_bare_bash_jsonl(turns, cwd, sandbox),
                 "none": lambda: run_loopwright_bash(turns, cwd),
                 "bare_bwrap": lambda: run_bare_bash(turns, cwd, sandbox),
                 "bare": lambda: run_bare_bash(turns, cwd)}
        run_loopwright_bash_jsonl(5, cwd, sandboxed=True)  # warm-up
        for _ in range(runs):
            for name, side in sides.items():
                got[name] += side()
    m = {name: med(v) for name, v in got.items()}
    print(f"per-turn client overhead, {turns}-turn Bash loop (`{BASH_COMMAND}` a turn) (median ms of {runs} "
          "interleaved runs; end of response → next request)")
    print("unsandboxed, with a JSONL transcript:")
    print(f"  loopwright, one fsync a step in a thread  {m['step']:7.2f} ms   ratio to floor = "
          f"{m['step'] / m['floor']:.2f}   (target <= 1.5)")
    print(f"  loopwright, fsync per record on the loop  {m['each']:7.2f} ms   ratio to floor = "
          f"{m['each'] / m['floor']:.2f}")
    print(f"  floor: bare httpx + subprocess + JSONL    {m['floor']:7.2f} ms   (same records, one fsync before the command)")
    print("sandboxed (the CLI's default turn), with a JSONL transcript:")
    print(f"  loopwright                                {m['cli']:7.2f} ms   ratio to floor = "
          f"{m['cli'] / m['floor_bwrap']:.2f}   (target <= 1.5)")
    print(f"  the same through the launcher (helper off){m['cli_launcher']:7.2f} ms   ratio to floor = "
          f"{m['cli_launcher'] / m['floor_bwrap']:.2f}   (before the warm helper)")
    print(f"  floor: the same, command under bare bwrap {m['floor_bwrap']:7.2f} ms   (same mounts and filter, no launcher)")
    print("sandboxed, without a transcript:")
    print(f"  loopwright                                {m['none']:7.2f} ms   ratio to floor = "
          f"{m['none'] / m['bare_bwrap']:.2f}   (target <= 1.5)")
    print(f"  floor: bare httpx + bare bwrap            {m['bare_bwrap']:7.2f} ms")
    print(f"  (unsandboxed bare httpx + subprocess      {m['bare']:7.2f} ms: the sandbox's whole cost is "
          f"{m['none'] - m['bare']:.2f} ms a turn, bwrap's own {m['bare_bwrap'] - m['bare']:.2f} ms)")


if __name__ == "__main__":
    main()
