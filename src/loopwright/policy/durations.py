"""Durations a person writes — `90`, `45s`, `30m`, `2h`, `1d`, `500ms`, `1.5 hours` — as seconds.
One reader for every place that takes one: the flags (`--max-duration`, `--until`, `--grace`,
`--goal-max-duration`), `/loop` and schedule intervals, and the time limits written in a goal's
condition. The grammars that find a duration inside other text keep their own shape and ask
here what a unit is worth. Pure."""

from __future__ import annotations

import math
import re

__all__ = ["UNITS", "parse_duration", "unit_seconds"]

# Every unit word a person types, singular and plural; case does not matter (`5M` is five minutes:
# no duration here is ever counted in months).
UNITS: dict[str, float] = {
    **dict.fromkeys(("ms", "msec", "msecs", "millisecond", "milliseconds"), 0.001),
    **dict.fromkeys(("s", "sec", "secs", "second", "seconds"), 1.0),
    **dict.fromkeys(("m", "min", "mins", "minute", "minutes"), 60.0),
    **dict.fromkeys(("h", "hr", "hrs", "hour", "hours"), 3600.0),
    **dict.fromkeys(("d", "day", "days"), 86400.0),
}
_DURATION = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*")


def unit_seconds(unit: str) -> float:
    """What one `unit` is worth in seconds; ValueError naming the unit when it is not one."""
    seconds = UNITS.get(unit.lower())
    if seconds is None:
        raise ValueError(f"unknown time unit {unit!r}: expected ms, s, m, h or d (or their words, such as minutes)")
    return seconds


def parse_duration(text: str, *, allow_zero: bool = False) -> float:
    """`text` as seconds: a number (bare: seconds) and an optional unit. Raises ValueError naming
    the text for anything else: no number, an unknown unit, a sign, an exponent, a value that is
    not finite, or zero unless `allow_zero`."""
    wanted = f"expected a {'' if allow_zero else 'positive '}duration such as 90s, 30m or 2h"
    match = _DURATION.fullmatch(text) if isinstance(text, str) else None
    if match is None:
        raise ValueError(f"{wanted}, got {text!r}")
    amount, unit = float(match.group(1)), match.group(2)
    if unit and unit.lower() not in UNITS:
        raise ValueError(f"{wanted}, got {text!r} (unknown time unit {unit!r}: ms, s, m, h or d, or their words)")
    seconds = amount * (UNITS[unit.lower()] if unit else 1.0)
    if not math.isfinite(seconds):
        raise ValueError(f"{wanted}, got {text!r}, which is too long to count")
    if seconds == 0 and not allow_zero:
        raise ValueError(f"{wanted}, got {text!r}")
    return seconds
