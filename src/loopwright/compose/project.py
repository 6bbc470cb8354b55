"""What the project gives a session, read for the command line: its memory files, skills,
subagent definitions and MCP servers (each problem said once on stderr, never fatal)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from .runspec import RunSpec
from .render import printable


def project_memory(opts: RunSpec, settings: Any) -> Any:
    """The memory files of this session (off with `--bare` or settings `"memoryFiles": false`)."""
    if opts.bare or settings.data.get("memoryFiles") is False:
        return None
    from ..context.memory import Memory
    from ..stores.jsonl import home

    excludes = settings.data.get("claudeMdExcludes")
    return Memory(Path.cwd(), Path.home(), home(),
                  excludes=[g for g in excludes if isinstance(g, str)] if isinstance(excludes, list) else ())


def project_skills(opts: RunSpec, session_id: str, plugins: list[Any]) -> Any:
    """The skills of this session (with `--bare` only the plugins')."""
    if opts.bare and not plugins:
        return None
    from ..context.skills import Skills
    from ..stores.jsonl import home

    return Skills(Path.cwd(), Path.home(), home(), session_id, plugins, project=not opts.bare)


def project_agents(opts: RunSpec, plugins: list[Any]) -> Any:
    """The subagent definitions of this session (with `--bare` the built-in one, the plugins' and
    `--agents` only); each problem with a definition file said on stderr."""
    from ..subagents.definitions import definitions, from_json

    given = from_json(opts.agents) if opts.agents is not None else {}
    found, problems = definitions(Path.cwd(), Path.home(), plugins, project=not opts.bare)
    for problem in problems:
        print(f"loopwright: warning: agents: {printable(problem)}", file=sys.stderr, flush=True)
    return found | given


def mcp_servers(opts: RunSpec, settings: Any) -> list[Any]:
    """The MCP servers of this session (docs/mcp.md); each unset `${VAR}` said once on stderr."""
    from ..settings.mcpfiles import any_config, load_mcp_servers

    if not opts.mcp_config and (opts.bare or opts.strict_mcp_config or not any_config(Path.cwd(), os.environ)):
        return []

    specs = load_mcp_servers(Path.cwd(), flags=opts.mcp_config, strict=opts.strict_mcp_config or bool(opts.bare),
                             project=not settings.declined,
                             disabled=tuple(settings.data.get("disabledMcpjsonServers") or ()))
    for spec in specs:
        for warning in spec.warnings:
            print(f"loopwright: warning: {printable(warning)}", file=sys.stderr, flush=True)
    return specs
