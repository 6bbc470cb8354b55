"""The bwrap sandbox: the command line it builds, what it isolates when bwrap runs here, what
happens when it cannot run (refuse, or run with a warning), and the CLI boundary: --sandbox,
--add-dir, settings, and bypassPermissions refused for root without a sandbox."""

from __future__ import annotations

import json
import marshal
import os
import subprocess
import sys
from pathlib import Path

import pytest

from loopwright.agent import Agent
from loopwright.core.errors import UsageError
from loopwright.core.events import Notice, SystemInit
from loopwright.permissions.decide import PermissionRules
from loopwright.core.ports import ToolContext
from loopwright.sandbox import SandboxConfig, availability, unavailable_warning, wrap
from loopwright.sandbox import bwrap as bwrap_module
from loopwright.testing import Simulator
from loopwright.testing.scripted import ScriptedModel
from loopwright.tools.shell import BashTool

pytestmark = pytest.mark.anyio
BWRAP = availability()
needs_bwrap = pytest.mark.skipif(BWRAP is not None, reason=f"sandbox cannot run here: {BWRAP}")
CLI = [sys.executable, "-m", "loopwright"]


async def bash(command: str, cwd: Path, sandbox: SandboxConfig, roots=()) -> object:
    t = BashTool(sandbox=sandbox)
    return await t.run(t.validate({"command": command}), ToolContext(cwd=cwd, writable_roots=(cwd, *roots)))


