"""The sandbox as every run's default boundary (issue 29): a plain `loopwright -p` runs the
model's Bash calls under bwrap — nothing written outside the roots, other programs' credentials
hidden, a private /tmp, no API key, no keyring, no descriptor of loopwright's; a call that would
leave the sandbox is a permission the gate asks for (denied headless unless a rule names the
command, refused outright by `allowUnsandboxedCommands: false`) and its result says it ran
outside; what a command creates at a missing protected name is set aside and named; a failure
the sandbox caused says which setting would allow it. Real CLI, simulator, real bwrap."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from loopwright.core.ports import ToolContext
from loopwright.permissions.verdict import Resolved
from loopwright.permissions.paths import Places
from loopwright.permissions.decide import Call, PermissionRules, decide
from loopwright.sandbox import SandboxConfig, availability, wrap
from loopwright.testing import Simulator
from loopwright.tools.shell import BashTool

pytestmark = pytest.mark.anyio
BWRAP = availability()
needs_bwrap = pytest.mark.skipif(BWRAP is not None, reason=f"sandbox cannot run here: {BWRAP}")
CLI = [sys.executable, "-m", "loopwright"]


def cli(args, sim, cwd, env=None):
    e = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "LOOPWRIGHT_ALLOW"))}
    e.update(ANTHROPIC_BASE_URL=sim.base_url, ANTHROPIC_API_KEY="sk-test-secret", **(env or {}))
    return subprocess.run(CLI + args, capture_output=True, text=True, env=e, cwd=cwd, timeout=120)


def bash_call(command: str, **more) -> dict:
    return {"tool_use": {"name": "Bash", "input": {"command": command, **more}}}


def tool_results(stream: str) -> list[str]:
    """The tool_result texts of a stream-json run, in order."""
    out = []
    for line in stream.splitlines():
        event = json.loads(line)
        if event.get("type") != "user":
            continue
        for block in event["message"]["content"]:
            if block.get("type") == "tool_result":
                content = block["content"]
                out.append(content if isinstance(content, str) else "".join(c.get("text", "") for c in content))
    return out


@pytest.fixture
def outside():
    """A folder outside every root and outside /tmp (which the sandbox replaces): what the
    sandbox leaves visible, read-only."""
    folder = Path("/var/tmp") / f"lw-sbdefault-{os.getpid()}"
    folder.mkdir(exist_ok=True)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


# ---------------------------------------------------------------- a default run is sandboxed


@needs_bwrap
def test_a_default_print_run_is_sandboxed(tmp_path, outside):
    """No flag, no setting: the model's Bash call cannot write outside the working folder, read
    ~/.ssh, ~/.aws or ~/.netrc, see the host's /tmp or loopwright's home, or find the API key."""
    home = outside / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("PRIVATE KEY\n")
    (home / ".aws").mkdir()
    (home / ".aws" / "credentials").write_text("aws_secret\n")
    (home / ".netrc").write_text("machine x password hunter2\n")
    lw_home = outside / "lw"
    lw_home.mkdir()
    (lw_home / "transcript.jsonl").write_text("secret transcript\n")
    host_tmp = tmp_path / "host-tmp-marker"  # beside the project, under the host's /tmp
    host_tmp.write_text("host\n")
    project = tmp_path / "p"
    project.mkdir()
    py = sys.executable
    # python writes and $HOME reads: the gate cannot see them, only the sandbox stops them
    command = "{ " + "; ".join([
        f"{py} -c \"open('{outside}/escaped', 'w').write('x')\" 2>/dev/null && echo WROTE-OUTSIDE",
        'cat "$HOME/.ssh/id_rsa" "$HOME/.aws/credentials" "$HOME/.netrc" 2>/dev/null',
        f'cat "$(dirname {host_tmp})/{host_tmp.name}" "$(dirname {lw_home})/lw/transcript.jsonl" 2>/dev/null',
        'echo "key=${ANTHROPIC_API_KEY}"',
        f"{py} -c \"open('/tmp/own', 'w').write('in-tmp'); print(open('/tmp/own').read())\"",
    ]) + "; } > report.txt 2>&1; echo done > report-done"
    with Simulator([bash_call(command), {"text": "ok"}]) as sim:
        out = cli(["-p", "go", "--allowedTools", "Bash", "--output-format", "stream-json", "--verbose"], sim, project,
                  env={"HOME": str(home), "LOOPWRIGHT_HOME": str(lw_home)})
    assert out.returncode == 0 and (project / "report-done").exists(), tool_results(out.stdout)
    report = (project / "report.txt").read_text()
    assert report.split() == ["key=", "in-tmp"], report  # nothing else was readable or writable
    assert not (outside / "escaped").exists() and not Path("/tmp/own").exists()
    assert (home / ".ssh" / "id_rsa").read_text() == "PRIVATE KEY\n"  # hidden, not touched


@needs_bwrap
def test_no_sandbox_is_the_trusted_way_out(tmp_path, outside):
    project = tmp_path / "p"
    project.mkdir()
    command = f"{sys.executable} -c \"open('{outside}/escaped', 'w').write('x')\""
    with Simulator([bash_call(command), {"text": "ok"}]) as sim:
        out = cli(["-p", "go", "--allowedTools", "Bash", "--no-sandbox"], sim, project)
    assert out.returncode == 0 and (outside / "escaped").exists(), out.stderr


@needs_bwrap
async def test_no_descriptor_of_loopwright_reaches_a_command(tmp_path):
    """Even a runner that leaves descriptors open (close_fds=False) hands the command only 0-2:
    the launcher closes the rest at bwrap's exec."""
    secret = tmp_path / "loopwright-secret"
    secret.write_text("s")
    fds = [os.open(secret, os.O_RDONLY) for _ in range(3)]
    for fd in fds:
        os.set_inheritable(fd, True)
    try:
        argv = wrap(["/bin/bash", "-c", "ls -l /proc/$$/fd; true"], cwd=str(tmp_path), roots=(str(tmp_path),),
                    network=False)
        done = subprocess.run(argv, capture_output=True, text=True, close_fds=False, timeout=60)
        tool = BashTool()
        through_tool = await tool.run(tool.validate({"command": "ls -l /proc/$$/fd; true"}),
                                      ToolContext(cwd=tmp_path, writable_roots=(tmp_path,)))
    finally:
        for fd in fds:
            os.close(fd)
    for listing in (done.stdout, through_tool.content):
        numbers = sorted(int(line.split()[-3]) for line in listing.splitlines() if " -> " in line)
        assert "loopwright-secret" not in listing and numbers[:3] == [0, 1, 2], listing
        assert all(n in (0, 1, 2, 255) for n in numbers), listing  # 255: bash's own


