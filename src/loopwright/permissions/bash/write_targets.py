"""The files a part of a shell command writes, and the files its copies read, with options read
as the program reads them (`cp --target=D`, `-ofile`, `--li`): a path the text shows, or None
when an option or argument is known only at run time. Also whether a part may make links or
move things, after which no later path in the line is known. Pure."""

from __future__ import annotations

import posixpath
import re

from .edit_options import EDITS, LINKING
from .getopt import Parsed, Spec, parse
from .parts import Part, Target, redirect_targets
from .syntax import Word

__all__ = ["copy_reads", "makes_links", "write_targets"]

UNKNOWN = Word("(known at run time)", None)
_REMOVES = frozenset({"rm", "rmdir", "unlink", "shred", "mv"})
_ALL_OPERANDS = frozenset({"rm", "rmdir", "unlink", "shred", "mkdir", "touch", "tee", "truncate"})
_MODE = re.compile(r"[-+=][-+=rwxXstugoa0-7,]*")
# Options that name a file these write (their other options are not read here: with an allow
# rule for them, the sandbox bounds the rest).
_OUTPUTS = {
    "curl": ("-o", "--output", "--output-dir", "-D", "--dump-header", "-c", "--cookie-jar", "--trace",
             "--trace-ascii", "--libcurl", "--stderr", "--etag-save", "--hsts", "--alt-svc"),
    "wget": ("-O", "--output-document", "-o", "--output-file", "-a", "--append-output", "-P",
             "--directory-prefix", "--save-cookies", "--warc-file"),
    "tree": ("-o",),
}
# Commands that create links or move things by design (archives unpack links, rsync copies them),
# and builtins that change the environment later commands (git) read.
_RELINKERS = frozenset({"ln", "link", "mv", "tar", "bsdtar", "unzip", "7z", "7za", "cpio", "pax", "rsync",
                        "mount", "bindfs", "export", "unset", "declare", "typeset", "set"})


def _words(part: Part) -> list[Word]:
    words = list(part.words[1:])
    return words + [UNKNOWN] if part.late_args else words


def _parse_edit(part: Part) -> Parsed | None:
    name = part.name
    spec: Spec | None = EDITS.get(name or "")
    if spec is None:
        return None
    words = _words(part)
    mode: list[Word] = []
    if name == "chmod":  # a mode such as -x or +w is an operand that looks like an option
        k = next((i for i, w in enumerate(words) if w.value is None or not w.value.startswith("--")
                  and (not w.value.startswith("-") or _MODE.fullmatch(w.value))), None)
        if k is not None and (words[k].value or "").startswith("-"):
            mode, words = [words[k]], words[:k] + words[k + 1:]
    got = parse(spec, words)
    return Parsed(got.options, tuple(mode) + got.operands, got.problem) if mode else got


def write_targets(part: Part) -> tuple[Target, ...]:
    """Files the part writes as far as its text shows: redirections and the operands of the
    commands that change files. Other programs may write too (the sandbox bounds those)."""
    targets = redirect_targets(part)
    parsed = _parse_edit(part)
    if parsed is not None:
        if parsed.problem:
            return (*targets, Target(None))
        return (*targets, *_edit_targets(part.name or "", parsed))
    name, words = part.name, _words(part)
    if name == "dd":
        targets += [_target(Word(w.text, w.value[3:], w.glob)) for w in words
                    if w.value is not None and w.value.startswith("of=")]
        targets += [Target(None) for w in words if w.value is None]
    elif name in _OUTPUTS:
        targets += [_target(w) for w in _option_value(words, _OUTPUTS[name])]
    elif name in ("uniq", "xxd", "base64"):
        paths = [w for w in words if w.value is None or not w.value.startswith("-") or w.value == "-"]
        if len(paths) > 1:
            targets.append(_target(paths[-1]))
    return tuple(targets)


