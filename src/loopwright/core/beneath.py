"""Opening a file beneath a root as the kernel resolves it, never by the text of its path: every
symlink on the way may only lead to a place beneath the root, and only a regular file on a real
filesystem is opened (never a device, FIFO or socket, nothing of /proc, /sys and their kin).

It is how loopwright reads what a project gives it — memory files and their imports, rules,
skills, commands, agents, plugin files — and what Grep reads inside the folder it searches: a
cloned repository (or a command run in the sandbox) can plant `CLAUDE.md -> /proc/self/environ`
or `.claude/rules/x.md -> ~/.ssh/id_rsa`, and what such a link names must never be loaded.

Where the kernel has `openat2` (Linux 5.6 and later), `RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS`
makes the kernel itself refuse any step out of the root, even one a concurrent rename makes. Where
it has not (an older kernel, a container's seccomp filter), or where it refuses a link only because
it is absolute, the path is walked one component at a time from the root with `O_NOFOLLOW`, and
each symlink met is followed by hand (at most `MAX_LINKS`) when where it leads stays beneath.

This is an I/O helper in `core/` (not `tools/`) because the context readers (layer 3) and the
tools (layer 4) both need it and `core/` is the one layer both may import."""

from __future__ import annotations

import errno
import os
import stat
from typing import Any

__all__ = ["MAX_BYTES", "MAX_LINKS", "Beneath", "Unsafe", "open_beneath", "read_beneath", "text_beneath"]

MAX_BYTES = 1 << 20  # what one context file may hold unless the reader says otherwise
MAX_LINKS = 40  # symlinks followed on one path, as the kernel's own limit

# Filesystems whose files look regular (`/proc/self/environ` is an `S_IFREG` of size 0) but are
# views of the kernel or of processes: never loaded, whatever root they are reached from.
PSEUDO_FILESYSTEMS = {
    0x9FA0: "proc", 0x62656572: "sysfs", 0x64626720: "debugfs", 0x74726163: "tracefs", 0x73636673: "securityfs",
    0x1CD1: "devpts", 0xDE5E81E4: "efivarfs", 0xCAFE4A11: "bpf", 0x62656570: "configfs", 0x27E0EB: "cgroup",
    0x63677270: "cgroup2", 0x6E736673: "nsfs", 0x50495045: "pipefs", 0x534F434B: "sockfs", 0x42494E4D: "binfmt_misc",
    0x67596969: "rpc_pipefs",
}  # not tmpfs, whose magic devtmpfs shares: a project may well live on tmpfs (a device is refused anyway)
_PSEUDO_MOUNTS = ("/proc", "/sys")  # the same, by place, where the filesystem type cannot be asked

_O_PATH = getattr(os, "O_PATH", 0)
_DIR_FLAGS = (_O_PATH or os.O_RDONLY) | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC  # O_NONBLOCK: a FIFO never waits
_RESOLVE_NO_MAGICLINKS, _RESOLVE_BENEATH = 0x02, 0x08
_OPENAT2 = {"x86_64": 437, "amd64": 437, "aarch64": 437, "arm64": 437}  # the syscall's number there
_kernel: dict[str, Any] = {}  # what this process learned: libc, whether openat2 works


class Unsafe(Exception):
    """The file is not opened: a link on its path leaves the root, or it is not a regular file of
    a real filesystem. The message names the path and why."""


def read_beneath(root: str | os.PathLike[str], path: str | os.PathLike[str],
                 limit: int = MAX_BYTES) -> tuple[bytes, bool]:
    """The first `limit` bytes of the regular file at `path` (absolute, or relative to `root`),
    reached beneath `root`, and whether that is the whole file. `FileNotFoundError` (or another
    `OSError`) when there is none; `Unsafe` when it may not be read."""
    fd = open_beneath(root, path)
    try:
        chunks, left = [], limit + 1
        while left > 0 and (chunk := os.read(fd, min(left, 1 << 20))):
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        return data[:limit], len(data) <= limit
    finally:
        os.close(fd)


def text_beneath(root: str | os.PathLike[str], path: str | os.PathLike[str], limit: int = MAX_BYTES) -> str:
    """The whole file as text (bad UTF-8 replaced); `Unsafe` when it holds more than `limit` bytes."""
    data, whole = read_beneath(root, path, limit)
    if not whole:
        raise Unsafe(f"{os.fspath(path)}: larger than {limit} bytes")
    return data.decode("utf-8", errors="replace")


