"""Settings files: where they are, the order they merge in, and what each kept key must hold.
pydantic validates them, imported only when a file exists; an error names file, key, expectation."""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import sys
from dataclasses import field
from pathlib import Path
from typing import Any, Mapping

from .core.errors import UsageError
from .core.fastclass import dataclass

CAP_VARIABLES = ("LOOPWRIGHT_STOP_HOOK_BLOCK_CAP", "CLAUDE_CODE_STOP_HOOK_BLOCK_CAP")
USER_FILES = 2  # settings_files() lists the user's own files first
HANDLER_TYPES = ("command", "prompt", "http", "agent", "mcp_tool")


@dataclass(frozen=True)
class Settings:
    """The merged settings. `data` keeps every key, known or not (Claude Code has many);
    the properties read the ones loopwright acts on. `layers` keeps each file's own data, in
    order (lowest first), for rules that depend on where they were written."""

    data: dict[str, Any] = field(default_factory=dict)
    layers: tuple[tuple[str, dict[str, Any]], ...] = ()
    project_sources: tuple[str, ...] = ()  # the layers that came from the project's own files

    @property
    def sources(self) -> tuple[str, ...]:
        return tuple(source for source, _ in self.layers)

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
        for source, data in self.layers:
            value = data.get("hookFailurePolicy")
            if value == "closed" or (value == "open" and source not in self.project_sources):
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
                  env: Mapping[str, str] | None = None) -> Settings:
    """Discover, validate and merge. `settings` is `--settings`: a file path or inline JSON, read
    last; `bare` skips discovery so only `settings` counts."""
    layers: list[tuple[str, dict[str, Any]]] = []
    project: list[str] = []
    seen: set[Path] = set()
    for index, path in enumerate([] if bare else settings_files(cwd or Path.cwd(), env)):
        text = _read(path)
        if text is not None and path.resolve() not in seen:  # run in $HOME: user and project files coincide
            seen.add(path.resolve())
            layers.append((str(path), parse(text, str(path))))
            if index >= USER_FILES:
                project.append(str(path))
    if settings is not None:
        source, text = _flag_value(settings)
        layers.append((source, parse(text, source)))
    merged: dict[str, Any] = {}
    for _, data in layers:
        merged = merge(merged, data)
    return Settings(merged, tuple(layers), tuple(project))


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


# ---------------------------------------------------------------- validation


def parse(text: str, source: str) -> dict[str, Any]:
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{source}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    if not isinstance(data, dict):
        raise UsageError(f"{source}: expected a JSON object at the top level, got {type(data).__name__}")
    from pydantic import ValidationError

    try:
        _schema().validate_python(data)
    except ValidationError as exc:
        raise UsageError(f"{source}: {describe(exc.errors()[0])}") from None
    return data


def describe(error: Mapping[str, Any]) -> str:
    """One pydantic error as `key.path[0]: expected …, got …`."""
    loc = list(error["loc"])
    # a tagged union puts the tag into the path; a person wrote `hooks[0].command`, not `.command.command`
    loc = [p for i, p in enumerate(loc) if not (p in HANDLER_TYPES and i >= 2 and isinstance(loc[i - 1], int)
                                                 and loc[i - 2] == "hooks")]
    kind, ctx, given = error["type"], error.get("ctx") or {}, error.get("input")
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        loc.append("type")
        if kind == "union_tag_not_found":
            return f"{_path(loc)}: required key missing (one of {', '.join(HANDLER_TYPES)})"
        return f"{_path(loc)}: expected one of {', '.join(HANDLER_TYPES)}, got {ctx['tag']!r}"
    if kind == "missing":
        return f"{_path(loc)}: required key missing"
    expected = _EXPECTED.get(kind)
    if expected is None:
        expected = str(error["msg"]).removeprefix("Value error, ")
        expected = expected[0].lower() + expected[1:] if expected else kind
        return f"{_path(loc)}: {expected}"
    return f"{_path(loc)}: expected {expected.format(**ctx)}, got {_show(given)}"


_EXPECTED = {
    "string_type": "a string", "bool_type": "true or false", "int_type": "a number", "float_type": "a number",
    "list_type": "a list", "dict_type": "an object", "model_type": "an object", "model_attributes_type": "an object",
    "literal_error": "{expected}", "greater_than": "a number above {gt:g}",
}


