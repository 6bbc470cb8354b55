"""Which parts of a shell command only read, and what they read; which are the plain edits
acceptEdits runs inside the writable roots. Options are read as each program reads them and
checked against an allowlist per command (readonly_options, git_options, and below for the
commands with a grammar of their own): an option not listed, or a word known only at run time
where an option may stand, is not read-only. Pure."""

from __future__ import annotations

import re
from functools import lru_cache

from ...core.fastclass import dataclass
from .edit_options import EDITS, SAFE_EDITS
from .getopt import Cmd, parse
from .git_options import judge_git
from .parts import Part, Target, input_targets, is_device, redirect_targets
from .readonly_options import READ_ONLY
from .syntax import Word

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
        why, starts, named = judge_find(args)
        reads = [Target(w.value, w.glob, tree=True) for w in starts or [_DOT]] + [Target(w.value, w.glob) for w in named]
        return Reading(why is None, why or "", tuple(reads))
    if name == "xxd":
        why, inputs = judge_xxd(args)
        return Reading(why is None, why or "", tuple(Target(w.value, w.glob) for w in inputs))
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


# ---------------------------------------------------------------- commands with a grammar of their own
# find's expressions, test's operators (bash evaluates array subscripts in `-v`), printf's `-v`,
# ps's two option styles: each says why the call is not read-only (or None) and, for find,
# the folders it walks.

# find's primaries that only test or print, with how many words they take.
_FIND = {
    "-name": 1, "-iname": 1, "-path": 1, "-ipath": 1, "-wholename": 1, "-iwholename": 1, "-regex": 1,
    "-iregex": 1, "-regextype": 1, "-type": 1, "-xtype": 1, "-maxdepth": 1, "-mindepth": 1, "-depth": 0,
    "-size": 1, "-empty": 0, "-mtime": 1, "-mmin": 1, "-atime": 1, "-amin": 1, "-ctime": 1, "-cmin": 1,
    "-used": 1, "-newer": 1, "-anewer": 1, "-cnewer": 1, "-perm": 1, "-user": 1, "-group": 1, "-uid": 1,
    "-gid": 1, "-nouser": 0, "-nogroup": 0, "-links": 1, "-inum": 1, "-samefile": 1, "-readable": 0,
    "-writable": 0, "-executable": 0, "-true": 0, "-false": 0, "-prune": 0, "-quit": 0, "-print": 0,
    "-print0": 0, "-printf": 1, "-ls": 0, "-not": 0, "!": 0, "-a": 0, "-and": 0, "-o": 0, "-or": 0, "(": 0,
    ")": 0, ",": 0, "-mount": 0, "-xdev": 0, "-noleaf": 0, "-ignore_readdir_race": 0,
    "-noignore_readdir_race": 0, "-daystart": 0, "-fstype": 1, "-lname": 1, "-ilname": 1, "-context": 1,
    "-warn": 0, "-nowarn": 0, "-help": 0, "-version": 0, "-d": 0,
}
_FIND_FILES = frozenset({"-newer", "-anewer", "-cnewer", "-samefile"})  # their word names a file
_FIND_LEADING = frozenset({"-H", "-P", "-O0", "-O1", "-O2", "-O3"})  # not -L: it follows links


def judge_find(args: list[Word]) -> tuple[str | None, list[Word], list[Word]]:
    """(why not read-only, the start folders it walks, files its tests name)."""
    k = 0
    while k < len(args) and (args[k].value in _FIND_LEADING or (args[k].value or "").startswith("-D")):
        k += 1
    starts: list[Word] = []
    while k < len(args):
        v = args[k].value
        if v is None:
            return f"`{args[k].text}` is known only at run time and may be an expression", starts, []
        if v.startswith("-") or v in ("(", "!", ")", ","):
            break
        starts.append(args[k])
        k += 1
    files: list[Word] = []
    while k < len(args):
        v = args[k].value
        if v is None:
            return f"`{args[k].text}` is known only at run time and may be an action", starts, files
        takes = _FIND.get(v if not v.startswith("-newer") or len(v) != 8 else "-newer")
        if takes is None:
            return f"find {v} is not read-only here", starts, files
        if takes and k + takes >= len(args):
            return f"find {v} needs a value", starts, files
        if v in _FIND_FILES or v.startswith("-newer"):
            files.append(args[k + 1])
        k += 1 + takes
    return None, starts, files


_EVALUATING = frozenset({"-v", "-R"})  # bash evaluates an array subscript in the name
_UNARY = frozenset({"-a", "-b", "-c", "-d", "-e", "-f", "-g", "-h", "-k", "-p", "-r", "-s", "-t", "-u", "-w", "-x",
                    "-G", "-L", "-N", "-O", "-S", "-z", "-n", "-o"})
_BINARY = frozenset({"=", "==", "!=", "<", ">", "-eq", "-ne", "-lt", "-le", "-gt", "-ge", "-nt", "-ot", "-ef",
                     "-a", "-o"})


