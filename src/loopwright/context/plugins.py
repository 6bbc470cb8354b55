"""Plugins as Claude Code loads them from `--plugin-dir DIR` (repeatable): the name from
`.claude-plugin/plugin.json` (the folder's name without one), and the plugin's `commands/`,
`skills/`, `subagents/`, `workflows/`, `hooks/hooks.json` and `.mcp.json` (the manifest's
`commands`/`agents`/`workflows` paths replace the default folders, `skills` adds, `hooks`/`mcpServers` merge). Its components are
named `plugin:name`; `${CLAUDE_PLUGIN_ROOT}` is the plugin's folder and `${CLAUDE_PLUGIN_DATA}` its
persistent data folder (`~/.claude/plugins/data/ID/`, made when first used), both filled in and set
for the processes a plugin starts. A broken plugin is left out whole, with one line naming the file
and the key; so is one whose manifest, hooks or servers file is a symlink leading out of its folder
(every file is opened beneath it: `core.beneath`). Which installed plugins load is
`context.installed`'s business."""

from __future__ import annotations

import json
import os
import re
from dataclasses import replace
from pathlib import Path
from typing import Any, Sequence

from ..core.beneath import Unsafe, text_beneath
from ..core.errors import UsageError
from ..core.fastclass import dataclass

MANIFEST = os.path.join(".claude-plugin", "plugin.json")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
ROOT_VAR = "${CLAUDE_PLUGIN_ROOT}"
DATA_VAR = "${CLAUDE_PLUGIN_DATA}"
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def data_folder(plugin_id: str) -> str:
    """Where a plugin keeps what outlives its updates, as Claude Code has it: `~/.claude/plugins/
    data/ID/`, every character of `name@marketplace` but letters, digits, `_` and `-` made `-`."""
    return os.path.join(os.path.expanduser("~"), ".claude", "plugins", "data", _UNSAFE.sub("-", plugin_id))


def made(folder: str) -> str:
    """`folder`, created when missing (a plugin's data folder on its first use)."""
    if folder:
        os.makedirs(folder, exist_ok=True)
    return folder


def fill(text: str, root: str, data: str) -> str:
    """`text` with `${CLAUDE_PLUGIN_ROOT}` and `${CLAUDE_PLUGIN_DATA}` filled in."""
    if root:
        text = text.replace(ROOT_VAR, root)
    if data and DATA_VAR in text:
        text = text.replace(DATA_VAR, made(data))
    return text


def variables(root: str, data: str) -> dict[str, str]:
    """What a plugin's processes find in their environment (its data folder made)."""
    return {"CLAUDE_PLUGIN_ROOT": root, **({"CLAUDE_PLUGIN_DATA": made(data)} if data else {})}


@dataclass(frozen=True, slots=True)
class Plugin:
    name: str
    root: str
    version: str = ""
    command_dirs: tuple[str, ...] = ()
    skill_dirs: tuple[str, ...] = ()
    agent_dirs: tuple[str, ...] = ()
    workflow_dirs: tuple[str, ...] = ()  # loopwright workflows (`NAME.py`), run as `/plugin:NAME`
    hooks: tuple[tuple[str, dict[str, Any]], ...] = ()  # (file, {event: [groups]}), checked
    mcp: tuple[tuple[str, dict[str, Any]], ...] = ()  # (file, {server: entry}), checked by mcp.config
    source: str = ""  # `name@marketplace` of an installed plugin; "" for a `--plugin-dir` one

    @property
    def id(self) -> str:
        return self.source or f"{self.name}@inline"

    @property
    def data(self) -> str:
        """Its `${CLAUDE_PLUGIN_DATA}` folder (not made until used)."""
        return data_folder(self.id)

    def init(self) -> dict[str, Any]:
        """How system/init lists it (as Claude Code lists a `--plugin-dir` plugin)."""
        return {"name": self.name, "path": self.root, "source": self.id,
                **({"version": self.version} if self.version else {})}


class Broken(Exception):
    """One problem that leaves a plugin out: `where` is the file (and key)."""


def load(dirs: Sequence[str], cwd: str | Path,
         installed: Sequence[tuple[str, str]] = ()) -> tuple[list[Plugin], list[str]]:
    """The plugins of these folders (relative to `cwd`), then the `installed` ones ((id, folder),
    switched on in settings; a `--plugin-dir` plugin of the same name wins for the session), and
    one line per plugin left out."""
    plugins: list[Plugin] = []
    problems: list[str] = []
    for source, given in [("", d) for d in dirs] + list(installed):
        root = os.path.realpath(os.path.join(cwd, os.path.expanduser(given)))
        try:
            if not os.path.isdir(root):
                raise Broken(f"{source}: installed at {given}, which is no folder" if source
                             else f"--plugin-dir {given}: no such folder")
            plugin = replace(_plugin(root), source=source)
            if any(p.name == plugin.name for p in plugins):
                if source and any(p.name == plugin.name and not p.source for p in plugins):
                    continue  # the --plugin-dir copy replaces the installed one
                raise Broken(f"{root}: a plugin named {plugin.name!r} is loaded already")
            plugins.append(plugin)
        except Broken as exc:
            problems.append(f"{exc}; the plugin is not loaded")
    return plugins, problems


