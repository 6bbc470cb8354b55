"""Reading and writing a file exactly where the permission gate judged it. The path is resolved
again when the tool acts and must land where the gate looked; then it is walked from `/` one
folder at a time without following any symlink, so a link swapped in since the judgement cannot
redirect the access. Only regular files are read or written (a device, FIFO or socket never: the
atomic write would replace a device node, a FIFO would block), and a write replaces the file
atomically (temporary file + rename inside the folder already opened), keeping its mode."""

from __future__ import annotations

import errno
import os
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from typing import BinaryIO

from ..core.ports import ToolContext
from .paths import real_path

# O_PATH opens a folder with search permission only (a 0711 home stays reachable); elsewhere
# reading the folder is the closest.
_DIR_FLAGS = getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_KINDS = ((stat.S_ISCHR, "character device"), (stat.S_ISBLK, "block device"), (stat.S_ISFIFO, "FIFO"),
          (stat.S_ISSOCK, "socket"), (stat.S_ISLNK, "symlink"))


class Refused(Exception):
    """The file cannot be accessed safely; the message says why, for the model."""


def landing(given: str, ctx: ToolContext) -> str:
    """Where `given` lands now (every symlink followed). When the gate judged this call, the
    path must still land where it judged; a symlink swapped in since makes it refuse."""
    real = real_path(given, ctx)
    judged = ctx.guard.judged(given) if ctx.guard is not None else None
    if judged is not None and real not in judged:
        raise Refused(f"{given} now leads to {real}, but the permission check judged it at "
                      f"{', '.join(judged)}: a symlink on the way changed since. Nothing was done.")
    return real


@contextmanager
def folder(real: str, *, create: bool) -> Iterator[int]:
    """A descriptor of the folder holding `real`, reached from `/` without following a
    symlink; missing folders are made when `create`."""
    fd = os.open("/", _DIR_FLAGS)
    try:
        for name in [p for p in real.split("/") if p][:-1]:
            try:
                step = _open_dir(name, fd, real)
            except FileNotFoundError:
                if not create:
                    raise
                try:
                    os.mkdir(name, 0o777, dir_fd=fd)
                except FileExistsError:
                    pass
                step = _open_dir(name, fd, real)
            os.close(fd)
            fd = step
        yield fd
    finally:
        os.close(fd)


def _open_dir(name: str, fd: int, real: str) -> int:
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR) and _is_link(name, fd):
            raise Refused(f"{name} on the way to {real} is a symlink now (it was not when the path was "
                          "resolved). Nothing was done.") from None
        raise


def _is_link(name: str, fd: int) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def what(mode: int) -> str | None:
    """The kind of a file that is not regular (None for a regular file)."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "directory"
    return next((name for test, name in _KINDS if test(mode)), "special file")


def open_regular(real: str) -> BinaryIO:
    """The regular file at `real`, open for reading (IsADirectoryError for a folder)."""
    name = os.path.basename(real)
    with folder(real, create=False) as dfd:
        try:  # O_NONBLOCK: opening a FIFO must not wait for a writer before it can be refused
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dfd)
        except OSError as exc:
            if exc.errno == errno.ELOOP and _is_link(name, dfd):
                _must_be_regular(real, stat.S_IFLNK, "read")
            raise
    f = os.fdopen(fd, "rb")
    try:
        _must_be_regular(real, os.fstat(fd).st_mode, "read")
        os.set_blocking(fd, True)
    except BaseException:
        f.close()
        raise
    return f


def _must_be_regular(real: str, mode: int, verb: str) -> None:
    kind = what(mode)
    if kind == "directory":
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), real)
    if kind == "symlink":
        raise Refused(f"{real} is a symlink now (it was not when the path was resolved). Nothing was done.")
    if kind is not None:
        raise Refused(f"{real} is a {kind}, not a regular file; only regular files are {verb}.")


def write_bytes(real: str, data: bytes) -> bool:
    """Replace (or create) the regular file at `real` with `data`, atomically; an existing
    file keeps its mode. Returns whether the file existed."""
    name = os.path.basename(real)
    with folder(real, create=True) as dfd:
        try:
            st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
            mode: int | None = stat.S_IMODE(st.st_mode)
            _must_be_regular(real, st.st_mode, "written")
        except FileNotFoundError:
            mode = None
        tmp = f".{name}.{secrets.token_hex(4)}.tmp"
        # 0o666 lets the umask decide a new file's mode, as a plain open() would.
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666, dir_fd=dfd)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                if mode is not None:
                    os.fchmod(f.fileno(), mode)
                os.fsync(f.fileno())
            os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
        except BaseException:
            try:
                os.unlink(tmp, dir_fd=dfd)
            except OSError:
                pass
            raise
    return mode is not None
