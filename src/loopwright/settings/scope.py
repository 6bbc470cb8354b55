"""What each settings file may set. Your user files, `--settings` and the real environment are
trusted; a project's files (`.claude/settings*.json`, `.loopwright/settings*.json`), which a
cloned repository controls, may add work for the agent but never steer loopwright itself: no API
endpoints or credentials, no `LOOPWRIGHT_*`, no start-up code for shells and interpreters, no
bypass mode, no directories outside the project, no sandbox openings. Dicts in, dicts and
`Finding`s out; no I/O but resolving a path."""

from __future__ import annotations

import os
import re
from typing import Any, Mapping

from ..core.fastclass import dataclass

@dataclass(frozen=True, slots=True)
class Finding:
    """Something a settings file said that is not used as written: `refused` (a project may not
    set it; ignored), `warning` (ignored or suspicious) or `error` (loopwright will not start)."""

    level: str
    source: str
    key: str
    message: str

    def __str__(self) -> str:
        return f"{self.source}: {self.key}: {self.message}" if self.key else f"{self.source}: {self.message}"


# ---------------------------------------------------------------- environment variables

_OWN = "steers loopwright itself; set it in your shell"
_API = "names a model API endpoint, a credential or the model; only your environment or user settings may"
_NET = "routes network traffic or chooses which certificates are trusted"
_STARTUP = "makes shells, loaders or interpreters run code when they start"
_PROGRAMS = "chooses which programs or configuration other programs run (git, pagers, editors, PATH)"

# (reason, exact names, prefixes, suffixes), checked in order on the upper-cased name. When in
# doubt a name is refused: a project that needs one documents it for its users' own settings.
_ENV_RULES: tuple[tuple[str, frozenset[str], tuple[str, ...], tuple[str, ...]], ...] = (
    (_OWN, frozenset({"CLAUDE_CODE_STOP_HOOK_BLOCK_CAP"}), ("LOOPWRIGHT_",), ()),
    (_API, frozenset(), ("ANTHROPIC_", "OPENAI_"),
     ("_BASE_URL", "_ENDPOINT", "_API_KEY", "_AUTH_TOKEN", "_TOKEN", "_KEY", "_SECRET", "_PASSWORD",
      "_CREDENTIALS")),
    (_NET, frozenset({"SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS",
                      "NODE_TLS_REJECT_UNAUTHORIZED"}), (), ("_PROXY",)),
    (_STARTUP, frozenset({"BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS", "PS4", "PROMPT_COMMAND", "IFS", "CDPATH",
                          "GLOBIGNORE", "ZDOTDIR", "INPUTRC", "PERL5OPT", "PERL5LIB", "PERLLIB", "PERL5DB", "RUBYOPT",
                          "RUBYLIB", "NODE_OPTIONS", "NODE_PATH", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS",
                          "JDK_JAVA_OPTIONS", "MAKEFLAGS", "MFLAGS", "MAKEFILES", "GCONV_PATH"}),
     ("LD_", "DYLD_", "BASH_FUNC_", "PYTHON", "LUA_"), ()),
    (_PROGRAMS, frozenset({"PATH", "HOME", "SHELL", "PAGER", "MANPAGER", "EDITOR", "VISUAL", "LESSOPEN",
                           "LESSCLOSE", "BROWSER", "SSH_ASKPASS", "SUDO_ASKPASS"}), ("GIT_", "XDG_"), ()),
)
# Harmless members of a refused family (they change buffering and encodings, never load code).
_ENV_SAFE = frozenset({"PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE", "PYTHONIOENCODING", "PYTHONUTF8",
                       "PYTHONHASHSEED"})
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def env_refusal(name: str) -> str | None:
    """Why a project file may not set environment variable `name`, or None when it may."""
    if not _NAME.fullmatch(name):
        return "is not a plain variable name (bash reads `BASH_FUNC_f%%` as a function)"
    upper = name.upper()
    if upper in _ENV_SAFE:
        return None
    for reason, names, prefixes, suffixes in _ENV_RULES:
        if upper in names or upper.startswith(prefixes) or upper.endswith(suffixes):
            return reason
    return None


