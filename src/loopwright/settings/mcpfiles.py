"""Where MCP servers are configured, as Claude Code reads them, lowest precedence first: user
(`~/.claude.json` `mcpServers`, loopwright's `mcp.json`), project (`.mcp.json`, `.loopwright/mcp.json`),
local (`~/.claude.json` `projects[<folder>].mcpServers`), then `--mcp-config` (files or inline
JSON). A name defined twice takes the whole entry of the higher source. `--strict-mcp-config`
keeps only the flags'. A project's files count only when its folder is trusted."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from ..core.errors import UsageError
from ..core.home import home as loopwright_home

if TYPE_CHECKING:
    from ..mcp.config import ServerSpec

__all__ = ["any_config", "load_mcp_servers", "project_mcp_files", "user_config_path", "scoped_sources"]


def user_config_path(env: Mapping[str, str]) -> Path:
    return Path(env.get("HOME") or Path.home()) / ".claude.json"


def project_mcp_files(cwd: Path) -> list[Path]:
    return [p for p in (cwd / ".mcp.json", cwd / ".loopwright" / "mcp.json") if p.is_file()]


def any_config(cwd: Path, env: Mapping[str, str]) -> bool:
    """Whether any file that may configure servers exists (a stat each; nothing imported or read)."""
    return any(p.is_file() for p in (user_config_path(env), loopwright_home(env) / "mcp.json",
                                      cwd / ".mcp.json", cwd / ".loopwright" / "mcp.json"))


def scoped_sources(cwd: Path, env: Mapping[str, str], project: bool = True) -> list[tuple[str, str, dict[str, Any]]]:
    """(source, scope, mcpServers object) for every file that has servers, lowest first."""
    from ..mcp.config import parse_document

    out: list[tuple[str, str, dict[str, Any]]] = []
    user_file = user_config_path(env)
    user_doc = _read_json(user_file)
    if user_doc is not None:
        out.append((str(user_file), "user", _servers_of(user_doc, str(user_file))))
    own = loopwright_home(env) / "mcp.json"
    if own.is_file():
        out.append((str(own), "user", parse_document(_read(own), str(own))))
    if project:
        for path in project_mcp_files(cwd):
            out.append((str(path), "project", parse_document(_read(path), str(path))))
    if user_doc is not None:
        local = (user_doc.get("projects") or {}).get(str(cwd))
        if isinstance(local, dict) and "mcpServers" in local:
            out.append((f"{user_file} (projects[{cwd}])", "local", _servers_of(local, str(user_file))))
    return out


def load_mcp_servers(cwd: Path, *, flags: Sequence[str] = (), strict: bool = False, project: bool = True,
                     disabled: Sequence[str] = (), env: Mapping[str, str] | None = None) -> list[ServerSpec]:
    """Every server to start for this session, checked (a bad entry raises `UsageError`)."""
    from ..mcp.config import parse_document, parse_servers

    env = os.environ if env is None else env
    found = [] if strict else scoped_sources(cwd, env, project)
    for value in flags:
        if value.lstrip().startswith("{"):
            found.append(("--mcp-config", "dynamic", parse_document(value, "--mcp-config")))
        else:
            path = Path(value).expanduser()
            if not path.is_file():
                raise UsageError(f"--mcp-config: expected a JSON file or inline JSON; no file {value!r}")
            found.append((str(path), "dynamic", parse_document(_read(path), str(path))))
    chosen: dict[str, ServerSpec] = {}
    for source, scope, servers in found:
        for spec in parse_servers(servers, source, scope, env):
            if scope == "project" and spec.name in disabled:
                continue
            chosen.pop(spec.name, None)
            chosen[spec.name] = spec
    return list(chosen.values())


def _servers_of(doc: dict[str, Any], source: str) -> dict[str, Any]:
    servers = doc.get("mcpServers") or {}
    if not isinstance(servers, dict):
        raise UsageError(f"{source}: mcpServers: expected an object of server entries")
    return servers


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot read the MCP configuration ({exc})") from None


def _read_json(path: Path) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    try:
        data = json.loads(_read(path))
    except ValueError as exc:
        raise UsageError(f"{path}: not valid JSON ({exc})") from None
    return data if isinstance(data, dict) else None
