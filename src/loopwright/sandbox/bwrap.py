"""Running shell commands under bubblewrap — the default boundary of every command the model
starts: the filesystem read-only except the writable roots, protected paths inside them pinned
read-only (and set aside when a command creates one that was missing), other programs'
credentials and loopwright's own home hidden, a private /tmp, no capabilities, no kernel
keyrings, no network and no host unix sockets unless trusted settings open them, everything
killed with its parent. `launch.py` starts each command; `protect.py` says what is guarded; `seccomp.py`
builds the socket filter."""

from __future__ import annotations

import os
import sys
from functools import lru_cache
from typing import Any, Mapping

from ..core.sandboxconfig import SandboxConfig

__all__ = ["SECRETS", "Launch", "SandboxConfig", "active", "availability", "bwrap_path", "escape_reason", "excluded_match",
           "unavailable_warning", "wrap"]

PROBE_TIMEOUT_S = 10.0
LAUNCHER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "launch.py")
# The launcher is imported, not run by path, so its compiled bytecode is used (a script run by path
# is compiled on every start): its own folder is searched after the standard library's, so nothing
# there shadows a standard module. `-I -S`: no environment variables, user site or site-packages.
_LAUNCH = (f"import sys; sys.path.append({os.path.dirname(LAUNCHER)!r}); "
           "from launch import main; main(sys.argv)")


# Credentials of other programs: hidden inside the sandbox (an empty read-only folder, or
# /dev/null for a file), wherever the home is. loopwright's own home joins them in `wrap`.
SECRETS = (".ssh", ".aws", ".gnupg", ".config/gcloud", ".kube", ".docker/config.json", ".netrc", ".npmrc",
           ".pypirc", ".git-credentials")


def escape_reason(tool_input: Mapping[str, Any], config: SandboxConfig | None) -> str:
    """Why a Bash call would run outside the sandbox that is on: its `dangerouslyDisableSandbox`
    or a matching `excludedCommands` pattern; empty when it runs inside (or no sandbox is on).
    The permission gate asks about such a call; the tool runs it outside once allowed."""
    if config is None or not config.enabled:
        return ""
    if tool_input.get("dangerouslyDisableSandbox") is True:
        return "the call sets dangerouslyDisableSandbox"
    command = tool_input.get("command")
    if isinstance(command, str) and (pattern := excluded_match(command, config.excluded)) is not None:
        return f"it matches sandbox.excludedCommands {pattern!r}"
    return ""


# What a command prints when the sandbox stopped it (a heuristic on its output: the kernel's error
# texts as the C library and common tools word them), and the line added to its result.
_READ_ONLY = ("Read-only file system", "Device or resource busy")
_OFFLINE = ("Could not resolve host", "Temporary failure in name resolution", "Name or service not known",
            "Network is unreachable", "getaddrinfo failed", "nodename nor servname", "No address associated")


def blocked_hint(output: str, config: SandboxConfig) -> str | None:
    """One line for a failed sandboxed command whose output suggests the sandbox stopped it —
    a write to a read-only place, or the network being off — naming what would allow it; None
    when nothing suggests so. A guess from the error texts: the sandbox cannot see which call
    failed, and the permission gate's own denials already say why."""
    if any(t in output for t in _READ_ONLY):
        return ("(the sandbox blocked a write: only the working folder and added directories (--add-dir, "
                "sandbox.filesystem.allowWrite in your user settings) are writable, and protected paths in them "
                "(.git's config and hooks, .claude, .vscode, .mcp.json, ...) stay read-only)")
    if not config.network and any(t in output for t in _OFFLINE):
        return ("(the sandbox blocked the network: commands have none unless your user settings allow it: "
                "sandbox.network true for all of it, or sandbox.network.allowedDomains for listed hosts)")
    return None


def excluded_match(command: str, patterns: tuple[str, ...]) -> str | None:
    """The `excludedCommands` pattern a command line matches, or None. Patterns read as Bash
    rules do: `docker *` or legacy `docker:*` is the word and anything after it, other `*`s
    match anything, no `*` is the exact command. Only a simple command may match: a line with
    shell syntax (`;`, `&&`, `|`, `$`, backquotes, redirections, newlines …) stays inside the
    sandbox, whatever it starts with (`docker ps; curl x | sh` must not ride out with docker)."""
    import re

    if not patterns or any(c in command for c in ";&|$`<>(){}\n\\'\"*?[#~"):
        return None
    words = " ".join(command.split())
    for pattern in patterns:
        spec = " ".join(pattern.split())
        if spec.endswith(":*"):
            spec = spec[:-2] + " *"
        tail = spec.endswith(" *")
        body = spec[:-2] if tail else spec
        regex = ".*".join(re.escape(p) for p in body.split("*")) + ("(?: .*)?" if tail else "")
        if re.fullmatch(regex, words, re.DOTALL):
            return pattern
    return None


