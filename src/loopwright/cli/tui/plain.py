"""The terminal as plain lines: for NO_COLOR, a dumb terminal, or input or output that is not a
terminal. No escape sequence is written; input is one line at a time (readline where Python has
it); an idle `/loop` fires while a line is being waited for. While a turn runs, keys are read one
at a time when input is a terminal: Esc stops the turn, and what else is typed waits in the next
prompt (put there by readline; without readline it is dropped). Ctrl-C stops a turn too."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from typing import Any, Callable, Iterator

from ...core.events import Event
from ...compose.render import Progress, visible
from .idle import Fire
from .watch import KeyWatch

ASK = "  allow? [y]es / [n]o / [a]lways / [t]ell it instead: "


class PlainFront(KeyWatch):
    def __init__(self) -> None:
        self.progress = Progress(sys.stdout)
        self.pending: asyncio.Future[str] | None = None  # a line being read, kept across a loop firing
        self.room: Any = None
        self.draft = ""  # typed while a turn ran
        self.queued: list[str] = []  # lines typed and ended while a turn ran

    def attach(self, room: Any) -> None:
        self.room = room

    def say(self, text: str) -> None:
        print(text, flush=True)

    def show(self, event: Event) -> None:
        self.progress(event)

    def ctrl_c(self) -> None:
        print("\n(Ctrl-D or /exit to leave)", flush=True)

    @contextlib.contextmanager
    def watching(self) -> Iterator[None]:
        """Esc stops the turn. Not while a line read is still pending from before a loop fired
        (it holds the terminal): then Ctrl-C does."""
        if sys.stdin.isatty() and self.pending is None:
            self._watch()
        try:
            yield
        finally:
            self._unwatch()

    def key(self, key: str) -> None:
        if key == "esc":
            self.room.interrupt()
        else:
            self.type_ahead(key)

    def close(self) -> None:
        pass

    async def _line(self, prompt: str) -> str:
        with self._paused():
            if self.pending is None:
                self.pending = asyncio.ensure_future(asyncio.to_thread(_input, prompt, self.draft))
                self.draft = ""
            try:
                return await asyncio.shield(self.pending)
            finally:
                if self.pending.done():
                    self.pending = None

    async def read(self, due_in: Callable[[], float | None]) -> str | Fire | None:
        if (queued := self.queued_line()) is not None:
            return queued
        while True:
            wait = due_in()
            if wait is not None and wait <= 0:
                return Fire("")
            line = asyncio.ensure_future(self._line("› "))
            done, _ = await asyncio.wait([line], timeout=wait)
            if line in done:
                try:
                    return line.result()
                except EOFError:
                    print(flush=True)
                    return None
            line.cancel()  # the read itself goes on (self.pending); the loop fires first
            print(flush=True)

    async def pick(self, title: str, choices: list[str]) -> int | None:
        print(title, flush=True)
        for n, choice in enumerate(choices, 1):
            print(visible(f"  {n}. {choice}"), flush=True)
        try:
            answer = (await self._line("number (Enter: none): ")).strip()
        except EOFError:
            return None
        return int(answer) - 1 if answer.isdigit() and 1 <= int(answer) <= len(choices) else None

    async def choose(self, lines: list[str], rule: str) -> tuple[str, str]:
        print(visible("\n? " + "\n".join(lines) + f"\n  (always: allow {rule} for this session)"), flush=True)
        answer = (await self._line(ASK)).strip().lower()
        key = {"yes": "y", "no": "n", "always": "a", "tell": "t"}.get(answer, answer[:1])
        if key == "t":
            return "t", await self._line("  tell the model: ")
        return (key if key in ("y", "a", "t") else "n"), ""


def _input(prompt: str, draft: str) -> str:
    """A line, with `draft` already typed into it where readline can put it there."""
    if not draft:
        return input(prompt)
    try:
        import readline
    except ImportError:
        return input(prompt)

    def typed() -> None:
        readline.insert_text(draft)
        readline.redisplay()

    readline.set_pre_input_hook(typed)
    try:
        return input(prompt)
    finally:
        readline.set_pre_input_hook()
