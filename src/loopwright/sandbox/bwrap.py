"""Running shell commands under bubblewrap: the filesystem read-only except the writable roots,
a private /tmp, no network unless allowed, everything killed with its parent."""

from __future__ import annotations

import os
import sys
from functools import lru_cache
from typing import Any, Mapping

from ..core.fastclass import dataclass

__all__ = ["SandboxConfig", "active", "availability", "bwrap_path", "unavailable_warning", "wrap"]

PROBE_TIMEOUT_S = 10.0
# Inside a writable root these stay read-only: a command could otherwise plant code that runs
# later outside the sandbox (git hooks, hooks in settings files).
KEEP_READ_ONLY = (".git/hooks", ".git/config", ".loopwright", ".claude/settings.json",
                  ".claude/settings.local.json")


@dataclass(frozen=True, slots=True)
class SandboxConfig:
    """`enabled`: run every Bash command under bwrap. `network`: keep the host's network (off:
    a private one with only its own loopback). `fail_closed`: when bwrap cannot run, refuse
    Bash instead of running unsandboxed. `writable`: more writable roots than the session's."""

    enabled: bool = False
    network: bool = False
    fail_closed: bool = True
    writable: tuple[str, ...] = ()

    @classmethod
    def from_settings(cls, section: Mapping[str, Any], *, writable: tuple[str, ...] = ()) -> SandboxConfig:
        """From settings' `sandbox` object: `enabled`, `network` (true, or an object with
        `allowAll: true` or `"*"` in `allowedDomains`; per-domain filtering is not supported,
        so anything else keeps the network off) and `failIfUnavailable` (default true)."""
        net = section.get("network")
        if isinstance(net, Mapping):
            net = net.get("allowAll") is True or "*" in (net.get("allowedDomains") or ())
        return cls(section.get("enabled") is True, net is True, section.get("failIfUnavailable") is not False,
                   writable)


def bwrap_path() -> str | None:
    """`LOOPWRIGHT_BWRAP` names another binary (tests use it to see the unavailable path)."""
    configured = os.environ.get("LOOPWRIGHT_BWRAP")
    if configured is not None:
        return configured if os.access(configured, os.X_OK) else None
    import shutil

    return shutil.which("bwrap")


def availability() -> str | None:
    """None when bwrap runs here; otherwise why not, in one line."""
    return _probe(bwrap_path())


@lru_cache(maxsize=4)
def _probe(path: str | None) -> str | None:
    import subprocess

    if path is None:
        return "bwrap (Debian package bubblewrap) is not installed"
    argv = [path, *_isolation(network=False), "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "true"]
    try:
        done = subprocess.run(argv, capture_output=True, timeout=PROBE_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap could not start: {exc}"
    if done.returncode != 0:
        detail = done.stderr.decode("utf-8", "replace").strip().splitlines()
        return f"bwrap fails here: {detail[-1] if detail else f'exit code {done.returncode}'}"
    return None


def _isolation(network: bool) -> list[str]:
    return ["--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc",
            "--share-net" if network else "--unshare-net"]


def wrap(argv: list[str], *, cwd: str, roots: tuple[str, ...], network: bool, bwrap: str | None = None) -> list[str]:
    """`argv` as a bwrap command line. Order matters: later mounts cover earlier ones, so the
    roots are bound after the private /tmp (a root under /tmp stays visible and writable)."""
    args = [bwrap or bwrap_path() or "bwrap", *_isolation(network),
            "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    for keep in _toolchain_under_tmp():
        args += ["--ro-bind", keep, keep]
    real_roots = list(dict.fromkeys(os.path.realpath(r) for r in roots if os.path.isdir(r)))
    for root in real_roots:
        args += ["--bind", root, root]
    for root in real_roots:
        for rel in KEEP_READ_ONLY:
            path = os.path.join(root, rel)
            if os.path.lexists(path) and not os.path.islink(path):
                args += ["--ro-bind", path, path]
    return [*args, "--chdir", os.path.realpath(cwd), "--", *argv]


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
