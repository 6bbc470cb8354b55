"""Regular expressions that come from outside (a model's Grep pattern, an output schema's
`pattern`) compiled for RE2, a linear-time engine: no pattern can make a match take longer than
reading its text, and none holds the GIL while it runs. What RE2 cannot run (backreferences,
look-around, atomic groups, possessive quantifiers) is named in plain words. No I/O."""

from __future__ import annotations

import re
import warnings
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import re2

# Memory for one compiled program: enough for any hand-written pattern; a pattern that needs more
# (e.g. nested counted repetitions) fails to compile instead of taking the machine's memory.
MAX_PROGRAM_BYTES = 32 << 20

# (what RE2 says, what the pattern used) for the Python/PCRE syntax RE2 leaves out.
_UNSUPPORTED = (
    ("(?=", "look-ahead `(?=...)`"),
    ("(?!", "negative look-ahead `(?!...)`"),
    ("(?<=", "look-behind `(?<=...)`"),
    ("(?<!", "negative look-behind `(?<!...)`"),
    ("(?>", "an atomic group `(?>...)`"),
    ("(?P=", "a named backreference `(?P=name)`"),
    ("(?(", "a conditional group `(?(...)...)`"),
    ("(?#", "a comment group `(?#...)`"),
)


class PatternError(ValueError):
    """A pattern that cannot be compiled. `unsupported` is True when it is a valid Python
    regular expression that needs a backtracking engine (RE2 cannot run it)."""

    def __init__(self, message: str, unsupported: bool = False) -> None:
        super().__init__(message)
        self.unsupported = unsupported


@lru_cache(maxsize=64)
def compile_re2(pattern: str, *, ignore_case: bool = False, multiline: bool = False, dot_all: bool = False,
                line_bounded: bool = False) -> "re2._Regexp":
    """The pattern for RE2. `multiline`: `^`/`$` match at line ends; `dot_all`: `.` matches a
    newline; `line_bounded`: no match ever spans a newline (grep's line-by-line search over a
    whole buffer). Raises `PatternError`."""
    import re2  # ~20 ms: only the tools and schemas that match text load it

    options = re2.Options()
    options.log_errors = False  # RE2 would print every refused pattern to stderr
    options.max_mem = MAX_PROGRAM_BYTES
    options.case_sensitive = not ignore_case
    options.dot_nl = dot_all
    options.never_nl = line_bounded
    prefix = "(?m)" if multiline else ""
    try:
        return re2.compile(prefix + pattern, options)
    except UnicodeEncodeError:
        raise PatternError("not a regular expression (it holds a lone surrogate, which no text can match)") from None
    except re2.error as exc:
        raise _explain(pattern, _text(exc).replace(prefix + pattern, pattern)) from None


def search(regex: Any, text: str) -> bool:
    """Whether `regex` (from `compile_re2`) matches anywhere in `text`. Lone surrogates (which
    UTF-8 cannot hold) are passed as their raw bytes, never an encoding error."""
    return regex.search(text.encode("utf-8", "surrogatepass")) is not None


def _text(exc: BaseException) -> str:
    message = exc.args[0] if exc.args else str(exc)
    return message.decode("utf-8", "replace") if isinstance(message, bytes) else str(message)


def _explain(pattern: str, engine_says: str) -> PatternError:
    """Why RE2 refused the pattern, in words: unsupported syntax of a pattern Python's `re`
    would take, or plainly not a valid pattern."""
    try:
        with warnings.catch_warnings():  # e.g. "possible nested set": noise for a pattern we only classify
            warnings.simplefilter("ignore")
            re.compile(pattern)
    except (re.error, OverflowError, RecursionError):
        return PatternError(f"not a regular expression ({engine_says})")
    except Exception as exc:  # e.g. a pattern too large for the re module to compile  # noqa: BLE001
        return PatternError(f"not a regular expression ({type(exc).__name__}: {exc})")
    used = next((what for mark, what in _UNSUPPORTED if mark in pattern), None)
    if used is None and re.search(r"\\[1-9]", pattern):
        used = "a backreference such as `\\1`"
    elif used is None and re.search(r"[*+?}]\+", pattern):
        used = "a possessive quantifier such as `a++`"
    elif used is None and "\\Z" in pattern:
        used = "`\\Z` (write `\\z` for the end of the text)"
    elif used is None and "repetition size" in engine_says:
        used = "a repetition count over 1000"
    elif used is None:
        used = f"syntax the linear-time engine does not support ({engine_says})"
    return PatternError(used, unsupported=True)
