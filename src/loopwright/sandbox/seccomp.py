"""The seccomp filter handed to `bwrap --seccomp FD`: a classic-BPF program, built here without
libseccomp, that keeps sandboxed commands away from the host's unix sockets (which the network
namespace does not cover: a socket file is reached through the filesystem), io_uring and the
kernel's keyrings.

What it decides, per system call:
- a call made under another architecture (32-bit code on a 64-bit kernel, x32): the process is
  killed — its socket calls look different there (`socketcall`), so nothing of it is judged;
- `socket(AF_UNIX, …)`: EPERM — no new unix socket, so no `connect` to a host daemon;
- `socketpair(AF_UNIX, …)`: allowed for stream pairs only (shells, Python's asyncio and libuv
  use them; a connected stream socket cannot connect again); a datagram pair could `connect`
  or `sendto` a host socket file, so it gets EPERM;
- `socket(AF_VSOCK, …)` while the network is off: EPERM (vsock reaches the hypervisor's host and
  no network namespace covers it);
- `io_uring_setup`: ENOSYS — io_uring creates and connects sockets without these system calls;
- `keyctl`, `add_key`, `request_key`: EPERM — the kernel's keyrings are not namespaced: a
  command could read or plant keys of the user's session and user keyrings (Kerberos tickets,
  ecryptfs and fscrypt keys, tokens other programs keep there).
Only the low 32 bits of an argument are compared: the kernel reads `int` arguments that way.
"""

from __future__ import annotations

import platform
import struct
import sys

__all__ = ["UnsupportedMachine", "program"]

# struct seccomp_data: int nr; u32 arch; u64 instruction_pointer; u64 args[6]
_NR, _ARCH, _ARG0, _ARG1 = 0, 4, 16, 24
AF_UNIX, AF_VSOCK, SOCK_STREAM, SOCK_TYPE_MASK = 1, 40, 1, 0xF
EPERM, ENOSYS = 1, 38
RET_KILL_PROCESS, RET_ERRNO, RET_ALLOW = 0x80000000, 0x00050000, 0x7FFF0000
X32_SYSCALL_BIT = 0x40000000
# machine -> (AUDIT_ARCH_*, socket, socketpair, io_uring_setup, (add_key, request_key, keyctl))
_MACHINES = {
    "x86_64": (0xC000003E, 41, 53, 425, (248, 249, 250)),
    "aarch64": (0xC00000B7, 198, 199, 425, (217, 218, 219)),
}
_ALIASES = {"amd64": "x86_64", "arm64": "aarch64"}
# BPF opcodes: ld word absolute, jeq/jset with constant, and with constant, return constant
_LD, _JEQ, _JSET, _AND, _RET = 0x20, 0x15, 0x45, 0x54, 0x06


class UnsupportedMachine(RuntimeError):
    """No filter is known for this machine: the sandbox cannot keep unix sockets closed."""


def machine() -> str:
    name = platform.machine().lower()
    return _ALIASES.get(name, name)


def program(*, network: bool, name: str | None = None) -> bytes:
    """The filter as bwrap reads it: `struct sock_filter` records in the machine's byte order.
    Raises `UnsupportedMachine` where no filter is known (fail closed: the caller refuses)."""
    name = name or machine()
    if name not in _MACHINES or sys.byteorder != "little":
        raise UnsupportedMachine(f"no unix-socket filter is known for this machine ({name}, {sys.byteorder}-endian)")
    arch, nr_socket, nr_pair, nr_uring, keyrings = _MACHINES[name]
    deny, nosys = RET_ERRNO | EPERM, RET_ERRNO | ENOSYS
    code: list[tuple] = [
        (_LD, _ARCH), (_JEQ, arch, None, "kill"),
        (_LD, _NR), (_JSET, X32_SYSCALL_BIT, "kill", None),
        (_JEQ, nr_uring, "nosys", None),
        *((_JEQ, nr, "deny", None) for nr in keyrings),
        (_JEQ, nr_socket, "socket", None),
        (_JEQ, nr_pair, "pair", None),
        ("allow",),
        ("label", "socket"), (_LD, _ARG0), (_JEQ, AF_UNIX, "deny", None),
    ]
    if not network:
        code += [(_JEQ, AF_VSOCK, "deny", None)]
    code += [
        ("allow",),
        ("label", "pair"), (_LD, _ARG0), (_JEQ, AF_UNIX, None, "allow"),
        (_LD, _ARG1), (_AND, SOCK_TYPE_MASK), (_JEQ, SOCK_STREAM, "allow", "deny"),
        ("label", "allow"), (_RET, RET_ALLOW),
        ("label", "deny"), (_RET, deny),
        ("label", "nosys"), (_RET, nosys),
        ("label", "kill"), (_RET, RET_KILL_PROCESS),
    ]
    return _assemble(code)


def _assemble(code: list[tuple]) -> bytes:
    """Two passes: place labels, then encode each instruction with its jump offsets (classic BPF
    jumps only forward, counted from the next instruction; None means fall through)."""
    code = [(_RET, RET_ALLOW) if ins == ("allow",) else ins for ins in code]
    labels: dict[str, int] = {}
    body: list[tuple] = []
    for ins in code:
        if ins[0] == "label":
            labels[ins[1]] = len(body)
        else:
            body.append(ins)
    out = bytearray()
    for at, ins in enumerate(body):
        op, k = ins[0], ins[1]
        jt = jf = 0
        if op in (_JEQ, _JSET):
            jt, jf = (0 if t is None else labels[t] - at - 1 for t in ins[2:4])
            if not (0 <= jt < 256 and 0 <= jf < 256):
                raise AssertionError("a jump of the seccomp filter is out of range")
        out += struct.pack("=HBBI", op, jt, jf, k)
    return bytes(out)
