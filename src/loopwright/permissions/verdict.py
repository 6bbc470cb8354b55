"""The vocabulary of a permission judgement: the places a path names (`Resolved`), the answer
(`PermissionVerdict`), and how a path rule meets those places. Pure."""

from __future__ import annotations

from typing import Literal

from ..core.fastclass import dataclass
from .paths import Places, anchor, matches

__all__ = ["ALLOW", "SPECIAL", "Decision", "Resolved", "PermissionVerdict", "path_rule_hits"]

Decision = Literal["allow", "ask", "deny"]
SPECIAL = frozenset({"device", "fifo", "socket"})  # never written by a file tool


@dataclass(frozen=True, slots=True)
class Resolved:
    """One place a path names: `lexical` is absolute with `..` removed as text, `real` is where
    the kernel lands (each symlink followed before the `..` after it is applied). `kind` is
    what is there now (file, dir, device, fifo, socket; "" for nothing or not known), `links`
    an existing file's hard-link count. A glob may name several."""

    lexical: str
    real: str
    kind: str = ""
    links: int = 0


@dataclass(frozen=True, slots=True)
class PermissionVerdict:
    """`hard` asks come from ask rules and dangerous removals (neither bypassPermissions nor a
    hook's allow skips them) and from writes to protected paths or outside the writable roots
    (a hook's allow does not skip them). `hint` says what would allow the call."""

    decision: Decision
    reason: str = ""
    hard: bool = False
    hint: str = ""


ALLOW = PermissionVerdict("allow")


def path_rule_hits(spec: str, locs: tuple[Resolved, ...], places: Places, *, deny: bool) -> bool:
    """Deny and ask rules meet a path by its name or by where it lands; an allow rule must cover
    where every place lands."""
    pattern = anchor(spec, places, anywhere=deny)
    if deny:
        return any(matches(pattern, p) for loc in locs for p in (loc.lexical, loc.real))
    return bool(locs) and all(matches(pattern, loc.real) for loc in locs)
