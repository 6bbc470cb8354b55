"""The word level of the shell reader: quoting, escapes, parameter and arithmetic expansions,
and the command substitutions inside words, whose commands the grammar level reads. Pure."""

from __future__ import annotations

import re
from typing import Any, Callable

from ..core.fastclass import dataclass

__all__ = ["BREAK", "ShellSyntaxError", "Word", "WordScanner"]

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