@needs_bwrap
async def test_kernel_keyrings_are_refused(tmp_path):
    import platform

    keyctl = {"x86_64": 250, "aarch64": 219}.get(platform.machine())
    if keyctl is None:
        pytest.skip("no filter for this machine")
    code = (f"import ctypes; libc = ctypes.CDLL(None, use_errno=True); "
            f"print(libc.syscall({keyctl}, 0, -3, 0), ctypes.get_errno())")  # KEYCTL_GET_KEYRING_ID, session
    tool = BashTool()
    out = await tool.run(tool.validate({"command": f"{sys.executable} -c '{code}'"}),
                         ToolContext(cwd=tmp_path, writable_roots=(tmp_path,)))
    assert out.content.split() == ["-1", "1"], out.content  # EPERM


# ---------------------------------------------------------------- leaving the sandbox is a permission


def judge(outside: str, rules: PermissionRules, refused: bool = False, command: str = "git push origin main"):
    places = Places("/w", ("/w",), "/home/u", "/home/u/.loopwright")
    call = Call("Bash", "exec", command=command, tool_input={"command": command}, outside=outside,
                outside_refused=refused, resolved={"/w": (Resolved("/w", "/w", "dir"),)})
    return decide(call, rules, places)


@pytest.mark.parametrize("rules,decision", [
    (PermissionRules(), "ask"),
    (PermissionRules(allow=("Bash",)), "ask"),  # a bare Bash was given for sandboxed commands
    (PermissionRules(mode="bypassPermissions"), "ask"),  # every mode
    (PermissionRules(mode="acceptEdits"), "ask"),
    (PermissionRules(allow=("Bash(git push:*)",)), "allow"),
    (PermissionRules(allow=("Bash(git push:*)",), deny=("Bash(git push:*)",)), "deny"),
])
def test_the_gate_asks_about_a_call_that_leaves_the_sandbox(rules, decision):
    verdict = judge("the call sets dangerouslyDisableSandbox", rules)
    assert verdict.decision == decision
    if decision == "ask":
        assert verdict.hard and verdict.reason == ("asked because it runs outside the sandbox (the call sets "
                                                   "dangerouslyDisableSandbox)")
    inside = judge("", rules)
    assert inside.decision != "ask" or not inside.reason.startswith("asked because")


def test_allow_unsandboxed_false_refuses_even_a_named_command():
    verdict = judge("the call sets dangerouslyDisableSandbox", PermissionRules(allow=("Bash(git push:*)",)), True)
    assert verdict.decision == "deny" and "sandbox.allowUnsandboxedCommands is false" in verdict.reason


