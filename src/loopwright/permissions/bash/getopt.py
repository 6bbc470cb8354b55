"""Options read as the programs read them: GNU getopt_long (clustered and glued short options,
long options by unique prefix, `--name=value`, `--`, options after operands) or a program's
exact-only parser. A spec lists what a reader allows; anything else is a problem. Pure."""

from __future__ import annotations

from ...core.fastclass import dataclass
from .syntax import Word

__all__ = ["Cmd", "Parsed", "Spec", "parse"]


@dataclass(frozen=True, slots=True)
class Spec:
    """`short` is getopt's string (`b:` takes a value, `c::` an optional glued one). `long`
    names long options: `name`, `name=` (a value, glued with `=` or the next word), `name=?`
    (an optional value, glued only), `name=2` (the next two words). `others` are the program's
    other long options, never allowed but needed to resolve prefixes as the program does.
    `prefixes`: the program accepts unique abbreviations; `permute`: options may follow
    operands; `number`: `-5` is an option (head, tail, git log)."""

    short: str = ""
    long: tuple[str, ...] = ()
    others: tuple[str, ...] = ()
    prefixes: bool = True
    permute: bool = True
    number: bool = False


@dataclass(frozen=True, slots=True)
class Cmd:
    """How a command reads its words. `operands`: "paths" (files it reads), "none" (not
    paths), "pattern" (the first is a pattern or program unless an option in `pattern` gave
    one; the rest are paths). `reads`: options whose value is a file it reads; `recurse`:
    options that make it read folders recursively (`tree`: always); `default`: what it reads
    with no path ("." or None for stdin); `max_paths`: one more operand names a file it writes."""

    spec: Spec
    operands: str = "paths"
    reads: tuple[str, ...] = ()
    recurse: tuple[str, ...] = ()
    tree: bool = False
    default: str | None = None
    max_paths: int | None = None
    pattern: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Parsed:
    """Options as (name, value) — a short option by its letter, a long one by its full name —
    the operands, and the first problem: an option the spec does not allow, an abbreviation
    the program would read otherwise, or a word known only at run time where an option may be."""

    options: tuple[tuple[str, Word | None], ...]
    operands: tuple[Word, ...]
    problem: str | None = None

    def has(self, *names: str) -> bool:
        return any(n in names for n, _ in self.options)

    def values(self, *names: str) -> list[Word | None]:
        return [v for n, v in self.options if n in names]


_Words = tuple[Word, ...] | list[Word]
# One option read: the options it gave (name, value) and the index of the next word, or why not.
_Step = tuple[list[tuple[str, Word | None]], int] | str


def parse(spec: Spec, words: _Words, *, loose: bool = False) -> Parsed:
    """`loose`: a word known only at run time counts as an operand even where an option may
    stand (for programs none of whose options reads a file or does harm)."""
    options: list[tuple[str, Word | None]] = []
    operands: list[Word] = []
    k, done = 0, False
    while k < len(words):
        w, v = words[k], words[k].value
        k += 1
        if done or (v is None and loose) or (v is not None and (v == "-" or not v.startswith("-"))):
            operands.append(w)
            if not spec.permute:
                done = True
            continue
        if v is None:
            return Parsed(tuple(options), tuple(operands), f"`{w.text}` is known only at run time and may be an option")
        if v == "--":
            done = True
            continue
        if v.startswith("--"):
            got = _long(spec, v[2:], words, k)
        else:
            got = _short(spec, v, words, k)
        if isinstance(got, str):
            return Parsed(tuple(options), tuple(operands), got)
        found, k = got
        options.extend(found)
    return Parsed(tuple(options), tuple(operands))


def _long(spec: Spec, body: str, words: _Words, k: int) -> _Step:
    name, eq, glued = body.partition("=")
    full = _resolve(spec, name)
    if full is None:
        return f"--{name} is not an option read here (unknown, or an abbreviation of several)"
    kind = _allowed(spec).get(full)
    if kind is None:
        return f"--{name} (--{full}) is not allowed here"
    if kind == "":
        return f"--{full} takes no value" if eq else ([(full, None)], k)
    if eq:
        value = Word("--" + body, glued)
        return ([(full, value)], k) if kind != "2" else f"--{full}=… is not read here"
    if kind == "?":
        return [(full, None)], k
    count = 2 if kind == "2" else 1
    if k + count > len(words):
        return f"--{full} needs a value"
    return [(full, w) for w in words[k:k + count]], k + count


def _resolve(spec: Spec, name: str) -> str | None:
    """The option a program reading `--name` picks: an exact name, else (with prefixes) the one
    option it abbreviates; None when unknown or ambiguous."""
    every = {*_allowed(spec), *spec.others}
    if name in every:
        return name
    if not spec.prefixes or not name:
        return None
    hits = [o for o in every if o.startswith(name)]
    return hits[0] if len(hits) == 1 else None


_CACHE: dict[tuple[str, ...], dict[str, str]] = {}


def _allowed(spec: Spec) -> dict[str, str]:
    """Long names -> "" (no value), "=" (a value), "?" (optional, glued), "2" (two words)."""
    got = _CACHE.get(spec.long)
    if got is None:
        got = {}
        for entry in spec.long:
            name, eq, kind = entry.partition("=")
            got[name] = "=" if eq and kind == "" else kind
        _CACHE[spec.long] = got
    return got


def _short(spec: Spec, v: str, words: _Words, k: int) -> _Step:
    if spec.number and v[1:].isdigit():
        return [("#", Word(v, v[1:]))], k
    found: list[tuple[str, Word | None]] = []
    j = 1
    while j < len(v):
        c = v[j]
        at = spec.short.find(c) if c != ":" else -1
        if at < 0:
            return f"-{c} is not an option allowed here"
        takes = spec.short[at + 1:at + 2] == ":"
        optional = spec.short[at + 1:at + 3] == "::"
        if not takes:
            found.append((c, None))
            j += 1
            continue
        rest = v[j + 1:]
        if rest or optional:
            found.append((c, Word(v, rest) if rest else None))
        elif k < len(words):
            found.append((c, words[k]))
            k += 1
        else:
            return f"-{c} needs a value"
        break
    return found, k