def bwrap_path() -> str | None:
    """`LOOPWRIGHT_BWRAP` names another binary (tests use it to see the unavailable path)."""
    configured = os.environ.get("LOOPWRIGHT_BWRAP")
    if configured is not None:
        return configured if os.access(configured, os.X_OK) else None
    return _which_bwrap(os.environ.get("PATH"))


@lru_cache(maxsize=4)
def _which_bwrap(path: str | None) -> str | None:
    """Looked up once per PATH: each command asks (twice), and a PATH search is a stat per entry."""
    import shutil

    return shutil.which("bwrap", path=path)


def availability() -> str | None:
    """None when bwrap runs here, with the socket filter; otherwise why not, in one line."""
    return _probe(bwrap_path())


@lru_cache(maxsize=4)
def _probe(path: str | None) -> str | None:
    import subprocess

    from .seccomp import UnsupportedMachine, program

    if path is None:
        return "bwrap (Debian package bubblewrap) is not installed"
    try:
        prog = program(network=False)
    except UnsupportedMachine as exc:
        return str(exc)
    read, write = os.pipe()
    os.write(write, prog)
    os.close(write)
    argv = [path, *_isolation(network=False), "--seccomp", str(read), "--ro-bind", "/", "/", "--dev", "/dev",
            "--proc", "/proc", "true"]
    try:
        done = subprocess.run(argv, capture_output=True, timeout=PROBE_TIMEOUT_S, stdin=subprocess.DEVNULL,
                              pass_fds=(read,))
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap could not start: {exc}"
    finally:
        os.close(read)
    if done.returncode != 0:
        detail = done.stderr.decode("utf-8", "replace").strip().splitlines()
        return f"bwrap fails here: {detail[-1] if detail else f'exit code {done.returncode}'}"
    return None


def _isolation(network: bool) -> list[str]:
    # --cap-drop ALL: run by root, bwrap would leave the command every capability, and with
    # CAP_SYS_ADMIN it could simply unmount the read-only binds.
    return ["--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc", "--cap-drop", "ALL",
            "--share-net" if network else "--unshare-net"]


