"""Starts one sandboxed command: `python -I -S launch.py SPEC BWRAP_ARGV...` (standard library
only, run by path, so it starts in a few milliseconds and imports nothing of the project).

It owns what must happen on the host around bwrap, for the command's whole life:
- **guards**: each protected path is bound onto itself inside the sandbox, which pins the entry
  (the kernel refuses to rename, remove or replace a mount point: EBUSY) and makes it read-only.
  A protected name that does not exist yet gets a placeholder first — an empty read-only file or
  folder whose modification time is a marker — so the command cannot create it; placeholders
  are removed again when the last sandbox using their folder has ended. A protected entry that
  is a symbolic link cannot be pinned (mounts follow links): the command is refused (exit 126);
- **the seccomp filter**: passed to bwrap on a pipe (`--seccomp FD`);
- **locks** (in loopwright's home, `sandbox/`): one mutex for creating and removing
  placeholders, and per folder a lock every running sandbox holds shared, so a placeholder is
  never removed under a sandbox still relying on it (unlinking a mount point on the host would
  dissolve that sandbox's mount);
- **ending**: TERM/INT/HUP are passed on to bwrap; the launcher dies with its parent.

SPEC is JSON: {"guards": [[path, kind, mode, content], ...], "seccomp": hex or null,
"locks": folder, "insert": index into BWRAP_ARGV where the guard mounts go}. `kind` is "dir" or
"file" (what a placeholder is); `mode` "ro" (pinned read-only, placeholder when missing), "rw"
(pinned writable, a read-only placeholder when missing) or "open" (writable when present).
"""

import errno
import hashlib
import json
import os
import signal
import stat
import subprocess
import sys

MARK_NS = 1_000_000_007  # a placeholder's mtime (1970-01-01 00:00:01.000000007): ours, and untouched
REFUSED = 126


class Refused(Exception):
    """The command cannot be sandboxed as asked; the message says why."""


def main(argv):
    spec, bwrap = json.loads(argv[1]), argv[2:]
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, _on_signal)
    _die_with_parent()
    mutex, held, temporary = None, {}, []
    try:
        locks = _lock_folder(spec["locks"])
        mutex = _open_lock(os.path.join(locks, "mutex"))
        _flock(mutex, "EX")
        try:
            for folder in sorted({os.path.dirname(g[0]) for g in spec["guards"]}):
                held[folder] = _open_lock(os.path.join(locks, _key(folder) + ".users"))
                _flock(held[folder], "SH")
            made = []
            mounts = guard_mounts(spec["guards"], made)
            mounts += _exclusions(spec.get("excludes") or (), made, locks, temporary)
        finally:
            _flock(mutex, "UN")
        code = _run(bwrap, spec["insert"], mounts, spec.get("seccomp"))
    except (Refused, OSError) as exc:
        print(f"loopwright: the sandbox refuses this command: {exc}", file=sys.stderr, flush=True)
        code = REFUSED
    finally:
        if mutex is not None:
            _clean_up(mutex, held, spec["guards"], spec["locks"])
        for path in temporary:
            _remove(path, "file")
    _exit_like(code)


_state = {"child": None, "signal": None}


def _on_signal(signum, _frame):
    """Pass the signal on to bwrap; before it runs, remember it so it never starts."""
    _state["signal"] = signum
    child = _state["child"]
    if child is not None:
        try:
            child.send_signal(signum)
        except OSError:
            pass


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


def _present(path):
    """True when `path` exists as a file or folder; None when missing; Refused for a link."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    except NotADirectoryError:
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


def _clean_up(mutex, held, guards, locks):
    """Drop our shared locks; where no other sandbox holds its folder, remove the placeholders."""
    _flock(mutex, "EX")
    try:
        for folder, fd in held.items():
            _flock(fd, "UN")
            if _flock(fd, "EX", wait=False):
                for path, kind, _mode, content in guards:
                    if os.path.dirname(path) == folder and _is_placeholder(path, kind, content):
                        _remove(path, kind)
                _flock(fd, "UN")
            os.close(fd)
        _sweep(locks)
    finally:
        _flock(mutex, "UN")
        os.close(mutex)


def _sweep(locks):
    """Exclude copies left by a launcher that was killed outright (its pid is in the name)."""
    for name in os.listdir(locks):
        if name.startswith("exclude-"):
            pid = name.split("-")[1]
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


def _remove(path, kind):
    try:
        if kind == "dir":
            os.chmod(path, 0o755)
            os.rmdir(path)
        else:
            os.unlink(path)
    except OSError:
        pass  # filled or changed meanwhile by someone on the host: theirs now


def _run(bwrap, insert, mounts, seccomp):
    extra, fds = list(mounts), []
    if seccomp:
        read, write = os.pipe()
        os.write(write, bytes.fromhex(seccomp))  # a few hundred bytes: the pipe never blocks
        os.close(write)
        extra += ["--seccomp", str(read)]
        fds.append(read)
    argv = bwrap[:insert] + extra + bwrap[insert:]
    try:
        if _state["signal"] is not None:
            return -_state["signal"]
        try:
            _state["child"] = child = subprocess.Popen(argv, pass_fds=fds)
        except OSError as exc:
            raise Refused(f"bwrap could not start: {exc.strerror or exc}") from None
    finally:
        for fd in fds:
            os.close(fd)
    if _state["signal"] is not None:  # arrived while it was starting
        _on_signal(_state["signal"], None)
    return child.wait()


def _exit_like(code):
    """Exit as the command did: with its code, or killed by the same signal."""
    if code < 0:
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    sys.exit(code if code >= 0 else 128 - code)


def _die_with_parent():
    if not sys.platform.startswith("linux"):
        return
    parent = os.getppid()
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM))  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent died before the request took effect
        os.kill(os.getpid(), signal.SIGTERM)


def _lock_folder(path):
    """The folder loopwright made private before starting us; checked, never trusted blindly."""
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
        raise Refused(f"its lock folder {path} is not a folder of this user")
    if stat.S_IMODE(st.st_mode) != 0o700:
        os.chmod(path, 0o700)
    return path


def _open_lock(path):
    return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)


def _flock(fd, how, wait=True):
    import fcntl

    op = {"EX": fcntl.LOCK_EX, "SH": fcntl.LOCK_SH, "UN": fcntl.LOCK_UN}[how] | (0 if wait else fcntl.LOCK_NB)
    try:
        fcntl.flock(fd, op)
    except BlockingIOError:
        return False
    return True


def _key(folder):
    return hashlib.sha256(folder.encode("utf-8", "surrogateescape")).hexdigest()[:32]


if __name__ == "__main__":
    main(sys.argv)
