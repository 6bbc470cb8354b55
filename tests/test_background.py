"""Background shells: Bash with run_in_background returns an id at once, BashOutput returns only
what is new (optionally filtered) with status and exit code, KillShell and stop_all end the whole
process group, running() has the Stop hook's background_tasks shape. Also through the loop."""

from __future__ import annotations

import os
import time
from pathlib import Path

import anyio
import pytest

from loopwright.agent import Agent
from loopwright.permissions.decide import PermissionRules
from loopwright.core.ports import BackgroundWork, ToolContext
from loopwright.providers.anthropic import AnthropicModel
from loopwright.sandbox import SandboxConfig, availability
from loopwright.testing import Simulator
from loopwright.testing.clock import FakeClock
from loopwright.tools import background_work, builtin_tools
from procs import gone

pytestmark = pytest.mark.anyio
BWRAP = availability()


class Shells:
    """The three tools of one builtin set, called as the loop would call them."""

    def __init__(self, cwd: Path, sandbox: SandboxConfig | None = None) -> None:
        self.tools = {t.name: t for t in builtin_tools(sandbox=sandbox)}
        self.ctx = ToolContext(cwd=cwd, writable_roots=(cwd,))
        self.work = background_work(self.tools.values())

    async def call(self, name: str, **tool_input):
        t = self.tools[name]
        return await t.run(t.validate(tool_input), self.ctx)

    async def start(self, command: str, description: str = "") -> str:
        out = await self.call("Bash", command=command, run_in_background=True, description=description)
        assert not out.is_error, out.content
        return out.content.split("ID: ")[1].split(".")[0]

    async def read_until(self, shell_id: str, needle: str, **kw) -> str:
        seen = ""
        with anyio.fail_after(10):
            while needle not in seen:
                out = await self.call("BashOutput", bash_id=shell_id, **kw)
                assert not out.is_error, out.content
                seen += out.content
                await anyio.sleep(0.02)
        return seen


async def wait_for_pid(path: Path) -> int:
    with anyio.fail_after(10):
        while not path.exists() or not path.read_text().strip():
            await anyio.sleep(0.02)
    return int(path.read_text())


async def test_start_returns_an_id_at_once(tmp_path):
    shells = Shells(tmp_path)
    started = time.monotonic()
    shell_id = await shells.start("sleep 30")
    assert time.monotonic() - started < 2 and shell_id == "bash_1"
    await shells.work.stop_all()


async def test_output_is_read_in_new_pieces_with_status(tmp_path):
    shells = Shells(tmp_path)
    shell_id = await shells.start("echo one; while [ ! -f go ]; do sleep 0.02; done; echo two; exit 3")
    first = await shells.read_until(shell_id, "one")
    assert "<status>running</status>" in first and "two" not in first and "<exit_code>" not in first
    (tmp_path / "go").touch()
    second = await shells.read_until(shell_id, "<status>failed</status>")
    assert "two" in second and "one" not in second and "<exit_code>3</exit_code>" in second
    third = (await shells.call("BashOutput", bash_id=shell_id)).content
    assert "(no new output)" in third and "<status>failed</status>" in third


async def test_a_filter_keeps_matching_lines_and_drops_the_rest(tmp_path):
    shells = Shells(tmp_path)
    shell_id = await shells.start("printf 'ok 1\\nerror: a\\nok 2\\nerror: b\\n'")
    got = await shells.read_until(shell_id, "error: b", filter="^error")
    assert "error: a" in got and "ok 1" not in got and "ok 2" not in got
    assert "ok" not in (await shells.call("BashOutput", bash_id=shell_id)).content.split("<stdout>")[1]
    bad = await shells.call("BashOutput", bash_id=shell_id, filter="(")
    assert bad.is_error and "Invalid filter" in bad.content


async def test_a_clean_exit_is_completed_with_code_zero(tmp_path):
    shells = Shells(tmp_path)
    shell_id = await shells.start("echo done")
    got = await shells.read_until(shell_id, "<status>completed</status>")
    assert "<exit_code>0</exit_code>" in got and "done" in got


# The group tests read the shells' own pids and look for them on the host: a sandboxed command
# sees only its PID namespace's numbers, so they run on the host, said explicitly (the sandboxed
# group's end: test_sandboxed_background_shell_is_killed_with_its_namespace).
HOST = SandboxConfig(enabled=False)


