"""The parts of a shell command, for permission checks: wrappers stripped (their options read as
the wrappers read them), `bash -c` and `eval` looked into, `find -exec` and `xargs` commands
split out. `writes` says what a part writes, `readonly` which parts only read. Pure."""

from __future__ import annotations

import re

from ...core.fastclass import dataclass
from .getopt import Spec
from .getopt import parse as parse_options
from .syntax import Redirect, ShellSyntaxError, Simple, Word, parse

__all__ = ["Analysis", "Part", "Target", "analyse", "input_targets", "is_device", "redirect_targets"]

MAX_NESTING = 5
SHELLS = frozenset({"bash", "sh", "dash", "zsh", "ksh"})
_SYSTEM_DIRS = ("/bin/", "/usr/bin/", "/usr/local/bin/", "/sbin/", "/usr/sbin/")
# Variables that make an ordinary command load or run other code.
_RISKY_VARS = frozenset({"PATH", "IFS", "ENV", "BASH_ENV", "SHELLOPTS", "BASHOPTS", "PS4", "PROMPT_COMMAND",
                         "CDPATH", "GLOBIGNORE", "HOME", "PAGER", "MANPAGER", "EDITOR", "VISUAL", "LESSOPEN",
                         "LESSCLOSE", "BROWSER", "NODE_OPTIONS", "NODE_PATH", "GCONV_PATH", "SSH_ASKPASS",
                         "SUDO_ASKPASS", "TZDIR", "LOCPATH", "RUSTC_WRAPPER", "TERMINFO"})
_RISKY_PREFIXES = ("LD_", "DYLD_", "GIT_", "PYTHON", "PERL", "RUBY", "BASH_FUNC_", "JAVA", "_JAVA",
                   "NPM_CONFIG_", "npm_config_", "GEM_", "CARGO_")
# Device names, each exactly as written: a path that only starts like one is an ordinary path
# (`/dev/fd/../../../home/u/.bashrc` is a file in a home), judged where the kernel lands.
_DEVICES = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/stdin", "/dev/zero", "/dev/random",
                      "/dev/urandom"})
_DESCRIPTOR = re.compile(r"/dev/fd/[0-9]+")
# Redirections that open a file for writing; `>&N` with a number only duplicates a descriptor.
_WRITE_OPS = frozenset({">", ">>", ">|", "&>", "&>>", "<>", ">&"})
_READ_OPS = frozenset({"<", "<>"})


@dataclass(frozen=True, slots=True)
class Part:
    """One command that will run, wrappers stripped. `text` is what allow rules match; `full`
    keeps wrappers and assignments (deny and ask rules match it too)."""

    words: tuple[Word, ...]
    redirects: tuple[Redirect, ...]
    text: str
    full: str
    opaque: str | None = None  # why its effect cannot be judged from its text
    hidden: bool = False  # the command that really runs is not in the text (eval $x, bash script.sh)
    late_args: bool = False  # more operands arrive at run time (xargs)
    env: tuple[tuple[str, str | None], ...] = ()  # (name, value; None: known at run time) it is given


    @property
    def name(self) -> str | None:
        if not self.words or self.words[0].value is None:
            return None
        name = self.words[0].value
        for prefix in _SYSTEM_DIRS:
            if name.startswith(prefix) and "/" not in name[len(prefix):]:
                return name[len(prefix):]
        return name

    def args(self) -> list[str | None]:
        return [w.value for w in self.words[1:]]


@dataclass(frozen=True, slots=True)
class Target:
    """A file a part writes or reads: `path` as written (None: known only at run time), `glob`
    when the shell expands it, `removes` for rm and friends, `tree` when it reads a folder
    and everything below it."""

    path: str | None
    glob: bool = False
    removes: bool = False
    tree: bool = False


@dataclass(frozen=True, slots=True)
class Analysis:
    parts: tuple[Part, ...] = ()
    error: str | None = None  # the command could not be analysed: ask before running it


def analyse(command: str, nesting: int = 0) -> Analysis:
    try:
        simples = parse(command)
    except ShellSyntaxError as exc:
        return Analysis(error=str(exc))
    parts: list[Part] = []
    for simple in simples:
        try:
            parts.extend(_expand(simple, nesting))
        except ShellSyntaxError as exc:
            return Analysis(error=str(exc))
    return Analysis(tuple(parts), None)