@needs_bwrap
def test_the_launcher_starts_with_nothing_but_what_it_needs(tmp_path):
    """Every sandboxed command pays for the launcher's imports: it is imported from its bytecode
    and loads no `os` (collections.abc, posixpath), `signal` (enum, functools) or other Python
    module of the standard library beyond its few C ones. The real command line, run with
    -X importtime, which lists every module the launcher's interpreter imports."""
    argv = wrap(["/bin/bash", "-c", "echo ran"], cwd=str(tmp_path), roots=(str(tmp_path),), network=False)
    done = subprocess.run([*argv[:3], "-X", "importtime", *argv[3:]], capture_output=True, text=True, timeout=60,
                          cwd=tmp_path, stdin=subprocess.DEVNULL)
    assert done.returncode == 0 and done.stdout == "ran\n", done.stderr
    loaded = {line.split("|")[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "launch" in loaded
    assert not loaded & {"os", "posixpath", "_collections_abc", "signal", "enum", "functools", "collections"}, loaded


def test_wrap_builds_the_isolation(tmp_path, monkeypatch):
    (tmp_path / ".git" / "hooks").mkdir(parents=True)
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".netrc").write_text("machine x password y\n")
    monkeypatch.setenv("HOME", str(home))
    (tmp_path / "secret.txt").write_text("s")
    argv = wrap(["/bin/bash", "-c", "x"], cwd=str(tmp_path), roots=(str(tmp_path),), network=False, bwrap="bwrap",
                deny_read=("secret.txt",), deny_write=("locked",))
    assert argv[:4] == [sys.executable, "-I", "-S", "-c"]
    assert f"sys.path.append({str(Path(bwrap_module.__file__).parent)!r})" in argv[4]
    spec, text = marshal.loads(bytes.fromhex(argv[5])), " ".join(argv[6:])
    for flag in ("--die-with-parent", "--new-session", "--unshare-pid", "--unshare-net", "--cap-drop ALL",
                 "--ro-bind / /", "--dev /dev", "--proc /proc", "--tmpfs /tmp"):
        assert flag in text
    assert text.index("--tmpfs /tmp") < text.index(f"--bind {tmp_path} {tmp_path}")  # a root under /tmp stays
    after_roots = " ".join(argv[6:][spec["insert"]:])  # the guards go after every root, the masks after them
    assert after_roots.startswith(f"--tmpfs {home}/.ssh --remount-ro {home}/.ssh ")
    assert f"--ro-bind /dev/null {home}/.netrc" in after_roots and f"--ro-bind /dev/null {tmp_path}/secret.txt" \
        in after_roots
    assert f"{home}/.aws" not in text  # missing: nothing to hide
    guards = {g[0]: g[1:] for g in spec["guards"]}
    assert guards[f"{tmp_path}/.git"] == ("dir", "rw", "") and guards[f"{tmp_path}/.git/hooks"] == ("dir", "hold", "")
    assert guards[f"{tmp_path}/.git/commondir"] == ("file", "hold", ".\n")  # a placeholder git reads as absent
    assert guards[f"{tmp_path}/.mcp.json"] == ("file", "ro", "")  # watched when missing, no placeholder
    assert guards[f"{tmp_path}/locked"] == ("dir", "ro", "")  # sandbox.filesystem.denyWrite
    assert spec["seccomp"] and argv[-4:] == ["--", "/bin/bash", "-c", "x"]
    shared = wrap(["true"], cwd=str(tmp_path), roots=(), network=True, bwrap="bwrap")
    assert "--share-net" in shared and "--unshare-net" not in shared
    opened = wrap(["true"], cwd=str(tmp_path), roots=(), network=False, bwrap="bwrap", sockets_open=True)
    assert marshal.loads(bytes.fromhex(opened[5]))["seccomp"] is None


@pytest.mark.parametrize("section,expected", [
    ({}, SandboxConfig(enabled=True, fail_closed=False)),  # on by default
    ({"enabled": False}, SandboxConfig(enabled=False)),
    ({"enabled": True, "network": True}, SandboxConfig(enabled=True, network=True)),
    ({"enabled": True, "network": {"allowedDomains": ["example.com"]}},
     SandboxConfig(enabled=True, domains=("example.com",))),
    ({"enabled": True, "network": {"allowedDomains": ["*"]}}, SandboxConfig(enabled=True, network=True)),
    ({"network": {"allowAll": True, "allowedDomains": ["x.org"]}}, SandboxConfig(network=True)),
    ({"enabled": True, "failIfUnavailable": False}, SandboxConfig(enabled=True, fail_closed=False)),
    ({"failIfUnavailable": True}, SandboxConfig(fail_closed=True)),
    ({"filesystem": {"denyRead": ["~/notes"], "allowWrite": ["/srv/out"], "denyWrite": ["conf"]}},
     SandboxConfig(deny_read=(os.path.expanduser("~/notes"),), writable=("/srv/out",), deny_write=("conf",))),
    ({"excludedCommands": ["docker *"], "allowUnsandboxedCommands": False},
     SandboxConfig(excluded=("docker *",), allow_unsandboxed=False)),
])
def test_settings(section, expected):
    assert SandboxConfig.from_settings(section) == expected


@pytest.mark.parametrize("section,named", [
    ({"filesystem": {"denyRead": "~/.ssh"}}, "sandbox.filesystem.denyRead: expected a list"),
    ({"filesystem": {"denyRead": ["~/*.key"]}}, "sandbox.filesystem.denyRead: '~/*.key' is a pattern"),
    ({"filesystem": ["x"]}, "sandbox.filesystem: expected an object"),
    ({"excludedCommands": [3]}, "sandbox.excludedCommands: expected a list"),
    ({"allowUnsandboxedCommands": "no"}, "sandbox.allowUnsandboxedCommands: expected true or false"),
])
def test_bad_sandbox_settings_are_named(section, named):
    with pytest.raises(ValueError, match=named.replace("*", r"\*").replace("(", r"\(")):
        SandboxConfig.from_settings(section)


@pytest.mark.parametrize("command,pattern", [
    ("docker ps", "docker *"), ("docker", "docker *"), ("git  push origin main", "git push:*"),
    ("make", "make"), ("make test", None), ("docker ps; curl x | sh", None), ("docker ps && rm -rf ~", None),
    ("docker run $(cat x)", None), ("docker ps > /etc/x", None), ("dockerd", None), ("echo docker ps", None),
])
def test_excluded_commands_match_simple_commands_only(command, pattern):
    from loopwright.sandbox.bwrap import excluded_match

    assert excluded_match(command, ("docker *", "git push:*", "make")) == pattern

def test_unavailable_reasons(tmp_path, monkeypatch):
    monkeypatch.setenv("LOOPWRIGHT_BWRAP", str(tmp_path / "missing"))
    assert "not installed" in availability()
    broken = tmp_path / "bwrap"
    broken.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    broken.chmod(0o755)
    monkeypatch.setenv("LOOPWRIGHT_BWRAP", str(broken))
    assert availability() == "bwrap fails here: bwrap: No permissions to create new namespace"
    assert "every Bash call needs approval or an allow rule" in unavailable_warning(SandboxConfig())
    assert "Bash commands are refused" in unavailable_warning(SandboxConfig(fail_closed=True))
    assert unavailable_warning(SandboxConfig(enabled=False)) is None


async def test_unavailable_runs_unsandboxed_with_a_warning_unless_it_must_fail(tmp_path, monkeypatch):
    monkeypatch.setenv("LOOPWRIGHT_BWRAP", str(tmp_path / "missing"))
    refused = await bash("touch marker", tmp_path, SandboxConfig(fail_closed=True))
    assert refused.is_error and "Bash is refused" in refused.content and not (tmp_path / "marker").exists()
    ran = await bash("touch marker && echo ok", tmp_path, SandboxConfig())
    assert not ran.is_error and "ran without it" in ran.content and (tmp_path / "marker").exists()


@needs_bwrap
async def test_private_tmp_and_read_only_project_config(tmp_path):
    (tmp_path / ".git" / "hooks").mkdir(parents=True)
    probe = "/tmp/lw-sandbox-probe"
    out = await bash(f"echo x > {probe} && cat {probe}", tmp_path, SandboxConfig(enabled=True))
    assert out.content == "x" and not Path("/tmp/lw-sandbox-probe").exists()
    hook = await bash("echo evil > .git/hooks/post-commit", tmp_path, SandboxConfig(enabled=True))
    assert hook.is_error and "Read-only file system" in hook.content
    assert not (tmp_path / ".git" / "hooks" / "post-commit").exists()


@needs_bwrap
async def test_added_directories_are_writable_inside(tmp_path):
    project, extra = tmp_path / "p", Path("/var/tmp") / f"lw-extra-{os.getpid()}"
    project.mkdir()
    extra.mkdir(exist_ok=True)
    try:
        denied = await bash(f"touch {extra}/a", project, SandboxConfig(enabled=True))
        assert denied.is_error and not (extra / "a").exists()
        allowed = await bash(f"touch {extra}/a", project, SandboxConfig(enabled=True, writable=(str(extra),)))
        assert not allowed.is_error and (extra / "a").exists()
    finally:
        subprocess.run(["rm", "-rf", str(extra)], check=False)


# ------------------------------------------------------------ the Agent and CLI boundary


def test_agent_refuses_root_bypass_without_a_sandbox(monkeypatch):
    if os.geteuid() != 0:
        pytest.skip("the refusal is for root only")
    monkeypatch.delenv("LOOPWRIGHT_ALLOW_ROOT_BYPASS", raising=False)
    monkeypatch.setenv("LOOPWRIGHT_BWRAP", "/nonexistent")
    with pytest.raises(UsageError, match="refused when running as root"):
        Agent(model_client=ScriptedModel([]), permissions=PermissionRules(mode="bypassPermissions"))
    monkeypatch.setenv("LOOPWRIGHT_ALLOW_ROOT_BYPASS", "1")
    Agent(model_client=ScriptedModel([]), permissions=PermissionRules(mode="bypassPermissions"))


@needs_bwrap
def test_agent_allows_root_bypass_inside_the_sandbox(monkeypatch):
    monkeypatch.delenv("LOOPWRIGHT_ALLOW_ROOT_BYPASS", raising=False)
    Agent(model_client=ScriptedModel([]), permissions=PermissionRules(mode="bypassPermissions"),
          sandbox=SandboxConfig(enabled=True))


async def test_agent_says_after_init_that_the_sandbox_cannot_run(tmp_path, monkeypatch):
    monkeypatch.setenv("LOOPWRIGHT_BWRAP", str(tmp_path / "missing"))
    events = []
    agent = Agent(model_client=ScriptedModel(["ok"]), cwd=tmp_path, sandbox=SandboxConfig(enabled=True))
    await agent.run("hi", on_event=events.append)
    kinds = [type(e) for e in events]
    notice = kinds.index(Notice)
    assert kinds.index(SystemInit) == notice - 1 and "cannot run here" in events[notice].text


def cli(args, sim, cwd, env=None):
    e = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "LOOPWRIGHT_ALLOW"))}
    e.update(ANTHROPIC_BASE_URL=sim.base_url, ANTHROPIC_API_KEY="sk-test", **(env or {}))
    return subprocess.run(CLI + args, capture_output=True, text=True, env=e, cwd=cwd, timeout=60)


