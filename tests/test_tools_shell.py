"""The Bash tool: exit codes, merged output, the output cap, timeouts and cancellation that kill
the whole process group, cwd and env, and its input schema."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from loopwright.core.errors import ToolInputError
from loopwright.core.ports import ToolContext
from loopwright.sandbox import SandboxConfig
from loopwright.tools.shell import BashTool
from procs import gone

pytestmark = pytest.mark.anyio


# The process-group tests read the command's own pids and check the host for them: a sandboxed
# command sees only its PID namespace's numbers, so they run on the host, said explicitly (the
# sandboxed group's end is test_background's test_sandboxed_background_shell_is_killed_…).
HOST = SandboxConfig(enabled=False)


async def bash(raw, cwd, sandbox=None, **ctx):
    t = BashTool(sandbox=sandbox)  # None: the default, sandboxed
    return await t.run(t.validate(raw), ToolContext(cwd=cwd, **ctx))


async def wait_for_file(path: Path) -> int:
    while not (path.exists() and path.read_text().strip()):
        await anyio.sleep(0.01)
    return int(path.read_text())


async def test_success_and_no_output(tmp_path):
    out = await bash({"command": "echo hello"}, tmp_path)
    assert out.content == "hello" and not out.is_error
    quiet = await bash({"command": "true"}, tmp_path)
    assert quiet.content == "(no output)" and not quiet.is_error


async def test_nonzero_exit_is_error_with_merged_output(tmp_path):
    out = await bash({"command": "echo out; echo err >&2; exit 3"}, tmp_path)
    assert out.is_error
    assert out.content == "Exit code 3\nout\nerr"


async def test_stderr_only(tmp_path):
    out = await bash({"command": "echo oops >&2"}, tmp_path)
    assert out.content == "oops" and not out.is_error


async def test_output_cap_keeps_head_and_tail(tmp_path):
    # 6000 numbered lines of 10 characters: 60000 characters, twice the cap.
    out = await bash({"command": "seq -f 'line%05g' 1 6000"}, tmp_path)
    text = out.content
    assert not out.is_error
    assert text.startswith("line00001\n")
    assert text.endswith("line06000")
    assert "characters omitted" in text
    omitted = int(text.split("... [")[1].split(" characters omitted")[0])
    assert omitted == 60000 - 30000
    assert len(text) < 30000 + 300


async def test_cwd_and_env(tmp_path):
    (tmp_path / "marker").write_text("")
    out = await bash({"command": 'ls; echo "$LW_TEST_VAR"; echo "$PATH" | head -c 1'}, tmp_path, env={"LW_TEST_VAR": "from-ctx"})
    assert out.content.split("\n")[:2] == ["marker", "from-ctx"]
    assert out.content.split("\n")[2] != ""  # the parent's environment is inherited too


async def test_stdin_is_empty(tmp_path):
    out = await bash({"command": "cat; echo done"}, tmp_path)
    assert out.content == "done"


async def test_timeout_kills_the_process_group(tmp_path):
    pidfile = tmp_path / "child.pid"
    out = await bash({"command": f"echo started; sleep 30 & echo $! > {pidfile}; wait", "timeout": 1500}, tmp_path,
                     sandbox=HOST)
    assert out.is_error
    assert out.content.startswith("Command timed out after 1500 ms")
    assert "started" in out.content  # partial output kept
    assert gone(int(pidfile.read_text()))


async def test_a_writer_that_never_stops_still_times_out_with_capped_output(tmp_path):
    ticks = []

    async def ticker():  # the event loop keeps running other work while the output pours in
        while True:
            ticks.append(1)
            await anyio.sleep(0.05)

    async with anyio.create_task_group() as tg:
        tg.start_soon(ticker)
        out = await bash({"command": "yes loopwright", "timeout": 1000}, tmp_path)
        tg.cancel_scope.cancel()
    assert out.is_error and out.content.startswith("Command timed out after 1000 ms")
    assert "characters omitted" in out.content and out.content.count("loopwright") < 5000
    assert len(ticks) >= 5


async def test_cancellation_kills_the_group_and_propagates(tmp_path):
    pidfile = tmp_path / "child.pid"
    seen: list[BaseException] = []

    async def runner():
        try:
            await bash({"command": f"sleep 30 & echo $! > {pidfile}; wait"}, tmp_path, sandbox=HOST)
        except BaseException as exc:
            seen.append(exc)
            raise

    async with anyio.create_task_group() as tg:
        tg.start_soon(runner)
        pid = await wait_for_file(pidfile)
        tg.cancel_scope.cancel()
    assert len(seen) == 1 and isinstance(seen[0], anyio.get_cancelled_exc_class())
    assert gone(pid)


async def test_background_job_holding_the_pipe_does_not_hang(tmp_path):
    pidfile = tmp_path / "bg.pid"
    out = await bash({"command": f"sleep 30 & echo $! > {pidfile}; echo quick"}, tmp_path)
    assert out.content == "quick"
    os.kill(int(pidfile.read_text()), 9)  # clean up what the command left behind


async def test_missing_cwd(tmp_path):
    out = await bash({"command": "true"}, tmp_path / "gone")
    assert out.is_error and "does not exist" in out.content


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ({}, "- command: required field is missing"),
        ({"command": "ls", "bogus_field": 1}, "- bogus_field: unexpected field (not allowed)"),
        ({"command": "ls", "timeout": 600001}, "- timeout: must be less than or equal to 600000"),
    ],
)
def test_schema_errors(raw, problem):
    with pytest.raises(ToolInputError) as info:
        BashTool().validate(raw)
    assert str(info.value).startswith("Invalid input for Bash:\n")
    assert problem in str(info.value)
    assert str(info.value).endswith("Fix the input and call the tool again.")


def test_timeout_at_the_maximum_is_accepted():
    assert BashTool().validate({"command": "ls", "timeout": 600000}).timeout == 600000


async def test_group_that_ignores_term_is_killed_after_the_grace(tmp_path, monkeypatch):
    monkeypatch.setattr("loopwright.tools.procs.KILL_GRACE_S", 0.2)
    pidfile = tmp_path / "stubborn.pid"
    # An ignored signal stays ignored in children, so neither bash nor sleep obeys SIGTERM.
    command = f"trap '' TERM; sleep 30 & echo $! > {pidfile}; wait"
    # the timeout leaves the shell time to start and write the pid even on a loaded machine
    out = await bash({"command": command, "timeout": 1500}, tmp_path, sandbox=HOST)
    assert out.is_error and "timed out" in out.content
    assert gone(int(pidfile.read_text()))
