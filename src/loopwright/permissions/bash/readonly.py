"""Which parts of a shell command only read, and what they read; which are the plain edits
acceptEdits runs inside the writable roots. Options are read as each program reads them and
checked against an allowlist per command (opts_read, opts_git, readspecial): an option not
listed, or a word known only at run time where an option may stand, is not read-only. Pure."""

from __future__ import annotations

from functools import lru_cache

from ..core.fastclass import dataclass
from .commands import Part, Target, input_targets, is_device, redirect_targets
from .getopt import Cmd, parse
from .opts_edit import EDITS, SAFE_EDITS
from .opts_git import judge_git
from .opts_read import READ_ONLY
from .readspecial import judge_find, judge_printf, judge_ps, judge_test, judge_xxd
from .shellwords import Word

__all__ = ["SAFE_EDITS", "Reading", "is_read_only", "is_safe_edit", "judge"]

_ANY_ARGS = frozenset({"echo", "true", "false", ":"})  # they print or ignore their words
_DIRECTORY = frozenset({"cd", "pushd", "popd"})  # the line reader follows where they go
_GREPS = frozenset({"grep", "egrep", "fgrep"})
_DOT = Word(".", ".")


@dataclass(frozen=True, slots=True)
class Reading:
    """`ok`: the part only reads (where it reads is judged apart), else `why` not. `reads`: what
    it reads (path None: known only at run time; `tree`: a folder and all below it); `git`:
    the subcommand of a git call, which reads the repository around its working directory."""

    ok: bool
    why: str = ""
    reads: tuple[Target, ...] = ()
    git: str | None = None


# Variables a read-only command may be given: the locale, colours and widths. Anything else may
# name a file the program loads (MAGIC for file, LESSOPEN, TERMINFO, GREP_OPTIONS …) or change
# how it reads its options, so the command is not taken as read-only with it.
_QUIET_VARS = frozenset({"LANG", "LANGUAGE", "TZ", "NO_COLOR", "CLICOLOR", "CLICOLOR_FORCE", "FORCE_COLOR",
                         "COLUMNS", "LINES", "TERM", "GREP_COLOR", "GREP_COLORS", "LS_COLORS", "TIME_STYLE",
                         "QUOTING_STYLE", "TABSIZE", "BLOCK_SIZE", "BLOCKSIZE", "DU_BLOCK_SIZE", "DF_BLOCK_SIZE",
                         "LS_BLOCK_SIZE"})


def _loud_var(name: str, value: str | None) -> bool:
    """A variable that may make a program read or do more than its words say: not on the quiet
    list, or with a value known only at run time or naming a path (`TZ=/x`, `LC_ALL=../x`)."""
    quiet = name in _QUIET_VARS or name.startswith("LC_")
    return not quiet or value is None or "/" in value


@lru_cache(maxsize=2048)
def judge(part: Part) -> Reading:
    if part.opaque:
        return Reading(False, part.opaque)
    # (a bare `f=x` only sets a shell variable; the risky names are caught as the line is read)
    loud = [name for name, value in part.env if _loud_var(name, value)] if part.words else []
    if loud:
        return Reading(False, f"it is given {', '.join(loud)}, which a program may read a file or its options "
                       "from")
    inputs = tuple(input_targets(part))
    if not part.words:
        return Reading(True, reads=inputs)
    if part.late_args:
        return Reading(False, "more arguments arrive when it runs (xargs), so its options and files are unknown")
    got = _judge(part.name or "", list(part.words[1:]))
    return Reading(True, reads=got.reads + inputs, git=got.git) if got.ok else got


