"""Starts one sandboxed command: `python -I -S launch.py SPEC BWRAP_ARGV...`. Run by path with
built-in modules only (no json, subprocess or ctypes: each would cost more than the rest), so it
adds little more than an interpreter start to a command.

What it does on the host, in order:
1. **guards**: each protected path is bound onto itself inside the sandbox, which pins the entry
   (the kernel refuses to rename, remove or replace a mount point: EBUSY) and makes it read-only.
   A protected name that does not exist yet gets a placeholder first — an empty read-only file or
   folder whose modification time is a marker — so the command cannot create it. A protected
   entry that is a symbolic link cannot be pinned (a mount follows the link and leaves the link
   replaceable): the command is refused, exit 126;
2. **locks** (in loopwright's home, `sandbox/`): a mutex around making and removing placeholders,
   and per folder a lock every running sandbox holds shared, so a placeholder is never removed
   under a sandbox still relying on it (unlinking a mount point on the host dissolves that
   sandbox's mount);
3. **hand-over**: a forked watcher keeps the shared locks; the launcher then becomes bwrap
   (`exec`), so bwrap is the runner's own child — it dies with loopwright (`--die-with-parent`),
   gets the runner's signals, and its exit status is the command's. The seccomp filter reaches
   bwrap on an inherited pipe (`--seccomp FD`); the locks do not (close-on-exec);
4. **clean-up**: when bwrap has ended (a pidfd says so), the watcher removes the placeholders of
   every folder no other sandbox holds, and exits. It ignores TERM/INT/HUP meanwhile: the runner
   signals the whole process group, and the clean-up takes milliseconds. It keeps the command's
   output open until then, so a runner reading to the end has the result after the clean-up.

SPEC is the hex of a `marshal`led dict (the same interpreter writes and reads it):
{"guards": [(path, kind, mode, content), ...], "excludes": [(exclude file, work tree), ...],
"seccomp": bytes or None, "locks": folder, "insert": index into BWRAP_ARGV for the mounts}.
`kind` is "dir" or "file" (what a placeholder is); `mode` "ro" (pinned read-only, placeholder
when missing), "rw" (pinned writable, a read-only placeholder when missing) or "open" (writable
when present, nothing when missing).
"""

import errno
import fcntl
import marshal
import os
import select
import signal
import stat
import sys
import time
import zlib

MARK_NS = 1_000_000_007  # a placeholder's mtime (1970-01-01 00:00:01.000000007): ours, untouched
REFUSED = 126


class Refused(Exception):
    """The command cannot be sandboxed as asked; the message says why."""


def main(argv):
    spec, bwrap = marshal.loads(bytes.fromhex(argv[1])), argv[2:]
    locks = spec["locks"]
    temporary = []
    try:
        _check_lock_folder(locks)
        mutex = _open_lock(os.path.join(locks, "mutex"))
        fcntl.flock(mutex, fcntl.LOCK_EX)
        held = {}
        try:
            for folder in sorted({os.path.dirname(g[0]) for g in spec["guards"]}):
                held[folder] = _open_lock(os.path.join(locks, _key(folder) + ".users"))
                fcntl.flock(held[folder], fcntl.LOCK_SH)
            made = []
            mounts = guard_mounts(spec["guards"], made)
            mounts += _exclusions(spec["excludes"], made, locks, temporary)
        except BaseException:
            fcntl.flock(mutex, fcntl.LOCK_UN)
            _clean_up(mutex, held, spec["guards"], locks, temporary)
            raise
        fcntl.flock(mutex, fcntl.LOCK_UN)
        _hand_over(bwrap, spec["insert"], mounts, spec["seccomp"],
                   lambda: _clean_up(mutex, held, spec["guards"], locks, temporary))
    except (Refused, OSError) as exc:
        print(f"loopwright: the sandbox refuses this command: {exc}", file=sys.stderr, flush=True)
        sys.exit(REFUSED)


def guard_mounts(guards, made):
    """The bwrap arguments that bind every guard onto itself, placeholders made where needed
    (and listed in `made`)."""
    out = []
    for path, kind, mode, content in guards:
        present = _present(path)
        if present is None and mode != "open" and _make_placeholder(path, kind, content):
            present, mode = True, "ro"
            made.append((path, kind))
        if present:
            out += ["--bind" if mode in ("rw", "open") else "--ro-bind", path, path]
    return out


def _hand_over(bwrap, insert, mounts, seccomp, clean_up):
    """Fork the watcher, then become bwrap."""
    me = os.getpid()
    try:
        pidfd = os.pidfd_open(me)  # close-on-exec: bwrap does not get it; the watcher keeps it
    except (AttributeError, OSError):
        pidfd = None  # before Linux 5.3: the watcher asks for its parent instead
    extra = list(mounts)
    if seccomp is not None:
        read, write = os.pipe()
        os.write(write, seccomp)  # a few hundred bytes: the pipe never blocks
        os.close(write)
        os.set_inheritable(read, True)
        extra += ["--seccomp", str(read)]
    argv = bwrap[:insert] + extra + bwrap[insert:]
    if os.fork() == 0:
        _watch(pidfd, me, clean_up)
    if pidfd is not None:
        os.close(pidfd)
    try:
        os.execv(argv[0], argv)
    except OSError as exc:
        print(f"loopwright: the sandbox refuses this command: bwrap could not start: {exc.strerror}",
              file=sys.stderr, flush=True)
        os._exit(REFUSED)  # the watcher cleans up: this process is gone for it too