async def test_kill_stops_the_whole_group(tmp_path):
    shells = Shells(tmp_path, HOST)
    shell_id = await shells.start(f"sleep 300 & echo $! > {tmp_path / 'child.pid'}; wait")
    child = await wait_for_pid(tmp_path / "child.pid")
    out = await shells.call("KillShell", shell_id=shell_id)
    assert not out.is_error and "Killed shell bash_1" in out.content
    assert gone(child)
    assert "<status>killed</status>" in (await shells.call("BashOutput", bash_id=shell_id)).content
    again = await shells.call("KillShell", shell_id=shell_id)
    assert not again.is_error and "not running" in again.content


async def test_unknown_ids_are_errors_the_model_can_read(tmp_path):
    shells = Shells(tmp_path)
    out = await shells.call("BashOutput", bash_id="bash_9")
    assert out.is_error and "No background shell" in out.content
    assert (await shells.call("KillShell", shell_id="nope")).is_error


async def test_running_lists_background_tasks_like_the_stop_hook(tmp_path):
    shells = Shells(tmp_path)
    assert isinstance(shells.work, BackgroundWork) and shells.work.running() == []
    a = await shells.start("sleep 30", description="wait a while")
    b = await shells.start("true")
    await shells.read_until(b, "<status>completed</status>")
    assert shells.work.running() == [{"id": a, "type": "shell", "status": "running", "description": "wait a while",
                                      "command": "sleep 30"}]
    await shells.call("KillShell", shell_id=a)
    assert shells.work.running() == []


async def test_stop_all_kills_every_group(tmp_path):
    shells = Shells(tmp_path, HOST)
    pids = []
    for n in range(3):
        await shells.start(f"sleep 300 & echo $! > {tmp_path / f'{n}.pid'}; wait")
        pids.append(await wait_for_pid(tmp_path / f"{n}.pid"))
    # a shell that already exited but left a child behind in its group
    await shells.start(f"(sleep 300 & echo $! > {tmp_path / 'orphan.pid'})")
    pids.append(await wait_for_pid(tmp_path / "orphan.pid"))
    assert not any(gone(p, within=0) for p in pids)
    await shells.work.stop_all()
    assert all(gone(p) for p in pids)
    assert shells.work.running() == []


async def test_builtin_sets_do_not_share_shells(tmp_path):
    one, two = Shells(tmp_path), Shells(tmp_path)
    shell_id = await one.start("sleep 30")
    assert (await two.call("BashOutput", bash_id=shell_id)).is_error
    await one.work.stop_all()


@pytest.mark.skipif(BWRAP is not None, reason=f"sandbox cannot run here: {BWRAP}")
async def test_sandboxed_background_shell_is_killed_with_its_namespace(tmp_path):
    shells = Shells(tmp_path, SandboxConfig(enabled=True))
    nap = f"sleep 300.{os.getpid()}{time.monotonic_ns() % 1000003}"  # this test's own: no other process's sleep is waited on
    shell_id = await shells.start(f"touch /etc/nope 2>&1; {nap} & echo $! > {tmp_path / 'c.pid'}; wait")
    await wait_for_pid(tmp_path / "c.pid")
    assert "Read-only file system" in await shells.read_until(shell_id, "Read-only")
    assert nap in os.popen("ps -eo args").read()
    await shells.call("KillShell", shell_id=shell_id)
    with anyio.fail_after(5):
        while nap in os.popen("ps -eo args").read():
            await anyio.sleep(0.05)


async def test_through_the_loop(tmp_path):
    script = [
        {"tool_use": {"name": "Bash", "input": {"command": "echo hello; sleep 30", "run_in_background": True}}},
        {"tool_use": {"name": "BashOutput", "input": {"bash_id": "bash_1"}}, "delay": 0.3},
        {"tool_use": {"name": "KillShell", "input": {"shell_id": "bash_1"}}},
        {"text": "done"},
    ]
    with Simulator(script) as sim:
        agent = Agent(model_client=AnthropicModel(base_url=sim.base_url, api_key="sk-test"), cwd=tmp_path,
                      clock=FakeClock(), permissions=PermissionRules(allow=("Bash",)))
        async with agent.open() as running:
            result = await running.prompt("start a server")
            work = background_work(running.tools())
            assert work is not None and work.running() == []
        bodies = [r.body for r in sim.message_requests]
    results = [b["messages"][-1]["content"][0] for b in bodies[1:]]
    assert "ID: bash_1" in results[0]["content"]
    assert "hello" in results[1]["content"] and "<status>running</status>" in results[1]["content"]
    assert "Killed shell bash_1" in results[2]["content"]
    assert result.subtype == "success" and not result.permission_denials
