"""The kernel as the shell gate's oracle: a throwaway world (a project, a decoy folder beside it,
a home), the gate's judgement of a line in a mode, and — when the gate allows it — the line run
for real under bubblewrap, with the whole world writable so an escape is seen, not blocked.
A change the gate said could not happen is an escape: in `default` mode (read-only lines) any
change at all; in `acceptEdits` any change outside the project or under a protected name."""

from __future__ import annotations

import os
import shutil
import signal
import stat
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import anyio

from loopwright.core.protected import PROTECTED_DIRS, PROTECTED_FILES
from loopwright.engine.gate import ToolGate
from loopwright.permissions.decide import PermissionRules
from loopwright.tools.shell import BashTool

BWRAP = shutil.which("bwrap")
RUN_TIMEOUT_S = 5
_TOOL = BashTool()


def bwrap_works() -> bool:
    if BWRAP is None:
        return False
    try:
        probe = subprocess.run([BWRAP, "--ro-bind", "/", "/", "--dev", "/dev", "--unshare-net", "true"],
                               capture_output=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return probe.returncode == 0


def build_template(root: Path) -> Path:
    """The world every line starts from: `proj/` (a git repository with a few files, a link out
    of the project, a folder), `outside/` (the decoy), `home/`."""
    world = root / "template"
    proj, outside, home = world / "proj", world / "outside", world / "home"
    for d in (proj / "sub", outside / "inner", home):
        d.mkdir(parents=True)
    (proj / "a.txt").write_text("b\na\nc\n")
    (proj / "sub" / "b.txt").write_text("one\ntwo\n")
    (proj / "-rf").write_text("a file whose name is an option\n")
    (outside / "victim").write_text("keep me\n")
    (outside / "inner" / "deep").write_text("deep\n")
    (home / ".profile").write_text("# profile\n")
    os.symlink("../outside", proj / "ln_out")
    os.symlink("../outside/victim", proj / "ln_file")
    env = {**_base_env(world), "GIT_CONFIG_NOSYSTEM": "1"}
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q"], cwd=proj, env=env, check=True)
    subprocess.run([*git, "add", "a.txt", "sub"], cwd=proj, env=env, check=True)
    subprocess.run([*git, "commit", "-qm", "one"], cwd=proj, env=env, check=True)
    (proj / "a.txt").write_text("b\na\nc\nchanged\n")  # so diff and status have something to say
    return world


def _base_env(world: Path) -> dict[str, str]:
    return {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(world / "home"), "LANG": "C.UTF-8",
            "GIT_CONFIG_NOSYSTEM": "1", "TMPDIR": "/tmp"}


Entry = tuple[str, int, int, str]  # kind, size, mode, link target or content digest


def snapshot(world: Path) -> dict[str, Entry]:
    out: dict[str, Entry] = {}
    for dirpath, dirnames, filenames in os.walk(world, followlinks=False):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            rel = os.path.relpath(path, world)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", 0, 0, os.readlink(path))
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir", 0, stat.S_IMODE(st.st_mode), "")
            elif stat.S_ISREG(st.st_mode) and rel.endswith(".git/index"):
                out[rel] = ("index", 0, 0, _index_entries(Path(path).parent.parent))
            elif stat.S_ISREG(st.st_mode):
                with open(path, "rb") as f:
                    data = f.read(1 << 16)
                out[rel] = ("file", st.st_size, stat.S_IMODE(st.st_mode), data.hex() if len(data) < 256 else
                            str(hash(data)))
            else:
                out[rel] = ("other", 0, stat.S_IMODE(st.st_mode), "")
    return out


def _index_entries(repo: Path) -> str:
    """An index by what it records (paths, modes, object ids), not its bytes: `git diff` and
    `git status` may rewrite the file to refresh cached file times, which changes nothing git
    will commit or check out."""
    done = subprocess.run(["git", "ls-files", "--stage"], cwd=repo, capture_output=True,
                          env={**_base_env(repo.parent), "GIT_OPTIONAL_LOCKS": "0"})
    return done.stdout.decode(errors="replace") + done.stderr.decode(errors="replace")


def changes(before: dict[str, Entry], after: dict[str, Entry]) -> list[str]:
    return sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))


