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
    """The edit distance between `a` and `b` — letters inserted, deleted, replaced, or two
    neighbours swapped (`sevre` is one edit from `serve`) — or `cap` + 1 once it is sure to exceed
    `cap`."""
    if abs(len(a) - len(b)) > cap:
        return cap + 1
    before: list[int] = []
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            current[j] = min(row[j] + 1, current[j - 1] + 1, row[j - 1] + (ca != cb))
            if before and j > 1 and ca != cb and ca == b[j - 2] and a[i - 2] == cb:
                current[j] = min(current[j], before[j - 2] + 1)
        if min(current) > cap:  # each row's least value grows by at most one, swaps included
            return cap + 1
        before, row = row, current
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


# Words of English a slip away from a subcommand: as a prompt each is a word, not a typo.
_NEAR_WORDS = frozenset("""
    demon demons demos demote memo deco emo
    goals goalie goat goad gaol coal foal gal global
    map mop
    schedules scheduled schedulers schedular reschedule
    server servers serves served servo servos service servile swerve nerve nerves verve serge sere
    serene starve reserve deserve observe
    session sessional cessions sections versions tensions pensions passions missions lessons lesions
    seasons obsessions fissions
    setting sitting sittings sitings seating seatings settling settlings getting letting betting netting
    nettings wetting vetting jetting petting fittings cuttings
    trusts trusty trusted trustee entrust truest thrust thrusts crust crusts crusty rust truss tryst truism
    struts
""".split())


def subcommand_slip(prompt: str | None, subcommands: Iterable[str], *, words_too: bool = False) -> str | None:
    """The subcommand a one-word prompt most likely meant (`sheduler`: `scheduler`, `sevre`:
    `serve`), else None. A short word gets one slip, not two (`test` is a prompt, not `trust`);
    `/goal` and `/loop` are commands of their own; an exact subcommand name is a slip too (it was
    given after a flag). A word of English near a subcommand (`server`, `service`, `goals`) is a
    prompt, unless `words_too` (the words after it failed to parse: `loopwright session list`)."""
    word = (prompt or "").strip()
    if len(word.split()) != 1 or word.startswith("/"):
        return None
    word = word.rstrip(".!?,;:").lower()
    if len(word) < 3:
        return None
    subcommands = list(subcommands)
    if word in subcommands or (word in _NEAR_WORDS and not words_too):
        return word if word in subcommands else None
    return nearest(word, subcommands, 1 if len(word) <= 5 else 2)


def choice_slip(given: str, choices: Iterable[str]) -> str | None:
    """The choice a person probably meant by `given` (`lst`: `list`), within two edits, else None."""
    return nearest(given, choices, 1 if len(given) <= 3 else 2)


def suggest(name: str, choices: Iterable[str]) -> str:
    """` (did you mean X?)` for an unknown name among `choices` (a different case first, then the
    closest by difflib's ratio), or "" when nothing is close: the tail of a "not known" error."""
    import difflib

    choices = list(choices)
    by_case = [c for c in choices if c.lower() == name.lower()]
    close = by_case or difflib.get_close_matches(name, choices, n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""
