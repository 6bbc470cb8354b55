"""The names MCP tools go by on the wire. The Messages API takes a tool name of 1-64 characters
of `[A-Za-z0-9_-]`; a server's names may hold anything. `mcp__<server>__<tool>` is cleaned to
that alphabet; when two tools clean up to the same name, or a name is too long, each such tool
gets a suffix made from a hash of its original server and tool name: stable from run to run,
different for every tool, and no tool of a colliding pair keeps the plain name (a server's
listing order never decides which of two tools a call reaches). Pure."""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable

from .config import tool_name

__all__ = ["MAX_NAME", "wire_names"]

MAX_NAME = 64
_SUFFIX_HEX = 8


def wire_names(tools: Iterable[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """{(server, tool): the name the model sees} for every tool that can be named uniquely. A
    tool left out is one whose suffixed name still collides (a hash collision made on purpose):
    no name is better than one that could reach the wrong tool."""
    pairs = list(dict.fromkeys(tools))
    plain = {pair: tool_name(*pair) for pair in pairs}
    counts = Counter(plain.values())
    named: dict[tuple[str, str], str] = {}
    for pair, name in plain.items():
        if counts[name] > 1 or len(name) > MAX_NAME:
            name = _suffixed(name, pair)
        named[pair] = name
    taken = Counter(named.values())
    return {pair: name for pair, name in named.items() if taken[name] == 1}


def _suffixed(name: str, pair: tuple[str, str]) -> str:
    digest = hashlib.sha256(f"{pair[0]}\0{pair[1]}".encode("utf-8", "surrogatepass")).hexdigest()[:_SUFFIX_HEX]
    return name[: MAX_NAME - _SUFFIX_HEX - 1] + "_" + digest


