"""A Python process with nothing of the machine: only `/usr` (and its `/lib`, `/bin` links) and
Python's own installation, all read-only; no network (its own empty namespace), no other
process, no host file to read or write, a fresh session, a clean environment. For code loopwright
did not write and will not trust — a workflow script the model wrote (`workflows.tool`)."""

from __future__ import annotations

import os
import sys

from .bwrap import availability, bwrap_path


def python_jail() -> list[str] | str:
    """The argv that starts such a Python (add `-c CODE`), or why there is none here."""
    why = availability()
    path = bwrap_path()
    if why is not None or path is None:
        return why or "bwrap (Debian package bubblewrap) is not installed"
    python = os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable)
    argv = [path, "--ro-bind", "/usr", "/usr"]
    for top in ("/lib", "/lib64", "/bin", "/sbin", "/lib32"):
        if os.path.islink(top):
            argv += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            argv += ["--ro-bind", top, top]
    for place in dict.fromkeys((os.path.realpath(sys.base_prefix), os.path.dirname(os.path.dirname(python)))):
        if not place.startswith("/usr/"):
            argv += ["--ro-bind", place, place]
    return [*argv, "--proc", "/proc", "--dev", "/dev", "--remount-ro", "/", "--unshare-all", "--die-with-parent",
            "--new-session", "--clearenv", "--setenv", "PYTHONDONTWRITEBYTECODE", "1", "--", python, "-I", "-S"]
