"""`loopwright mcp list|get|add|remove`: the MCP servers of this folder, in the files Claude Code
uses (`.mcp.json` for the project scope, `~/.claude.json` for the local and user scopes)."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from pathlib import Path
from typing import Any

from ...core.errors import UsageError
from ..parsing import Parser

SCOPES = ("local", "project", "user")




def parser() -> Parser:
    p = Parser(prog="loopwright mcp", allow_abbrev=False, description="Configure and check MCP servers.")
    sub = p.add_subparsers(dest="command", required=True)
    ls = sub.add_parser("list", allow_abbrev=False, help="Every server of this folder, connected to check it.")
    ls.add_argument("--json", action="store_true", help="JSON instead of lines.")
    get = sub.add_parser("get", allow_abbrev=False, help="One server: where it is defined, its status, its tools.")
    get.add_argument("name", help="The server's name.")
    get.add_argument("--json", action="store_true", help="JSON instead of lines.")
    add = sub.add_parser("add", allow_abbrev=False, help="Add a server: NAME COMMAND [ARGS...] or NAME URL "
                         "with --transport http|sse.")
    add.add_argument("-s", "--scope", choices=SCOPES, default="local",
                     help="local (you, this folder; default), project (.mcp.json, shared) or user (you, everywhere).")
    add.add_argument("-t", "--transport", choices=("stdio", "http", "sse"), default="stdio",
                     help="stdio (a command loopwright starts; default), http or sse (a URL).")
    add.add_argument("-e", "--env", action="append", default=[], metavar="KEY=VALUE",
                     help="An environment variable for a stdio server (repeatable).")
    add.add_argument("-H", "--header", action="append", default=[], metavar="'Name: value'",
                     help="A header for an http or sse server (repeatable).")
    add.add_argument("name", help="The server's name (its tools are mcp__NAME__TOOL).")
    add.add_argument("target", metavar="COMMAND_OR_URL", help="The command to start, or the server's URL.")
    add.add_argument("args", nargs=argparse.REMAINDER, help="The command's arguments.")
    rm = sub.add_parser("remove", allow_abbrev=False, help="Remove a server from its configuration file.")
    rm.add_argument("name", help="The server's name.")
    rm.add_argument("-s", "--scope", choices=SCOPES, help="Remove it from this scope's file (default: the "
                    "one file that defines it).")
    return p


def run_mcp(args: list[str]) -> int:
    opts = parser().parse_args(args)
    if opts.command == "add":
        return _add(opts)
    if opts.command == "remove":
        return _remove(opts.name, opts.scope)
    return _show(opts.name if opts.command == "get" else None, opts.json)


# ---------------------------------------------------------------- the files


def _file_for(scope: str) -> Path:
    from ...settings.mcpfiles import user_config_path

    return Path.cwd() / ".mcp.json" if scope == "project" else user_config_path(os.environ)


def _servers_in(doc: dict[str, Any], scope: str, create: bool = False) -> dict[str, Any] | None:
    holder: Any = doc
    if scope == "local":
        projects = doc.setdefault("projects", {}) if create else doc.get("projects") or {}
        holder = projects.setdefault(str(Path.cwd()), {}) if create else projects.get(str(Path.cwd()))
        if not isinstance(holder, dict):
            return None
    servers = holder.setdefault("mcpServers", {}) if create else holder.get("mcpServers")
    return servers if isinstance(servers, dict) else None


def _load(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: cannot read it as JSON ({exc}); fix it first") from None
    if not isinstance(doc, dict):
        raise UsageError(f"{path}: expected a JSON object")
    return doc


def _save(path: Path, doc: dict[str, Any]) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    if path.exists():
        os.chmod(tmp, path.stat().st_mode & 0o777)
    elif path.name == ".claude.json":
        os.chmod(tmp, 0o600)
    os.replace(tmp, path)


def _add(opts: argparse.Namespace) -> int:
    from ...mcp.config import parse_servers

    entry: dict[str, Any]
    if opts.transport == "stdio":
        entry = {"type": "stdio", "command": opts.target, "args": [a for a in opts.args if a != "--"] }
        if opts.env:
            entry["env"] = dict(_pair(e, "=", "--env", "KEY=VALUE") for e in opts.env)
    else:
        late = Parser(prog="loopwright mcp add", allow_abbrev=False, add_help=False)
        late.add_argument("-H", "--header", action="append", default=[])
        extra, rest = late.parse_known_args(opts.args)
        if rest:
            raise UsageError(f"loopwright mcp add: an {opts.transport} server takes a URL and no arguments "
                             f"(got {' '.join(rest)})")
        opts.header += extra.header
        entry = {"type": opts.transport, "url": opts.target}
        if opts.header:
            entry["headers"] = dict(_pair(h, ":", "--header", "'Name: value'") for h in opts.header)
    path = _file_for(opts.scope)
    parse_servers({opts.name: entry}, "loopwright mcp add", opts.scope, {})  # a bad entry never reaches the file
    doc = _load(path)
    servers = _servers_in(doc, opts.scope, create=True)
    assert servers is not None
    if opts.name in servers:
        raise UsageError(f"loopwright mcp add: {opts.name!r} is already defined in {path} ({opts.scope}); "
                         "remove it first")
    servers[opts.name] = entry
    _save(path, doc)
    print(f"Added {opts.transport} MCP server {opts.name!r} to {path} ({opts.scope} scope).")
    return 0


def _pair(text: str, sep: str, flag: str, shape: str) -> tuple[str, str]:
    key, found, value = text.partition(sep)
    if not found or not key.strip():
        raise UsageError(f"loopwright mcp add: {flag}: expected {shape}, got {text!r}")
    return key.strip(), value.strip() if sep == ":" else value


def _remove(name: str, scope: str | None) -> int:
    found = []
    for s in (scope,) if scope else SCOPES:
        servers = _servers_in(_load(_file_for(s)), s)
        if servers is not None and name in servers:
            found.append(s)
    if not found:
        where = f" in the {scope} scope" if scope else ""
        raise UsageError(f"loopwright mcp remove: no MCP server named {name!r}{where}")
    if len(found) > 1:
        raise UsageError(f"loopwright mcp remove: {name!r} is defined in several scopes ({', '.join(found)}); "
                         "say which with --scope")
    path = _file_for(found[0])
    doc = _load(path)
    servers = _servers_in(doc, found[0])
    assert servers is not None
    del servers[name]
    _save(path, doc)
    print(f"Removed MCP server {name!r} from {path} ({found[0]} scope).")
    return 0


# ---------------------------------------------------------------- list and get


def _show(name: str | None, as_json: bool) -> int:
    from ...core.environ import child_env
    from ...mcp.toolset import McpServers
    from ...settings.mcpfiles import load_mcp_servers
    from ..core import printable

    specs = load_mcp_servers(Path.cwd())
    if name is not None:
        specs = [s for s in specs if s.name == name]
        if not specs:
            raise UsageError(f"loopwright mcp get: no MCP server named {name!r} is configured for this folder")
    if not specs:
        print("No MCP servers are configured for this folder (`loopwright mcp add` adds one).")
        return 0
    servers = McpServers(specs, str(Path.cwd()), child_env())

    async def check() -> list[dict[str, Any]]:
        await servers.start()
        try:
            servers.tools()  # the names on the wire, each connection's `renamed` filled
            return [_described(c) for c in servers.connections]
        finally:
            await servers.aclose()

    found = asyncio.run(check())
    healthy = all(e["status"] == "connected" for e in found)
    if as_json:
        print(json.dumps(found if name is None else found[0], indent=1))
        return 0 if healthy else 1
    for entry in found:
        mark = "✓ connected" if entry["status"] == "connected" else f"✗ failed: {entry.get('error', '')}"
        print(printable(f"{entry['name']}: {entry['target']} ({entry['scope']}: {entry['source']}) - {mark}"))
        for wire, original in entry.get("renamed_tools", {}).items():
            print(printable(f"  {wire} is the server's tool {original!r} (renamed: too long, or clashing once cleaned)"))
        for original in entry.get("unnamed_tools", []):
            print(printable(f"  the server's tool {original!r} is not offered: no unique name for it on the wire"))
        if name is not None:
            for tool in entry["tools"]:
                print(printable(f"  {tool}"))
    return 0 if healthy else 1


def _described(c: Any) -> dict[str, Any]:
    from ...mcp.config import tool_name

    spec = c.spec
    wire = {original: name for name, original in c.renamed.items()}
    target = spec.url if spec.transport != "stdio" else " ".join([spec.command, *spec.args])
    out = {"name": spec.name, "transport": spec.transport, "target": target, "scope": spec.scope,
           "source": spec.source, "status": c.status if c.status != "closed" else "connected",
           "tools": [wire.get(t.name, tool_name(spec.name, t.name)) for t in c.tools if t.name not in c.unnamed]}
    if c.error:
        out["error"] = c.error
    if c.renamed:
        out["renamed_tools"] = dict(c.renamed)
    if c.unnamed:
        out["unnamed_tools"] = list(c.unnamed)
    return out


__all__ = ["run_mcp"]
