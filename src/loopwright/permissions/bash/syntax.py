"""A reader of bash syntax for permission checks: every simple command a command line would run,
including those inside substitutions, subshells and here-documents. Two levels: the words
(quoting, escapes, parameter and arithmetic expansions, the command substitutions inside words)
and the grammar that reads commands, pipelines, lists and redirections from them. Pure; unclear
input fails."""

from __future__ import annotations

import re
from typing import Any, Callable

from ...core.fastclass import dataclass

__all__ = ["BREAK", "Redirect", "ShellSyntaxError", "Simple", "Word", "WordScanner", "parse"]

# ---------------------------------------------------------------- words

BREAK = frozenset(" \t\n;&|()<>")
_SIMPLE_PARAM = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]|[@*#?$!-]")
_PARAM = re.compile(r"#?(?:[A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!-])")
_ARITH = re.compile(r"[0-9\s+\-*/%()<>=!&|^~?:,]*")


class ShellSyntaxError(ValueError):
    """The command line cannot be analysed with certainty; callers must ask before running it."""


@dataclass(frozen=True, slots=True)
class Word:
    text: str  # as written, quotes kept
    value: str | None  # after quote removal; None when an expansion decides it only at run time
    glob: bool = False  # unquoted * ? [ : the shell may turn it into other names


class WordScanner:
    """Reads words at `self.i` in `self.s`. The grammar subclass supplies `nested` (read a
    command list in place, up to a closer) and `script_reader` (a reader for backquoted text)."""

    s: str
    i: int

    def nested(self, body: Callable[[Any], None]) -> None:
        raise NotImplementedError

    def script_reader(self, text: str) -> Any:
        raise NotImplementedError

    def fail(self, why: str) -> ShellSyntaxError:
        return ShellSyntaxError(f"{why} (at offset {self.i})")

    def peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.s[j] if j < len(self.s) else ""

    def blanks(self) -> None:
        while True:
            c = self.peek()
            if c in (" ", "\t"):
                self.i += 1
            elif c == "\\" and self.peek(1) == "\n":
                self.i += 2
            else:
                return

    def skip_comment(self) -> None:
        end = self.s.find("\n", self.i)
        self.i = len(self.s) if end < 0 else end

    def word(self) -> Word:
        start = self.i
        value: list[str] | None = []
        glob = False

        def add(text: str | None) -> None:
            nonlocal value
            if value is not None and text is not None:
                value.append(text)
            else:
                value = None

        if self.peek() in "<>" and self.peek(1) == "(":  # process substitution <(...) >(...)
            self.i += 2
            self.nested(lambda r: r.command_list(")"))
            add(None)
        while self.i < len(self.s):
            c = self.peek()
            if c in BREAK:
                break
            if c == "\\":
                nxt = self.peek(1)
                self.i += 2
                if nxt != "\n":
                    add(nxt or "\\")
            elif c == "'":
                end = self.s.find("'", self.i + 1)
                if end < 0:
                    raise self.fail("unterminated single quote")
                add(self.s[self.i + 1:end])
                self.i = end + 1
            elif c == '"':
                add(self.double_quoted())
            elif c == "$":
                add(self.dollar(quoted=False))
            elif c == "`":
                self.backtick()
                add(None)
            elif c == "{" and _brace_expansion(self.s, self.i):
                glob = True
                add(None)
                self.i += 1
            else:
                if c in "*?[":
                    glob = True
                elif c == "~" and self.i == start and not re.match(r"~(/|$|[\s;&|)<>])", self.s[self.i:]):
                    add(None)  # ~user: another user's home, known only at run time
                add(c)
                self.i += 1
        if self.i == start:
            raise self.fail(f"unexpected '{self.peek()}'")
        return Word(self.s[start:self.i], None if value is None else "".join(value), glob)

    def double_quoted(self) -> str | None:
        self.i += 1
        parts: list[str] = []
        known = True
        while True:
            c = self.peek()
            if c == "":
                raise self.fail("unterminated double quote")
            if c == '"':
                self.i += 1
                return "".join(parts) if known else None
            if c == "\\":
                nxt = self.peek(1)
                self.i += 2
                if nxt in ('"', "\\", "$", "`"):
                    parts.append(nxt)
                elif nxt != "\n":
                    parts.append("\\" + nxt)
            elif c == "$":
                got = self.dollar(quoted=True)
                known = known and got is not None
                parts.append(got or "")
            elif c == "`":
                self.backtick()
                known = False
            else:
                parts.append(c)
                self.i += 1

    def dollar(self, quoted: bool) -> str | None:
        """An expansion at `$`: substitutions are read as commands; the value is None unless the
        `$` is literal. Anything that can evaluate code other than a substitution fails."""
        s, i = self.s, self.i
        if s.startswith("$((", i):
            end = s.find("))", i + 3)
            if end < 0 or not _ARITH.fullmatch(s[i + 3:end]):
                raise self.fail("arithmetic expansion with names or commands is not analysed")
            self.i = end + 2
            return None
        if s.startswith("$(", i):
            self.i += 2
            self.nested(lambda r: r.command_list(")"))
            return None
        if s.startswith("${", i):
            end = s.find("}", i + 2)
            if end < 0 or not _PARAM.fullmatch(s[i + 2:end]):
                raise self.fail("only plain ${NAME} parameter expansions are analysed")
            self.i = end + 1
            return None
        if s.startswith("$[", i):
            raise self.fail("$[...] arithmetic is not analysed")
        if not quoted and s.startswith("$'", i):
            end = i + 2
            while end < len(s) and s[end] != "'":
                end += 2 if s[end] == "\\" else 1
            if end >= len(s):
                raise self.fail("unterminated $'...' quote")
            body = s[i + 2:end]
            self.i = end + 1
            return None if "\\" in body else body
        if not quoted and s.startswith('$"', i):
            self.i += 1
            return self.double_quoted()
        m = _SIMPLE_PARAM.match(s, i + 1)
        if m:
            self.i = m.end()
            return None
        self.i += 1
        return "$"

    def backtick(self) -> None:
        j, body = self.i + 1, []
        while True:
            if j >= len(self.s):
                raise self.fail("unterminated backquote")
            c = self.s[j]
            if c == "`":
                break
            if c == "\\" and j + 1 < len(self.s) and self.s[j + 1] in "`\\$":
                body.append(self.s[j + 1])
                j += 2
                continue
            body.append(c)
            j += 1
        self.i = j + 1
        self.script_reader("".join(body)).script()


def _brace_expansion(s: str, i: int) -> bool:
    """`{a,b}` or `{1..3}` (expanded by bash to several words); `{` alone is literal."""
    depth = 0
    for j in range(i, len(s)):
        c = s[j]
        if c in BREAK or c in "'\"$`":
            return False
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                inner = s[i + 1:j]
                return "," in inner or ".." in inner
    return False


# ---------------------------------------------------------------- grammar

MAX_DEPTH = 40
_REDIRECT = re.compile(r"(\d*)(&>>|&>|>>|>&|>\||<<<|<<-|<<|<>|<&|>|<)")
_ASSIGN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")
# Reserved words that only group or sequence commands; the commands around them still run.
_GROUPING = frozenset({"if", "then", "elif", "else", "fi", "do", "done", "while", "until", "{", "}", "!"})
_UNSUPPORTED = frozenset({"case", "esac", "select", "coproc", "function", "[[", "]]", "in"})


@dataclass(frozen=True, slots=True)
class Redirect:
    op: str
    target: Word | None  # None for here-documents
    fd: str = ""


@dataclass(frozen=True, slots=True)
class Simple:
    """One simple command: leading assignments, its words, its redirections."""

    assignments: tuple[Word, ...]
    words: tuple[Word, ...]
    redirects: tuple[Redirect, ...]


def parse(command: str) -> tuple[Simple, ...]:
    """Every simple command in `command`, in the order the reader meets them (a substitution's
    commands come before the command whose word holds it). Raises `ShellSyntaxError`."""
    out: list[Simple] = []
    _Reader(command, out, 0).script()
    return tuple(out)


class _Reader(WordScanner):
    def __init__(self, src: str, out: list[Simple], depth: int) -> None:
        if depth > MAX_DEPTH:
            raise ShellSyntaxError("nested too deeply")
        self.s, self.i, self.out, self.depth = src, 0, out, depth
        self.heredocs: list[tuple[str, bool, bool]] = []  # (delimiter, strip tabs, quoted)

    def script_reader(self, text: str) -> _Reader:
        """A reader for backquoted text: a script of its own, same output."""
        return _Reader(text, self.out, self.depth + 1)

    # ------------------------------------------------------------ lists and commands

    def script(self) -> None:
        self.command_list(None)
        if self.heredocs:
            raise self.fail("here-document without a body")

    def command_list(self, closer: str | None) -> None:
        """Commands joined by ; & && || | |& and newlines, up to `closer` (consumed) or the end."""
        expect_command = False
        while True:
            self.blanks()
            c = self.peek()
            if c == "\n":
                self.i += 1
                self.read_heredocs()
                continue
            if c == "" or (closer is not None and c == closer):
                if c == "" and closer is not None:
                    raise self.fail(f"missing '{closer}'")
                if expect_command:
                    raise self.fail("an operator without a command after it")
                self.i += len(c)
                return
            if c == "#":
                self.skip_comment()
                continue
            if c in ";&|)":
                raise self.fail(f"unexpected '{c}'")
            self.command()
            expect_command = self.separator()

    def separator(self) -> bool:
        """Consume the operator after a command; True when another command must follow."""
        self.blanks()
        if self.s.startswith(";;", self.i):
            raise self.fail("';;' outside a case statement")
        for op in ("&&", "||", "|&", "|"):
            if self.s.startswith(op, self.i):
                self.i += len(op)
                return True
        if self.peek() in (";", "&"):
            self.i += 1
        return False

    def command(self) -> None:
        if self.peek() == "(":
            if self.peek(1) == "(":
                raise self.fail("arithmetic commands '((' are not analysed")
            self.i += 1
            self.nested(lambda r: r.command_list(")"))
            self.trailing_redirects()
            return
        self.simple()

    def nested(self, body: Callable[[_Reader], None]) -> None:
        """Read a nested list in place: subshells and substitutions share the source text."""
        if self.depth + 1 > MAX_DEPTH:
            raise self.fail("nested too deeply")
        self.depth += 1
        try:
            body(self)
        finally:
            self.depth -= 1

    def trailing_redirects(self) -> None:
        redirects: list[Redirect] = []
        while True:
            self.blanks()
            r = self.redirect()
            if r is None:
                break
            redirects.append(r)
        if self.peek() not in ("", "\n", ";", "&", "|", ")"):
            raise self.fail("words after a subshell")
        if redirects:
            self.out.append(Simple((), (), tuple(redirects)))

    def simple(self) -> None:
        assignments: list[Word] = []
        words: list[Word] = []
        redirects: list[Redirect] = []
        while True:
            self.blanks()
            r = self.redirect()  # before the operators: `&>` is a redirection, `&` is not
            if r is not None:
                redirects.append(r)
                continue
            c = self.peek()
            if c == "" or c in "\n;&|)":
                break
            if c == "#":  # a word that starts with # starts a comment
                self.skip_comment()
                break
            if c == "(":
                raise self.fail("'(' inside a command (function definitions are not analysed)")
            word = self.word()
            if not words and not assignments and word.text in _GROUPING:
                continue  # `if`, `then`, `{` ...: the next word starts the command
            if not words and word.text in _UNSUPPORTED:
                raise self.fail(f"'{word.text}' constructs are not analysed")
            if not words and word.text == "for":
                self.for_header()
                return
            if not words and _ASSIGN.match(word.text):
                assignments.append(word)
                continue
            if not words and "[" in word.text.split("=", 1)[0] and "=" in word.text:
                raise self.fail("array assignments are not analysed")
            words.append(word)
        if words or assignments or redirects:
            self.out.append(Simple(tuple(assignments), tuple(words), tuple(redirects)))

    def for_header(self) -> None:
        """`for NAME in WORDS;` runs nothing itself; its words may hold substitutions."""
        self.blanks()
        name = self.word()
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name.text):
            raise self.fail("only `for NAME in WORDS` loops are analysed")
        self.blanks()
        if self.peek() not in ("", "\n", ";"):
            if self.word().text != "in":
                raise self.fail("only `for NAME in WORDS` loops are analysed")
            while True:
                self.blanks()
                if self.peek() in ("", "\n", ";"):
                    break
                if self.peek() in "&|()<>":
                    raise self.fail("unexpected operator in a for loop")
                self.word()

    # ------------------------------------------------------------ redirections, here-documents

    def redirect(self) -> Redirect | None:
        if self.peek() in "<>" and self.peek(1) == "(":
            return None  # process substitution: a word
        m = _REDIRECT.match(self.s, self.i)
        if m is None:
            return None
        fd, op = m.group(1), m.group(2)
        self.i = m.end()
        self.blanks()
        substitution = self.peek() in "<>" and self.peek(1) == "("  # `> >(cmd)`: a word
        if self.peek() == "" or self.peek() in "\n;&|()<>" and not substitution:
            raise self.fail(f"'{op}' without a target")
        target = self.word()
        if op in ("<<", "<<-"):
            quoted = any(q in target.text for q in "'\"\\")  # then the body is taken literally
            if target.value is None and not quoted:
                raise self.fail("here-document delimiter with an expansion")
            self.heredocs.append((_unquote(target.text), op == "<<-", quoted))
            return Redirect(op, None, fd)
        return Redirect(op, target, fd)

    def read_heredocs(self) -> None:
        pending, self.heredocs = self.heredocs, []
        for delimiter, strip_tabs, quoted in pending:
            lines: list[str] = []
            while True:
                if self.i >= len(self.s):
                    raise self.fail(f"here-document not closed by '{delimiter}'")
                end = self.s.find("\n", self.i)
                end = len(self.s) if end < 0 else end
                line = self.s[self.i:end]
                self.i = min(end + 1, len(self.s))
                if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                    break
                lines.append(line)
            if not quoted:  # an unquoted body is expanded: its substitutions run
                body = _Reader("\n".join(lines), self.out, self.depth + 1)
                body.expand_all()

    def expand_all(self) -> None:
        while self.i < len(self.s):
            c = self.peek()
            if c == "\\":
                self.i += 2
            elif c == "$":
                self.dollar(quoted=True)
            elif c == "`":
                self.backtick()
            else:
                self.i += 1


def _unquote(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            out.append(text[i + 1])
            i += 2
        elif c in "'\"":
            i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)
