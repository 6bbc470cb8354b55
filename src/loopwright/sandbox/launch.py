"""Starts one sandboxed command: `python -I -S launch.py SPEC BWRAP_ARGV...`. Run by path with
built-in modules only (no json, subprocess or ctypes: each would cost more than the rest), so it
adds little more than an interpreter start to a command.

What it does on the host, in order:
1. **unfinished checks** of earlier commands whose watcher was killed (`finish_pending`) are done
   first, and named on this command's stderr;
2. **guards**: each protected path that exists is bound onto itself inside the sandbox, which
   pins the entry (the kernel refuses to rename, remove or replace a mount point: EBUSY) and
   makes it read-only. A protected name that is missing gets nothing in the tree: it is
   *watched* — written to a pending record in loopwright's home before bwrap starts — and one
   the command made is set aside once the sandbox has ended (step 5). Only where nobody's work
   tree shows them are placeholders made (an empty read-only file or folder whose modification
   time is a marker): the files git reads inside a git directory, and a missing `.git` itself in
   a folder that is no repository (a host shell's prompt would read a planted one while the
   command runs). A protected entry that is a symbolic link cannot be pinned (a mount follows the
   link and leaves the link replaceable): the command is refused, exit 126;
3. **locks**: a mutex around placeholders and pending records, and per folder holding
   placeholders a lock every running sandbox holds shared (both in a folder every loopwright of
   this user shares, whatever its home: `shared`), so a placeholder
   is never removed under a sandbox still relying on it (unlinking a mount point on the host
   dissolves that sandbox's mount); and each pending record is locked by its watcher for as long
   as it lives, so a record nobody holds is one to finish;
4. **hand-over**: a forked watcher keeps the locks; the launcher then becomes bwrap (`exec`), so
   bwrap is the runner's own child — it dies with loopwright (`--die-with-parent`), gets the
   runner's signals, and its exit status is the command's. The seccomp filter reaches bwrap on an
   inherited pipe (`--seccomp FD`); bwrap names the sandbox's first process (PID 1 of its PID
   namespace) on another (`--info-fd FD`), and the watcher opens a pidfd for it;
5. **clean-up**: when bwrap and that PID 1 have ended — the kernel ends every process of a PID
   namespace before its PID 1 is gone, so nothing of the command runs any more — the watcher
   moves each watched name that now exists into `quarantine/` in loopwright's home (nothing is
   lost), writes one line about it to the command's stderr, removes the placeholders of every
   folder no other sandbox holds, deletes its record, and exits. It ignores TERM/INT/HUP
   meanwhile: the runner signals the whole process group, and the clean-up takes milliseconds.
   It keeps the command's output open until then, so a runner reading to the end has the
   result, and the line, after the clean-up.

SPEC is the hex of a `marshal`led dict (the same interpreter writes and reads it):
{"guards": [(path, kind, mode, content), ...], "seccomp": bytes or None, "locks": folder,
"shared": the folder of the mutex and the placeholder locks, "insert": index into BWRAP_ARGV for the mounts, "cwd": the command's folder, "pass": descriptors
the command is meant to inherit (the network proxy's channel)}. `kind` is "dir" or
"file"; `mode` "ro" (pinned read-only, watched when missing), "hold" (pinned read-only, a
placeholder when missing), "rw" (pinned writable, a read-only placeholder when missing) or
"open" (writable when present, nothing when missing).
"""

import errno
import fcntl
import itertools
import marshal
import posix  # the system calls without `os`, whose import (collections.abc, posixpath) was a sixth of the launcher's start
import select
import stat
import sys
import time
import zlib

import _signal  # type: ignore[import-not-found]  # the C module itself: `signal` would import enum, functools and collections (~3 ms)

MARK_NS = 1_000_000_007  # a placeholder's mtime (1970-01-01 00:00:01.000000007): ours, untouched
REFUSED = 126
PLACEHOLDER_MODES = ("hold", "rw")


class Refused(Exception):
    """The command cannot be sandboxed as asked; the message says why."""


def main(argv):
    spec, bwrap = marshal.loads(bytes.fromhex(argv[1])), argv[2:]
    try:
        mounts, clean_up = prepare(spec)
        _hand_over(bwrap, spec["insert"], mounts, spec["seccomp"], clean_up, spec.get("pass", ()))
    except (Refused, OSError) as exc:
        print(f"loopwright: the sandbox refuses this command: {exc}", file=sys.stderr, flush=True)
        sys.exit(REFUSED)


