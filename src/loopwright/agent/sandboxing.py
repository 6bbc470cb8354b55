"""An agent's OS sandbox: what it may write, the stricter rules and the notice where it is on but
cannot run, the refusal of bypassPermissions as root without one. What it asks of the sandbox
itself goes through the agent's outfit (core.ports.Outfit)."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Sequence

from ..core.events import Event
from ..core.ports import Outfit, default_outfit
from ..permissions.rules import PermissionRules
from ..core.sandboxconfig import SandboxConfig


def _added_dirs(cwd: Path, permissions: PermissionRules) -> tuple[str, ...]:
    return tuple(os.path.join(cwd, os.path.expanduser(d)) for d in permissions.additional_dirs)


def writable_roots(cwd: Path, permissions: PermissionRules) -> tuple[str, ...]:
    """The working folder and the permission rules' added directories."""
    return tuple(dict.fromkeys([str(cwd), *_added_dirs(cwd, permissions)]))


def configured(sandbox: SandboxConfig | None, permissions: PermissionRules, cwd: Path,
               plugins: Sequence[Any] = ()) -> SandboxConfig | None:
    """The sandbox, with the permission rules' added directories writable inside it too (and the
    plugins' folders: `with_plugins`)."""
    if sandbox is None:
        return None
    added = replace(sandbox, writable=tuple(dict.fromkeys(sandbox.writable + _added_dirs(cwd, permissions))))
    return with_plugins(added, plugins)


def with_plugins(sandbox: SandboxConfig, plugins: Sequence[Any]) -> SandboxConfig:
    """Each plugin's folder in sight (read-only) and its data folder writable (`CLAUDE_PLUGIN_DATA`,
    bound once it exists), as its scripts expect wherever they run."""
    if not plugins:
        return sandbox
    from ..context.plugins import data_folder

    writable = sandbox.writable + tuple(data_folder(p.id) for p in plugins)
    return replace(sandbox, writable=tuple(dict.fromkeys(writable)),
                   visible=tuple(dict.fromkeys(sandbox.visible + tuple(p.root for p in plugins))))


def with_strictness(rules: PermissionRules, sandbox: SandboxConfig | None,
                    outfit: Outfit | None = None) -> PermissionRules:
    """The rules an agent runs under: strict where the sandbox is on but cannot run here (then
    nothing but the gate bounds the commands, which run outside it). Never silently weaker: the
    start-up says so in one line (`with_notice`, the CLI's warning)."""
    if sandbox is None or not sandbox.enabled or sandbox.fail_closed or rules.strict:
        return rules  # fail_closed: Bash is refused there, saying why (no gate needed)
    if (outfit or default_outfit()).sandbox_unavailable() is None:
        return rules
    return replace(rules, strict=True)


def refuse_root_bypass(mode: str, sandbox: SandboxConfig | None, outfit: Outfit | None = None) -> None:
    """bypassPermissions as root only inside a working sandbox (or with the explicit override)."""
    from ..core.errors import UsageError
    from ..permissions.rules import bypass_refusal

    if mode != "bypassPermissions" or os.geteuid() != 0:
        return  # the sandbox probe below runs a process: only when it matters
    why = bypass_refusal(mode, is_root=True, sandboxed=(outfit or default_outfit()).sandbox_active(sandbox),
                         override=os.environ.get("LOOPWRIGHT_ALLOW_ROOT_BYPASS") == "1")
    if why is not None:
        raise UsageError(why)


def with_notice(sandbox: SandboxConfig | None, emit: Callable[[Event], None], outfit: Outfit) -> Callable[[Event], None]:
    """`emit`, saying right after system/init when the sandbox is on but cannot run."""
    if sandbox is None or not sandbox.enabled:
        return emit  # turned off by trusted choice: nothing to say
    from ..core.events import Notice, SystemInit

    warning = outfit.sandbox_warning(sandbox)
    if warning is None:
        return emit

    def noticed(event: Event) -> None:
        emit(event)
        if isinstance(event, SystemInit):
            emit(Notice("warning", warning))

    return noticed
