"""Ending everything a command hook started, once the hook is over. No cgroup is at hand, so three
nets, each with what it misses: the hook's process group (`killpg`), every process still in the
hook's session (children that moved to a group of their own), and every process born since the
hook started whose environment carries the hook's mark (children that called `setsid`; the mark is
inherited through fork and exec). What escapes all three: a child that started with a cleared
environment (`env -i`) *and* a session of its own, or one running as another user."""

from __future__ import annotations

import os
import signal
from contextlib import suppress

from ..core.lifeline import stat_fields

MARK = "LOOPWRIGHT_HOOK_ID"  # in every command hook's environment: the hook run's id


def marked(env: dict[str, str], mark: str) -> dict[str, str]:
    """`env` with `mark` added to the hook ids already there: a hook run by a loopwright that
    itself runs inside a hook carries both, so either sweep finds it."""
    return {**env, MARK: f"{env.get(MARK, '')} {mark}".strip()}


def clock_ticks() -> int:
    """Now, in the unit of a process's start time in /proc (clock ticks since boot); 0 when
    there is no /proc (then only the process group is ended)."""
    try:
        with open("/proc/uptime", "rb") as f:
            uptime = float(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 0
    return int(uptime * os.sysconf("SC_CLK_TCK"))


def end(leader: int, mark: str, since: int) -> int:
    """SIGKILL what is left of the hook that ran as `leader` (its own session and group leader,
    started at `since` ticks or later). Returns how many processes were signalled."""
    if leader <= 1:
        raise ValueError(f"not a hook's process id: {leader}")  # killpg(0) would be our own group
    ended = 0
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(leader, signal.SIGKILL)
        ended += 1
    try:
        entries = os.listdir("/proc")
    except OSError:
        return ended
    me = os.getpid()
    for entry in entries:
        if not entry.isdigit() or int(entry) in (me, leader):
            continue
        if _belongs(entry, leader, since, mark.encode()):
            with suppress(ProcessLookupError, PermissionError):
                os.kill(int(entry), signal.SIGKILL)
                ended += 1
    return ended


def _belongs(pid: str, leader: int, since: int, mark: bytes) -> bool:
    fields = stat_fields(pid)  # state ppid pgrp session … starttime (the 20th of them)
    if fields is None or len(fields) < 20 or fields[0] in (b"Z", b"X"):
        return False
    if int(fields[2]) == leader or int(fields[3]) == leader:
        return True
    if int(fields[19]) < since:
        return False  # older than the hook: not its child, and its environment need not be read
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            environ = f.read()
    except OSError:
        return False
    prefix = MARK.encode() + b"="
    return any(mark in entry[len(prefix):].split() for entry in environ.split(b"\0") if entry.startswith(prefix))
