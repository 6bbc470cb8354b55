"""Settings files: where they are, the order they merge in, what each may set (`scope`: a
project's files never steer loopwright itself), what each kept key must hold (`schema`) and the
names checked like code (`check`). Loading gathers every finding; errors stop the run."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from ..core.errors import UsageError
from ..core.fastclass import dataclass

if TYPE_CHECKING:
    from .scope import Finding

__all__ = ["FLAG", "PROJECT", "USER", "Settings", "default_limits", "load_settings", "merge",
           "permission_rules", "settings_files", "stop_block_cap"]

USER, PROJECT, FLAG = "user", "project", "flag"  # who wrote a settings file: you, the project, --settings


@dataclass(frozen=True)
class Settings:
    """The merged settings. `data` keeps every key, known or not (Claude Code has many);
    the properties read the ones loopwright acts on. `layers` keeps each file's own data, in
    order (lowest first), for rules that depend on where they were written."""

    data: dict[str, Any] = field(default_factory=dict)
    layers: tuple[tuple[str, dict[str, Any]], ...] = ()
    scopes: tuple[str, ...] = ()  # each layer's: user, project or flag (absent: user)
    findings: tuple[Finding, ...] = ()  # what was refused, ignored or wrong, file by file
    declined: bool = False  # the folder is not trusted: what its project files widen is off

    @property
    def sources(self) -> tuple[str, ...]:
        return tuple(source for source, _ in self.layers)

    def scope(self, index: int) -> str:
        return self.scopes[index] if index < len(self.scopes) else USER

    @property
    def trusted_env(self) -> dict[str, str]:
        """`env` of your user files and `--settings`: it configures loopwright itself too."""
        env: dict[str, str] = {}
        for i, (_, data) in enumerate(self.layers):
            if self.scope(i) != PROJECT:
                env.update(data.get("env") or {})
        return env

    def widened(self) -> list[tuple[str, list[str]]]:
        """(file, what it widens) for each project file that runs code or allows more."""
        project = [(source, data) for i, (source, data) in enumerate(self.layers) if self.scope(i) == PROJECT]
        if not project:
            return []
        from .scope import widenings

        hooks = not self.disable_all_hooks  # hooks that are off widen nothing
        return [(source, parts) for source, parts in ((s, widenings(d, hooks)) for s, d in project) if parts]

    def untrusted(self) -> "Settings":
        """These settings with what the project's files widen turned off (a folder not trusted)."""
        from .scope import untrusted

        layers = tuple((source, untrusted(data) if self.scope(i) == PROJECT else data)
                       for i, (source, data) in enumerate(self.layers))
        return Settings(_merged(layers), layers, self.scopes, self.findings, declined=True)

    @property
    def hooks(self) -> dict[str, list[dict[str, Any]]]:
        return self.data.get("hooks") or {}

    @property
    def permissions(self) -> dict[str, Any]:
        return self.data.get("permissions") or {}

    @property
    def allow(self) -> tuple[str, ...]:
        return tuple(self.permissions.get("allow") or ())

    @property
    def ask(self) -> tuple[str, ...]:
        return tuple(self.permissions.get("ask") or ())

    @property
    def deny(self) -> tuple[str, ...]:
        return tuple(self.permissions.get("deny") or ())

    @property
    def default_mode(self) -> str | None:
        return self.permissions.get("defaultMode")

    @property
    def additional_directories(self) -> tuple[str, ...]:
        return tuple(self.permissions.get("additionalDirectories") or ())

    @property
    def model(self) -> str | None:
        return self.data.get("model")

    @property
    def fallback_model(self) -> str | None:
        return self.data.get("fallbackModel")

    @property
    def env(self) -> dict[str, str]:
        return dict(self.data.get("env") or {})

    @property
    def disable_all_hooks(self) -> bool:
        return self.data.get("disableAllHooks") is True

    @property
    def sandbox(self) -> dict[str, Any]:
        return self.data.get("sandbox") or {}


    @property
    def hook_failure_policy(self) -> str:
        """`hookFailurePolicy`: "closed" unless a user-level file or `--settings` says "open";
        a project's own files may close it, never open it (a repository must not be able to
        weaken the user's guards)."""
        policy = "closed"
        for index, (_, data) in enumerate(self.layers):
            value = data.get("hookFailurePolicy")
            project = index < len(self.scopes) and self.scopes[index] == PROJECT
            if value == "closed" or (value == "open" and not project):
                policy = value
        return policy


# ---------------------------------------------------------------- discovery and merging


def settings_files(cwd: str | Path, env: Mapping[str, str] | None = None) -> list[Path]:
    """Lowest to highest. Each `.claude/` file sits just below its `.loopwright/` twin."""
    env = os.environ if env is None else env
    home = Path(env["HOME"]) if env.get("HOME") else Path.home()
    own = Path(env["LOOPWRIGHT_HOME"]) if env.get("LOOPWRIGHT_HOME") else home / ".loopwright"
    project = Path(cwd)
    return [home / ".claude" / "settings.json", own / "settings.json",
            project / ".claude" / "settings.json", project / ".loopwright" / "settings.json",
            project / ".claude" / "settings.local.json", project / ".loopwright" / "settings.local.json"]


