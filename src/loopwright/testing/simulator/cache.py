"""The API's prompt cache, simulated, so a client's cache marks can be judged by their effect.

A request's prompt is a sequence of parts in the API's cache order: each tool, each system block,
each message block. A part carrying `cache_control` is a breakpoint: the prefix that ends there is
written to the cache (when it is long enough to be cached). A later request reads the longest
prefix it shares with a written one, looked for at each of its breakpoints and up to 20 parts
before it, as the API does. The counts follow the API: `cache_read_input_tokens` for the prefix
read, `cache_creation_input_tokens` for what was written beyond it, `input_tokens` for the rest.
Tokens are the simulator's usual estimate (about 4 characters each). An entry lives for its
time to live (5 minutes, or 1 hour when the mark says so) from its last use.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable
from typing import Any

__all__ = ["LOOKBACK", "MIN_TOKENS", "PromptCache"]

LOOKBACK = 20  # parts before a breakpoint searched for an earlier entry
MIN_TOKENS = 1024  # the shortest prefix that is cached (the API's minimum for most models)
_TTL = {"5m": 300.0, "1h": 3600.0}


def _parts(body: dict[str, Any]) -> list[tuple[str, dict[str, Any] | None]]:
    """(canonical text without the mark, the mark or None) for each part, in cache order."""
    out: list[tuple[str, dict[str, Any] | None]] = []

    def add(part: Any, scope: str) -> None:
        mark = part.get("cache_control") if isinstance(part, dict) else None
        bare = {k: v for k, v in part.items() if k != "cache_control"} if isinstance(part, dict) else part
        out.append((scope + json.dumps(bare, sort_keys=True, separators=(",", ":")), mark))

    for tool in body.get("tools") or []:
        add(tool, "tool:")
    system = body.get("system")
    for block in ([{"type": "text", "text": system}] if isinstance(system, str) and system else system or []):
        add(block, "system:")
    for message in body.get("messages") or []:
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        for block in blocks:
            add(block, f"{message.get('role')}:")
    return out


class PromptCache:
    """One simulator's cache: `account(body)` returns the request's three input counts and
    records what the request writes. Thread-safe; `clock` is injectable for tests."""

    def __init__(self, *, min_tokens: int = MIN_TOKENS, clock: Callable[[], float] = time.monotonic) -> None:
        self.min_tokens = min_tokens
        self._clock = clock
        self._entries: dict[str, float] = {}  # prefix digest -> expiry
        self._lock = threading.Lock()

    def account(self, body: dict[str, Any]) -> dict[str, int]:
        parts = _parts(body)
        digests, ends = [], []  # the prefix digest and token count after each part
        running, chars = hashlib.sha256(), 0
        for text, _ in parts:
            running.update(text.encode())
            digests.append(running.hexdigest())
            chars += len(text)
            ends.append(chars // 4)
        total = max(1, chars // 4)
        marks = [i for i, (_, mark) in enumerate(parts) if mark is not None]
        now = self._clock()
        with self._lock:
            read_end = self._longest_hit(marks, digests, now)
            read = ends[read_end] if read_end is not None else 0
            written = 0
            for i in marks:
                if ends[i] < self.min_tokens:
                    continue
                ttl = _TTL.get(str((parts[i][1] or {}).get("ttl", "5m")), _TTL["5m"])
                self._entries[digests[i]] = now + ttl
                if read_end is None or i > read_end:
                    written = max(written, ends[i] - read)
        return {"input_tokens": max(0, total - read - written), "cache_read_input_tokens": read,
                "cache_creation_input_tokens": written}

    def _longest_hit(self, marks: list[int], digests: list[str], now: float) -> int | None:
        best: int | None = None
        for mark in marks:
            for i in range(mark, max(-1, mark - LOOKBACK - 1), -1):
                expiry = self._entries.get(digests[i])
                if expiry is not None and expiry > now:
                    if best is None or i > best:
                        best = i
                    break
        if best is not None:  # a hit refreshes the entry's time to live
            self._entries[digests[best]] = max(self._entries[digests[best]], now + _TTL["5m"])
        return best
