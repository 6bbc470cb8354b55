"""MCP server entries as Claude Code writes them (`{"mcpServers": {name: entry}}`), checked and
expanded. An entry is stdio (`command`, `args`, `env`, `cwd`) or remote (`type: http|sse`, `url`,
`headers`); both may carry `timeout` (ms, per tool call). `${VAR}` and `${VAR:-default}` are
expanded in `command`, `args`, `env`, `cwd`, `url` and `headers`. Pure: no file is read here."""

from __future__ import annotations

import json
import re
from typing import Any, Mapping

from ..core.errors import UsageError
from ..core.fastclass import dataclass

__all__ = ["ServerSpec", "expand", "parse_servers", "parse_document", "tool_name", "server_prefix"]

TRANSPORTS = ("stdio", "http", "sse")
_NAME = re.compile(r"[A-Za-z0-9_:.-]{1,64}")
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_STDIO_KEYS = {"type", "command", "args", "env", "cwd", "timeout", "alwaysLoad"}
_REMOTE_KEYS = {"type", "url", "headers", "timeout", "alwaysLoad", "headersHelper", "oauth"}


@dataclass(frozen=True, slots=True)
class ServerSpec:
    """One configured server: `source` names the file (or flag) and `scope` where it came from
    (dynamic, local, project, user, plugin)."""

    name: str
    transport: str
    command: str = ""
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    cwd: str | None = None
    url: str = ""
    headers: tuple[tuple[str, str], ...] = ()
    timeout_s: float | None = None
    source: str = ""
    scope: str = "dynamic"
    warnings: tuple[str, ...] = ()
    # transport "sdk": a server in the host process; carries one JSON-RPC message there (mcp.bridge)
    bridge: Any = None


def expand(value: str, env: Mapping[str, str], missing: list[str]) -> str:
    """`${VAR}` and `${VAR:-default}`; an unset variable without a default stays as written and
    its name goes into `missing`."""
    def one(m: re.Match[str]) -> str:
        name, default = m.group(1), m.group(2)
        if name in env and (env[name] or default is None):
            return env[name]
        if default is not None:
            return default
        missing.append(name)
        return m.group(0)

    return _VAR.sub(one, value)


def parse_document(text: str, source: str) -> dict[str, Any]:
    """The `mcpServers` object of a config file's text (or an inline JSON flag value)."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"{source}: not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise UsageError(f"{source}: expected a JSON object with an \"mcpServers\" object")
    servers = data.get("mcpServers", {})
    if not isinstance(servers, dict):
        raise UsageError(f"{source}: mcpServers: expected an object of server entries, got {_kind(servers)}")
    return servers


def parse_servers(servers: Mapping[str, Any], source: str, scope: str,
                  env: Mapping[str, str]) -> list[ServerSpec]:
    """Check every entry; the first bad one raises `UsageError` naming the file and the key."""
    return [_entry(name, entry, source, scope, env) for name, entry in servers.items()]


def _entry(name: str, entry: Any, source: str, scope: str, env: Mapping[str, str]) -> ServerSpec:
    where = f"{source}: mcpServers.{name}"
    if not _NAME.fullmatch(name):
        raise UsageError(f"{where}: a server name is 1-64 letters, digits, '_', '-', '.' or ':'")
    if not isinstance(entry, dict):
        raise UsageError(f"{where}: expected an object with \"command\" or \"url\", got {_kind(entry)}")
    transport = entry.get("type", "stdio")
    if transport == "streamable-http":
        transport = "http"
    if transport not in TRANSPORTS:
        raise UsageError(f"{where}.type: expected one of {', '.join(TRANSPORTS)}, got {transport!r}")
    if "type" not in entry and "url" in entry:
        raise UsageError(f"{where}: an entry with \"url\" needs \"type\": \"http\" or \"sse\"")
    allowed = _STDIO_KEYS if transport == "stdio" else _REMOTE_KEYS
    for key in entry:
        if key not in allowed:
            raise UsageError(f"{where}.{key}: not a key of a {transport} server (expected one of "
                             f"{', '.join(sorted(allowed))})")
    missing: list[str] = []
    timeout = entry.get("timeout")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0):
        raise UsageError(f"{where}.timeout: expected milliseconds (a positive number), got {timeout!r}")
    timeout_s = timeout / 1000 if timeout is not None and timeout >= 1000 else None
    if transport == "stdio":
        command = _string(entry.get("command"), f"{where}.command", required=True)
        args = entry.get("args", [])
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise UsageError(f"{where}.args: expected a list of strings")
        cwd = entry.get("cwd")
        if cwd is not None:
            cwd = expand(_string(cwd, f"{where}.cwd"), env, missing)
        spec = ServerSpec(name, "stdio", command=expand(command, env, missing),
                          args=tuple(expand(a, env, missing) for a in args),
                          env=_pairs(entry.get("env", {}), f"{where}.env", env, missing), cwd=cwd,
                          timeout_s=timeout_s, source=source, scope=scope)
    else:
        url = expand(_string(entry.get("url"), f"{where}.url", required=True), env, missing)
        if not re.match(r"https?://", url):
            raise UsageError(f"{where}.url: expected an http:// or https:// URL, got {url!r}")
        spec = ServerSpec(name, transport, url=url,
                          headers=_pairs(entry.get("headers", {}), f"{where}.headers", env, missing),
                          timeout_s=timeout_s, source=source, scope=scope)
    if missing:
        names = ", ".join(dict.fromkeys(missing))
        return _with_warning(spec, f"{where}: ${{{names}}} is not set and has no default; kept as written")
    return spec


def _with_warning(spec: ServerSpec, warning: str) -> ServerSpec:
    from dataclasses import replace

    return replace(spec, warnings=spec.warnings + (warning,))


def _string(value: Any, where: str, *, required: bool = False) -> str:
    if value is None and required:
        raise UsageError(f"{where}: required (a string)")
    if not isinstance(value, str) or (required and not value):
        raise UsageError(f"{where}: expected a non-empty string, got {_kind(value)}")
    return value


def _pairs(value: Any, where: str, env: Mapping[str, str], missing: list[str]) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise UsageError(f"{where}: expected an object of string values")
    return tuple((k, expand(v, env, missing)) for k, v in value.items())


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number")


def server_prefix(server: str) -> str:
    """`mcp__<server>__`; a plugin's server `plugin:p:s` becomes `mcp__plugin_p_s__`."""
    return "mcp__" + re.sub(r"[^A-Za-z0-9_-]", "_", server) + "__"


def tool_name(server: str, tool: str) -> str:
    return server_prefix(server) + re.sub(r"[^A-Za-z0-9_-]", "_", tool)