def _path(loc: list[Any]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def _show(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:57] + "…"


@functools.cache
def _schema() -> Any:
    """The shape of the keys loopwright reads; every other key passes through unchecked."""
    from typing import Annotated, Literal, Union

    from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, field_validator

    from .policy.rules import MODES, normalise_mode

    class Open(BaseModel):
        model_config = ConfigDict(extra="allow", strict=True, populate_by_name=True)

    class Common(Open):
        timeout: float | None = Field(None, gt=0)
        statusMessage: str | None = None
        if_: str | None = Field(None, alias="if")

    class Command(Common):
        type: Literal["command"]
        command: str
        args: list[str] | None = None

    class Prompt(Common):
        type: Literal["prompt"]
        prompt: str
        model: str | None = None

    class Http(Common):
        type: Literal["http"]
        url: str
        headers: dict[str, str] | None = None
        allowedEnvVars: list[str] | None = None

    class Other(Common):  # Claude Code kinds loopwright accepts but does not run yet
        type: Literal["agent", "mcp_tool"]

    class Group(Open):
        matcher: str | None = None
        hooks: list[Annotated[Union[Command, Prompt, Http, Other], Field(discriminator="type")]]

        @field_validator("matcher")
        @classmethod
        def _regex(cls, value: str | None) -> str | None:
            from .hooks.spec import Matcher

            try:
                Matcher(value)
            except UsageError as exc:
                raise ValueError(str(exc).removeprefix(f"hook matcher {value!r}: ")) from None
            return value

    class Permissions(Open):
        allow: list[str] | None = None
        ask: list[str] | None = None
        deny: list[str] | None = None
        defaultMode: str | None = None
        additionalDirectories: list[str] | None = None

        @field_validator("defaultMode")
        @classmethod
        def _mode(cls, value: str | None) -> str | None:
            if value is not None and normalise_mode(value) is None:
                raise ValueError(f"expected one of {', '.join(MODES)} (or manual), got {value!r}")
            return value

    class SandboxNetwork(Open):
        allowAll: bool | None = None
        allowedDomains: list[str] | None = None
        allowUnixSockets: list[str] | None = None
        allowAllUnixSockets: bool | None = None

    class Sandbox(Open):
        enabled: bool | None = None
        network: bool | SandboxNetwork | None = None
        failIfUnavailable: bool | None = None

    class Root(Open):
        hooks: dict[str, list[Group]] | None = None
        permissions: Permissions | None = None
        model: str | None = None
        fallbackModel: str | None = None
        env: dict[str, str] | None = None
        disableAllHooks: bool | None = None
        hookFailurePolicy: Literal["closed", "open"] | None = None
        sandbox: Sandbox | None = None

    return TypeAdapter(Root)


# ---------------------------------------------------------------- environment overrides


def stop_block_cap(env: Mapping[str, str] | None = None) -> int | None:
    """`LOOPWRIGHT_STOP_HOOK_BLOCK_CAP` (or Claude Code's name): consecutive Stop-hook blocks
    honoured before the run ends anyway; 0 turns the cap off. None: not set."""
    env = os.environ if env is None else env
    for name in CAP_VARIABLES:
        raw = (env.get(name) or "").strip()
        if not raw:
            continue
        if not raw.isdigit():
            raise UsageError(f"{name}: expected a whole number (0 turns the cap off), got {raw!r}")
        return int(raw) or sys.maxsize
    return None


def default_limits(env: Mapping[str, str] | None = None, **overrides: Any) -> Any:
    """`Limits` with the environment's block cap applied."""
    from .policy.stop import Limits

    cap = stop_block_cap(env)
    return Limits(**({"stop_block_cap": cap} if cap is not None else {}), **overrides)


def permission_rules(settings: Settings, *, mode: str | None = None, allow: tuple[str, ...] = (),
                     deny: tuple[str, ...] = (), cwd: str | Path | None = None) -> Any:
    """`PermissionRules` from settings and flags. Each file's rules are read against the folder
    that holds its settings folder (`Edit(/src/**)` means that project's src); rules add up
    file by file; a mode flag beats `defaultMode`; flag rules add to the files' rules."""
    from .config import parse_mode
    from .policy.rules import PermissionRules

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


# What in a settings file's `sandbox` object weakens or opens the sandbox: only user-level
# settings, --settings and flags may (SECURITY.md); a project file that tries is named.
def sandbox_config(settings: Any, cwd: str | Path, flag: bool | None) -> tuple[Any, list[str]]:
    """The `SandboxConfig` of a run and one warning line per project file whose openings were
    dropped: `network` (with its unix sockets), `enabled: false` and `failIfUnavailable: false`.
    `flag`: `--sandbox` (True) or `--no-sandbox` (False) beats every file; None leaves them."""
    import dataclasses

    from .sandbox import SandboxConfig

    files = settings_files(cwd)
    user = {str(p) for p in files[:2]}
    project = {str(p) for p in files[2:]} - user  # run in $HOME: the user's own file, not a project's
    merged: dict[str, Any] = {}
    warnings = []
    for source, data in settings.layers:
        section = data.get("sandbox")
        if not isinstance(section, dict):
            continue
        if source in project:
            opening = [k for k, v in section.items()
                       if k == "network" or (k in ("enabled", "failIfUnavailable") and v is False)]
            if opening:
                warnings.append(f"{source}: ignored {', '.join('sandbox.' + k for k in opening)} (only user "
                                "settings, --settings and flags may open or turn off the sandbox)")
            section = {k: v for k, v in section.items() if k not in opening}
        merged = merge(merged, section)
    config = SandboxConfig.from_settings(merged)
    if flag is not None:
        config = dataclasses.replace(config, enabled=flag)
    return config, warnings


def _root_of(source: str, cwd: str | Path | None) -> str:
    if source == "--settings":  # inline JSON: the directory the run works in
        return str(Path(cwd or Path.cwd()).resolve())
    folder = Path(source).resolve().parent
    return str(folder.parent if folder.name in (".claude", ".loopwright") else folder)