def render(words: tuple[Word, ...] | list[Word]) -> str:
    """Words joined by one space; a literal word shows its value, so quoting (`'rm'`) cannot
    dodge a rule, while words with expansions keep their source text."""
    out = []
    for w in words:
        plain = w.value is not None and w.value != "" and not re.search(r"[\s'\"\\$`]", w.value)
        out.append(w.value if plain and w.value is not None else w.text)
    return " ".join(out)


def _expand(simple: Simple, nesting: int) -> list[Part]:
    full = render(simple.assignments + simple.words)
    risky = [n for n in (a.text.split("=", 1)[0].rstrip("+") for a in simple.assignments) if _is_risky(n)]
    words, why, hidden = _strip(list(simple.words))
    stripped = simple.words[:len(simple.words) - len(words)]
    late = any(w.value == "xargs" for w in stripped)
    if risky:
        why = why or f"sets {', '.join(risky)}, which changes what runs"
    # A part judged unsafe keeps its whole text, so `Bash(ls *)` cannot cover `PATH=x ls`.
    text = full if why else render(words)
    # what it is given: assignments before it and those `env` strips (a wrapper's other words
    # never look like one)
    env = tuple(_assigned(w) for w in (*simple.assignments, *stripped) if _ASSIGNMENT.match(w.text))
    part = Part(tuple(words), simple.redirects, text, full, why, hidden, late, env)
    name = part.name
    if part.words and part.words[0].value is None:
        return [_with(part, "the command name is known only at run time", hidden=True)]
    if name in SHELLS or name == "eval":
        return _inner(part, nesting, name == "eval")
    if name in _RUNS_HIDDEN_CODE:
        part = _with(part, f"`{name}` runs code that is not in the command line", hidden=True)
    return [part] + (_find_exec(part, nesting) if name == "find" else [])


# `parallel` and `watch` build the command they run from input or a string.
_RUNS_HIDDEN_CODE = frozenset({"source", ".", "trap", "fish", "csh", "tcsh", "enable", "alias", "parallel", "watch"})


def _assigned(word: Word) -> tuple[str, str | None]:
    name = word.text.split("=", 1)[0].rstrip("+")
    return name, word.value.split("=", 1)[1] if word.value is not None and "=" in word.value else None


def _with(part: Part, why: str, hidden: bool) -> Part:
    return Part(part.words, part.redirects, part.text, part.full, part.opaque or why, part.hidden or hidden,
                part.late_args, part.env)


def _inner(part: Part, nesting: int, is_eval: bool) -> list[Part]:
    """`bash -c SCRIPT` and `eval WORDS`: the script is analysed as if typed; anything else that
    starts a shell (a script file, stdin) cannot be seen."""
    args = part.words[1:]
    script: str | None = None
    if is_eval:
        values = [w.value for w in args]
        script = " ".join(values) if all(v is not None for v in values) else None  # type: ignore[arg-type]
    else:
        for k, w in enumerate(args):
            v = w.value or ""
            if v.startswith("-") and not v.startswith("--") and "c" in v:
                script = args[k + 1].value if k + 1 < len(args) else None
                break
            if not v.startswith("-") and not v.startswith("+"):
                break
    if script is None or nesting >= MAX_NESTING:
        return [_with(part, f"`{part.name}` runs a script that cannot be read here", hidden=True)]
    inner = analyse(script, nesting + 1)
    if inner.error:
        raise ShellSyntaxError(f"inside `{part.name}`: {inner.error}")
    redirect_only = [Part((), part.redirects, "", "")] if part.redirects else []
    return list(inner.parts) + redirect_only


# ------------------------------------------------------------ wrappers

def _wrapper(short: str, long: str = "", others: str = "", **kw: bool) -> Spec:
    return Spec(short, tuple(long.split()), tuple(others.split()), permute=False, **kw)