def test_cli_refuses_root_bypass_with_one_line(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("the refusal is for root only")
    with Simulator([{"text": "never"}]) as sim:
        out = cli(["-p", "hi", "--permission-mode", "bypassPermissions"], sim, tmp_path,
                  env={"LOOPWRIGHT_BWRAP": "/nonexistent"})
        assert not sim.message_requests
    assert out.returncode == 2 and out.stdout == ""
    warning, refusal = out.stderr.splitlines()  # the sandbox's one line, then the refusal's
    assert "the sandbox cannot run here" in warning and "refused when running as root" in refusal
    with Simulator([{"text": "fine"}]) as sim:
        ok = cli(["-p", "hi", "--permission-mode", "bypassPermissions"], sim, tmp_path,
                 env={"LOOPWRIGHT_ALLOW_ROOT_BYPASS": "1"})
    assert ok.returncode == 0 and ok.stdout.strip() == "fine"


def test_cli_sandbox_flag_and_add_dir(tmp_path):
    extra = tmp_path / "extra"
    extra.mkdir()
    (tmp_path / "p").mkdir()
    script = [{"tool_use": {"name": "Bash", "input": {"command": f"touch {extra}/made"}}}, {"text": "done"}]
    with Simulator(script) as sim:
        out = cli(["-p", "go", "--output-format", "json", "--permission-mode", "acceptEdits", "--add-dir", str(extra),
                   "--sandbox"], sim, tmp_path / "p")
    result = json.loads(out.stdout)
    if BWRAP is None:
        assert (extra / "made").exists() and not result["permission_denials"], out.stderr
    else:
        assert "the sandbox cannot run here" in out.stderr


def test_cli_says_once_that_the_sandbox_cannot_run_and_goes_strict(tmp_path):
    """No bwrap: one warning line at start, in text; after system/init, in stream-json. (The
    rules turning strict is the Agent's: test_no_sandbox_by_trusted_choice_...)"""
    with Simulator([{"text": "done"}]) as sim:
        out = cli(["-p", "go"], sim, tmp_path, env={"LOOPWRIGHT_BWRAP": "/nonexistent"})
        streamed = cli(["-p", "go", "--output-format", "stream-json", "--verbose"], sim, tmp_path,
                       env={"LOOPWRIGHT_BWRAP": "/nonexistent"})
    assert out.returncode == 0 and out.stdout.strip() == "done"
    assert out.stderr.splitlines() == [
        "loopwright: warning: the sandbox cannot run here (bwrap (Debian package bubblewrap) is not installed); "
        "commands run without it, and every Bash call needs approval or an allow rule (strict permissions); "
        "install bubblewrap, or turn the sandbox off with --no-sandbox"]
    lines = [json.loads(line) for line in streamed.stdout.splitlines()]
    assert lines[0]["subtype"] == "init" and lines[1]["level"] == "warning"
    assert "the sandbox cannot run here" in lines[1]["content"]


def test_no_sandbox_by_trusted_choice_says_nothing_and_stays_lenient(tmp_path, monkeypatch):
    from loopwright.agent import sandboxing

    monkeypatch.setenv("LOOPWRIGHT_BWRAP", str(tmp_path / "missing"))
    rules = PermissionRules()
    assert sandboxing.with_strictness(rules, SandboxConfig(enabled=False)) is rules
    assert sandboxing.with_strictness(rules, SandboxConfig()).strict
    agent = Agent(model_client=ScriptedModel([]), cwd=tmp_path)  # the library's default: the sandbox on
    assert agent.sandbox.enabled and agent.permissions.strict
    with Simulator([{"text": "done"}]) as sim:
        out = cli(["-p", "go", "--no-sandbox"], sim, tmp_path, env={"LOOPWRIGHT_BWRAP": "/nonexistent"})
    assert out.returncode == 0 and out.stderr == ""


def test_cli_reads_sandbox_and_directories_from_settings(tmp_path):
    extra = tmp_path / "extra"
    extra.mkdir()
    (tmp_path / "p").mkdir()
    settings = json.dumps({"sandbox": {"failIfUnavailable": True},
                           "permissions": {"additionalDirectories": [str(extra)], "defaultMode": "acceptEdits"}})
    script = [{"tool_use": {"name": "Bash", "input": {"command": f"touch {extra}/made"}}}, {"text": "done"}]
    with Simulator(script) as sim:
        out = cli(["-p", "go", "--output-format", "json", "--settings", settings], sim, tmp_path / "p",
                  env={"LOOPWRIGHT_BWRAP": "/nonexistent"})
    assert "the sandbox cannot run here" in out.stderr and "Bash commands are refused" in out.stderr
    tool_result = json.loads(out.stdout)
    assert not (extra / "made").exists() and not tool_result["permission_denials"]  # allowed, then refused by Bash


@needs_bwrap
def test_the_python_environment_stays_visible_when_it_lives_under_tmp(tmp_path, monkeypatch):
    # a CI checkout in /tmp: the private /tmp must not hide the interpreter the commands use
    env = tmp_path / "venv"
    (env / "bin").mkdir(parents=True)
    (env / "bin" / "marker").write_text("here\n")
    monkeypatch.setattr(sys, "prefix", str(env))
    argv = wrap(["cat", str(env / "bin" / "marker")], cwd=str(tmp_path), roots=(), network=False)
    out = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    assert out.stdout == "here\n", out.stderr
    write = wrap(["touch", str(env / "bin" / "new")], cwd=str(tmp_path), roots=(), network=False)
    assert subprocess.run(write, capture_output=True, timeout=30).returncode != 0  # read-only


# ------------------------------------------------------------ the unix-socket filter, decision by decision


def run_filter(prog: bytes, nr: int, arch: int, args=(0, 0)) -> int:
    """A classic-BPF interpreter for the few instructions the filter uses: what the kernel would
    return for one system call (so aarch64's program is checked on any machine)."""
    import struct

    data = struct.pack("=iIQ6Q", nr, arch, 0, *args, *[0] * (6 - len(args)))
    code = [struct.unpack("=HBBI", prog[i:i + 8]) for i in range(0, len(prog), 8)]
    acc, pc = 0, 0
    while True:
        op, jt, jf, k = code[pc]
        pc += 1
        if op == 0x20:
            acc = struct.unpack_from("=I", data, k)[0]
        elif op == 0x54:
            acc &= k
        elif op in (0x15, 0x45):
            pc += jt if (acc == k if op == 0x15 else acc & k) else jf
        elif op == 0x06:
            return k
        else:
            raise AssertionError(f"unexpected opcode {op:#x}")


@pytest.mark.parametrize("machine,arch,socket_nr,pair_nr,keyrings", [
    ("x86_64", 0xC000003E, 41, 53, (248, 249, 250)), ("aarch64", 0xC00000B7, 198, 199, (217, 218, 219))])
def test_the_socket_filter_decides(machine, arch, socket_nr, pair_nr, keyrings):
    from loopwright.sandbox.seccomp import program

    deny, allow, kill, nosys = 0x50001, 0x7FFF0000, 0x80000000, 0x50026
    off, on = program(network=False, name=machine), program(network=True, name=machine)
    assert run_filter(off, socket_nr, arch, (1, 1)) == deny  # AF_UNIX
    assert run_filter(off, socket_nr, arch, (1 | 1 << 32, 1)) == deny  # the kernel reads an int: high bits do not hide it
    assert run_filter(off, socket_nr, arch, (2, 1)) == allow  # AF_INET: the network namespace decides
    assert run_filter(off, socket_nr, arch, (40, 1)) == deny and run_filter(on, socket_nr, arch, (40, 1)) == allow
    assert run_filter(off, pair_nr, arch, (1, 1 | 0o2000000)) == allow  # a stream pair, close-on-exec
    assert run_filter(off, pair_nr, arch, (1, 2)) == deny  # a datagram pair could be pointed at a host socket
    assert run_filter(off, 425, arch) == nosys  # io_uring_setup
    for nr in keyrings:  # add_key, request_key, keyctl: the keyrings are the host's
        assert run_filter(off, nr, arch) == deny and run_filter(on, nr, arch) == deny
    assert run_filter(off, 0, arch) == allow
    assert run_filter(off, socket_nr, 0x40000003, (1, 1)) == kill  # 32-bit code: not judged, stopped
    assert run_filter(off, 0x40000000 | 41, arch, (1, 1)) == kill  # x32


def test_no_filter_is_guessed_for_an_unknown_machine():
    from loopwright.sandbox.seccomp import UnsupportedMachine, program

    with pytest.raises(UnsupportedMachine, match="riscv64"):
        program(network=False, name="riscv64")


# ------------------------------------------------------------ who may open the sandbox


def layered(tmp_path, project: dict, user: dict | None = None, flag: str | None = None):
    from loopwright.settings import load_settings

    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True, exist_ok=True)
    (tmp_path / "p" / ".claude").mkdir(parents=True, exist_ok=True)
    (tmp_path / "p" / ".claude" / "settings.json").write_text(json.dumps(project))
    if user is not None:
        (home / ".claude" / "settings.json").write_text(json.dumps(user))
    env = {"HOME": str(home), "LOOPWRIGHT_HOME": str(tmp_path / "lw")}
    return load_settings(tmp_path / "p", settings=flag, env=env), env


