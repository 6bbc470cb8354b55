"""The plugins of a run (`--plugin-dir`, and the installed ones settings' `enabledPlugins`
switch on: `context.plugins`, `context.installed`) wired into what `core.build_agent`
composes: their hooks beside the settings' hooks, their MCP servers beside the configured ones
(`plugin:NAME:SERVER`). Each plugin left out is one error line on stderr."""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from ..core.errors import UsageError
from .render import visible

if TYPE_CHECKING:
    from .runspec import RunSpec


def project_plugins(opts: RunSpec, settings: Any = None) -> tuple[list[Any], list[str]]:
    """The plugins of `--plugin-dir`, then the installed ones `enabledPlugins` switch on (none
    with `--bare`); each problem said once, and returned."""
    wanted: list[tuple[str, str]] = []
    problems: list[str] = []
    if settings is not None and not opts.bare and settings.data.get("enabledPlugins"):
        from ..context.installed import chosen

        wanted, problems, missing = chosen(settings.data, Path.home(), Path.cwd())
        _say(missing, "warning")
    if not opts.plugin_dir and not wanted:
        _say(problems)
        return [], problems
    from ..context.plugins import load

    plugins, more = load(opts.plugin_dir, Path.cwd(), wanted)
    problems += more
    _say(problems)
    _say(unfired_hooks(plugins), "warning")
    return plugins, problems


def unfired_hooks(plugins: Sequence[Any]) -> list[str]:
    """One line per hooks file event that never fires here: one Claude Code has and loopwright
    does not (yet), or no event at all."""
    from ..hooks.spec import EVENTS
    from ..policy.names import suggest
    from ..settings.known import CLAUDE_CODE_ONLY_EVENTS

    lines = []
    for plugin in plugins:
        for where, hooks in plugin.hooks:
            for event in hooks:
                if event in CLAUDE_CODE_ONLY_EVENTS:
                    lines.append(f"{where}: hooks.{event}: Claude Code fires this event, loopwright does not (yet): "
                                 "these hooks will not run")
                elif event not in EVENTS:
                    lines.append(f"{where}: hooks.{event}: no such hook event: these hooks will never run"
                                 + suggest(event, EVENTS))
    return lines


def quiet_plugins(opts: RunSpec) -> list[Any]:
    """This run's plugins, loaded without a word: to learn what a `/PLUGIN:NAME` names before the
    run itself loads them (and says their problems)."""
    from ..context.installed import chosen
    from ..context.plugins import load
    from ..settings import load_settings
    from .settingfiles import reads_setting_files

    try:
        settings = load_settings(Path.cwd(), settings=opts.settings, bare=not reads_setting_files(opts), strict=False)
    except UsageError:
        return []
    wanted = [] if opts.bare else chosen(settings.data, Path.home(), Path.cwd())[0]
    return load(opts.plugin_dir, Path.cwd(), wanted)[0]


def _say(problems: list[str], level: str = "error") -> None:
    for problem in problems:
        print(f"loopwright: {level}: plugin: {visible(problem)}", file=sys.stderr, flush=True)


def hook_runner(settings: Any, plugins: Sequence[Any]) -> Any:
    """The settings' hooks and the plugins', or None when there are none (or all are off)."""
    if settings.disable_all_hooks or not (settings.hooks or any(p.hooks for p in plugins)):
        return None
    from ..context.plugins import add_hooks
    from ..hooks import HookRunner

    runner = HookRunner.from_settings(settings, project_dir=Path.cwd())
    add_hooks(runner, plugins)
    return runner


def plugin_mcp_servers(plugins: Sequence[Any], env: Any) -> list[Any]:
    """The plugins' servers, named `plugin:PLUGIN:SERVER`, `${CLAUDE_PLUGIN_ROOT}` and
    `${CLAUDE_PLUGIN_DATA}` filled in and
    set for the server's process; a plugin whose entries are wrong loses its servers, said once."""
    if not any(p.mcp for p in plugins):
        return []
    from ..context.plugins import variables
    from ..mcp.config import parse_servers

    out = []
    for plugin in plugins:
        for source, servers in plugin.mcp:
            root = variables(plugin.root, plugin.data)
            try:
                specs = parse_servers(servers, source, "plugin", {**env, **root})
            except UsageError as exc:
                print(f"loopwright: error: plugin: {visible(str(exc))}; its MCP servers are not started",
                      file=sys.stderr, flush=True)
                continue
            out += [replace(s, name=f"plugin:{plugin.name}:{s.name}", env=(*s.env, *root.items())) for s in specs]
    return out


def plugin_path(env: dict[str, str], plugins: Sequence[Any]) -> dict[str, str]:
    """Each plugin's `bin/` first on the PATH of the processes started for tools and hooks, as
    Claude Code puts it on the Bash tool's."""
    bins = [os.path.join(p.root, "bin") for p in plugins if os.path.isdir(os.path.join(p.root, "bin"))]
    return {**env, "PATH": os.pathsep.join([*bins, env.get("PATH") or os.defpath])} if bins else env