def _judge(name: str, args: list[Word]) -> Reading:
    if name in _ANY_ARGS or name in _DIRECTORY:
        return Reading(True)
    if name in ("test", "["):
        return _verdict(judge_test(name, args))
    if name == "printf":
        return _verdict(judge_printf(args))
    if name == "ps":
        return _verdict(judge_ps(args))
    if name == "command":
        return _verdict(None if args and args[0].value in ("-v", "-V") else "`command` runs what follows")
    if name == "env":
        return _verdict("`env` with words runs a command or changes its environment" if args else None)
    if name == "git":
        sub, why, files = judge_git(args)
        return Reading(why is None, why or "", tuple(Target(w.value, w.glob, tree=True) for w in files), git=sub)
    if name == "find":
        why, starts, files = judge_find(args)
        reads = [Target(w.value, w.glob, tree=True) for w in starts or [_DOT]] + [Target(w.value, w.glob) for w in files]
        return Reading(why is None, why or "", tuple(reads))
    if name == "xxd":
        why, files = judge_xxd(args)
        return Reading(why is None, why or "", tuple(Target(w.value, w.glob) for w in files))
    cmd = READ_ONLY.get(name)
    if cmd is None:
        return Reading(False, f"`{name}` is not known to only read")
    return _by_table(name, cmd, args)


def _verdict(why: str | None) -> Reading:
    return Reading(why is None, why or "")


def _by_table(name: str, cmd: Cmd, args: list[Word]) -> Reading:
    # When every option the program has is listed and none reads a file or recurses, a word
    # known only at run time can at worst be one of them: it is judged as an operand.
    loose = not (cmd.reads or cmd.recurse or cmd.tree or cmd.spec.others) and cmd.spec.prefixes
    parsed = parse(cmd.spec, args, loose=loose)
    if parsed.problem:
        return Reading(False, f"{name}: {parsed.problem}")
    operands = list(parsed.operands)
    if cmd.operands == "nothing" and operands:
        return Reading(False, f"`{name} {operands[0].text}` changes something")
    if cmd.operands == "format" and any(w.value is None or not w.value.startswith("+") for w in operands):
        return Reading(False, f"`{name}` with an operand other than +FORMAT changes something")
    if name == "strings" and any((w.value or "@").startswith("@") for w in operands):
        return Reading(False, "strings reads more options from an @file")
    if cmd.operands == "paths":
        paths = operands
    elif cmd.operands == "pattern":
        paths = operands if parsed.has(*cmd.pattern) else operands[1:]
    else:
        paths = []
    if cmd.max_paths is not None and len(paths) > cmd.max_paths:
        return Reading(False, f"`{name}` writes its last operand ({paths[-1].text})")
    recursive = any((w.value if w else "") == "recurse" for w in parsed.values("d", "directories"))
    tree = cmd.tree or parsed.has(*cmd.recurse) or (name in _GREPS and recursive)
    if not paths and (cmd.default or (tree and name in _GREPS)):
        paths = [_DOT]
    reads = [Target(w.value, w.glob, tree=tree) for w in paths]
    named = [w for w in parsed.values(*cmd.reads) if w is not None]
    if name == "file":  # `file -m a:b` loads each magic file of the list
        named = [Word(w.text, part, w.glob) for w in named for part in (w.value.split(":") if w.value else [None])]
    reads += [Target(w.value, w.glob) for w in named]
    return Reading(True, reads=tuple(reads))


def is_read_only(part: Part, redirects: bool = False) -> bool:
    """A part that only reads: a listed command with allowed options, and without redirections
    to files unless `redirects` (acceptEdits then checks where they go)."""
    writes = [t for t in redirect_targets(part) if t.path is None or not is_device(t.path)]
    if writes and not redirects:
        return False
    return judge(part).ok


def is_safe_edit(part: Part) -> bool:
    """mkdir, touch, mv, cp with options their programs know: what acceptEdits runs without
    asking when every target is inside. `cp -l`/`-s` make links: not plain edits."""
    name = part.name or ""
    if part.opaque or part.late_args or name not in SAFE_EDITS:
        return False
    parsed = parse(EDITS[name], part.words[1:])
    return parsed.problem is None and not (name == "cp" and parsed.has("s", "l", "link", "symbolic-link"))