def wrap(argv: list[str], *, cwd: str, roots: tuple[str, ...], network: bool, bwrap: str | None = None,
         sockets_open: bool = False, deny_read: tuple[str, ...] = (), deny_write: tuple[str, ...] = (),
         pass_fds: tuple[int, ...] = (), visible: tuple[str, ...] = ()) -> Launch:
    """`argv` as the launcher's command line around bwrap. Order matters: later mounts cover
    earlier ones, so the roots are bound after the private /tmp (a root under /tmp stays
    visible and writable), the guards after the roots and the hidden paths (`SECRETS`,
    loopwright's home, `deny_read`) last. `deny_write`: more paths kept read-only inside the
    roots. `pass_fds`: descriptors the command inherits (every other one is closed); `visible`:
    folders kept in sight read-only even under the private /tmp (a plugin's own folder). Raises
    `Unprotectable` when a `.git` file cannot be followed, `UnsupportedMachine` when no socket
    filter is known here."""
    import marshal

    from ..core.home import home, make_private_dirs
    from .protect import guards
    from .seccomp import program

    args = [_absolute(bwrap or bwrap_path() or "bwrap"), *_isolation(network),
            "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    shown = [os.path.realpath(v) for v in visible if os.path.isdir(v)]
    for keep in dict.fromkeys([*_toolchain_under_tmp(), *(v for v in shown if v.startswith("/tmp/"))]):
        args += ["--ro-bind", keep, keep]
    real_roots = list(dict.fromkeys(os.path.realpath(r) for r in roots if os.path.isdir(r)))
    for root in real_roots:
        args += ["--bind", root, root]
    own = os.path.realpath(home())
    locks = make_private_dirs(os.path.join(own, "sandbox"))
    shared = shared_lock_folder(str(locks))
    user_home = os.path.realpath(os.path.expanduser("~"))
    extra = [os.path.realpath(os.path.join(cwd, p)) for p in deny_write]
    spec = {"guards": [g.spec() for g in guards(real_roots, home=user_home, own_home=own, extra=extra)],
            "seccomp": None if sockets_open else program(network=network), "locks": str(locks),
            "shared": shared,
            "insert": len(args), "cwd": os.path.realpath(cwd), "pass": list(pass_fds)}
    hidden = [os.path.join(user_home, s) for s in SECRETS] + [own] + [os.path.join(cwd, p) for p in deny_read]
    args += _masks(hidden, real_roots)
    args += ["--chdir", os.path.realpath(cwd), "--", *argv]
    return Launch([sys.executable, "-I", "-S", "-c", _LAUNCH, marshal.dumps(spec).hex(), *args], spec, args)


class Launch(list[str]):
    """The launcher's command line for one sandboxed command (what `wrap` returns: run it as any
    command line), which also keeps its parts — the launcher's `spec` and the `bwrap` line
    without the guards' mounts — for a spawner that does the launcher's work through the warm
    helper instead (`warm.spawn`)."""

    def __init__(self, argv: list[str], spec: dict[str, Any], bwrap: list[str]) -> None:
        super().__init__(argv)
        self.spec, self.bwrap = spec, bwrap


def shared_lock_folder(fallback: str) -> str:
    """Where the locks around placeholders live: one folder for every loopwright of this user,
    whatever its home (two workers with homes of their own, in one project, must not remove a
    placeholder under each other's sandbox). `/tmp/loopwright-UID`, made private; when it cannot
    be made or is not this user's own (squatted by another user), `fallback` (the home's)."""
    import stat

    from ..core.home import make_private_dirs

    folder = f"/tmp/loopwright-{os.geteuid()}"
    try:
        make_private_dirs(folder)
        st = os.lstat(folder)
    except OSError:
        return fallback
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
        return fallback
    return folder


def _masks(paths: list[str], roots: list[str]) -> list[str]:
    """bwrap arguments that hide each existing path: a folder under an empty read-only tmpfs, a
    file under /dev/null (read-only). A missing one is left alone: outside the roots nothing can
    create it, inside them a protected name is set aside by the launcher when it appears. A
    path holding a root is not hidden (it would hide the work)."""
    from .protect import inside

    out: list[str] = []
    for path in dict.fromkeys(os.path.realpath(p) for p in paths):
        if any(inside(r, path) for r in roots):
            continue
        if os.path.isdir(path):
            out += ["--tmpfs", path, "--remount-ro", path]
        elif os.path.exists(path):
            out += ["--ro-bind", "/dev/null", path]
    return out


def _absolute(program: str) -> str:
    """The launcher `exec`s bwrap without a PATH search."""
    if os.sep in program:
        return program
    import shutil

    return shutil.which(program) or program


def _toolchain_under_tmp() -> list[str]:
    """The Python environment loopwright itself runs from, when it lives under /tmp (a CI
    checkout, a throwaway venv): the private /tmp would hide it from commands, so it stays
    visible, read-only."""
    return list(_toolchain(sys.prefix, sys.base_prefix, sys.executable))


@lru_cache(maxsize=4)
def _toolchain(prefix: str, base_prefix: str, executable: str) -> tuple[str, ...]:
    """`_toolchain_under_tmp` for these places, resolved once (four path resolutions a command)."""
    places = (prefix, base_prefix, os.path.dirname(os.path.realpath(executable)))
    found = [os.path.realpath(p) for p in places]
    return tuple(dict.fromkeys(p for p in found if p.startswith("/tmp/") and os.path.isdir(p)))


def active(config: SandboxConfig | None) -> bool:
    """The sandbox is on and bwrap runs here."""
    return config is not None and config.enabled and availability() is None


def unavailable_warning(config: SandboxConfig | None) -> str | None:
    """One line for the user when the sandbox is on but cannot run; None otherwise."""
    if config is None or not config.enabled or (why := availability()) is None:
        return None
    then = ("Bash commands are refused (sandbox.failIfUnavailable is true)" if config.fail_closed
            else "commands run without it, and every Bash call needs approval or an allow rule (strict "
                 "permissions); install bubblewrap, or turn the sandbox off with --no-sandbox")
    return f"the sandbox cannot run here ({why}); {then}"
