"""The goal's hands on the project: run a check command the harness owns (its own process group,
a timeout, the output's tail kept) and fingerprint protected files."""

from __future__ import annotations

import asyncio
import glob
import hashlib
import os
import signal
from pathlib import Path
from typing import Callable, Mapping, Sequence

from ..core import lifeline
from ..core.environ import child_env
from ..core.ports import CheckResult

TAIL_CHARS = 3000


class LocalWorkspace:
    """`wrap` turns a shell command into the argv that runs it (the sandbox supplies one); `env`
    is the checks' environment (default: `child_env()`, without the harness's credentials)."""

    def __init__(self, cwd: Path, wrap: Callable[[str], list[str]] | None = None,
                 env: Mapping[str, str] | None = None) -> None:
        self.cwd = Path(cwd)
        self.wrap = wrap or (lambda command: ["/bin/bash", "-c", command])
        self.env = dict(env) if env is not None else None

    async def run_check(self, command: str, timeout_s: float) -> CheckResult:
        env = self.env if self.env is not None else child_env()
        tether = lifeline.tether(self.wrap(command), cwd=self.cwd, env=env)
        proc = await asyncio.create_subprocess_exec(  # its own group, dying with us (lifeline)
            *tether.argv, cwd=self.cwd, env=env, stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, start_new_session=True)
        tether.hold(proc.pid)
        try:
            out, _ = await asyncio.wait_for(proc.communicate(), timeout_s)
        except asyncio.TimeoutError:
            _kill(proc.pid)
            out = b""
            await proc.wait()
            return CheckResult(command, None, f"(no result: the check ran longer than {timeout_s:g} s)", True)
        except BaseException:
            _kill(proc.pid)  # cancelled: never leave a check running
            raise
        text = out.decode("utf-8", "replace")
        return CheckResult(command, proc.returncode, text[-TAIL_CHARS:])

    def snapshot(self, globs: Sequence[str]) -> dict[str, str]:
        """sha256 of every file the patterns match (relative to the project; `**` recurses)."""
        found: dict[str, str] = {}
        for pattern in globs:
            full = pattern if os.path.isabs(pattern) else str(self.cwd / pattern)
            if pattern.endswith("/") or (self.cwd / pattern).is_dir():
                full = full.rstrip("/") + "/**"
            for path in glob.glob(full, recursive=True):
                if os.path.isfile(path):
                    found[os.path.relpath(path, self.cwd)] = _digest(path)
        return found


def _digest(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 16), b""):
            h.update(chunk)
    return h.hexdigest()


def _kill(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