def _edit_targets(name: str, parsed: Parsed) -> list[Target]:
    operands = list(parsed.operands)
    if name in _ALL_OPERANDS:
        return [_target(w, name in _REMOVES) for w in operands]
    if name in ("chmod", "chown", "chgrp"):
        return [_target(w) for w in (operands if parsed.has("reference") else operands[1:])]
    if name == "sed":
        if not parsed.has("i", "in-place"):
            return []
        return [_target(w) for w in (operands if parsed.has("e", "expression", "f", "file") else operands[1:])]
    if name == "sort":
        return [_target(w) if w is not None else Target(None) for w in parsed.values("o", "output")]
    if name == "install" and parsed.has("d", "directory"):
        return [_target(w) for w in operands]
    dest, sources = _destination(name, parsed)
    out = [_target(dest)] if dest is not None else []
    if name == "mv" or _hard_links(name, parsed):  # a hard link is a second name through which to write
        out += [_target(w, name == "mv") for w in sources]
    return out


def _destination(name: str, parsed: Parsed) -> tuple[Word | None, list[Word]]:
    operands = list(parsed.operands)
    given = parsed.values("t", "target-directory")
    if given:
        return given[-1] or UNKNOWN, operands
    if len(operands) >= 2:
        return operands[-1], operands[:-1]
    if name == "ln" and len(operands) == 1:  # `ln -s /a/b` makes ./b
        v = operands[0].value
        return (UNKNOWN if v is None else Word(operands[0].text, posixpath.basename(v.rstrip("/")) or v)), operands
    return None, operands


def _hard_links(name: str, parsed: Parsed) -> bool:
    return (name == "ln" and not parsed.has("s", "symbolic")) or (name == "cp" and parsed.has("l", "link"))


def copy_reads(part: Part) -> tuple[Target, ...]:
    """What a file-changing command reads: the sources of cp and install (their folders too when
    recursive), the reference files of touch and truncate, sed's script files and inputs."""
    parsed = _parse_edit(part)
    if parsed is None or parsed.problem:
        return (Target(None),) if parsed is not None else ()
    name = part.name
    if name == "cp" and parsed.has("s", "symbolic-link", "l", "link"):
        return ()  # it makes links to the sources (hard ones count as writes), reading nothing
    if name in ("cp", "install") and not parsed.has("d", "directory"):
        tree = name == "cp" and parsed.has("r", "R", "a", "recursive", "archive")
        return tuple(Target(w.value, w.glob, tree=tree) for w in _destination(name or "", parsed)[1])
    refs = [w for w in parsed.values("r", "reference", "f", "file", "random-source") if w is not None]
    if name in ("sed", "sort"):
        sed_script = name == "sed" and not parsed.has("e", "expression", "f", "file")
        refs += list(parsed.operands[1:] if sed_script else parsed.operands)
    if name in ("touch", "truncate", "sed", "sort", "shred"):
        return tuple(Target(w.value, w.glob) for w in refs)
    return ()


def makes_links(part: Part, read_only: bool) -> bool:
    """Whether the part may create, copy or move a link, or move a folder, or change what later
    commands find (their paths were resolved before the line ran)."""
    if read_only:
        return False
    name = part.name
    if part.hidden or part.opaque or name in _RELINKERS or name == "git":
        return True
    if name == "cp":
        parsed = _parse_edit(part)
        return parsed is None or bool(parsed.problem) or parsed.has(*LINKING["cp"])
    return False


def _option_value(words: list[Word], names: tuple[str, ...]) -> list[Word]:
    found = []
    for k, w in enumerate(words):
        v = w.value
        if v is None:
            found.append(UNKNOWN)  # it could be any of these options
            continue
        for n in names:
            if v == n and k + 1 < len(words):
                found.append(words[k + 1])
            elif v.startswith(n + "=") or (len(n) == 2 and v.startswith(n) and len(v) > 2):
                cut = len(n) + 1 if v.startswith(n + "=") else len(n)
                found.append(Word(w.text, v[cut:], w.glob))
    return found


def _target(word: Word, removes: bool = False) -> Target:
    return Target(word.value, word.glob, removes)