# Wrappers and their options (the program's own lists; options that change the directory or
# split a string into a command are not read here, so the part is asked about).
_WRAPPERS = {
    "timeout": _wrapper("k:s:v", "kill-after= signal= preserve-status foreground verbose help version"),
    "nice": _wrapper("n:", "adjustment= help version", number=True),
    "stdbuf": _wrapper("i:o:e:", "input= output= error= help version"),
    "nohup": _wrapper("", "help version"),
    "time": _wrapper("p", prefixes=False),
    "command": _wrapper("p", prefixes=False),
    "builtin": _wrapper("", prefixes=False),
    "noglob": _wrapper("", prefixes=False),
    "exec": _wrapper("a:cl", prefixes=False),
    "xargs": _wrapper("0a:d:E:e::I:i::L:l::n:oP:prs:tx",
                      "null arg-file= delimiter= eof=? replace=? max-lines=? max-args= max-procs= interactive "
                      "no-run-if-empty max-chars= verbose exit show-limits process-slot-var= open-tty help version"),
    "env": _wrapper("0iu:v", "null ignore-environment unset= debug block-signal=? default-signal=? ignore-signal=? "
                    "list-signal-handling help version", "chdir split-string"),
}


def _strip(words: list[Word]) -> tuple[list[Word], str | None, bool]:
    """Remove wrappers (`timeout 5`, `nice -n 5`, `env A=1`, `xargs -0` ...) from the front.
    Returns the words, why the part cannot be judged by its text (or None), and whether an
    option the reader does not allow hides the command that runs."""
    why: str | None = None
    while words and words[0].value in _WRAPPERS:
        name = words[0].value
        if name == "command" and len(words) > 1 and words[1].value in ("-v", "-V"):
            break  # `command -v x` only looks x up
        parsed = parse_options(_WRAPPERS[name], words[1:])
        if parsed.problem:
            return words, f"`{name}`: {parsed.problem}", True
        rest = list(parsed.operands)
        if name == "timeout":
            rest = rest[1:]  # the duration
        if name == "env":
            if rest and rest[0].value == "-":  # `env -` is `env -i`
                rest = rest[1:]
            names = [w.value.split("=", 1)[0] for w in rest if w.value and _ASSIGNMENT.match(w.value)]
            risky = [n for n in names if _is_risky(n)]
            why = why or (f"sets {', '.join(risky)}, which changes what runs" if risky else None)
            while rest and _ASSIGNMENT.match(rest[0].text):
                rest = rest[1:]
        if not rest:
            break  # `env` or `time` alone: the wrapper is the command
        words = rest
    return words, why, False


_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def _is_risky(name: str) -> bool:
    return name in _RISKY_VARS or name.startswith(_RISKY_PREFIXES)


def _find_exec(part: Part, nesting: int) -> list[Part]:
    """`find … -exec CMD {} ;` runs CMD: it is a part of its own."""
    extra: list[Part] = []
    words = list(part.words)
    for k, w in enumerate(words):
        if w.value in ("-exec", "-execdir", "-ok", "-okdir"):
            end = next((j for j in range(k + 1, len(words)) if words[j].value in (";", "+")), len(words))
            # `{}` becomes each file found: a path known only at run time
            inner = [Word(w.text, None) if "{}" in w.text else w for w in words[k + 1:end]]
            if inner:
                extra += _expand(Simple((), tuple(inner), ()), nesting + 1)
    return extra


# ------------------------------------------------------------ redirections


def redirect_targets(part: Part) -> list[Target]:
    """Files the part's redirections open for writing (descriptor copies left out)."""
    out = []
    for r in part.redirects:
        if r.op in _WRITE_OPS and r.target is not None:
            value = r.target.value or ""
            if r.op == ">&" and (value.rstrip("-").isdigit() or value == "-"):
                continue  # a descriptor copied or closed; `> -` is a file named "-"
            out.append(Target(r.target.value, r.target.glob))
    return out


def input_targets(part: Part) -> list[Target]:
    """Files the part's redirections open for reading (`< file`, `<> file`)."""
    return [Target(r.target.value, r.target.glob) for r in part.redirects if r.op in _READ_OPS and r.target is not None]


def is_device(path: str) -> bool:
    """Whether `path` is one of the harmless device names (or a descriptor, `/dev/fd/3`) exactly:
    nothing follows it, no `..` walks out of it."""
    return path in _DEVICES or _DESCRIPTOR.fullmatch(path) is not None