@pytest.mark.parametrize("section,dropped", [
    ({"enabled": True, "network": {"allowAll": True}}, "sandbox.network"),
    ({"enabled": True, "network": {"allowUnixSockets": ["/run/docker.sock"]}}, "sandbox.network"),
    ({"enabled": True, "network": {"allowedDomains": ["pypi.org", "*.github.com"]}}, "sandbox.network"),
    ({"enabled": True, "network": True}, "sandbox.network"),
    ({"enabled": False}, "sandbox.enabled"),
    ({"enabled": True, "failIfUnavailable": False}, "sandbox.failIfUnavailable"),
    ({"excludedCommands": ["docker *"]}, "sandbox.excludedCommands"),
    ({"allowUnsandboxedCommands": True}, "sandbox.allowUnsandboxedCommands"),
    ({"filesystem": {"allowWrite": ["/"], "denyRead": []}}, "sandbox.filesystem.allowWrite"),
])
@pytest.mark.parametrize("user", [{"sandbox": {"enabled": True}}, None])
def test_a_project_file_cannot_turn_off_or_open_the_sandbox(tmp_path, monkeypatch, section, dropped, user):
    from loopwright.settings import sandbox_config

    settings, env = layered(tmp_path, {"sandbox": section}, user=user)
    monkeypatch.setenv("HOME", env["HOME"])
    assert sandbox_config(settings, None) == SandboxConfig()
    named = [str(f) for f in settings.findings if f.key.startswith(dropped)]
    assert len(named) == 1 and ".claude/settings.json" in named[0] and "never turn it off, open or weaken" in named[0]