def load_settings(cwd: str | Path | None = None, *, settings: str | None = None, bare: bool = False,
                  env: Mapping[str, str] | None = None, strict: bool = True) -> Settings:
    """Discover, validate, restrict and merge. `settings` is `--settings`: a file path or inline
    JSON, read last; `bare` skips discovery so only `settings` counts. With `strict` the first
    error found raises `UsageError`; otherwise errors stay in `findings` with the warnings."""
    cwd = cwd or Path.cwd()
    found: list[tuple[str, str, str]] = []  # (source, scope, text)
    seen: set[Path] = set()
    for path, scope in [] if bare else settings_layers(cwd, env):
        text = _read(path)
        if text is not None and path.resolve() not in seen:  # run in $HOME: user and project files coincide
            seen.add(path.resolve())
            found.append((str(path), scope, text))
    if settings is not None:
        source, text = _flag_value(settings)
        found.append((source, FLAG, text))
    if not found:
        return Settings()
    from .schema import parse
    from .scope import Finding

    layers: list[tuple[str, dict[str, Any]]] = []
    scopes: list[str] = []
    findings: list[Finding] = []
    for source, scope, text in found:
        try:
            data = parse(text, source)
        except UsageError as exc:
            if strict:
                raise
            findings.append(Finding("error", source, "", str(exc).removeprefix(f"{source}: ")))
            continue
        data, notes = _restricted(data, source, scope, cwd)
        layers.append((source, data))
        scopes.append(scope)
        findings += notes
    errors = [f for f in findings if f.level == "error"]
    if strict and errors:
        more = f" (and {len(errors) - 1} more; `loopwright settings check` lists them)" if len(errors) > 1 else ""
        raise UsageError(f"{errors[0]}{more}")
    return Settings(_merged(layers), tuple(layers), tuple(scopes), tuple(findings))


def settings_layers(cwd: str | Path, env: Mapping[str, str] | None = None) -> list[tuple[Path, str]]:
    """Each settings file with its scope, lowest first: two of yours, then the project's four."""
    files = settings_files(cwd, env)
    return [(path, USER if i < 2 else PROJECT) for i, path in enumerate(files)]


def _restricted(data: dict[str, Any], source: str, scope: str, cwd: str | Path) -> tuple[dict[str, Any], list[Finding]]:
    if not data:
        return data, []
    from .check import check
    from .scope import restrict

    kept, findings = restrict(data, source, _root_of(source, cwd), project=scope == PROJECT)
    return kept, findings + check(kept, source)


def _merged(layers: Any) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for _, data in layers:
        merged = merge(merged, data)
    return merged


def merge(low: Mapping[str, Any], high: Mapping[str, Any]) -> dict[str, Any]:
    """Objects merge key by key, lists concatenate (so permission rules and each event's hooks
    add up, duplicates dropped), anything else: the higher file wins."""
    out = dict(low)
    for key, value in high.items():
        old = out.get(key)
        if isinstance(old, dict) and isinstance(value, dict):
            out[key] = merge(old, value)
        elif isinstance(old, list) and isinstance(value, list):
            out[key] = old + [v for v in value if v not in old]
        else:
            out[key] = value
    return out


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError):
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot read the settings file: {getattr(exc, 'strerror', None) or exc}") from None


def _flag_value(value: str) -> tuple[str, str]:
    if value.lstrip().startswith("{"):
        return "--settings", value
    text = _read(Path(value))
    if text is None:
        raise UsageError(f"--settings: expected a settings file or inline JSON; no file {value!r}")
    return value, text


# ---------------------------------------------------------------- environment overrides


def stop_block_cap(env: Mapping[str, str] | None = None) -> int | None:
    """The block cap the environment sets (`policy.stop.stop_block_cap`); None: not set."""
    from ..policy.stop import stop_block_cap as cap

    return cap(os.environ if env is None else env)


def default_limits(env: Mapping[str, str] | None = None, **overrides: Any) -> Any:
    """`Limits` with the environment's block cap applied."""
    from ..policy.stop import limits_from

    return limits_from(os.environ if env is None else env, **overrides)


def permission_rules(settings: Settings, *, mode: str | None = None, allow: tuple[str, ...] = (),
                     deny: tuple[str, ...] = (), cwd: str | Path | None = None) -> Any:
    """`PermissionRules` from settings and flags. Each file's rules are read against the folder
    that holds its settings folder (`Edit(/src/**)` means that project's src); rules add up
    file by file; a mode flag beats `defaultMode`; flag rules add to the files' rules."""
    from ..config import parse_mode
    from ..permissions.rules import PermissionRules

    rules = PermissionRules()
    for source, data in settings.layers:
        section = data.get("permissions")
        if not section:
            continue
        root = _root_of(source, cwd)
        try:
            rules = rules.merged(PermissionRules.from_settings(section, root=root))
        except ValueError as exc:
            raise UsageError(f"{source}: {exc}") from None
    return dataclasses.replace(rules, mode=parse_mode(mode) if mode else rules.mode,
                               allow=rules.allow + tuple(allow), deny=rules.deny + tuple(deny))


def sandbox_config(settings: Settings, flag: bool | None) -> Any:
    """The `SandboxConfig` of a run from the merged `sandbox` settings: on unless your user or
    managed settings or `--settings` say `enabled: false` (a project file's openings, that one
    among them, were already dropped and named: settings/scope.py). `flag`: `--sandbox` (True)
    or `--no-sandbox` (False) beats every file; None leaves them."""
    import dataclasses

    from ..sandbox import SandboxConfig

    try:
        config = SandboxConfig.from_settings(settings.sandbox)
    except ValueError as exc:
        raise UsageError(f"settings: {exc}") from None
    return config if flag is None else dataclasses.replace(config, enabled=flag)


def _root_of(source: str, cwd: str | Path | None) -> str:
    if source == "--settings":  # inline JSON: the directory the run works in
        return str(Path(cwd or Path.cwd()).resolve())
    folder = Path(source).resolve().parent
    return str(folder.parent if folder.name in (".claude", ".loopwright") else folder)
