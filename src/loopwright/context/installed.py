"""Which installed plugins a session loads, as Claude Code decides it: a plugin is installed when
Claude Code's record of installs (`~/.claude/plugins/installed_plugins.json`) lists it, and loads
when the merged settings' `enabledPlugins` (user, project, local; `{"name@marketplace": true}`)
switch it on. A plugin installed for one project (`projectPath`) loads only there; one switched
off (`false`) or not named loads nowhere. Each problem is one line naming the file and the key."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Mapping

RECORD = os.path.join(".claude", "plugins", "installed_plugins.json")


def enabled(settings: Mapping[str, Any]) -> list[str]:
    """The ids settings switch on (a higher file's `false` has already won in the merge)."""
    chosen = settings.get("enabledPlugins") or {}
    return [key for key, on in chosen.items() if on is not False] if isinstance(chosen, dict) else []


def installed(home: str | Path, cwd: str | Path) -> tuple[dict[str, str], list[str]]:
    """Each installed plugin's id and folder (the installs for other projects left out), and the
    problems with the record. Both of Claude Code's shapes are read: `{"plugins": {id: entry}}`
    and `{"version": 2, "plugins": {id: [entry, …]}}`."""
    from ..core.beneath import Unsafe, text_beneath

    path = os.path.join(home, RECORD)
    try:
        doc = json.loads(text_beneath(home, path))
    except FileNotFoundError:
        return {}, []
    except (OSError, ValueError, Unsafe) as exc:
        return {}, [f"{path}: cannot be read as JSON ({getattr(exc, 'strerror', None) or exc}); no installed "
                    "plugin is loaded"]
    plugins = doc.get("plugins") if isinstance(doc, dict) else None
    if not isinstance(plugins, dict):
        return {}, [f"{path}: plugins: expected an object of name@marketplace entries; no installed plugin is loaded"]
    found: dict[str, str] = {}
    problems: list[str] = []
    here = os.path.realpath(cwd)
    for plugin_id, entries in plugins.items():
        for entry in entries if isinstance(entries, list) else [entries]:
            folder = entry.get("installPath") if isinstance(entry, dict) else None
            if not isinstance(folder, str) or not folder:
                problems.append(f"{path}: plugins.{plugin_id}: expected an entry with an installPath; left out")
                continue
            project = entry.get("projectPath")
            if isinstance(project, str) and project and not _within(here, project):
                continue
            found.setdefault(plugin_id, os.path.expanduser(folder))
    return found, problems


def chosen(settings: Mapping[str, Any], home: str | Path,
           cwd: str | Path) -> tuple[list[tuple[str, str]], list[str], list[str]]:
    """(id, folder) of every installed plugin settings switch on, the problems with the record,
    and one line per id switched on that the record does not list (none when there is no record:
    settings copied from another machine name plugins never installed here)."""
    wanted = enabled(settings)
    if not wanted:
        return [], [], []
    found, problems = installed(home, cwd)
    record = os.path.join(home, RECORD)
    out, missing = [], []
    for plugin_id in wanted:
        if plugin_id in found:
            out.append((plugin_id, found[plugin_id]))
        elif not problems and os.path.isfile(record):
            missing.append(f"enabledPlugins: {plugin_id} is switched on but not installed ({record} does not "
                           "list it); it is not loaded")
    return out, problems, missing


def _within(here: str, project: str) -> bool:
    root = os.path.realpath(os.path.expanduser(project))
    return here == root or here.startswith(root.rstrip("/") + "/")