def open_beneath(root: str | os.PathLike[str], path: str | os.PathLike[str], *, read: bool = True) -> int:
    """A read-only, non-blocking descriptor of the regular file at `path`, every step of its
    resolution beneath `root` (the caller closes it). `read` False: a descriptor that only says
    where the path leads (`O_PATH`; a file the user may not read is found all the same)."""
    with Beneath(root) as beneath:
        return beneath.open(path, read=read)


class Beneath:
    """A root held open, to open many files beneath it (a search): resolved once, at the start."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.real = os.path.realpath(os.fspath(root))
        self.fd = os.open(self.real, (_O_PATH or os.O_RDONLY) | os.O_DIRECTORY | os.O_CLOEXEC)

    def open(self, path: str | os.PathLike[str], *, read: bool = True) -> int:
        """As `open_beneath`, beneath this root."""
        shown = os.fspath(path)
        rest = _relative(self.real, shown)
        fd = _by_kernel(self.fd, rest, read) if rest else None
        if fd is None:
            fd = _walk(self.fd, self.real, rest, shown, read)
        try:
            _must_be_plain(fd, shown)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> Beneath:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _relative(real_root: str, path: str) -> str:
    """`path` relative to the root, taken apart without resolving anything (a `..` stays for the
    walk to judge); a path that names the root by another way (a symlinked parent) is resolved
    once to find its place, which the walk then checks again step by step."""
    if not os.path.isabs(path):
        return path
    base = real_root.rstrip("/") + "/"
    if path == real_root or path.startswith(base):
        return path[len(base):] if path != real_root else ""
    real = os.path.realpath(path)
    if real == real_root or real.startswith(base):
        return real[len(base):] if real != real_root else ""
    raise Unsafe(f"{path} is outside {real_root}" if real == path else f"{path} leads to {real}, outside {real_root}")


def _libc() -> Any:
    if "libc" not in _kernel:
        try:
            import ctypes

            _kernel["libc"] = ctypes.CDLL(None, use_errno=True)
        except (ImportError, OSError):
            _kernel["libc"] = None
    return _kernel["libc"]


def _by_kernel(root_fd: int, rest: str, read: bool) -> int | None:
    """`openat2` beneath the root (first for a look at what the path is, then to read it when it
    is a regular file, so a device is never opened); None where the kernel cannot do it, or
    refuses for a reason the walk judges better (an absolute link that may stay inside)."""
    if _kernel.get("openat2") is False:
        return None
    if "openat2" not in _kernel and (os.uname().machine not in _OPENAT2 or _libc() is None):
        _kernel["openat2"] = False
        return None
    look = _openat2(root_fd, rest, _O_PATH | os.O_CLOEXEC)
    if look is None:
        return None
    try:
        info = os.fstat(look)
        if not stat.S_ISREG(info.st_mode):
            return None  # the walk says what it is, and refuses it
        if not read:
            kept, look = look, -1
            return kept
        fd = _openat2(root_fd, rest, _FILE_FLAGS)
        if fd is None:
            return None
        now = os.fstat(fd)
        if (now.st_dev, now.st_ino) != (info.st_dev, info.st_ino):
            os.close(fd)
            return None  # it changed between the two opens: the walk looks again
        return fd
    finally:
        if look >= 0:
            os.close(look)


def _openat2(dirfd: int, rest: str, flags: int) -> int | None:
    import ctypes

    if "call" not in _kernel:  # built once: a search opens thousands of files
        class OpenHow(ctypes.Structure):  # struct open_how
            _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]

        call = _libc().syscall
        call.restype = ctypes.c_long
        _kernel.update(call=call, nr=ctypes.c_long(_OPENAT2[os.uname().machine]), how={}, OpenHow=OpenHow,
                       size=ctypes.c_size_t(ctypes.sizeof(OpenHow)))
    how = _kernel["how"].get(flags)
    if how is None:
        how = _kernel["how"][flags] = _kernel["OpenHow"](flags, 0, _RESOLVE_BENEATH | _RESOLVE_NO_MAGICLINKS)
    fd = _kernel["call"](_kernel["nr"], ctypes.c_int(dirfd), os.fsencode(rest), ctypes.byref(how), _kernel["size"])
    if fd >= 0:
        _kernel["openat2"] = True
        return int(fd)
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EPERM, errno.EINVAL, errno.E2BIG) and not _kernel.get("openat2"):
        _kernel["openat2"] = False  # not this kernel, or a filter forbids it: walk from now on
        return None
    if code in (errno.ENOENT, errno.ENOTDIR, errno.EACCES):
        raise OSError(code, os.strerror(code), rest)
    return None  # EXDEV, ELOOP, EAGAIN and the rest: the walk finds out and says why


def _walk(root_fd: int, real_root: str, rest: str, shown: str, read: bool = True) -> int:
    """The path taken one component at a time from the root, no component followed by the
    kernel: a symlink is read and what it names walked instead, a `..` goes back up the folders
    already opened (never above the root)."""
    folders = [root_fd]  # the root is the caller's; the rest are ours to close
    pending = rest.split("/")
    links, via = 0, ""  # via: the last symlink followed, for the message
    try:
        while pending:
            name = pending.pop(0)
            if name in ("", "."):
                continue
            if name == "..":
                if len(folders) == 1:
                    raise Unsafe(f"{shown}: {via or 'its path'} leads outside {real_root}")
                os.close(folders.pop())
                continue
            here = folders[-1]
            info = os.stat(name, dir_fd=here, follow_symlinks=False)
            if stat.S_ISLNK(info.st_mode):
                links += 1
                if links > MAX_LINKS:
                    raise Unsafe(f"{shown}: more than {MAX_LINKS} symlinks on its path")
                target = os.readlink(name, dir_fd=here)
                via = f"the symlink {name} -> {target}"
                if os.path.isabs(target):
                    try:
                        inside = _relative(real_root, target)
                    except Unsafe:
                        raise Unsafe(f"{shown}: {via} leads outside {real_root}") from None
                    while len(folders) > 1:
                        os.close(folders.pop())
                    pending = inside.split("/") + pending
                else:
                    pending = target.split("/") + pending
                continue
            if not any(p not in ("", ".") for p in pending):  # the last component: the file itself
                if not stat.S_ISREG(info.st_mode):
                    raise Unsafe(f"{shown} is {_kind(info.st_mode)}, not a regular file")
                try:  # O_NOFOLLOW: a symlink swapped in since the look is refused (or, with O_PATH,
                    # opened as itself, which is no regular file)
                    return os.open(name, (_FILE_FLAGS if read or not _O_PATH else _O_PATH | os.O_CLOEXEC)
                                   | os.O_NOFOLLOW, dir_fd=here)
                except OSError as exc:
                    if exc.errno == errno.ELOOP:
                        raise Unsafe(f"{shown} became a symlink while it was opened") from None
                    raise
            if not stat.S_ISDIR(info.st_mode):
                raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), shown)
            try:
                folders.append(os.open(name, _DIR_FLAGS, dir_fd=here))
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    raise Unsafe(f"{shown}: {name} on its path became a symlink while it was opened") from None
                raise
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), shown)
    finally:
        for fd in folders[1:]:
            os.close(fd)


def _must_be_plain(fd: int, shown: str) -> None:
    """A regular file, on no filesystem of `PSEUDO_FILESYSTEMS`."""
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        raise Unsafe(f"{shown} is {_kind(info.st_mode)}, not a regular file")
    kind = _filesystem(fd, info)
    if kind is not None:
        raise Unsafe(f"{shown} is a file of {kind}, never loaded")


def _filesystem(fd: int, info: os.stat_result) -> str | None:
    """The pseudo filesystem the open file is on, or None for a real one: `fstatfs` where libc
    gives it, else the device of /proc and /sys compared (where they are mounted at all)."""
    libc = _libc()
    if libc is not None and hasattr(libc, "fstatfs"):
        import ctypes

        buf = ctypes.create_string_buffer(256)  # struct statfs; its first field is f_type
        if libc.fstatfs(ctypes.c_int(fd), buf) == 0:
            return PSEUDO_FILESYSTEMS.get(ctypes.c_long.from_buffer(buf).value & 0xFFFFFFFF)
    for place in _PSEUDO_MOUNTS:
        try:
            device = os.stat(place).st_dev
            if device == info.st_dev and device != os.stat("/").st_dev:  # an empty /proc is no mount
                return place
        except OSError:
            continue
    return None


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "a special file"
