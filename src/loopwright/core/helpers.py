"""loopwright's own helper processes (the lifeline's keeper, the sandbox's warm helper): a
`python -I -S` running a module beside loopwright's, its stdin one end of a unix SEQPACKET socket
pair, in a session of its own, so a signal to loopwright's process group does not reach it. Each
notices loopwright is gone when its socket ends, however loopwright ended."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from functools import lru_cache


def start(folder: str, module: str) -> tuple[subprocess.Popen[bytes], socket.socket]:
    """Start `module.serve()` (a module in `folder`, imported after the standard library's, so
    its compiled bytecode is used and nothing there shadows a standard module); returns the
    process and this process's end of its socket."""
    from .environ import child_env

    source = f"import sys; sys.path.append({folder!r}); from {module} import serve; serve()"
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        process = subprocess.Popen([sys.executable, "-I", "-S", "-c", source], stdin=theirs.fileno(),
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd="/", env=child_env(),
                                   start_new_session=True)
    except BaseException:
        ours.close()
        raise
    finally:
        theirs.close()
    return process, ours


@lru_cache(maxsize=1)
def pidfds() -> bool:
    """Whether the kernel has pidfds (Linux 5.3+), which name a process for good."""
    try:
        os.close(os.pidfd_open(os.getpid()))
    except (AttributeError, OSError):
        return False
    return sys.platform.startswith("linux")
