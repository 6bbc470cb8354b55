"""Running shell commands under bubblewrap: the filesystem read-only except the writable roots,
protected paths pinned read-only inside them (present or not), a private /tmp, no capabilities,
no network and no host unix sockets unless trusted settings open them, everything killed with
its parent. `launch.py` starts each command; `protect.py` says what is guarded; `seccomp.py`
builds the socket filter."""

from __future__ import annotations

import os
import sys
from functools import lru_cache
from typing import Any, Mapping

from ..core.fastclass import dataclass

__all__ = ["SandboxConfig", "active", "availability", "bwrap_path", "unavailable_warning", "wrap"]

PROBE_TIMEOUT_S = 10.0
LAUNCHER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "launch.py")


@dataclass(frozen=True, slots=True)
class SandboxConfig:
    """`enabled`: run every Bash command under bwrap. `network`: keep the host's network (off:
    a private one with only its own loopback). `domains`: with the network off, the hosts
    commands may still reach through loopwright's proxy (`proxy.py`; patterns: `domains.py`).
    `fail_closed`: when bwrap cannot run, refuse Bash instead of running unsandboxed.
    `writable`: more writable roots than the session's.
    `unix_sockets`: the host unix sockets the user named (`allowUnixSockets`), `all_unix_sockets`
    (`allowAllUnixSockets`): either one lets commands create unix sockets — Linux's filter sees
    a socket's family, not the path it connects to, so naming one socket opens them all."""

    enabled: bool = False
    network: bool = False
    fail_closed: bool = True
    writable: tuple[str, ...] = ()
    unix_sockets: tuple[str, ...] = ()
    all_unix_sockets: bool = False
    domains: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.domains:  # a bad pattern fails here, naming itself, not at the first command
            from .domains import Allowlist

            Allowlist.parse(self.domains)

    @property
    def sockets_open(self) -> bool:
        return self.all_unix_sockets or bool(self.unix_sockets)

    @classmethod
    def from_settings(cls, section: Mapping[str, Any], *, writable: tuple[str, ...] = ()) -> SandboxConfig:
        """From settings' `sandbox` object: `enabled`, `network` (true, or an object with
        `allowAll: true` or `"*"` in `allowedDomains` for the whole network, else the hosts
        `allowedDomains` lists through the proxy; `allowUnixSockets: [paths]` and
        `allowAllUnixSockets: true` as in Claude Code) and `failIfUnavailable` (default true).
        Which settings files may open what is decided by the caller (`config.sandbox_settings`)."""
        net = section.get("network")
        sockets: tuple[str, ...] = ()
        every_socket = False
        domains: tuple[str, ...] = ()
        if isinstance(net, Mapping):
            sockets = tuple(str(p) for p in net.get("allowUnixSockets") or () if isinstance(p, str))
            every_socket = net.get("allowAllUnixSockets") is True
            domains = tuple(d for d in net.get("allowedDomains") or () if isinstance(d, str))
            net = net.get("allowAll") is True or "*" in domains
        return cls(section.get("enabled") is True, net is True, section.get("failIfUnavailable") is not False,
                   writable, sockets, every_socket, () if net is True else domains)


def bwrap_path() -> str | None:
    """`LOOPWRIGHT_BWRAP` names another binary (tests use it to see the unavailable path)."""
    configured = os.environ.get("LOOPWRIGHT_BWRAP")
    if configured is not None:
        return configured if os.access(configured, os.X_OK) else None
    import shutil

    return shutil.which("bwrap")


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
         sockets_open: bool = False) -> list[str]:
    """`argv` as the launcher's command line around bwrap. Order matters: later mounts cover
    earlier ones, so the roots are bound after the private /tmp (a root under /tmp stays
    visible and writable) and the guards after the roots. Raises `Unprotectable` when a `.git`
    file cannot be followed, `UnsupportedMachine` when no socket filter is known here."""
    import marshal

    from ..core.home import home, make_private_dirs
    from .protect import excludes, guards
    from .seccomp import program

    args = [_absolute(bwrap or bwrap_path() or "bwrap"), *_isolation(network),
            "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    for keep in _toolchain_under_tmp():
        args += ["--ro-bind", keep, keep]
    real_roots = list(dict.fromkeys(os.path.realpath(r) for r in roots if os.path.isdir(r)))
    for root in real_roots:
        args += ["--bind", root, root]
    own = os.path.realpath(home())
    locks = make_private_dirs(os.path.join(own, "sandbox"))
    user_home = os.path.realpath(os.path.expanduser("~"))
    spec = {"guards": [g.spec() for g in guards(real_roots, home=user_home, own_home=own)],
            "seccomp": None if sockets_open else program(network=network),
            "excludes": excludes(real_roots), "locks": str(locks), "insert": len(args)}
    args += ["--chdir", os.path.realpath(cwd), "--", *argv]
    return [sys.executable, "-I", "-S", LAUNCHER, marshal.dumps(spec).hex(), *args]


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
    places = (sys.prefix, sys.base_prefix, os.path.dirname(os.path.realpath(sys.executable)))
    found = [os.path.realpath(p) for p in places]
    return list(dict.fromkeys(p for p in found if p.startswith("/tmp/") and os.path.isdir(p)))


def active(config: SandboxConfig | None) -> bool:
    """The sandbox is on and bwrap runs here."""
    return config is not None and config.enabled and availability() is None


def unavailable_warning(config: SandboxConfig | None) -> str | None:
    """One line for the user when the sandbox was asked for but cannot run; None otherwise."""
    if config is None or not config.enabled or (why := availability()) is None:
        return None
    then = ("Bash commands are refused" if config.fail_closed
            else "Bash commands run WITHOUT it (sandbox.failIfUnavailable is false)")
    return f"the sandbox is on but cannot run here ({why}); {then}"
