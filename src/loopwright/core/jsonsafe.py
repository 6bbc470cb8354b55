"""Untrusted JSON in, valid UTF-8 text out: `loads` decodes JSON from outside (the model's tool
inputs, API bodies, stream-json lines, hook output, settings, transcripts) with a bound on how
deeply it nests, and `valid_text` makes text with lone surrogates (an undecodable file name, a
`\\ud800` escape) safe to send and record. Pure."""

from __future__ import annotations

import json
import re
from itertools import accumulate
from typing import Any

# Deep enough for any real document; shallow enough that everything downstream that walks a value
# recursively (json.dumps, repr, the schema validator, pydantic) stays far from Python's recursion
# limit of 1,000 frames.
MAX_DEPTH = 512

_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}
_TOKENS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?|[\[\]{}]')
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


class JSONDepthError(json.JSONDecodeError):
    """JSON nested deeper than the bound. A `JSONDecodeError` (so a `ValueError`): every caller
    that handles bad JSON already handles it, with the position where the bound was passed."""


def loads(text: str | bytes | bytearray, max_depth: int = MAX_DEPTH) -> Any:
    """`json.loads`, refusing values nested more than `max_depth` arrays/objects deep with a
    `JSONDepthError` instead of a `RecursionError` (or a value that breaks whoever walks it next)."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise _too_deep(text, max_depth) from None
    # a text no longer than the bound cannot nest deeper than it (every level takes a character)
    if isinstance(value, (dict, list)) and len(text) > max_depth and text_depth(text, max_depth) > max_depth:
        raise _too_deep(text, max_depth)
    return value


def text_depth(text: str | bytes | bytearray, at_most: int = 0) -> int:
    """How deeply the arrays/objects of a valid JSON text nest, read from its brackets at C speed
    (strings taken out first). 0 at once when there are no more than `at_most` brackets at all."""
    doc = text if isinstance(text, str) else bytes(text).decode("utf-8", "replace")
    if doc.count("[") + doc.count("{") <= at_most:
        return 0
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", doc))
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0)


def _too_deep(text: str | bytes | bytearray, max_depth: int) -> JSONDepthError:
    doc = text if isinstance(text, str) else bytes(text).decode("utf-8", "replace")
    level, pos = 0, 0
    for token in _TOKENS.finditer(doc):  # strings are skipped whole: their brackets do not count
        mark = token.group()
        if mark in ("[", "{"):
            level += 1
            if level > max_depth:
                pos = token.start()
                break
        elif mark in ("]", "}"):
            level -= 1
    return JSONDepthError(f"nested more than {max_depth} arrays/objects deep", doc, pos)


def valid_text(text: str) -> str:
    """`text` with every lone surrogate made visible, so it encodes as UTF-8: a byte that file
    names or output carried undecoded (Python's `surrogateescape`, U+DC80..U+DCFF) as `\\xNN`,
    any other as `\\uNNNN`. Text without them comes back as it is."""
    if not _LONE_SURROGATE.search(text):
        return text
    return _LONE_SURROGATE.sub(_escape, text)


def _escape(found: re.Match[str]) -> str:
    code = ord(found.group())
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"
