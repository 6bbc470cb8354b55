"""Keys read one at a time while a turn runs, for both front ends: the terminal is put in cbreak
mode (no echo, no line editing; Ctrl-C stays a signal) and each key goes to the front end's
`key` (Esc stops the turn; the rest is typed ahead into the next prompt, and a line ended with
Enter waits, whole, to be the next prompt). Between turns, and while the front end reads a whole
line (a permission ask), the terminal is as it was."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from typing import Any, Iterator


class KeyWatch:
    tty: Any = None  # the terminal's settings while keys are watched
    draft: str  # typed while a turn ran, not yet ended with Enter
    queued: list[str]  # lines typed and ended with Enter while a turn ran: the next prompts

    def key(self, key: str) -> None:
        raise NotImplementedError

    def say(self, text: str) -> None:
        raise NotImplementedError

    def type_ahead(self, key: str) -> None:
        """A key typed while a turn runs: into the draft; Enter queues the draft as a prompt
        of its own, sent when the turn ends (nothing typed is lost)."""
        if key in ("\r", "\n"):
            if self.draft.strip():
                self.queued.append(self.draft)
                self.say(f"(queued for when this turn ends: {self.draft.strip()[:60]})")
            self.draft = ""
        elif key in ("\x7f", "\b"):
            self.draft = self.draft[:-1]
        elif key.isprintable():
            self.draft += key

    def queued_line(self) -> str | None:
        """The next prompt typed and ended while a turn ran, echoed as if typed now; else None."""
        if not self.queued:
            return None
        line = self.queued.pop(0)
        self.say(f"› {line}")
        return line

    def _watch(self) -> None:
        import termios
        import tty

        fd = sys.stdin.fileno()
        self.tty = termios.tcgetattr(fd)
        tty.setcbreak(fd)
        asyncio.get_running_loop().add_reader(fd, self._keys)

    def _unwatch(self) -> None:
        import termios

        if self.tty is not None:
            fd = sys.stdin.fileno()
            asyncio.get_running_loop().remove_reader(fd)
            termios.tcsetattr(fd, termios.TCSADRAIN, self.tty)
            self.tty = None

    @contextlib.contextmanager
    def _paused(self) -> Iterator[None]:
        watched = self.tty is not None
        if watched:
            self._unwatch()
        try:
            yield
        finally:
            if watched:
                self._watch()

    def _keys(self) -> None:
        try:
            data = os.read(sys.stdin.fileno(), 64).decode("utf-8", "replace")
        except OSError:
            return
        for key in keys(data):
            self.key(key)


def keys(data: str) -> list[str]:
    """The keys in what one read of the terminal gave: characters, and "esc" for Esc on its own;
    an escape sequence (an arrow, a function key) is no key here and is left out."""
    out, i = [], 0
    while i < len(data):
        if data[i] == "\x1b" and i + 1 < len(data) and data[i + 1] in "[O":
            i += 2
            while i < len(data) and not "@" <= data[i] <= "~":
                i += 1
            i += 1
            continue
        out.append("esc" if data[i] == "\x1b" else data[i])
        i += 1
    return out
