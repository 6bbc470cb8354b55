"""The tool processes a worker leaves behind, found and ended: by the worker itself as it exits,
and by the survivor that takes over a dead worker's loops, before those loops go on.

A dead worker's tools are found two ways:
- its **process groups**, recorded in the store as its tools start them (`lw_tool_groups`: the
  group id with its leader's start time, and the machine they ran on). The parent-death signal
  (core/lifeline.py) kills each group's leader with the worker; what the leader started lives on
  in the group, and is ended here. A group is ended only while its id is still that group's:
  a leader alive with another start time means the id was reused, and is left alone;
- its **mark**: every process it starts for its tools carries `LOOPWRIGHT_WORKER_ID` naming it in
  its environment (inherited through fork and exec), so a child that left the group and its
  session (setsid, a double fork) is found too, unless it also cleared its environment.

Process ids mean something only on the machine (the kernel boot and PID namespace) they were
issued on: a survivor elsewhere ends nothing; there the parent-death signal is all that holds.
Both nets are /proc reads, at a takeover or an exit only, never per tool call."""

from __future__ import annotations

import os
import signal
import sys
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from functools import lru_cache
from typing import Iterable

from ..core import lifeline
from .registry import Registry

MARK = "LOOPWRIGHT_WORKER_ID"  # space-separated: a worker run by another worker's tool carries both


def _token(executor_id: str) -> str:
    """The executor id as one word of the mark (an id may hold spaces)."""
    from urllib.parse import quote

    return quote(executor_id, safe="")


@lru_cache(maxsize=1)
def machine() -> str:
    """This kernel boot and PID namespace: where a process id names the same process."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            boot = f.read().strip()
        namespace = os.readlink("/proc/self/ns/pid")
    except OSError:
        return ""  # no /proc: no process id is ever trusted across workers
    return f"{boot}/{namespace}"


def mark_children(executor_id: str) -> None:
    """From now on every process started with this process's environment (`child_env()`) names
    this worker."""
    os.environ[MARK] = f"{os.environ.get(MARK, '')} {_token(executor_id)}".strip()


class Recorder:
    """Writes the tool process groups of this worker to the store as lifeline reports them, on a
    thread of its own (a tool's start never waits on the database)."""

    def __init__(self, registry: Registry, executor_id: str) -> None:
        self.registry, self.executor_id, self.here = registry, executor_id, machine()
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="loopwright-toolgroups")
        self._stop = lifeline.observe(self._seen) if self.here else (lambda: None)

    def _seen(self, event: str, pgid: int, ticks: int | None) -> None:
        self._pool.submit(self._write, event, pgid, ticks)

    def _write(self, event: str, pgid: int, ticks: int | None) -> None:
        try:
            if event == "started" and ticks is not None:
                self.registry.tool_group_started(self.executor_id, self.here, pgid, ticks)
            elif event == "ended":
                self.registry.tool_group_ended(self.executor_id, pgid)
        except Exception as exc:  # the store is down: said; the mark still finds the group's processes
            print(f"loopwright worker: warning: could not record tool process group {pgid}: {exc}",
                  file=sys.stderr, flush=True)

    def close(self) -> None:
        """Stop recording, with what was reported written."""
        self._stop()
        self._pool.shutdown(wait=True)


def end_left_behind(registry: Registry, executor_id: str) -> int:
    """SIGKILL what `executor_id`'s tools left running on this machine (its recorded groups, and
    every process carrying its mark); forget its groups. Returns how many were signalled."""
    here = machine()
    groups = [(pgid, ticks) for where, pgid, ticks in registry.tool_groups_of(executor_id) if here and where == here]
    ended = end_groups(groups) + end_marked(executor_id)
    registry.forget_tool_groups(executor_id)
    return ended


def end_groups(groups: Iterable[tuple[int, int]]) -> int:
    """SIGKILL each group (id, its leader's start ticks) that is still the one recorded."""
    ended = 0
    for pgid, ticks in groups:
        if pgid <= 1:
            continue  # killpg(0) or (1) would not be a tool's group
        leader = lifeline.start_ticks(pgid)
        if leader is not None and leader != ticks:
            continue  # the id now names another process: the recorded group ended long ago
        # The leader gone (the parent-death signal took it), its members keep the id taken: it
        # cannot have been reused while any of them lives.
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
            ended += 1
    return ended


def end_marked(executor_id: str) -> int:
    """SIGKILL every process of ours whose environment names `executor_id` (not this process)."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return 0
    me, wanted, ended = os.getpid(), _token(executor_id).encode(), 0
    prefix = MARK.encode() + b"="
    for entry in entries:
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                environ = f.read()
        except OSError:  # gone, or another user's
            continue
        if any(wanted in item[len(prefix):].split() for item in environ.split(b"\0") if item.startswith(prefix)):
            with suppress(ProcessLookupError, PermissionError):
                os.kill(int(entry), signal.SIGKILL)
                ended += 1
    return ended
