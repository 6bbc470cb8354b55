"""The warm helper (`sandbox/helper.py`, `sandbox/warm.py`): loopwright starts bwrap itself and one
helper process per loopwright process, started once, does the launcher's host-side work.
What the launcher guaranteed still holds: a loopwright killed with SIGKILL leaves no command
running, and the watcher still cleans up (placeholders removed, a protected name the command
made set aside); sandboxes of two loopwright processes with homes of their own never remove a
placeholder under each other; and a helper that is gone, stuck or turned off leaves commands to
the launcher — never unsandboxed. Real CLI, simulator, real bwrap."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from loopwright.core.ports import ToolContext
from loopwright.sandbox import SandboxConfig, availability, warm
from loopwright.sandbox.launch import MARK_NS
from loopwright.testing import Simulator
from loopwright.tools.shell import BashTool
from procs import gone

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(availability() is not None,
                                                     reason=f"sandbox cannot run here: {availability()}")]
CLI = [sys.executable, "-m", "loopwright"]
HELPER = "from helper import serve"


def wait_until(check, what: str, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while not (found := check()):
        assert time.monotonic() < deadline, f"{what} never happened"
        time.sleep(0.02)
    return found


def cmdline(pid: int | str) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_bytes()
            except OSError:
                continue
            if int(stat.rpartition(b")")[2].split()[1]) == pid:
                found.append(int(entry))
    return found


def running(token: str) -> list[int]:
    """The live processes whose command line holds `token`."""
    return [int(p) for p in os.listdir("/proc") if p.isdigit() and token in cmdline(p) and not gone(int(p), 0)]


def placeholders(folder: Path) -> list[str]:
    return [os.path.relpath(os.path.join(here, name), folder) for here, dirs, files in os.walk(folder)
            for name in dirs + files if os.lstat(os.path.join(here, name)).st_mtime_ns == MARK_NS]


def git_init(folder: Path) -> None:
    subprocess.run(["git", "init", "-q", str(folder)], check=True)


async def sandboxed(command: str, project: Path) -> str:
    tool = BashTool(sandbox=SandboxConfig(enabled=True))
    return (await tool.run(tool.validate({"command": command}),
                           ToolContext(cwd=project, writable_roots=(project,)))).content


# ---------------------------------------------------------------- a killed loopwright


def test_a_killed_loopwright_leaves_no_command_running_and_its_watcher_cleans_up(tmp_path):
    project, lw_home, out = tmp_path / "p", tmp_path / "lw", tmp_path / "p" / "out"
    project.mkdir()
    git_init(project)  # placeholders for the files git reads in .git (commondir, ...)
    token = f"writer-{os.getpid()}-{tmp_path.name}"
    make = f"{sys.executable} -c \"open('.mcp.json', 'w').write('made')\""  # (the gate would ask about a plain write)
    command = f"{make}; sh -c ': {token}; while :; do echo x >> {out}; sleep 0.05; done'"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "LOOPWRIGHT_"))}
    script = [{"tool_use": {"name": "Bash", "input": {"command": command}}}, {"text": "never asked"}]
    with Simulator(script) as sim:
        env.update(ANTHROPIC_BASE_URL=sim.base_url, ANTHROPIC_API_KEY="sk-test", LOOPWRIGHT_HOME=str(lw_home))
        run = subprocess.Popen([*CLI, "-p", "go", "--allowedTools", "Bash"], cwd=project, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            writers = wait_until(lambda: running(token) or run.poll() is not None, "the command's start")
            assert run.poll() is None, run.communicate()
            wait_until(out.exists, "the command's first write")
            assert placeholders(project)  # the watcher made them and holds them for the command
            kids = {pid: cmdline(pid) for pid in children(run.pid)}
            # through the helper: bwrap is loopwright's own child, and the helper beside it
            assert any(c.startswith("/usr/bin/bwrap ") or "/bwrap " in c for c in kids.values()), kids
            [helper] = [pid for pid, c in kids.items() if HELPER in c]
            run.kill()
            run.communicate(timeout=30)
        finally:
            if run.poll() is None:
                run.kill()
    assert all(gone(pid, 30) for pid in writers)  # nothing of the command runs any more
    size = out.stat().st_size
    wait_until(lambda: not (project / ".mcp.json").exists() and not placeholders(project), "the watcher's clean-up")
    assert out.stat().st_size == size
    [kept] = (lw_home / "quarantine").glob(f"*/{str(project).lstrip('/')}/.mcp.json")
    assert kept.read_text() == "made"
    assert not list((lw_home / "sandbox").glob("pending-*"))
    assert gone(helper, 30)  # its last command cleaned up, the helper of a dead loopwright ends


# ---------------------------------------------------------------- two processes, two homes


TWO_HOMES = textwrap.dedent("""
    import anyio, sys
    from pathlib import Path
    from loopwright.core.ports import ToolContext
    from loopwright.sandbox import SandboxConfig
    from loopwright.tools.shell import BashTool

    async def main(project, me):
        tool, ctx = BashTool(SandboxConfig(enabled=True)), ToolContext(cwd=project, writable_roots=(project,))
        outs = []
        async def one(k):
            out = await tool.run(tool.validate({"command": f"echo ok{me}-{k}"}), ctx)
            outs.append(out.content if not out.is_error else f"{k}: {out.content}")
        async with anyio.create_task_group() as group:
            for k in range(24):
                group.start_soon(one, k)
        print("\\n".join(sorted(outs)))

    anyio.run(main, Path(sys.argv[1]), sys.argv[2])