def prepare(spec, say=None):
    """Steps 1 to 3 for one command: the guards' bwrap arguments, and the clean-up to run once
    its sandbox has ended (the caller's process, or one forked from it, holds the locks until
    then). `say` gets the lines about earlier commands' checks finished here (default: this
    process's stderr). Raises Refused or OSError having undone what it did."""
    locks, cwd = spec["locks"], spec["cwd"]
    shared = spec.get("shared", locks)
    _check_lock_folder(locks)
    if shared != locks:
        _check_lock_folder(shared)
    mutex = _open_lock(_join(shared, "mutex"))
    try:
        fcntl.flock(mutex, fcntl.LOCK_EX)
    except BaseException:
        posix.close(mutex)
        raise
    held = {}
    try:
        for line in _finish(locks, None):
            (say or _say)(line)
        for folder in sorted({_dirname(g[0]) for g in spec["guards"] if g[2] in PLACEHOLDER_MODES}):
            held[folder] = _open_lock(_join(shared, _key(folder) + ".users"))
            fcntl.flock(held[folder], fcntl.LOCK_SH)
        mounts, watched = guard_mounts(spec["guards"])
        record = _record(locks, watched, cwd) if watched else None
    except BaseException:
        fcntl.flock(mutex, fcntl.LOCK_UN)
        _clean_up(mutex, held, spec["guards"], locks, (), None, cwd)
        raise
    fcntl.flock(mutex, fcntl.LOCK_UN)
    return mounts, lambda: _clean_up(mutex, held, spec["guards"], locks, watched, record, cwd, say)


def guard_mounts(guards):
    """The bwrap arguments that bind every present guard onto itself (placeholders made where
    the mode asks for one), and the missing guards to watch: [(path, kind)]."""
    out, watched = [], []
    for path, kind, mode, content in guards:
        present = _present(path)
        if present is None and mode in PLACEHOLDER_MODES and _make_placeholder(path, kind, content):
            present, mode = True, "hold"
        elif present is None and mode == "ro":
            watched.append((path, kind))
        if present:
            out += ["--bind" if mode in ("rw", "open") else "--ro-bind", path, path]
    return out, watched


def _hand_over(bwrap, insert, mounts, seccomp, clean_up, handed=()):
    """Fork the watcher, then become bwrap. `handed`: descriptors meant for the command."""
    me = posix.getpid()
    try:
        pidfd = posix.pidfd_open(me)  # close-on-exec: bwrap does not get it; the watcher keeps it
    except (AttributeError, OSError):
        pidfd = None  # before Linux 5.3: the watcher asks for its parent instead
    extra, passed = list(mounts), set()
    if seccomp is not None:
        read, write = posix.pipe()
        passed.add(read)
        posix.write(write, seccomp)  # a few hundred bytes: the pipe never blocks
        posix.close(write)
        posix.set_inheritable(read, True)
        extra += ["--seccomp", str(read)]
    info_read, info_write = posix.pipe()
    posix.set_inheritable(info_write, True)
    extra += ["--info-fd", str(info_write)]
    argv = bwrap[:insert] + extra + bwrap[insert:]
    if posix.fork() == 0:
        posix.close(info_write)
        _watch(pidfd, me, info_read, clean_up)
    posix.close(info_read)
    if pidfd is not None:
        posix.close(pidfd)
    _keep_only(passed | {info_write} | set(handed))
    try:
        posix.execv(argv[0], argv)
    except OSError as exc:
        print(f"loopwright: the sandbox refuses this command: bwrap could not start: {exc.strerror}",
              file=sys.stderr, flush=True)
        posix._exit(REFUSED)  # the watcher cleans up: this process is gone for it too


def _keep_only(passed):
    """Nothing the runner left open reaches the command (bwrap hands on whatever it inherits):
    every descriptor but 0-2, the two pipes for bwrap and those handed on by name is closed at
    the exec."""
    for name in posix.listdir("/proc/self/fd"):
        fd = int(name)
        if fd > 2 and fd not in passed:
            try:
                posix.set_inheritable(fd, False)
            except OSError:
                pass  # the listing's own descriptor, closed by now