def judge_test(name: str, args: list[Word]) -> str | None:
    """`test`/`[`: bash evaluates `NAME[SUBSCRIPT]` after -v (and a subscript may hold `$(…)`,
    even in single quotes or in a variable's value). A word known only at run time may be such
    an operator, unless the line's shape fixes where it stands."""
    if name == "[" and args and args[-1].value == "]":
        args = args[:-1]
    values = [w.value for w in args]
    known = all(v is not None for v in values)
    if any(v in _EVALUATING for v in values) and any("[" in (v or "") for v in values):
        return f"`{name} -v` with an array subscript evaluates it, and a subscript can run commands"
    if known:
        return None
    split = [w.text for w in args if w.value is None and not (w.text.startswith('"') and w.text.endswith('"'))]
    if split:
        return f"`{split[0]}` may split into several words, such as `-v 'a[$(…)]'`"
    shape = values[1:] if values and values[0] == "!" else values
    if len(shape) <= 1 or (len(shape) == 2 and shape[0] in _UNARY) or (len(shape) == 3 and shape[1] in _BINARY):
        return None
    return f"`{name}` with words known only at run time may evaluate `-v 'a[$(…)]'`"


def judge_printf(args: list[Word]) -> str | None:
    """bash's printf has one option, `-v VAR`, which assigns (evaluating a subscript)."""
    if not args:
        return None
    first = args[0].value
    if first is None:
        return f"`{args[0].text}` is known only at run time and may be `-v`"
    if first.startswith("-") and first != "--":
        return "printf -v assigns a variable (and evaluates an array subscript)"
    return None


_PS_FLAGS = set("AaedfFHjlLMNTwxyZcPm")
_PS_VALUES = set("oOpCUuGgtqsk")
_PS_BSD = set("auxfwjlrvTmhcSZ")  # not e: it prints every process's environment
_PS_LONG = frozenset({"--forest", "--no-headers", "--headers", "--cols", "--columns", "--width", "--lines",
                      "--rows", "--sort", "--pid", "--ppid", "--format", "--user", "--group", "--tty", "--sid",
                      "--cumulative", "--deselect", "--help", "--version", "--info"})


def judge_ps(args: list[Word]) -> str | None:
    k = 0
    while k < len(args):
        v = args[k].value
        k += 1
        if v is None:
            return "ps with words known only at run time"
        if v.startswith("--"):
            if v.split("=", 1)[0] not in _PS_LONG:
                return f"ps {v} is not read here"
            if "=" not in v and v in ("--sort", "--pid", "--ppid", "--format", "--user", "--group", "--cols",
                                      "--columns", "--width", "--lines", "--rows", "--tty", "--sid"):
                k += 1
        elif v.startswith("-"):
            for j, c in enumerate(v[1:]):
                if c in _PS_VALUES:
                    k += 0 if v[j + 2:] else 1
                    break
                if c not in _PS_FLAGS:
                    return f"ps -{c} is not read here"
        elif v.isdigit() or all(c in _PS_BSD for c in v) and "e" not in v:
            continue
        else:
            return f"ps {v} is not read here (BSD `e` prints other processes' environments)"
    return None


# xxd reads each option word by its first letter (`-ps`, `-postscript`, `--plain` are all -p)
# until the first operand: the file it reads, then the file it WRITES. -r (revert) is left out.
_XXD_FLAGS = frozenset("abeupiCdEhv")
_NUMBER = re.compile(r"[-+]?(?:0[xX])?[0-9a-fA-F]+")
_XXD_VALUES = {"c": "ols", "g": "roupsize", "o": "ffset", "s": "eek", "l": "en", "n": "ame", "R": ""}


def judge_xxd(args: list[Word]) -> tuple[str | None, list[Word]]:
    """(why not read-only, the file it reads). One operand at most: a second is its output."""
    k = 0
    while k < len(args):
        v = args[k].value
        if v is None:
            return f"`{args[k].text}` is known only at run time and may be an option such as -r", []
        if v == "--":
            k += 1
            break
        if not v.startswith("-") or v == "-":
            break
        word = v[1:] if v.startswith("--") else v
        letter, rest = word[1], word[2:]
        k += 1
        if letter == "c" and rest.startswith("apitalize"):
            continue
        if letter in _XXD_VALUES:
            long = _XXD_VALUES[letter]
            if not rest or (long and rest.startswith(long)):  # `-c 8`, `-cols 8`: the value is the next word
                if k >= len(args):
                    return f"xxd {v} needs a value", []
                k += 1
            elif letter in "cgosl" and not _NUMBER.fullmatch(rest):  # `-c8` is glued; `-co 8` is unclear
                return f"xxd {v} is not read here", []
            continue
        if letter not in _XXD_FLAGS:
            return f"xxd {v} is not read-only here", []
    files = args[k:]
    if len(files) > 1:
        return f"`xxd` writes its second file ({files[1].text})", []
    return None, files
