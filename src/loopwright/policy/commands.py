"""What the parts of a shell command do, for permission checks: wrappers stripped, `bash -c` and
`eval` looked into, the files a part writes (`readonly` says which parts only read). Pure."""

from __future__ import annotations

import re

from ..core.fastclass import dataclass
from .shell import Redirect, ShellSyntaxError, Simple, Word, parse

__all__ = ["Analysis", "Part", "Target", "analyse", "is_device", "redirect_targets", "write_targets"]

MAX_NESTING = 5
SHELLS = frozenset({"bash", "sh", "dash", "zsh", "ksh"})
DIR_CHANGERS = frozenset({"cd", "pushd", "popd"})
_SYSTEM_DIRS = ("/bin/", "/usr/bin/", "/usr/local/bin/", "/sbin/", "/usr/sbin/")
# Variables that make an ordinary command load or run other code.
_RISKY_VARS = frozenset({"PATH", "IFS", "ENV", "BASH_ENV", "SHELLOPTS", "BASHOPTS", "PS4", "PROMPT_COMMAND",
                         "CDPATH", "GLOBIGNORE", "HOME", "PAGER", "MANPAGER", "EDITOR", "VISUAL", "LESSOPEN",
                         "LESSCLOSE", "BROWSER", "NODE_OPTIONS", "NODE_PATH", "GCONV_PATH", "SSH_ASKPASS",
                         "SUDO_ASKPASS", "TZDIR", "LOCPATH", "RUSTC_WRAPPER", "TERMINFO"})
_RISKY_PREFIXES = ("LD_", "DYLD_", "GIT_", "PYTHON", "PERL", "RUBY", "BASH_FUNC_", "JAVA", "_JAVA",
                   "NPM_CONFIG_", "npm_config_", "GEM_", "CARGO_")
_DEVICES = ("/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/fd/")
# Redirections that open a file for writing; `>&N` with a number only duplicates a descriptor.
_WRITE_OPS = frozenset({">", ">>", ">|", "&>", "&>>", "<>", ">&"})


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
    """A file a part writes: `path` as written (None: known only at run time), `glob` when the
    shell expands it, `removes` for rm and friends."""

    path: str | None
    glob: bool = False
    removes: bool = False


@dataclass(frozen=True, slots=True)
class Analysis:
    parts: tuple[Part, ...] = ()
    error: str | None = None  # the command could not be analysed: ask before running it
    changes_dir: bool = False  # a cd somewhere: relative paths are no longer known


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
    changes = any(p.name in DIR_CHANGERS for p in parts)
    return Analysis(tuple(parts), None, changes)


def render(words: tuple[Word, ...] | list[Word]) -> str:
    """Words joined by one space; a literal word shows its value, so quoting (`'rm'`) cannot
    dodge a rule, while words with expansions keep their source text."""
    out = []
    for w in words:
        plain = w.value is not None and w.value != "" and not re.search(r"[\s'\"\\$`]", w.value)
        out.append(w.value if plain else w.text)  # type: ignore[arg-type]
    return " ".join(out)


def _expand(simple: Simple, nesting: int) -> list[Part]:
    full = render(simple.assignments + simple.words)
    risky = [n for n in (a.text.split("=", 1)[0].rstrip("+") for a in simple.assignments) if _is_risky(n)]
    words, why, hidden = _strip(list(simple.words))
    late = any(w.value == "xargs" for w in simple.words[:len(simple.words) - len(words)])
    if risky:
        why = why or f"sets {', '.join(risky)}, which changes what runs"
    # A part judged unsafe keeps its whole text, so `Bash(ls *)` cannot cover `PATH=x ls`.
    text = full if why else render(words)
    part = Part(tuple(words), simple.redirects, text, full, why, hidden, late)
    name = part.name
    if part.words and part.words[0].value is None:
        return [_with(part, "the command name is known only at run time", hidden=True)]
    if name in SHELLS or name == "eval":
        return _inner(part, nesting, name == "eval")
    if name in _RUNS_HIDDEN_CODE:
        part = _with(part, f"`{name}` runs code that is not in the command line", hidden=True)
    return [part] + (_find_exec(part, nesting) if name == "find" else [])


_RUNS_HIDDEN_CODE = frozenset({"source", ".", "trap", "fish", "csh", "tcsh", "enable", "alias"})


def _with(part: Part, why: str, hidden: bool) -> Part:
    return Part(part.words, part.redirects, part.text, part.full, part.opaque or why, part.hidden or hidden,
                part.late_args)


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

_WRAPPER_ARGS = {  # wrapper -> (options that take a value, options without one)
    "timeout": ({"-s", "--signal", "-k", "--kill-after"}, {"--preserve-status", "--foreground", "-v", "--verbose"}),
    "nice": ({"-n", "--adjustment"}, set()),
    "stdbuf": ({"-i", "-o", "-e", "--input", "--output", "--error"}, set()),
    "nohup": (set(), set()),
    "time": (set(), {"-p"}),
    "command": (set(), {"-p"}),
    "builtin": (set(), set()),
    "noglob": (set(), set()),
    "exec": ({"-a"}, {"-c", "-l", "-cl"}),
    "xargs": ({"-a", "--arg-file", "-d", "--delimiter", "-E", "-I", "-L", "-n", "--max-args", "-P",
               "--max-procs", "-s", "--max-chars"}, {"-0", "--null", "-r", "--no-run-if-empty", "-t", "--verbose",
                                                      "-x", "--exit"}),
    "env": ({"-u", "--unset"}, {"-i", "--ignore-environment", "-0", "--null", "-"}),
}