def _watch(pidfd, parent, info, clean_up):
    for sig in (_signal.SIGTERM, _signal.SIGINT, _signal.SIGHUP):
        _signal.signal(sig, _signal.SIG_IGN)
    # stdout and stderr stay open: a runner that reads the command's output until every writer
    # is gone sees the end after the clean-up, and the line saying what was set aside.
    posix.dup2(posix.open("/dev/null", posix.O_RDONLY), 0)
    try:
        sandbox = _sandbox_pidfd(info)
        if pidfd is not None:
            while not select.select([pidfd], [], [])[0]:
                pass
        else:
            while posix.getppid() == parent:  # bwrap ended: this process went to another parent
                time.sleep(0.05)
        if sandbox is not None:  # killed outright, bwrap leaves it to the kernel to end the sandbox
            while not select.select([sandbox], [], [])[0]:
                pass
        clean_up()
    finally:
        posix._exit(0)


def _sandbox_pidfd(info):
    """A pidfd for the sandbox's PID 1, from what bwrap writes on its info pipe (`"child-pid":
    N`); None when bwrap ended before starting it or pidfds are missing (then bwrap's own end is
    waited for: it outlives its child unless killed)."""
    data = b""
    while True:
        chunk = posix.read(info, 4096)
        if not chunk:
            break
        data += chunk
    posix.close(info)
    _, found, rest = data.partition(b'"child-pid":')
    digits = rest.strip().split(b"}")[0].split(b",")[0].strip()
    if not found or not digits.isdigit():
        return None
    try:
        return posix.pidfd_open(int(digits))
    except (AttributeError, OSError):
        return None  # gone already, or no pidfds here


def _present(path):
    """True when `path` exists as a file or folder; None when missing; Refused for a link."""
    try:
        st = posix.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    if stat.S_ISLNK(st.st_mode):
        raise Refused(f"{path} is a symbolic link (to {posix.readlink(path)}), which the sandbox cannot keep in "
                      "place; replace the link with what it points to, or run without the sandbox")
    return True


def _make_placeholder(path, kind, content):
    """Create the marked placeholder; False when this user cannot create anything there (then
    neither can the sandboxed command, which has no more rights)."""
    folder = _marked(_dirname(path))
    try:
        if kind == "dir":
            posix.mkdir(path, 0o555)
            posix.chmod(path, 0o555)
            posix.utime(path, ns=(MARK_NS, MARK_NS), follow_symlinks=False)
        else:
            _place_whole(path, content.encode())
        return True
    except FileExistsError:
        return bool(_present(path))  # made at this moment by someone else: pin what is there
    except OSError as exc:
        if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOENT, errno.ENOTDIR):
            return False
        raise Refused(f"cannot make a placeholder at {path}: {exc.strerror}") from None
    finally:
        _mark_again(folder)


def _marked(folder):
    """A placeholder folder (a missing `.git`) stays recognisable as one while placeholders are
    made and removed inside it (each changes its modification time, which is the mark): what
    `_mark_again` needs, taken before."""
    try:
        st = posix.lstat(folder)
    except OSError:
        return None
    return folder if st.st_mtime_ns == MARK_NS and stat.S_ISDIR(st.st_mode) else None


def _mark_again(folder):
    if folder is not None:
        try:
            posix.utime(folder, ns=(MARK_NS, MARK_NS), follow_symlinks=False)
        except OSError:
            pass  # removed meanwhile: nothing left to mark


def _place_whole(path, data):
    """A placeholder file that appears with its content and mark, never half made: another
    sandbox being set up at the same moment reads the files git reads (a `commondir` seen empty
    would make it refuse its command). Written under a temporary name beside it, then linked
    into place, which fails if something is already there (FileExistsError, as before)."""
    temporary = _join(_dirname(path), f".loopwright-placeholder-{posix.getpid()}-{time.time_ns()}")
    try:
        _write_marked(temporary, data)
        try:
            posix.link(temporary, path, follow_symlinks=False)
            return
        except OSError as exc:
            if exc.errno == errno.EEXIST:
                raise
            # a file system without hard links: made in place (briefly empty), as it must be made
    finally:
        _remove(temporary, "file")
    _write_marked(path, data)


