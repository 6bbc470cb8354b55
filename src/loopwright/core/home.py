"""Where loopwright keeps its own files (`LOOPWRIGHT_HOME`, else `~/.loopwright`) and the modes
they get: every folder 0700 and every file 0600, whatever the umask, because transcripts,
schedules and ledgers hold prompts, answers and sometimes secrets passed in flags."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path
from typing import Mapping

__all__ = ["DEFAULT_HOME", "home", "make_private_dirs", "open_private", "private_file", "tighten_home"]

DEFAULT_HOME = "~/.loopwright"
DIR_MODE = 0o700
FILE_MODE = 0o600
_tightened: set[str] = set()  # homes already checked by this process
_making = threading.Lock()  # private_file: one file made at a time


def home(env: Mapping[str, str] | None = None) -> Path:
    """`LOOPWRIGHT_HOME`, else `~/.loopwright`."""
    env = os.environ if env is None else env
    return Path(env.get("LOOPWRIGHT_HOME") or DEFAULT_HOME).expanduser()


def make_private_dirs(path: str | Path) -> Path:
    """Make `path` and each missing parent, each 0700 exactly (mkdir's mode passes through the
    umask, and `Path.mkdir(parents=True)` gives the parents the umask's default)."""
    path = Path(path)
    missing = []
    probe = path
    while not probe.exists():
        missing.append(probe)
        if probe.parent == probe:
            break
        probe = probe.parent
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=DIR_MODE)
        except FileExistsError:
            continue  # another process made it at the same moment: the chmod below still holds
        os.chmod(folder, DIR_MODE)
    return path


def open_private(path: str | Path, flags: int) -> int:
    """`os.open` for a file of ours: created 0600 exactly, whatever the umask."""
    fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0), FILE_MODE)
    try:
        st = os.fstat(fd)
        if stat.S_IMODE(st.st_mode) != FILE_MODE and st.st_uid == os.geteuid():
            os.fchmod(fd, FILE_MODE)
    except BaseException:
        os.close(fd)
        raise
    return fd


def private_file(path: str | Path) -> None:
    """Create `path` empty (0600) if it is missing, or tighten it to 0600 if it is ours. For files
    another library opens: SQLite gives its -wal and -shm the database's mode (even ones an older
    version left open), so a database made 0600 first keeps all three private. A file that is
    there is not opened: closing any descriptor of a file drops every POSIX lock the process holds
    on it, those of SQLite's connections to it included; a new one is closed before another thread
    of the process can open it."""
    with _making:
        try:
            os.close(open_private(path, os.O_RDONLY | os.O_CREAT | os.O_EXCL))
            return
        except FileExistsError:
            pass
        st = os.stat(path)
        if stat.S_IMODE(st.st_mode) != FILE_MODE and st.st_uid == os.geteuid():
            os.chmod(path, FILE_MODE)


def tighten_home(root: str | Path | None = None) -> None:
    """Make a home that an older loopwright left readable to others private, once: one stat on
    every start, and a walk of the tree only when the home itself was found open (after that the
    home is 0700, so later starts stop at the stat). Only what this user owns is changed."""
    root = Path(root) if root is not None else home()
    key = str(root)
    if key in _tightened:
        return
    _tightened.add(key)
    try:
        st = os.lstat(root)
    except FileNotFoundError:
        return  # made private when it is first written
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or not stat.S_IMODE(st.st_mode) & 0o077:
        return
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            _close_to_others(os.path.join(folder, name))
    os.chmod(root, DIR_MODE)  # last: an interrupted walk is taken up again on the next start


def _close_to_others(path: str) -> None:
    try:
        st = os.lstat(path)
        if st.st_uid == os.geteuid() and not stat.S_ISLNK(st.st_mode) and stat.S_IMODE(st.st_mode) & 0o077:
            os.chmod(path, stat.S_IMODE(st.st_mode) & 0o700)
    except OSError:
        pass  # gone meanwhile, or not ours to change: the home's own 0700 still closes it