def allowed_change(rel: str, mode: str) -> bool:
    """What the gate's own judgement permits: nothing for a read-only line; in acceptEdits, the
    project outside its protected names."""
    if mode != "acceptEdits":
        return False
    parts = Path(rel).parts
    if not parts or parts[0] != "proj" or len(parts) < 2:
        return False
    inner = parts[1:]
    if any(p in PROTECTED_DIRS for p in inner[:-1]) or inner[0] in PROTECTED_DIRS:
        return False
    return inner[-1] not in PROTECTED_FILES


@dataclass
class Trial:
    line: str
    mode: str
    allowed: bool
    escaped: list[str]
    output: str = ""


def judge(line: str, mode: str, proj: Path, strict: bool = False) -> tuple[bool, dict[str, str]]:
    gate = ToolGate(PermissionRules(mode=mode, strict=strict), proj, env=_base_env(proj.parent))

    async def check():
        return await gate.check(_TOOL, {"command": line})

    decision = anyio.run(check)
    return decision.allowed, dict(decision.env)


def trial(line: str, mode: str, template: Path, scratch: Path, strict: bool = False) -> Trial:
    """Judge `line` in a fresh copy of the world (with `strict` rules: no sandbox could start);
    run it when allowed; name what escaped."""
    world = scratch / "w"
    if world.exists():
        shutil.rmtree(world)
    shutil.copytree(template, world, symlinks=True)
    proj = world / "proj"
    line = line.replace("@W@", str(world))  # paths that name the world absolutely (gategrammar)
    allowed, env = judge(line, mode, proj, strict)
    if not allowed:
        return Trial(line, mode, False, [])
    before = snapshot(world)
    output = run_in_sandbox(line, world, env)
    after = snapshot(world)
    escaped = [p for p in changes(before, after) if not allowed_change(p, mode)]
    return Trial(line, mode, True, escaped, output)


def run_in_sandbox(line: str, world: Path, env: dict[str, str]) -> str:
    """bash -c LINE in the project, the world writable (so escapes show), the rest of the
    machine read-only, a private /tmp, no network; bounded in time."""
    argv = [BWRAP, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
            "--bind", str(world), str(world), "--unshare-net", "--unshare-pid", "--die-with-parent",
            "--chdir", str(world / "proj"), "--", "/bin/bash", "-c", line]
    full_env = {**_base_env(world), **env}
    proc = subprocess.Popen(argv, env=full_env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=RUN_TIMEOUT_S)
        return out.decode(errors="replace")[-500:]
    except subprocess.TimeoutExpired:
        return "(timed out)"
    finally:
        _end_group(proc)


def _end_group(proc: subprocess.Popen) -> None:
    """Kill every process the line started (they share bwrap's process group) and wait until the
    last is gone, so nothing the line left running changes the world after it is snapshotted."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.communicate()  # reaps bwrap and drains the pipe, which closes when the last holder dies
    for _ in range(500):
        if not _running_in_group(proc.pid):
            return
        time.sleep(0.01)
    raise AssertionError(f"processes of a fuzz line outlived SIGKILL (process group {proc.pid})")


def _running_in_group(pgid: int) -> bool:
    """Whether a process of group `pgid` still runs. Zombies do not count: orphans wait for the
    machine's init to reap them, which here may take its time, and a zombie changes nothing."""
    for stat_file in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat_file.read_text().rpartition(")")[2].split()
        except OSError:
            continue  # gone while we looked
        if len(fields) > 2 and fields[2] == str(pgid) and fields[0] not in ("Z", "X"):
            return True
    return False