def _write_marked(path, data):
    """A new read-only file holding `data`, with the placeholders' mark as its time."""
    fd = posix.open(path, posix.O_WRONLY | posix.O_CREAT | posix.O_EXCL | posix.O_NOFOLLOW | posix.O_CLOEXEC, 0o444)
    try:
        posix.write(fd, data)
        posix.fchmod(fd, 0o444)
    finally:
        posix.close(fd)
    posix.utime(path, ns=(MARK_NS, MARK_NS), follow_symlinks=False)


def _is_placeholder(path, kind, content):
    try:
        st = posix.lstat(path)
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


def _clean_up(mutex, held, guards, locks, watched, record, cwd, say=None):
    """Set aside what the command made of the watched names and say so (`say`, default this
    process's stderr); drop our shared locks; where no other sandbox holds its folder, remove the
    placeholders (ours, and any a killed launcher left)."""
    fcntl.flock(mutex, fcntl.LOCK_EX)
    try:
        if watched:
            line = _set_aside(watched, locks, cwd, "which this command created")
            if line:
                (say or _say)(line)
        if record is not None:
            path, fd = record
            _remove(path, "file")
            posix.close(fd)
        # deepest folder first: a placeholder folder (`.git`) empties before its own removal is tried
        for folder, fd in sorted(held.items(), reverse=True):
            fcntl.flock(fd, fcntl.LOCK_UN)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # another sandbox still relies on this folder's placeholders
            marked = _marked(folder)
            for path, kind, mode, content in guards:
                if mode in PLACEHOLDER_MODES and _dirname(path) == folder and _is_placeholder(path, kind, content):
                    _remove(path, kind)
            _mark_again(marked)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        fcntl.flock(mutex, fcntl.LOCK_UN)
        for fd in (*held.values(), mutex):  # closed: the warm helper lives on after this command
            posix.close(fd)


# ---------------------------------------------------------------- watched names, set aside

