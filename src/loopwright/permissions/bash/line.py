"""A command line as a whole: the folder each part runs in (after `cd`), the paths no part can
know (after a part that makes links or moves things, every path was resolved too early), globs
that may expand into options, and git calls, which only read when every git call in the line
only reads. Produces what each part touches, for the permission policy. Pure."""

from __future__ import annotations

import posixpath
from functools import lru_cache
from typing import Any, Mapping

from ...core.fastclass import dataclass
from .getopt import Spec, parse
from .parts import Analysis, Part, Target, analyse, input_targets, is_device, redirect_targets
from .readonly import Reading, judge
from .syntax import Word
from .write_targets import copy_reads, makes_links, write_targets

__all__ = ["Line", "Touch", "analysed", "read_line", "wanted"]

MAX_BASES = 4
_GLOB_START = ("*", "?", "[")
_CD = {"cd": Spec("LPe@", prefixes=False, permute=False), "pushd": Spec("n", prefixes=False, permute=False)}


@dataclass(frozen=True, slots=True)
class Touch:
    """A path a part writes (`write`), reads (`read`; `tree`: a folder and all below it), or the
    folder whose git repository it reads (`repo`). `path` is relative to the working directory
    or absolute; None when the line leaves it unknown until it runs. `into`: a write that opens
    the file and writes into it (a redirection, tee, dd), which leaves a device a device."""

    part: Part
    path: str | None
    kind: str
    glob: bool = False
    removes: bool = False
    tree: bool = False
    into: bool = False


@dataclass(frozen=True, slots=True)
class Line:
    parts: tuple[Part, ...]
    readings: tuple[Reading, ...]
    touches: tuple[Touch, ...]
    git_read_only: bool  # every git call only reads: they run with the neutralising overrides


@lru_cache(maxsize=256)
def analysed(command: str) -> Analysis:
    """The analysis of a command line, kept: the gate reads one line several times (what to
    resolve, which repositories, the decision, the environment of the allowed call)."""
    return analyse(command)


# The line as written, kept per analysis (an analysis is itself kept per command text by
# `analysed`): the gate reads a line three or four times a call, and a model repeats its commands.
# Keyed by identity, holding the analysis, so a key is never a reused id; emptied when full.
_AS_WRITTEN_MOST = 256
_as_written: dict[int, tuple[Analysis, Line]] = {}


def read_line(analysis: Analysis, resolved: Mapping[str, Any] | None = None, cwd: str = "") -> Line:
    """`resolved` maps a glob to its matches (objects with `.lexical`, absolute) as the gate
    found them; without it, globs are taken as they are written (the view used to collect
    what the gate must resolve). Pure: a line without a word that starts with a pattern
    character reads the same either way, and is read once."""
    if resolved is not None and _leading_globs(analysis):
        return _read_line(analysis, resolved, cwd)
    held = _as_written.get(id(analysis))
    if held is None or held[0] is not analysis:
        if len(_as_written) >= _AS_WRITTEN_MOST:
            _as_written.clear()
        held = _as_written[id(analysis)] = (analysis, _read_line(analysis, None, ""))
    return held[1]


def _leading_globs(analysis: Analysis) -> bool:
    """Whether a word of the line (not a command name) is a glob starting with a pattern
    character: the only words `resolved` and `cwd` change (`_safe_globs`)."""
    return any(k and w.glob and w.value is not None and w.value.startswith(_GLOB_START)
               for p in analysis.parts for k, w in enumerate(p.words))


def _read_line(analysis: Analysis, resolved: Mapping[str, Any] | None, cwd: str) -> Line:
    first = [judge(p) for p in analysis.parts]
    dashes = _may_create_dash_names(analysis.parts, first)
    bases = _bases(analysis.parts)
    parts = tuple(_safe_globs(p, resolved, cwd, dashes or bases[k] != ("",)) for k, p in enumerate(analysis.parts))
    readings = [judge(p) for p in parts]
    gits = [k for k, p in enumerate(parts) if p.name == "git"]
    git_ok = all(readings[k].ok for k in gits)
    if not git_ok:
        for k in gits:
            if readings[k].ok:
                readings[k] = Reading(False, "another git call in this line changes things, so this one would run "
                                             "with the repository's configuration", git=readings[k].git)
    linkers = [k for k, p in enumerate(parts) if makes_links(p, readings[k].ok)]
    touches: list[Touch] = []
    for k, (part, reading) in enumerate(zip(parts, readings)):
        unknown = any(j != k for j in linkers)
        for t, kind, into in _raw_touches(part, reading):
            touches += _placed(part, t, kind, bases[k], unknown, into)
    return Line(parts, tuple(readings), tuple(touches), git_ok)


# Programs that write into a device named as their output (open it and write), never replace it.
_WRITE_INTO = frozenset({"tee", "dd"})