# ---------------------------------------------------------------- keys

# Claude Code keys that run a program to fetch credentials or headers (loopwright runs none yet).
_HELPERS = ("apiKeyHelper", "awsCredentialExport", "awsAuthRefresh", "gcpAuthRefresh", "otelHeadersHelper")
# What a project may say about the sandbox: only the strict direction — keep it on, refuse Bash
# where it cannot run, forbid escapes, hide or pin more paths. Never off, never more open.
_SANDBOX_STRICT = {"enabled": True, "failIfUnavailable": True, "allowUnsandboxedCommands": False}
_SANDBOX_STRICT_FILES = ("denyRead", "denyWrite")


def restrict(data: Mapping[str, Any], source: str, root: str, *, project: bool) -> tuple[dict[str, Any], list[Finding]]:
    """`data` without what its file may not set (`project`: a project's file), and one `Finding`
    for each key dropped. `root` is the folder the file's rules are relative to."""
    out, found = dict(data), []

    def refuse(key: str, why: str, level: str = "refused") -> None:
        found.append(Finding(level, source, key, why))

    env = dict(out.get("env") or {})
    for name in list(env):
        if project:
            why = env_refusal(name)
        elif name.upper().startswith("LOOPWRIGHT_"):
            why = "is one of loopwright's own switches, read from the real environment only; set it in your shell"
        else:
            continue
        if why is not None:
            refuse(f"env.{name}", f"ignored: it {why}")
            del env[name]
    if "env" in out:
        out["env"] = env
    permissions = dict(out.get("permissions") or {})
    mode = permissions.get("defaultMode")
    if mode == "delegate":
        refuse("permissions.defaultMode", f"ignored: loopwright has no {mode} mode; the default mode applies",
               "warning")
        del permissions["defaultMode"]
    if project:
        _restrict_project(out, permissions, root, refuse)
    if "permissions" in out:
        out["permissions"] = permissions
    return out, found


def _restrict_project(out: dict[str, Any], permissions: dict[str, Any], root: str, refuse: Any) -> None:
    if permissions.get("defaultMode") in ("bypassPermissions", "auto"):
        refuse("permissions.defaultMode", f"ignored: {permissions['defaultMode']} comes only from your user "
               "settings or --permission-mode, never from a project")
        del permissions["defaultMode"]
    dirs = permissions.get("additionalDirectories")
    if dirs:
        inside = [d for d in dirs if _within(root, d)]
        for d in dirs:
            if d not in inside:
                refuse("permissions.additionalDirectories", f"{d!r} ignored: it is outside the project; directories "
                       "outside come only from your user settings or --add-dir")
        permissions["additionalDirectories"] = inside
    for key in _HELPERS:
        if key in out:
            refuse(key, "ignored: it runs a program for credentials; only your user settings may set it")
            del out[key]
    for key in ("model", "fallbackModel"):
        if isinstance(out.get(key), str) and endpoint_in(out[key]):
            refuse(key, f"{out[key]!r} ignored: it names an API endpoint; only your user settings or --model may")
            del out[key]
    if out.get("disableAllHooks") is False:
        refuse("disableAllHooks", "ignored: a project may turn hooks off, not back on")
        del out["disableAllHooks"]
    sandbox = out.get("sandbox")
    if isinstance(sandbox, dict):
        out["sandbox"] = _strict_sandbox(sandbox, refuse)
    if isinstance(out.get("hooks"), dict):
        out["hooks"] = _hooks_without_endpoints(out["hooks"], refuse)