@needs_bwrap
@pytest.mark.parametrize("how", ["flag", "excluded"])
def test_leaving_the_sandbox_headless(tmp_path, how):
    """Denied without a rule (the reason names the sandbox); run outside, and said so in the
    result, with a rule that names the command; refused by allowUnsandboxedCommands false."""
    project = tmp_path / "p"
    project.mkdir()
    host_only = tmp_path / "host-only.txt"  # outside the roots, under /tmp: the sandbox's /tmp is its own
    host_only.write_text("seen-on-the-host\n")
    command = f"cat {host_only}"
    call = bash_call(command, **({"dangerouslyDisableSandbox": True} if how == "flag" else {}))
    settings = ["--settings", json.dumps({"sandbox": {"excludedCommands": ["cat *"]}})] if how == "excluded" else []
    host_ns = "seen-on-the-host"
    why = "the call sets dangerouslyDisableSandbox" if how == "flag" else "it matches sandbox.excludedCommands 'cat *'"
    with Simulator([call, {"text": "ok"}] * 3) as sim:
        denied = cli(["-p", "go", "--allowedTools", "Bash", "--output-format", "stream-json", "--verbose", *settings],
                     sim, project)
        allowed = cli(["-p", "go", "--allowedTools", "Bash(cat:*)", f"Read(/{tmp_path}/**)", "--output-format",
                       "stream-json", "--verbose", *settings], sim, project)
        never = json.dumps({"sandbox": {"allowUnsandboxedCommands": False,
                                        **({"excludedCommands": ["cat *"]} if how == "excluded" else {})}})
        refused = cli(["-p", "go", "--allowedTools", "Bash(cat:*)", f"Read(/{tmp_path}/**)", "--output-format",
                       "stream-json", "--verbose", "--settings", never], sim, project)
    [result] = tool_results(denied.stdout)
    assert f"Permission needed for Bash: asked because it runs outside the sandbox ({why}); this run cannot ask" \
        in result and host_ns not in result
    [result] = tool_results(allowed.stdout)
    assert result.splitlines() == [f"(this command ran outside the sandbox: {why})", host_ns]  # recorded
    [result] = tool_results(refused.stdout)
    if how == "flag":
        assert "sandbox.allowUnsandboxedCommands is false" in result and host_ns not in result
    else:
        assert "sandbox.allowUnsandboxedCommands is false" in result


# ---------------------------------------------------------------- protected names, set aside


@needs_bwrap
def test_a_created_protected_file_is_set_aside_and_reported(tmp_path):
    project, lw_home = tmp_path / "p", tmp_path / "lw"
    project.mkdir()
    make = f"{sys.executable} -c \"open('.mcp.json', 'w').write('{{}}')\"; ls -A"
    with Simulator([bash_call(make), {"text": "ok"}]) as sim:
        out = cli(["-p", "go", "--allowedTools", "Bash", "--output-format", "stream-json", "--verbose"], sim, project,
                  env={"LOOPWRIGHT_HOME": str(lw_home)})
    [result] = tool_results(out.stdout)
    listed, note = result.splitlines()[:-1], result.splitlines()[-1]
    # no .idea, .claude, .loopwright … in the tree while it ran; only the held `.git` of a folder
    # that is no repository (a planted one would be read by a host shell's prompt meanwhile)
    assert listed == [".git", ".mcp.json"]
    assert note.startswith("loopwright: the sandbox set aside .mcp.json, which this command created: protected "
                           f"paths are read-only to commands; kept in {lw_home / 'quarantine'}/")
    assert os.listdir(project) == []
    kept = Path(note.split("kept in ")[1]) / str(project / ".mcp.json").lstrip("/")
    assert kept.read_text() == "{}"


@needs_bwrap
def test_loopwright_finishes_the_checks_of_a_killed_watcher_at_start(tmp_path, monkeypatch):
    project, lw_home = tmp_path / "p", tmp_path / "lw"
    project.mkdir()
    monkeypatch.setenv("LOOPWRIGHT_HOME", str(lw_home))  # where wrap() puts the record
    env = {**os.environ, "LOOPWRIGHT_HOME": str(lw_home)}
    ready = project / "ready"
    argv = wrap(["/bin/bash", "-c", f"echo x > .envrc; touch {ready}; exec sleep 60"], cwd=str(project),
                roots=(str(project),), network=False)
    hung = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    while not ready.exists():
        if hung.poll() is not None:
            raise AssertionError(hung.stdout.read())
        os.sched_yield()
    os.killpg(hung.pid, 9)  # bwrap and its watcher: nobody cleans up
    hung.communicate(timeout=30)  # every writer of its output gone
    assert (project / ".envrc").exists()
    with Simulator([{"text": "ok"}]) as sim:
        out = cli(["-p", "go"], sim, project, env={"LOOPWRIGHT_HOME": str(lw_home)})
    assert out.returncode == 0 and not (project / ".envrc").exists()
    assert "loopwright: warning: the sandbox set aside .envrc, which an earlier command created (its clean-up " \
           "was cut short)" in out.stderr


# ---------------------------------------------------------------- a failure the sandbox caused says so


@needs_bwrap
@pytest.mark.parametrize("code,says", [
    ("open('/usr/lw-nope', 'w')", "the sandbox blocked a write: only the working folder and added directories"),
    ("import socket; socket.getaddrinfo('example.com', 80)", "the sandbox blocked the network: commands have none "
                                                             "unless your user settings allow it"),
])
async def test_a_failure_the_sandbox_caused_names_the_setting(tmp_path, code, says):
    tool = BashTool()
    out = await tool.run(tool.validate({"command": f"{sys.executable} -c \"{code}\""}),
                         ToolContext(cwd=tmp_path, writable_roots=(tmp_path,)))
    assert out.is_error and out.content.splitlines()[-1].startswith(f"({says}"), out.content