def _strip(words: list[Word]) -> tuple[list[Word], str | None, bool]:
    """Remove wrappers (`timeout 5`, `nice -n 5`, `env A=1`, `xargs -0` ...) from the front.
    Returns the words, why the part cannot be judged by its text (or None), and whether an
    option the reader does not know hides the command that runs."""
    why: str | None = None
    while words and words[0].value in _WRAPPER_ARGS:
        name = words[0].value
        if name == "command" and len(words) > 1 and words[1].value in ("-v", "-V"):
            break  # `command -v x` only looks x up
        rest, problem = _skip_options(name, words[1:])  # type: ignore[arg-type]
        if problem:
            return words, problem, True
        if name == "timeout":
            rest = rest[1:]  # the duration
        if name == "env":
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


def _skip_options(name: str, rest: list[Word]) -> tuple[list[Word], str | None]:
    with_value, flags = _WRAPPER_ARGS[name]
    while rest:
        v = rest[0].value
        if v is None:
            return rest, f"`{name}` with options known only at run time"
        if v == "--":
            return rest[1:], None
        if not v.startswith("-") or v == "-" and name != "env":
            return rest, None
        if name == "nice" and re.fullmatch(r"-\d+", v):
            rest = rest[1:]
            continue
        opt = v.split("=", 1)[0]
        if opt in flags or (name == "env" and v == "-"):
            rest = rest[1:]
        elif opt in with_value:
            rest = rest[1:] if "=" in v else rest[2:]
        elif len(opt) > 2 and opt[:2] in with_value and not opt.startswith("--"):
            rest = rest[1:]  # -oL, -n5: the value is attached
        else:
            return rest, f"`{name} {v}` is not understood"
    return rest, None


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


# ------------------------------------------------------------ what a part writes

_WRITES_ALL = frozenset({"rm", "rmdir", "unlink", "shred", "mkdir", "touch", "mv", "tee", "truncate"})
_REMOVES = frozenset({"rm", "rmdir", "unlink", "shred", "mv"})
_WRITES_LAST = frozenset({"cp", "ln", "install", "rsync", "scp"})
_SKIP_FIRST = frozenset({"chmod", "chown", "chgrp"})


def write_targets(part: Part) -> tuple[Target, ...]:
    """Files the part writes that can be seen in its text: redirections and the operands of
    known writing commands. Commands not listed may write too (the sandbox covers those)."""
    targets = list(redirect_targets(part))
    name, words = part.name, list(part.words[1:])
    if part.late_args:
        words.append(Word("(run-time operand)", None))
    operands = _operands(words)
    if name in _WRITES_ALL:
        targets += [_target(w, name in _REMOVES) for w in operands]
    elif name in _WRITES_LAST and operands:
        dest = _option_value(words, ("-t", "--target-directory"))
        targets.append(_target(dest if dest is not None else operands[-1]))
    elif name in _SKIP_FIRST:
        targets += [_target(w) for w in operands[1:]]
    elif name == "sed" and any((w.value or "").startswith(("-i", "--in-place")) for w in words):
        targets += [_target(w) for w in operands[1:]]
    elif name == "dd":
        targets += [_target(Word(w.text, w.value[3:], w.glob)) for w in words if (w.value or "").startswith("of=")]
    elif name in ("curl", "wget", "sort", "tree"):
        out = _option_value(words, ("-o", "--output", "-O", "--output-document"))
        targets += [_target(out)] if out is not None else []
    elif name == "uniq" and len(operands) > 1:
        targets.append(_target(operands[1]))
    return tuple(targets)


def redirect_targets(part: Part) -> list[Target]:
    out = []
    for r in part.redirects:
        if r.op in _WRITE_OPS and r.target is not None:
            if r.op == ">&" and (r.target.value or "").rstrip("-").isdigit() or r.target.value == "-":
                continue
            out.append(_target(r.target))
    return out


def _operands(words: list[Word]) -> list[Word]:
    out, options_done = [], False
    for w in words:
        if w.value == "--" and not options_done:
            options_done = True
        elif options_done or w.value is None or not w.value.startswith("-") or w.value == "-":
            out.append(w)
    return out


def _option_value(words: list[Word], names: tuple[str, ...]) -> Word | None:
    for k, w in enumerate(words):
        v = w.value or ""
        for n in names:
            if v == n and k + 1 < len(words):
                return words[k + 1]
            if v.startswith(n + "=") or (len(n) == 2 and v.startswith(n) and len(v) > 2):
                cut = len(n) + 1 if v.startswith(n + "=") else len(n)
                return Word(w.text, v[cut:], w.glob)
    return None


def _target(word: Word, removes: bool = False) -> Target:
    return Target(word.value, word.glob, removes)


def is_device(path: str) -> bool:
    return path in _DEVICES or path.startswith("/dev/fd/")
