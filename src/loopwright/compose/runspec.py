"""`RunSpec`: one run as data — the model, the prompt or goal (with its checks, protected paths and
bounds), limits and budget, permissions, the session to open and the output — typed, frozen and
stored as versioned JSON, so a job enqueued by one release runs on a worker of another. The CLI's
`Options` is a `RunSpec` plus the flags that only steer the command line itself."""

from __future__ import annotations

import math
from dataclasses import fields
from typing import Any

from ..core.errors import UsageError
from ..core.fastclass import dataclass

VERSION = 1

NO_LIMIT = float("inf")  # `--max-turns none`, `--max-budget-usd none`: a default bound lifted on purpose


def limit(value: Any) -> Any:
    """A limit's value as the engine takes it: None for none at all."""
    return None if value == NO_LIMIT else value


@dataclass(frozen=True)
class RunSpec:
    """A run, as the flags of `loopwright -p` give it (None/False/() when absent; the names are the
    flags', so errors and docs name the same thing)."""

    # what to run
    prompt: str | None = None
    goal: str | None = None
    goal_file: str | None = None
    check: tuple[str, ...] = ()
    protect: tuple[str, ...] = ()
    goal_model: str | None = None
    goal_max_turns: str | None = None  # a value, or "none" (compose.goals.bound_flags)
    goal_max_duration: str | None = None
    goal_max_budget_usd: str | None = None
    # model
    model: str | None = None
    fallback_model: str | None = None
    classifier_model: str | None = None
    allow_unknown_model: bool = False
    # limits and budget (max_turns and max_budget_usd may be NO_LIMIT: `none`)
    max_turns: int | None = None
    final_turn: bool = False
    max_budget_usd: float | None = None
    max_tokens_total: int | None = None
    max_duration: str | None = None
    # tools and permissions
    allowed: tuple[str, ...] = ()
    disallowed: tuple[str, ...] = ()
    tools_flag: str | None = None
    permission_mode: str | None = None
    add_dir: tuple[str, ...] = ()
    sandbox: bool | None = None  # None: as the settings say
    pass_env: tuple[str, ...] = ()
    # context and settings
    mcp_config: tuple[str, ...] = ()
    plugin_dir: tuple[str, ...] = ()
    strict_mcp_config: bool = False
    system_prompt: str | None = None
    system_prompt_file: str | None = None
    append_system_prompt: str | None = None
    append_system_prompt_file: str | None = None
    agents: str | None = None
    settings: str | None = None
    bare: bool = False
    setting_sources: str | None = None
    # session
    session_id: str | None = None
    continue_session: bool = False
    resume: str | None = None
    fork_session: bool = False
    no_session_persistence: bool = False
    store: str | None = None
    # output
    output_format: str = "text"
    include_partial_messages: bool = False
    include_hook_events: bool = False
    json_schema: str | None = None
    # parallel attempts
    attempts: int | None = None
    attempt_instructions: str | None = None
    judge_model: str | None = None
    keep_worktrees: bool = False
    # the command line it came from, if any, as a transcript keeps it (no --store, secrets redacted):
    # a new session records it for a replay
    argv: tuple[str, ...] = ()

    @property
    def resuming(self) -> bool:
        return self.resume is not None or self.continue_session

    def telemetry_source(self) -> str:
        """What started the run, for telemetry (the CLI's `Options` tells its modes apart)."""
        return "headless"

    def recorded_argv(self) -> list[str]:
        """The command line as a new session's first record keeps it."""
        return list(self.argv)

    def recorded(self) -> dict[str, Any]:
        """The spec as a session's first record keeps it for a replay (`to_json`): without its store
        (where the record lives, not how the run behaves; its URL may carry a password) and its
        command line (kept beside it, as `argv`), secret-shaped values redacted."""
        from ..replay.export import scrub

        kept = {k: v for k, v in RunSpec.to_json(self).items() if k not in ("store", "argv")}
        return {k: scrub(v, "") for k, v in kept.items()}

    def to_json(self) -> dict[str, Any]:
        """The fields that differ from their defaults, with `"version"`; `none` limits as "none"."""
        out: dict[str, Any] = {"version": VERSION}
        for f in fields(RunSpec):
            value = getattr(self, f.name)
            if value != f.default:
                out[f.name] = "none" if value == NO_LIMIT else list(value) if isinstance(value, tuple) else value
        return out

    @classmethod
    def from_json(cls, data: Any) -> RunSpec:
        """A stored spec read back; `UsageError` naming the field for anything it cannot hold."""
        if not isinstance(data, dict):
            raise UsageError(f"run spec: expected a JSON object, got {type(data).__name__}")
        version = data.get("version")
        if version != VERSION:
            raise UsageError(f"run spec: field 'version': expected {VERSION} (this release reads version {VERSION}), "
                             f"got {version!r}")
        known = {f.name: f for f in fields(RunSpec)}
        unknown = sorted(set(data) - set(known) - {"version"})
        if unknown:
            raise UsageError(f"run spec: unknown field(s) {', '.join(map(repr, unknown))}; expected some of "
                             f"{', '.join(known)}")
        return cls(**{name: _field(name, str(known[name].type), value) for name, value in data.items()
                      if name != "version"})


_LIFTABLE = {"max_turns", "max_budget_usd"}  # `none` lifts the default bound
_CHOICES = {"output_format": ("text", "json", "stream-json")}


def _field(name: str, kind: str, value: Any) -> Any:
    """One stored value checked against its field's type (the annotation, as written above)."""
    if value is None and kind.endswith("| None"):
        return None
    if name in _LIFTABLE and value == "none":
        return NO_LIMIT
    base = kind.removesuffix(" | None")
    if base == "str" and isinstance(value, str) and value in _CHOICES.get(name, (value,)):
        return value
    if base == "bool" and isinstance(value, bool):
        return value
    if base == "int" and isinstance(value, int) and not isinstance(value, bool):
        return value
    if base == "float" and isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    if base == "tuple[str, ...]" and isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    if name in _CHOICES:
        raise UsageError(f"run spec: field {name!r}: expected one of {', '.join(_CHOICES[name])}, got {value!r}")
    expected = {"str": "a string", "bool": "true or false", "int": "a whole number", "float": "a number",
                "tuple[str, ...]": "a list of strings"}[base]
    expected += " or null" if kind.endswith("| None") else ""
    expected += ' or "none"' if name in _LIFTABLE else ""
    raise UsageError(f"run spec: field {name!r}: expected {expected}, got {value!r}")
