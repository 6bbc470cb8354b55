"""Turning user-given values (flags, later settings) into engine objects, with errors that name
the input and what was expected."""

from __future__ import annotations

import re
from pathlib import Path

from .core.errors import UsageError
from .policy.rules import PermissionMode, normalise_mode

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$")
_UNIT_S = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, None: 1.0}


def parse_duration(value: str, flag: str) -> float:
    """`90`, `45s`, `30m`, `2h`, `1d`, `500ms` → seconds."""
    match = _DURATION.match(value)
    if not match or float(match.group(1)) <= 0:
        raise UsageError(f"{flag}: expected a positive duration such as 90s, 30m or 2h, got {value!r}")
    return float(match.group(1)) * _UNIT_S[match.group(2)]


def parse_mode(value: str) -> PermissionMode:
    mode = normalise_mode(value)
    if mode is None:
        from .policy.rules import MODES
        from .settings.check import suggest

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
