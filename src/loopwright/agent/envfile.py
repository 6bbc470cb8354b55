"""`CLAUDE_ENV_FILE`, as Claude Code gives it to SessionStart hooks: a file the hook appends
`export NAME=value` lines to (or any shell it wants run, `source .venv/bin/activate`), which
takes effect for the session's later Bash commands. Here the file is run once, after the hooks,
by the shell, and what it changed in the environment is kept for the tools' processes."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from typing import Any, Mapping

VARIABLE = "CLAUDE_ENV_FILE"
TIMEOUT_S = 10.0
_SHELL_OWN = frozenset({"_", "SHLVL", "PWD", "OLDPWD"})  # what any shell sets for itself


def new_file() -> str:
    """An empty file for the hooks of one session start to write to."""
    folder = tempfile.mkdtemp(prefix="loopwright-env-")
    path = os.path.join(folder, "session-start.sh")
    open(path, "w").close()
    return path


def sourced(path: str, cwd: str, base: Mapping[str, str]) -> tuple[dict[str, str], str | None]:
    """What running `path` in a shell (bash when there is one) adds to or changes in `base`, and
    why it could not be run (None when it ran, or when the hooks wrote nothing). The file and its
    folder are removed."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            if not f.read().strip():
                return {}, None
        shell = shutil.which("bash") or "/bin/sh"
        script = '. "$1" >/dev/null 2>&1; exec env -0'  # what the file's last line returns does not matter
        done = subprocess.run([shell, "-c", script, "sh", path], cwd=cwd, env=dict(base), capture_output=True,
                              timeout=TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {}, f"{VARIABLE} {path} could not be run: {exc}"
    finally:
        shutil.rmtree(os.path.dirname(path), ignore_errors=True)
    if done.returncode != 0:
        return {}, f"what SessionStart hooks wrote to {VARIABLE} was not applied: the shell exited {done.returncode}"
    found = dict(item.split("=", 1) for item in done.stdout.decode("utf-8", "replace").split("\0") if "=" in item)
    return {k: v for k, v in found.items() if k not in _SHELL_OWN and base.get(k) != v}, None


async def session_start(hooks: Any, payload: dict[str, Any], source: str, cwd: str,
                        base: Mapping[str, str]) -> tuple[Any, dict[str, str], str | None]:
    """Fire SessionStart on `hooks` with a fresh file in `CLAUDE_ENV_FILE` when command hooks are
    registered for it (`hooks.HookRunner`): (the hooks' result, what the file changed, a problem)."""
    wanted = any(r.event == "SessionStart" for r in getattr(hooks, "registrations", ()))
    path = new_file() if wanted and hasattr(hooks, "env_file") else None
    if path is not None:
        hooks.env_file = path
    try:
        started = await hooks.run("SessionStart", payload, match=source)
    except BaseException:
        if path is not None:
            shutil.rmtree(os.path.dirname(path), ignore_errors=True)
        raise
    finally:
        if path is not None:
            hooks.env_file = None
    if path is None:
        return started, {}, None
    import anyio

    found, problem = await anyio.to_thread.run_sync(sourced, path, cwd, base)
    return started, found, problem