def test_a_project_file_may_tighten_the_sandbox(tmp_path, monkeypatch):
    from loopwright.settings import sandbox_config

    tighter = {"failIfUnavailable": True, "allowUnsandboxedCommands": False,
               "filesystem": {"denyRead": ["secrets"], "denyWrite": ["build.sh"]}}
    settings, env = layered(tmp_path, {"sandbox": tighter})
    monkeypatch.setenv("HOME", env["HOME"])
    assert settings.findings == ()
    assert sandbox_config(settings, None) == SandboxConfig(fail_closed=True, allow_unsandboxed=False,
                                                           deny_read=("secrets",), deny_write=("build.sh",))


@pytest.mark.parametrize("where", ["user", "flag"])
def test_trusted_settings_may_turn_the_sandbox_off_and_the_flag_back_on(tmp_path, monkeypatch, where):
    from loopwright.settings import sandbox_config

    off = {"sandbox": {"enabled": False}}
    settings, env = layered(tmp_path, {}, user=off if where == "user" else None,
                            flag=json.dumps(off) if where == "flag" else None)
    monkeypatch.setenv("HOME", env["HOME"])
    assert not sandbox_config(settings, None).enabled and sandbox_config(settings, True).enabled


def test_user_settings_and_flags_may_open_it(tmp_path, monkeypatch):
    from loopwright.settings import sandbox_config

    user = {"sandbox": {"enabled": True, "network": {"allowAllUnixSockets": True, "allowedDomains": ["pypi.org"]}}}
    flag = json.dumps({"sandbox": {"network": {"allowUnixSockets": ["/run/x.sock"], "allowedDomains": ["*.github.com"]},
                                   "failIfUnavailable": False}})
    project = {"sandbox": {"network": {"allowedDomains": ["evil.example"]}}}
    settings, env = layered(tmp_path, project, user=user, flag=flag)
    monkeypatch.setenv("HOME", env["HOME"])
    config = sandbox_config(settings, None)
    assert [f.key for f in settings.findings] == ["sandbox.network"]  # the project's list only
    assert config.all_unix_sockets and config.unix_sockets == ("/run/x.sock",)
    assert config.domains == ("pypi.org", "*.github.com") and not config.network  # the lists add up
    assert not config.fail_closed and config.sockets_open
    off = sandbox_config(settings, False)
    assert not off.enabled  # --no-sandbox beats every file