def _raw_touches(part: Part, reading: Reading) -> list[tuple[Target, str, bool]]:
    """(target, kind, into) for each path the part touches. A device is known here by its exact
    name only; any other path is judged where the gate finds it leads."""
    redirected = [t.path for t in redirect_targets(part)]
    out: list[tuple[Target, str, bool]] = []
    for t in write_targets(part):
        into = part.name in _WRITE_INTO or t.path in redirected
        if t.path in redirected:
            redirected.remove(t.path)
        if t.path is None or not is_device(t.path):
            out.append((t, "write", into))
        elif not into:
            out.append((t, "device", False))  # mv, cp, ln, touch, chmod, rm … on a device node
        # else `> /dev/null`: the shell opens the device and writes into it
    reads = reading.reads if reading.ok else (*input_targets(part), *copy_reads(part))
    out += [(t, "read", False) for t in reads if t.path is None or not is_device(t.path)]
    if reading.ok and reading.git:
        out.append((Target("."), "repo", False))
    return out


def _placed(part: Part, t: Target, kind: str, bases: tuple[str, ...] | None, unknown: bool,
            into: bool) -> list[Touch]:
    """The target joined to each folder the part may run in; unknown after a linking part
    (only the working directory itself, `.`, cannot have been replaced; but the repository
    git finds there can: a `.git` unpacked or linked into place)."""
    path = t.path
    if path is None or (unknown and not (path == "." and bases == ("",) and kind != "repo")):
        return [Touch(part, None, kind, t.glob, t.removes, t.tree, into)]
    if path.startswith(("/", "~")):
        return [Touch(part, path, kind, t.glob, t.removes, t.tree, into)]
    if bases is None:
        return [Touch(part, None, kind, t.glob, t.removes, t.tree, into)]
    return [Touch(part, _join(b, path), kind, t.glob, t.removes, t.tree, into) for b in bases]


def _join(base: str, path: str) -> str:
    if not base:
        return path
    return base if path == "." else posixpath.join(base, path)


def _bases(parts: tuple[Part, ...]) -> list[tuple[str, ...] | None]:
    """The folders (relative to the working directory, or absolute) each part may run in: a
    `cd` may fail or sit in a subshell, so the folders before it stay possible too."""
    out: list[tuple[str, ...] | None] = []
    current: tuple[str, ...] | None = ("",)
    for part in parts:
        out.append(current)
        if part.name not in ("cd", "pushd", "popd") or current is None:
            continue
        target = _cd_target(part)
        if target is None:
            current = None
            continue
        joined = [target if target.startswith(("/", "~")) or not b else posixpath.join(b, target) for b in current]
        merged = tuple(dict.fromkeys([*current, *joined]))
        current = merged if len(merged) <= MAX_BASES else None
    return out


def _cd_target(part: Part) -> str | None:
    """Where `cd DIR` / `pushd DIR` goes when the text says; None when known only at run time
    (`cd -`, `popd`, `pushd +1`, `cd $X`)."""
    spec = _CD.get(part.name or "")
    if spec is None:
        return None
    parsed = parse(spec, part.words[1:])
    if parsed.problem or len(parsed.operands) > 1:
        return None
    if not parsed.operands:
        return "~" if part.name == "cd" else None
    v = parsed.operands[0].value
    if v is None or v in ("-", "") or parsed.operands[0].glob or v.startswith(("+", "-")):
        return None
    return v


def _may_create_dash_names(parts: tuple[Part, ...], readings: list[Reading]) -> bool:
    """Whether a part may create a file whose name starts with '-' (which a later `*` turns
    into an option): a visible target named so, a target known only at run time, or a part
    that unpacks, links or runs hidden code."""
    for part, reading in zip(parts, readings):
        if makes_links(part, reading.ok) and part.name not in ("cd", "pushd", "popd"):
            return True
        for t in (*write_targets(part), *copy_reads(part)):
            if t.path is None or posixpath.basename(t.path.rstrip("/")).startswith("-"):
                return True
    return False


def _safe_globs(part: Part, resolved: Mapping[str, Any] | None, cwd: str, unsure: bool) -> Part:
    """A glob that starts with a pattern character expands to names in the folder, and a name
    may start with '-': then it is an option. Such a word counts as unknown unless the gate saw
    its matches and none starts with '-'. (git's are unknown in any case: whether a line's git
    calls only read must not depend on the files, see `git_options.judge_git`.)"""
    words = list(part.words)
    changed = False
    for k, w in enumerate(words):
        if k == 0 or not w.glob or w.value is None or not w.value.startswith(_GLOB_START):
            continue
        if resolved is not None and (unsure or _dashed(resolved.get(w.value), cwd)):
            words[k] = Word(w.text, None, True)
            changed = True
    if not changed:
        return part
    return Part(tuple(words), part.redirects, part.text, part.full, part.opaque, part.hidden, part.late_args,
                part.env)


def _dashed(matches: Any, cwd: str) -> bool:
    if matches is None:
        return True
    prefix = cwd.rstrip("/") + "/"
    return any(m.lexical.startswith(prefix) and m.lexical[len(prefix):].startswith("-") for m in matches)


def wanted(analysis: Analysis) -> list[tuple[str, bool]]:
    """(path, glob) for everything the gate must resolve before judging the line: what the
    parts touch, taken optimistically, and every glob word (to see what it expands to)."""
    line = read_line(analysis)
    out = [(t.path, t.glob) for t in line.touches if t.path is not None]
    out += [(w.value, True) for p in analysis.parts for w in p.words[1:] if w.glob and w.value is not None]
    return list(dict.fromkeys(out))