def _record(locks, watched, cwd):
    """The pending record of this command: written, locked, then renamed into place, so a
    record under its final name is always held by a live launcher or watcher, or finished."""
    temporary = _join(locks, f"writing-{posix.getpid()}")
    fd = posix.open(temporary, posix.O_RDWR | posix.O_CREAT | posix.O_TRUNC | posix.O_CLOEXEC | posix.O_NOFOLLOW, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    posix.write(fd, marshal.dumps({"watched": watched, "cwd": cwd}))
    final = _join(locks, f"pending-{posix.getpid()}-{time.time_ns()}")
    posix.rename(temporary, final)
    return final, fd


def finish_pending(locks, shared):
    """Finish the checks of commands whose watcher was killed (their records are held by
    nobody): set aside what they made; one line each, for the caller to show. `shared`: the
    folder of the mutex."""
    if not _isdir(locks):
        return []
    mutex = _open_lock(_join(shared, "mutex"))
    try:
        fcntl.flock(mutex, fcntl.LOCK_EX)
        return _finish(locks, None)
    finally:
        posix.close(mutex)  # closing drops the lock


def _finish(locks, cwd):
    """`finish_pending` under the mutex."""
    lines = []
    for name in sorted(posix.listdir(locks)):
        if not name.startswith("pending-"):
            continue
        path = _join(locks, name)
        try:
            fd = posix.open(path, posix.O_RDONLY | posix.O_CLOEXEC | posix.O_NOFOLLOW)
        except OSError:
            continue
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # its watcher is alive and will do it
            data = b""
            while chunk := posix.read(fd, 1 << 16):
                data += chunk
            try:
                record = marshal.loads(data)
                watched = [(str(p), str(k)) for p, k in record["watched"]]
            except (EOFError, ValueError, TypeError, KeyError):
                lines.append(f"loopwright: the sandbox could not read its record {path}; removed it")
            else:
                line = _set_aside(watched, locks, cwd or record.get("cwd"),
                                  "which an earlier command created (its clean-up was cut short)")
                if line:
                    lines.append(line)
            _remove(path, "file")
        finally:
            posix.close(fd)
    return lines


_set_asides = itertools.count(1)  # `next` on it is atomic across the warm helper's threads


def _set_aside(watched, locks, cwd, who):
    """Move each watched path that exists now into a quarantine folder of loopwright's home;
    the line that says what was moved, or None."""
    moved, failed = [], []
    n = next(_set_asides)  # a folder of its own each time, even in one process (the warm helper's)
    folder = _join(_dirname(locks), "quarantine", time.strftime("%Y%m%d-%H%M%S") + f"-{posix.getpid()}"
                   + (f"-{n}" if n > 1 else ""))
    for path, _kind in watched:
        if not _lexists(path):
            continue  # the command did not make it (the usual case: no path resolution needed)
        parent = _dirname(path)
        if _realpath(parent) != parent:
            # the folder it was in is a link now (or gone): following it could move something else
            failed.append(f"{_shown(path, cwd)} (its folder {parent} changed; look at it yourself)")
            continue
        target = _join(folder, path.lstrip("/"))
        try:
            _private_dirs(_dirname(target))
            _move(path, target)
        except OSError as exc:
            failed.append(f"{_shown(path, cwd)} ({exc.strerror or exc}; remove it yourself)")
            continue
        moved.append(_shown(path, cwd))
    parts = []
    if moved:
        parts.append(f"the sandbox set aside {', '.join(moved)}, {who}: protected paths are read-only to commands; "
                     f"kept in {folder}")
    if failed:
        parts.append(f"the sandbox could not set aside {', '.join(failed)}")
    return "loopwright: " + "; ".join(parts) if parts else None


def _move(path, target):
    try:
        posix.rename(path, target)
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
        import shutil  # another file system: copy, then remove (rare; not on the start-up path)

        if _isdir(path) and not _islink(path):
            shutil.copytree(path, target, symlinks=True)
            shutil.rmtree(path)
        else:
            shutil.copy2(path, target, follow_symlinks=False)
            posix.unlink(path)


def _private_dirs(path):
    missing = []
    while not _isdir(path):
        missing.append(path)
        path = _dirname(path)
    for folder in reversed(missing):
        try:
            posix.mkdir(folder, 0o700)
        except FileExistsError:
            pass


def _shown(path, cwd):
    if cwd and path.startswith(cwd.rstrip("/") + "/"):
        return path[len(cwd.rstrip("/")) + 1:]
    return path


def _say(line):
    try:
        posix.write(2, (line + "\n").encode("utf-8", "surrogateescape"))
    except OSError:
        pass  # nobody reads the command's stderr any more


# ---------------------------------------------------------------- small helpers

def _remove(path, kind):
    try:
        if kind == "dir":
            posix.chmod(path, 0o755)
            posix.rmdir(path)
        else:
            posix.unlink(path)
    except OSError:
        pass  # filled or changed meanwhile by someone on the host: theirs now


def _check_lock_folder(path):
    """The folder loopwright made private before starting us; checked, never trusted blindly."""
    st = posix.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != posix.geteuid():
        raise Refused(f"its lock folder {path} is not a folder of this user")
    if stat.S_IMODE(st.st_mode) != 0o700:
        posix.chmod(path, 0o700)


def _open_lock(path):
    return posix.open(path, posix.O_RDWR | posix.O_CREAT | posix.O_CLOEXEC | posix.O_NOFOLLOW, 0o600)


def _key(folder):
    """A lock file's name for a folder. Two folders sharing one only lock together more often."""
    data = folder.encode("utf-8", "surrogateescape")
    return f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}"


# ---------------------------------------------------------------- paths, without os.path
# The paths here are absolute and normalised (`wrap` makes them so); these do what posixpath does
# for such paths.

def _join(first, *rest):
    out = first
    for part in rest:
        out = part if part.startswith("/") else (out if out.endswith("/") else out + "/") + part
    return out


def _dirname(path):
    head = path[:path.rfind("/") + 1]
    return head.rstrip("/") or head


def _lstat_mode(path, follow=False):
    try:
        return (posix.stat(path) if follow else posix.lstat(path)).st_mode
    except (OSError, ValueError):
        return None


def _isdir(path):
    mode = _lstat_mode(path, follow=True)
    return mode is not None and stat.S_ISDIR(mode)


def _islink(path):
    mode = _lstat_mode(path)
    return mode is not None and stat.S_ISLNK(mode)


def _lexists(path):
    return _lstat_mode(path) is not None


def _realpath(path):
    import posixpath  # only when a watched name appeared: not on every command's way

    return posixpath.realpath(path)


if __name__ == "__main__":
    main(sys.argv)