def test_cli_names_the_project_file_that_tried(tmp_path):
    (tmp_path / ".loopwright").mkdir()
    (tmp_path / ".loopwright" / "settings.json").write_text(json.dumps({"sandbox": {"network": {"allowAll": True}}}))
    with Simulator([{"text": "done"}]) as sim:
        out = cli(["-p", "go", "--sandbox"], sim, tmp_path)
    assert out.returncode == 0, out.stderr
    assert ".loopwright/settings.json: sandbox.network: ignored: a project may keep the sandbox on and tighten it, " \
        "never turn it off, open or weaken it" in out.stderr
    assert out.stderr.count("sandbox.network") == 1  # named once


# ------------------------------------------------------------ schedules


@needs_bwrap
@pytest.mark.parametrize("flags,sees", [([], "HIDDEN"), (["--no-sandbox"], "VISIBLE")])
def test_a_schedules_fire_runs_in_the_sandbox_by_default(tmp_path, flags, sees):
    marker = tmp_path / "host-tmp-marker"  # under the host's /tmp: hidden by the sandbox's private /tmp
    marker.touch()
    (tmp_path / "p").mkdir()
    env = {"LOOPWRIGHT_HOME": str(tmp_path / "home")}
    command = f"if [ -e {marker} ]; then echo VISIBLE > seen.txt; else echo HIDDEN > seen.txt; fi"
    with Simulator([{"tool_use": {"name": "Bash", "input": {"command": command}}}, {"text": "done"}]) as sim:
        added = cli(["schedule", "add", "look", "--every", "1h", "--now", "--", "--allowedTools", "Bash", *flags],
                    sim, tmp_path / "p", env=env)
        assert added.returncode == 0, added.stderr
        served = cli(["scheduler", "--once"], sim, tmp_path / "p", env=env)
    assert served.returncode == 0, served.stderr
    assert (tmp_path / "p" / "seen.txt").read_text().strip() == sees, served.stdout


