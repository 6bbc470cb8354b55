"""Names a person types — model names, subcommands, flags — checked against the names that
exist, so a typo is caught with the name that was meant instead of being sent on. Pure."""

from __future__ import annotations

import re
from typing import Iterable, Literal

from ..core.fastclass import dataclass

# Names of other providers' models: sent to the Anthropic API they can only fail.
_FOREIGN = re.compile(r"(gpt-|chatgpt|o[1-9](-|$)|gemini|gemma|llama|mistral|mixtral|codestral|deepseek|qwen|"
                      r"grok|command-r|phi-|kimi|glm-)", re.I)


def edits(a: str, b: str, cap: int = 3) -> int:
    """The Levenshtein distance between `a` and `b`, or `cap` + 1 once it is sure to exceed `cap`."""
    if abs(len(a) - len(b)) > cap:
        return cap + 1
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        prev, row[0] = row[0], i
        best = row[0]
        for j, cb in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (ca != cb))
            best = min(best, row[j])
        if best > cap:
            return cap + 1
    return row[-1]


def nearest(name: str, candidates: Iterable[str], max_edits: int) -> str | None:
    """The candidate closest to `name` within `max_edits` (case-insensitive), else None."""
    scored = sorted((edits(name.lower(), c.lower(), max_edits), c) for c in candidates)
    return scored[0][1] if scored and scored[0][0] <= max_edits else None


@dataclass(frozen=True, slots=True)
class NameCheck:
    """`typo`: one or two edits from a known name (`meant`); `foreign`: looks like another
    provider's model; `unknown`: neither, a new name perhaps (`meant`: the nearest, if any)."""

    kind: Literal["typo", "foreign", "unknown"]
    meant: str | None = None


def check_model_name(name: str, known: Iterable[str]) -> NameCheck | None:
    """None when `name` is in the model table (`known`: every alias and id); else what it looks like."""
    names = list(known)
    lowered = name.strip().lower()
    if lowered in (n.lower() for n in names):
        return None
    if (typo := nearest(lowered, names, 2)) is not None:
        return NameCheck("typo", typo)
    if _FOREIGN.match(lowered):
        return NameCheck("foreign")
    return NameCheck("unknown", nearest(lowered, names, 4))


def subcommand_slip(prompt: str | None, subcommands: Iterable[str]) -> str | None:
    """The subcommand a one-word prompt most likely meant (`sheduler`: `scheduler`), else None.
    A short word gets one slip, not two (`test` is a prompt, not `trust`); `/goal` and `/loop`
    are commands of their own; an exact subcommand name is a slip too (it was given after a flag)."""
    word = (prompt or "").strip()
    if len(word.split()) != 1 or len(word) < 3 or word.startswith("/"):
        return None
    return nearest(word, subcommands, 1 if len(word) <= 5 else 2)


def choice_slip(given: str, choices: Iterable[str]) -> str | None:
    """The choice a person probably meant by `given` (`lst`: `list`), within two edits, else None."""
    return nearest(given, choices, 1 if len(given) <= 3 else 2)