def _strict_sandbox(sandbox: dict[str, Any], refuse: Any) -> dict[str, Any]:
    """A project's `sandbox` object with only what tightens it; each key dropped is named."""
    why = "ignored: a project may keep the sandbox on and tighten it, never turn it off, open or weaken it"
    kept: dict[str, Any] = {k: v for k, v in sandbox.items() if _SANDBOX_STRICT.get(k, ...) is v}
    files = sandbox.get("filesystem")
    if isinstance(files, dict):
        kept_files = {k: v for k, v in files.items() if k in _SANDBOX_STRICT_FILES}
        for key in sorted(files.keys() - kept_files.keys()):
            refuse(f"sandbox.filesystem.{key}", why)
        kept["filesystem"] = kept_files
    for key in sorted(sandbox.keys() - kept.keys()):
        refuse(f"sandbox.{key}", why)
    return kept


def _hooks_without_endpoints(hooks: dict[str, Any], refuse: Any) -> dict[str, Any]:
    """Prompt and agent hooks whose `model` names an API endpoint use the session's model."""
    out: dict[str, Any] = {}
    for event, groups in hooks.items():
        out[event] = []
        for g, group in enumerate(groups):
            handlers = []
            for h, handler in enumerate(group.get("hooks") or ()):
                model = handler.get("model")
                if isinstance(model, str) and endpoint_in(model):
                    refuse(f"hooks.{event}[{g}].hooks[{h}].model", f"{model!r} ignored: it names an API endpoint; "
                           "the hook uses the session's model")
                    handler = {k: v for k, v in handler.items() if k != "model"}
                handlers.append(handler)
            out[event].append({**group, "hooks": handlers})
    return out


def endpoint_in(model: str) -> bool:
    """Whether a model setting (or a comma-separated list) names where requests go."""
    return any("://" in m or m.strip().startswith("openai-compatible:") for m in model.split(","))


def _within(root: str, path: str) -> bool:
    """Whether `path` (relative to `root`, `~` expanded) lands inside `root`, links followed."""
    real_root = os.path.realpath(root)
    full = os.path.realpath(os.path.join(root, os.path.expanduser(path)))
    return full == real_root or full.startswith(real_root.rstrip("/") + "/")


# ---------------------------------------------------------------- what a project widens

def widenings(data: Mapping[str, Any], hooks_on: bool = True) -> list[str]:
    """What a project file (already restricted) would run or allow: each part as a short phrase."""
    parts = []
    hooks = data.get("hooks") or {} if hooks_on else {}
    if any(groups for groups in hooks.values()):
        parts.append("hooks " + ", ".join(event for event, groups in hooks.items() if groups))
    permissions = data.get("permissions") or {}
    if permissions.get("allow"):
        parts.append("allow rules " + ", ".join(permissions["allow"]))
    if permissions.get("defaultMode") == "acceptEdits":
        parts.append("defaultMode acceptEdits")
    if data.get("env"):
        parts.append("env " + ", ".join(data["env"]))
    if plugins := _switched_on(data):
        parts.append("plugins " + ", ".join(plugins))
    return parts


def _switched_on(data: Mapping[str, Any]) -> list[str]:
    chosen = data.get("enabledPlugins")
    return [k for k, on in chosen.items() if on is not False] if isinstance(chosen, dict) else []


def untrusted(data: Mapping[str, Any]) -> dict[str, Any]:
    """A project file as it counts while its folder is not trusted: what it widens is off."""
    out = {k: v for k, v in data.items() if k not in ("hooks", "env")}
    permissions = {k: v for k, v in (data.get("permissions") or {}).items()
                   if k not in ("allow", "additionalDirectories")}
    if permissions.get("defaultMode") == "acceptEdits":
        del permissions["defaultMode"]
    if isinstance(data.get("enabledPlugins"), dict):  # switching one off still counts
        out["enabledPlugins"] = {k: on for k, on in data["enabledPlugins"].items() if on is False}
    if "permissions" in data:
        out["permissions"] = permissions
    return out