@needs_bwrap
def test_a_goal_check_in_a_project_it_cannot_guard_fails_saying_why(tmp_path):
    (tmp_path / ".git").write_text("gitdir: ../nowhere\n")
    agent = Agent(model_client=ScriptedModel([]), cwd=tmp_path, sandbox=SandboxConfig(enabled=True))
    argv = agent.check_wrapper()("true")
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    assert done.returncode == 126 and "the sandbox cannot guard this project" in done.stderr


def test_a_placeholder_file_appears_whole(tmp_path, monkeypatch):
    """Regression (seen as a refused Bash call under load): another sandbox, being set up at the
    same moment, read a `commondir` placeholder created but not yet written, took its empty text
    for a broken pointer and refused its command. A placeholder now appears with its content."""
    import threading

    from loopwright.sandbox import launch

    target = tmp_path / "commondir"
    writing, go, seen = threading.Event(), threading.Event(), []
    real_write = os.write

    def paused_write(fd, data):
        if threading.current_thread().name == "placing":  # (this test's thread only)
            writing.set()
            go.wait(10)
        return real_write(fd, data)

    monkeypatch.setattr(launch.posix, "write", paused_write)  # the launcher calls posix, not os
    placing = threading.Thread(target=launch._make_placeholder, args=(str(target), "file", ".\n"), name="placing")
    placing.start()
    assert writing.wait(10)
    seen.append(target.read_text() if target.exists() else None)  # what a reader sees mid-write
    go.set()
    placing.join(10)
    assert seen == [None]
    assert target.read_text() == ".\n" and target.stat().st_mtime_ns == launch.MARK_NS
    assert sorted(p.name for p in tmp_path.iterdir()) == ["commondir"]  # nothing else left beside it