""")


def test_two_loopwrights_with_homes_of_their_own_never_remove_a_placeholder_under_each_other(tmp_path):
    """Two processes, each with its helper and its home, start 24 commands each at once in one
    project with no `.git`: each sandbox makes and removes the placeholder `.git` while the
    others rely on it; none is refused, and the last one out removes it."""
    project = tmp_path / "p"
    project.mkdir()
    runs = [subprocess.Popen([sys.executable, "-c", TWO_HOMES, str(project), str(me)], text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             env={**os.environ, "LOOPWRIGHT_HOME": str(tmp_path / f"home-{me}")})
            for me in range(2)]
    for me, run in enumerate(runs):
        out, err = run.communicate(timeout=180)
        assert run.returncode == 0, err
        assert out.split() == sorted(f"ok{me}-{k}" for k in range(24)), out
    assert not (project / ".git").exists()


async def test_the_helper_keeps_no_descriptor_of_a_command_it_cleaned_up(tmp_path):
    """The helper outlives its commands: their locks, records, pipes and pidfds are closed once
    each is cleaned up, however many it serves (the launcher's watcher had its exit for that)."""
    git_init(tmp_path)  # placeholders and their locks
    await sandboxed("true", tmp_path)
    helper = warm.current()
    assert helper is not None
    before = sorted(os.listdir(f"/proc/{helper.pid}/fd"))
    for _ in range(5):
        assert "set aside .mcp.json" in await sandboxed(f"{sys.executable} -c \"open('.mcp.json', 'w')\"", tmp_path)
    assert warm.current() is helper
    assert sorted(os.listdir(f"/proc/{helper.pid}/fd")) == before


# ---------------------------------------------------------------- fail closed: the launcher


async def test_a_killed_helper_is_replaced_and_its_commands_stay_sandboxed(tmp_path):
    git_init(tmp_path)
    assert "Read-only file system" in await sandboxed("echo x > .git/config", tmp_path)
    first = warm.current()
    assert first is not None
    os.kill(first.pid, signal.SIGKILL)
    first.process.wait()
    assert "Read-only file system" in await sandboxed("echo x > .git/config", tmp_path)
    second = warm.current()
    assert second is not None and second.pid != first.pid


async def test_a_stuck_helper_leaves_the_command_to_the_launcher(tmp_path, monkeypatch):
    """A helper that takes no command (stopped here) does not hold commands up for longer than
    `REPLY_TIMEOUT_S`: the command runs through the launcher, sandboxed, and the next command
    gets a new helper. The stuck one gets no more commands, and ends by itself once it goes on."""
    git_init(tmp_path)
    await sandboxed("true", tmp_path)  # a helper, ready
    stuck = warm.current()
    assert stuck is not None
    monkeypatch.setattr(warm, "REPLY_TIMEOUT_S", 0.5)
    os.kill(stuck.pid, signal.SIGSTOP)
    try:
        out = await sandboxed("echo x > .mcp.json; echo x > .git/config", tmp_path)
    finally:
        try:
            os.kill(stuck.pid, signal.SIGCONT)
        except ProcessLookupError:
            pass  # killed as stuck, as it should be
    assert "Read-only file system" in out and "the sandbox set aside .mcp.json" in out, out
    assert not (tmp_path / ".mcp.json").exists()
    fresh = warm.current()
    assert fresh is not None and fresh.pid != stuck.pid
    assert gone(stuck.pid, 30)


async def test_with_the_helper_off_commands_run_through_the_launcher(tmp_path, monkeypatch):
    git_init(tmp_path)
    monkeypatch.setenv("LOOPWRIGHT_SANDBOX_HELPER", "off")
    assert warm.current() is None
    out = await sandboxed("echo x > .mcp.json; echo x > .git/config", tmp_path)
    assert "Read-only file system" in out and "the sandbox set aside .mcp.json" in out, out


DIES_EARLY = r'''
import asyncio, marshal, os, signal, socket, subprocess, sys
from loopwright.sandbox import warm, wrap

FAKE_BWRAP = """
import os, sys, time
info, parent, marker = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
child = os.fork()
if child == 0:  # the sandbox's first process: it would run the command
    os.close(info)  # as bwrap's own: only bwrap writes the pipe
    time.sleep(2)
    open(marker, "w").write("ran")
    os._exit(0)
while os.getppid() == parent:  # loopwright dies before this bwrap set its parent-death signal
    time.sleep(0.01)
os.write(info, ('{"child-pid": %d}' % child).encode())
os.close(info)
os.waitpid(child, 0)
"""

async def main(project, marker):
    line = wrap(["/bin/true"], cwd=project, roots=(project,), network=False)
    helper = warm.current()
    print(helper.pid, flush=True)
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    info_read, info_write = os.pipe()
    warm._send(ours, marshal.dumps(line.spec), info_read)
    os.close(info_read)
    ours.setblocking(False)
    await helper.hand(theirs)
    theirs.close()
    assert marshal.loads(await warm._receive(ours))[0] == "go"
    fake = subprocess.Popen([sys.executable, "-c", FAKE_BWRAP, str(info_write), str(os.getpid()), marker],
                            pass_fds=(info_write,), start_new_session=True)
    os.close(info_write)
    print(fake.pid, flush=True)
    os.kill(os.getpid(), signal.SIGKILL)

asyncio.run(main(sys.argv[1], sys.argv[2]))
'''


def test_a_command_whose_loopwright_died_before_bwrap_armed_its_parent_death_signal_never_runs(tmp_path):
    """bwrap sets its parent-death signal a moment after loopwright started it: a loopwright killed
    in that moment leaves a bwrap the kernel will not end. The helper learns of it when bwrap
    names its sandbox (loopwright is no longer its parent then) and kills the sandbox before its
    command runs. (A stand-in for bwrap names a process that would write a file 2 s later.)"""
    project, marker = tmp_path / "p", tmp_path / "ran"
    project.mkdir()
    env = dict(os.environ, LOOPWRIGHT_HOME=str(tmp_path / "home"))
    done = subprocess.run([sys.executable, "-c", DIES_EARLY, str(project), str(marker)], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == -signal.SIGKILL, done.stderr
    helper, fake = (int(n) for n in done.stdout.split())
    wait_until(lambda: gone(fake, 0), "the stand-in bwrap's end", timeout=10)
    wait_until(lambda: gone(helper, 0), "the helper's end (its one command cleaned up)", timeout=20)
    time.sleep(2.5)  # past the moment the sandbox's process would have written, had it lived
    assert not marker.exists()