def _plugin(root: str) -> Plugin:
    manifest_path = os.path.join(root, MANIFEST)
    manifest = _json(manifest_path, root) if os.path.isfile(manifest_path) else {}
    name = manifest.get("name", os.path.basename(root)) if manifest else os.path.basename(root)
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        where = f"{manifest_path}: name" if manifest else f"{root}: the folder name"
        raise Broken(f"{where}: expected a plugin name of letters, digits, '.', '_' and '-', got {name!r}")
    version = manifest.get("version", "")
    if not isinstance(version, str):
        raise Broken(f"{manifest_path}: version: expected a string, got {version!r}")
    commands = _paths(root, manifest, "commands", manifest_path) or [os.path.join(root, "commands")]
    agents = _paths(root, manifest, "agents", manifest_path) or [os.path.join(root, "agents")]
    skills = [os.path.join(root, "skills"), *_paths(root, manifest, "skills", manifest_path)]
    hooks = [(f, _hooks(f, _json(f, root), root)) for f in [os.path.join(root, "hooks", "hooks.json")]
             if os.path.isfile(f)]
    hooks += [(f"{manifest_path}: hooks", _hooks(manifest_path, h, root)) if isinstance(h, dict)
              else (h, _hooks(h, _json(h, root), root)) for h in _inline_or_paths(root, manifest, "hooks", manifest_path)]
    mcp = [(f, _servers(f, _json(f, root))) for f in [os.path.join(root, ".mcp.json")] if os.path.isfile(f)]
    mcp += [(f"{manifest_path}: mcpServers", _servers(manifest_path, m)) if isinstance(m, dict)
            else (m, _servers(m, _json(m, root))) for m in _inline_or_paths(root, manifest, "mcpServers", manifest_path)]
    workflows = _paths(root, manifest, "workflows", manifest_path) or [os.path.join(root, "workflows")]
    return Plugin(name, root, version, tuple(commands), tuple(skills), tuple(agents), tuple(workflows),
                  tuple(hooks), tuple(mcp))


def _json(path: str, root: str) -> dict[str, Any]:
    """The JSON object of a plugin's file, opened beneath the plugin's folder."""
    try:
        data = json.loads(text_beneath(root, path))
    except Unsafe as exc:
        raise Broken(str(exc)) from None
    except OSError as exc:
        raise Broken(f"{path}: cannot be read ({exc.strerror or exc})") from None
    except ValueError as exc:
        raise Broken(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise Broken(f"{path}: expected a JSON object, got {type(data).__name__}")
    return data


def _paths(root: str, manifest: dict[str, Any], key: str, where: str) -> list[str]:
    """A manifest key holding a path or a list of paths, each inside the plugin."""
    value = manifest.get(key)
    if value is None:
        return []
    values = [value] if isinstance(value, str) else value
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise Broken(f"{where}: {key}: expected a path or a list of paths (./like/this), got {value!r}")
    return [_inside(root, v, f"{where}: {key}") for v in values]


def _inline_or_paths(root: str, manifest: dict[str, Any], key: str, where: str) -> list[Any]:
    """`hooks` / `mcpServers`: an object, a path, or a list of either."""
    value = manifest.get(key)
    values = [] if value is None else value if isinstance(value, list) else [value]
    out: list[Any] = []
    for v in values:
        if not isinstance(v, (str, dict)):
            raise Broken(f"{where}: {key}: expected an object, a path or a list of them, got {v!r}")
        out.append(v if isinstance(v, dict) else _inside(root, v, f"{where}: {key}"))
    return out


def _inside(root: str, path: str, where: str) -> str:
    full = os.path.realpath(os.path.join(root, path.replace(ROOT_VAR, root)))
    if full != root and not full.startswith(root.rstrip("/") + "/"):
        raise Broken(f"{where}: {path!r} points outside the plugin's folder")
    return full


def _hooks(where: str, doc: dict[str, Any], root: str) -> dict[str, Any]:
    """A hooks file's (or the manifest's) `hooks` object, every handler checked as settings' are."""
    from ..hooks.spec import parse_handler

    hooks = doc["hooks"] if "hooks" in doc else {k: v for k, v in doc.items() if k != "description"}
    if not isinstance(hooks, dict):
        raise Broken(f"{where}: hooks: expected an object of events, got {hooks!r}")
    for event, groups in hooks.items():
        if not isinstance(groups, list) or not all(isinstance(g, dict) for g in groups):
            raise Broken(f"{where}: hooks.{event}: expected a list of matcher groups")
        for i, group in enumerate(groups):
            handlers = group.get("hooks")
            if not isinstance(handlers, list) or not all(isinstance(h, dict) for h in handlers):
                raise Broken(f"{where}: hooks.{event}[{i}].hooks: expected a list of handlers")
            for j, handler in enumerate(handlers):
                try:
                    parse_handler(handler)
                except UsageError as exc:
                    raise Broken(f"{where}: hooks.{event}[{i}].hooks[{j}]: {exc}") from None
    return hooks


def _servers(where: str, doc: dict[str, Any]) -> dict[str, Any]:
    servers = doc.get("mcpServers", doc)
    if not isinstance(servers, dict) or not all(isinstance(v, dict) for v in servers.values()):
        raise Broken(f"{where}: mcpServers: expected an object of server entries")
    return servers


def add_hooks(runner: Any, plugins: Sequence[Plugin]) -> None:
    """Register the plugins' hooks on a `hooks.HookRunner`: `${CLAUDE_PLUGIN_ROOT}` and
    `${CLAUDE_PLUGIN_DATA}` filled in their commands, and set for their processes."""
    for plugin in plugins:
        for _, hooks in plugin.hooks:
            for event, groups in hooks.items():
                for group in groups:
                    for handler in group["hooks"]:
                        runner.add(event, _filled(handler, plugin.root, plugin.data), matcher=group.get("matcher"),
                                   env=variables(plugin.root, plugin.data))


def _filled(value: Any, root: str, data: str) -> Any:
    if isinstance(value, str):
        return fill(value, root, data)
    if isinstance(value, list):
        return [_filled(v, root, data) for v in value]
    if isinstance(value, dict):
        return {k: _filled(v, root, data) for k, v in value.items()}
    return value