@needs_bwrap
def test_sandboxes_set_up_together_in_a_folder_without_git_all_run(tmp_path):
    """Many commands started at once in a project with no `.git`: each sandbox makes and removes
    placeholders there while the others read them; none is refused."""
    from concurrent.futures import ThreadPoolExecutor

    project = tmp_path / "p"
    project.mkdir()

    def one(k: int) -> str:
        argv = wrap(["/bin/sh", "-c", f"echo ok{k}"], cwd=str(project), roots=(str(project),), network=False)
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, cwd=project)
        return done.stdout.strip() if done.returncode == 0 else f"{k}: exit {done.returncode}: {done.stderr}"

    with ThreadPoolExecutor(6) as pool:
        outcomes = list(pool.map(one, range(48)))
    assert outcomes == [f"ok{k}" for k in range(48)]
    assert not (project / ".git").exists()  # every placeholder removed once the last command ended


@needs_bwrap
def test_sandboxes_of_two_homes_set_up_together_in_one_folder_all_run(tmp_path, monkeypatch):
    """Two loopwrights with homes of their own (two workers, say) start commands at once in one
    project with no `.git`: a placeholder one of them made is never removed under the other's
    sandbox, so none is refused (the locks that guard placeholders are shared by every home)."""
    from concurrent.futures import ThreadPoolExecutor

    project = tmp_path / "p"
    project.mkdir()
    argvs = []
    for k in range(48):
        monkeypatch.setenv("LOOPWRIGHT_HOME", str(tmp_path / f"home-{k % 2}"))
        argvs.append(wrap(["/bin/sh", "-c", f"echo ok{k}"], cwd=str(project), roots=(str(project),), network=False))

    def one(k: int) -> str:
        done = subprocess.run(argvs[k], capture_output=True, text=True, timeout=60, cwd=project)
        return done.stdout.strip() if done.returncode == 0 else f"{k}: exit {done.returncode}: {done.stderr}"

    with ThreadPoolExecutor(6) as pool:
        outcomes = list(pool.map(one, range(48)))
    assert outcomes == [f"ok{k}" for k in range(48)]
    assert not (project / ".git").exists()
