"""Grep's worker process for the patterns RE2 cannot run (backreferences, look-around): Python's
backtracking `re`, in a process of its own, so a catastrophic pattern costs only the worker, which
Grep kills at its deadline or when the run stops. Also the line rules both engines share.

Run as `python -I -S grepworker.py`; it imports nothing but the standard library. Protocol, one
request at a time: the first stdin line is `{"pattern", "ignore_case", "multiline"}` as JSON; then
each file comes as a line with its size in bytes followed by that many bytes of UTF-8 text, and the
answer is one stdout line: the JSON list of the 0-based indexes of the matching lines."""

from __future__ import annotations

import bisect
import json
import re
import sys
from typing import Any


def split_lines(text: str) -> list[str]:
    """A file's lines as Grep shows them: split at `\\n`, a final newline ends the last line
    (it does not start a new one), and a `\\r` before the newline is not part of the line."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def python_flags(ignore_case: bool, multiline: bool) -> int:
    return (re.IGNORECASE if ignore_case else 0) | (re.MULTILINE | re.DOTALL if multiline else 0)


def matching_lines(regex: re.Pattern[str], text: str, lines: list[str], multiline: bool) -> list[int]:
    """Indexes of the lines a match touches: each line on its own, or (multiline) every line a
    match over the whole text spans."""
    if not multiline:
        return [i for i, line in enumerate(lines) if regex.search(line)]
    starts = [0] + [m.end() for m in re.finditer("\n", text)]
    matched: set[int] = set()
    for m in regex.finditer(text):
        first = bisect.bisect_right(starts, m.start()) - 1
        last = bisect.bisect_right(starts, max(m.end() - 1, m.start())) - 1
        matched.update(range(first, min(last, len(lines) - 1) + 1))
    return sorted(matched)


def serve(stdin: Any, stdout: Any) -> None:
    spec = json.loads(stdin.readline())
    regex = re.compile(spec["pattern"], python_flags(bool(spec.get("ignore_case")), bool(spec.get("multiline"))))
    while header := stdin.readline():
        text = stdin.read(int(header)).decode("utf-8", "replace")
        found = matching_lines(regex, text, split_lines(text), bool(spec.get("multiline")))
        stdout.write(json.dumps(found).encode() + b"\n")
        stdout.flush()


if __name__ == "__main__":
    serve(sys.stdin.buffer, sys.stdout.buffer)
