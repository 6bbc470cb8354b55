"""Turning user-given values (flags, later settings) into engine objects, with errors that name
the input and what was expected."""

from __future__ import annotations

from pathlib import Path

from .core.errors import UsageError
from .permissions.rules import PermissionMode, normalise_mode
from .policy import durations


def parse_duration(value: str, flag: str) -> float:
    """`90`, `45s`, `30m`, `2h`, `1d`, `500ms` → seconds (policy.durations reads them)."""
    try:
        return durations.parse_duration(value)
    except ValueError as exc:
        raise UsageError(f"{flag}: {exc}") from None


def parse_mode(value: str) -> PermissionMode:
    mode = normalise_mode(value)
    if mode is None:
        from .permissions.rules import MODES
        from .policy.names import suggest

        raise UsageError(
            f"--permission-mode: expected one of default, acceptEdits, plan, dontAsk, bypassPermissions "
            f"(or manual), got {value!r}{suggest(value, MODES)}")
    return mode


def positive(value: float | int | None, flag: str) -> None:
    if value is not None and value <= 0:
        raise UsageError(f"{flag}: expected a number above 0, got {value}")


def read_text_file(path: str, flag: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"{flag}: cannot read {path!r}: {exc.strerror or exc}") from None


def parse_fallbacks(value: str | None) -> tuple[str, ...]:
    if not value:
        return ()
    models = tuple(m.strip() for m in value.split(",") if m.strip())
    if len(models) > 3:
        raise UsageError(f"--fallback-model: at most 3 models, got {len(models)} ({value!r})")
    return models


GOAL_CLEAR_WORDS = ("clear", "stop", "off", "reset", "none", "cancel")
