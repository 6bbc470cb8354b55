"""`SandboxConfig`: what the OS sandbox around the model's commands allows, as checked data —
read from settings' `sandbox` object here, enforced by `loopwright.sandbox` (bwrap). Plain data
(no I/O), so an agent's description carries it without importing the sandbox itself."""

from __future__ import annotations

import os
from typing import Any, Mapping

from .fastclass import dataclass

__all__ = ["SandboxConfig"]


@dataclass(frozen=True, slots=True)
class SandboxConfig:
    """`enabled`: run every command the model starts under bwrap (the default; off only by
    `--no-sandbox` or trusted settings). `network`: keep the host's network (off: a private one
    with only its own loopback). `domains`: with the network off, the hosts commands may still
    reach through loopwright's proxy (sandbox/proxy.py; patterns: `core/domains.py`). `fail_closed`
    (`failIfUnavailable: true`): when bwrap cannot run, refuse Bash instead of running it outside
    with every call asked for (strict rules).
    `writable`: more writable roots than the session's (`filesystem.allowWrite` among them).
    `deny_read`: paths hidden inside (`filesystem.denyRead`, beside the built-in `SECRETS`);
    `deny_write`: paths kept read-only inside the writable roots (`filesystem.denyWrite`).
    `excluded` (`excludedCommands`): commands that run outside the sandbox, each run asked for;
    `allow_unsandboxed` (`allowUnsandboxedCommands`): false refuses every such escape.
    `unix_sockets`: the host unix sockets the user named (`allowUnixSockets`), `all_unix_sockets`
    (`allowAllUnixSockets`): either one lets commands create unix sockets — Linux's filter sees
    a socket's family, not the path it connects to, so naming one socket opens them all."""

    enabled: bool = True
    network: bool = False
    fail_closed: bool = False
    writable: tuple[str, ...] = ()
    unix_sockets: tuple[str, ...] = ()
    all_unix_sockets: bool = False
    deny_read: tuple[str, ...] = ()
    deny_write: tuple[str, ...] = ()
    excluded: tuple[str, ...] = ()
    allow_unsandboxed: bool = True
    domains: tuple[str, ...] = ()
    visible: tuple[str, ...] = ()  # folders commands must see, read-only, wherever they are (plugin roots)

    def __post_init__(self) -> None:
        if self.domains:  # a bad pattern fails here, naming itself, not at the first command
            from .domains import Allowlist

            Allowlist.parse(self.domains)

    @property
    def sockets_open(self) -> bool:
        return self.all_unix_sockets or bool(self.unix_sockets)

    @classmethod
    def from_settings(cls, section: Mapping[str, Any], *, writable: tuple[str, ...] = ()) -> SandboxConfig:
        """From settings' `sandbox` object: `enabled` (default true), `network` (true, or an
        object with `allowAll: true` or `"*"` in `allowedDomains` for the whole network, else the
        hosts `allowedDomains` lists through the proxy; `allowUnixSockets: [paths]` and
        `allowAllUnixSockets: true` as in Claude Code), `failIfUnavailable` (default false),
        `filesystem` (`denyRead`, `allowWrite`, `denyWrite`: lists of paths, `~` expanded),
        `excludedCommands` (Bash rule patterns) and `allowUnsandboxedCommands` (default true).
        Which settings files may open what is decided by the caller (`config.sandbox_settings`).
        A malformed value is a ValueError naming its key."""
        net = section.get("network")
        sockets: tuple[str, ...] = ()
        every_socket = False
        domains: tuple[str, ...] = ()
        if isinstance(net, Mapping):
            sockets = tuple(str(p) for p in net.get("allowUnixSockets") or () if isinstance(p, str))
            every_socket = net.get("allowAllUnixSockets") is True
            domains = tuple(d for d in net.get("allowedDomains") or () if isinstance(d, str))
            net = net.get("allowAll") is True or "*" in domains
        files = section.get("filesystem") or {}
        if not isinstance(files, Mapping):
            raise ValueError("sandbox.filesystem: expected an object with denyRead, allowWrite, denyWrite")
        allowed = section.get("allowUnsandboxedCommands", True)
        if not isinstance(allowed, bool):
            raise ValueError(f"sandbox.allowUnsandboxedCommands: expected true or false, got {allowed!r}")
        return cls(section.get("enabled") is not False, net is True, section.get("failIfUnavailable") is True,
                   writable + _paths(files, "allowWrite"), sockets, every_socket, _paths(files, "denyRead"),
                   _paths(files, "denyWrite"), _texts(section, "excludedCommands", "sandbox."), allowed,
                   () if net is True else domains)


def _texts(section: Mapping[str, Any], key: str, where: str) -> tuple[str, ...]:
    values = section.get(key) or ()
    if not isinstance(values, (list, tuple)) or not all(isinstance(v, str) and v.strip() for v in values):
        raise ValueError(f"{where}{key}: expected a list of non-empty strings, got {values!r}")
    return tuple(values)


def _paths(files: Mapping[str, Any], key: str) -> tuple[str, ...]:
    """Paths as written, `~` expanded; relative ones are relative to the working folder."""
    out = []
    for value in _texts(files, key, "sandbox.filesystem."):
        if any(c in value for c in "*?["):
            raise ValueError(f"sandbox.filesystem.{key}: {value!r} is a pattern; name files and folders "
                             "(a folder covers everything below it)")
        out.append(os.path.expanduser(value))
    return tuple(out)