def _watch(pidfd, parent, clean_up):
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    # stdout and stderr stay open and silent: a runner that reads the command's output until
    # every writer is gone (most do, some for a bounded time) sees the end after the clean-up.
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    try:
        if pidfd is not None:
            while not select.select([pidfd], [], [])[0]:
                pass
        else:
            while os.getppid() == parent:  # bwrap ended: this process went to another parent
                time.sleep(0.05)
        clean_up()
    finally:
        os._exit(0)


def _present(path):
    """True when `path` exists as a file or folder; None when missing; Refused for a link."""
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    if stat.S_ISLNK(st.st_mode):
        raise Refused(f"{path} is a symbolic link (to {os.readlink(path)}), which the sandbox cannot keep in "
                      "place; replace the link with what it points to, or run without the sandbox")
    return True


def _make_placeholder(path, kind, content):
    """Create the marked placeholder; False when this user cannot create anything there (then
    neither can the sandboxed command, which has no more rights)."""
    try:
        if kind == "dir":
            os.mkdir(path, 0o555)
            os.chmod(path, 0o555)
        else:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o444)
            try:
                os.write(fd, content.encode())
                os.fchmod(fd, 0o444)
            finally:
                os.close(fd)
        os.utime(path, ns=(MARK_NS, MARK_NS), follow_symlinks=False)
        return True
    except FileExistsError:
        return bool(_present(path))  # made at this moment by someone else: pin what is there
    except OSError as exc:
        if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOENT, errno.ENOTDIR):
            return False
        raise Refused(f"cannot make a placeholder at {path}: {exc.strerror}") from None


def _exclusions(excludes, made, locks, temporary):
    """For each git work tree, its exclude file as the sandbox sees it: the real one plus the
    placeholder files made at the top of the tree (folders never show in `git status`)."""
    out = []
    for exclude, tree in excludes:
        names = [os.path.basename(p) for p, kind in made if kind == "file" and os.path.dirname(p) == tree]
        if not names:
            continue
        with open(exclude, "rb") as f:
            text = f.read(1 << 20)
        copy = os.path.join(locks, f"exclude-{os.getpid()}-{len(temporary)}")
        fd = os.open(copy, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        temporary.append(copy)
        with os.fdopen(fd, "wb") as f:
            f.write(text + b"\n# loopwright's sandbox: placeholders for protected names, this command only\n")
            f.write("".join(f"/{name}\n" for name in names).encode("utf-8", "surrogateescape"))
        out += ["--ro-bind", copy, exclude]
    return out


def _is_placeholder(path, kind, content):
    try:
        st = os.lstat(path)
    except OSError:
        return False
    if st.st_mtime_ns != MARK_NS:
        return False
    if kind == "dir":
        return stat.S_ISDIR(st.st_mode)
    if not stat.S_ISREG(st.st_mode) or st.st_size != len(content.encode()):
        return False
    with open(path, "rb") as f:
        return f.read() == content.encode()


def _clean_up(mutex, held, guards, locks, temporary):
    """Drop our shared locks; where no other sandbox holds its folder, remove the placeholders
    (ours, and any a killed launcher left)."""
    fcntl.flock(mutex, fcntl.LOCK_EX)
    try:
        for folder, fd in held.items():
            fcntl.flock(fd, fcntl.LOCK_UN)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # another sandbox still relies on this folder's placeholders
            for path, kind, _mode, content in guards:
                if os.path.dirname(path) == folder and _is_placeholder(path, kind, content):
                    _remove(path, kind)
            fcntl.flock(fd, fcntl.LOCK_UN)
        for path in temporary:
            _remove(path, "file")
        _sweep(locks)
    finally:
        fcntl.flock(mutex, fcntl.LOCK_UN)


def _remove(path, kind):
    try:
        if kind == "dir":
            os.chmod(path, 0o755)
            os.rmdir(path)
        else:
            os.unlink(path)
    except OSError:
        pass  # filled or changed meanwhile by someone on the host: theirs now


def _sweep(locks):
    """Exclude copies left by a launcher that was killed outright (its pid is in the name)."""
    for name in os.listdir(locks):
        pid = name.split("-")[1] if name.startswith("exclude-") else ""
        if pid.isdigit() and not _alive(int(pid)):
            _remove(os.path.join(locks, name), "file")


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _check_lock_folder(path):
    """The folder loopwright made private before starting us; checked, never trusted blindly."""
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
        raise Refused(f"its lock folder {path} is not a folder of this user")
    if stat.S_IMODE(st.st_mode) != 0o700:
        os.chmod(path, 0o700)


def _open_lock(path):
    return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)


def _key(folder):
    """A lock file's name for a folder. Two folders sharing one only lock together more often."""
    data = folder.encode("utf-8", "surrogateescape")
    return f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}"


if __name__ == "__main__":
    main(sys.argv)
