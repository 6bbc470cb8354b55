"""`Bash(...)` rules against the parts of a command line: `npm run test *` is a prefix with a
word boundary, legacy `npm run test:*` the same, any other `*` matches anything, no `*` is an
exact command; allow rules match a part from its first word, deny and ask rules anywhere. Pure."""

from __future__ import annotations

import re
from functools import lru_cache

from .parts import Part, analyse

__all__ = ["broad", "command_hits", "part_hits", "suggest"]


def broad(spec: str | None) -> bool:
    return spec is None or spec == "*"


@lru_cache(maxsize=512)
def _command_regex(spec: str) -> re.Pattern[str]:
    spec = " ".join(_spaced(spec))
    if spec.endswith(":*"):
        spec = spec[:-2] + " *"
    tail = spec.endswith(" *")
    body = spec[:-2] if tail else spec
    return re.compile(".*".join(re.escape(p) for p in body.split("*")) + ("(?: .*)?" if tail else ""), re.DOTALL)


def _spaced(text: str) -> list[str]:
    # Only spaces and tabs separate words for bash; str.split() would also split on a
    # non-breaking space, which bash keeps inside a word.
    return [w for w in re.split(r"[ \t]+", text) if w]


def _command_hits(spec: str, text: str) -> bool:
    return bool(_command_regex(spec).fullmatch(" ".join(_spaced(text))))


def part_hits(spec: str | None, part: Part, *, anywhere: bool) -> bool:
    """Allow rules match a part from its first word; deny and ask rules anywhere in it, so
    `sudo rm` or `xargs rm` still meets `Bash(rm *)`."""
    if broad(spec):
        return True
    assert spec is not None
    if _command_hits(spec, part.text):
        return True
    if not anywhere:
        return False
    words = _spaced(part.full)
    return any(_command_hits(spec, " ".join(words[k:])) for k in range(len(words)))


def suggest(part: Part) -> str:
    """A rule that would allow the part: its first two words and a wildcard."""
    words = part.text.split()
    return " ".join(words[:2]) + " *" if len(words) > 1 else (words[0] if words else "*")


def command_hits(spec: str | None, command: str) -> bool:
    """Whether a shell rule's specifier meets any command `command` runs, read the way deny and
    ask rules read it (each part, anywhere in it, wrappers included). A line that cannot be
    analysed, or a part whose real command is hidden, counts as a hit: whoever asks (a hook's
    `if`) wants to see what it cannot rule out."""
    analysis = analyse(command)
    if analysis.error is not None:
        return True
    return any(part.hidden or part_hits(spec, part, anywhere=True) for part in analysis.parts)
