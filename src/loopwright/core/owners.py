"""Who holds a scheduled fire or a routine item: `host:pid`, and whether that process still lives
(another machine's owner is not ours to judge: it counts as alive)."""

from __future__ import annotations

import os
import socket


def this_owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def owner_alive(owner: str) -> bool:
    host, _, pid = owner.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return True  # another machine's process: not ours to judge
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
