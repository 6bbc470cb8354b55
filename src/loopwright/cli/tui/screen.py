"""The terminal drawn with rich, read with prompt_toolkit: assistant text as Markdown while it
streams, thinking dimmed, one line a tool call with its result collapsed (Ctrl-O shows the last
one whole), edits as a small diff, inline permission choices, and keys read during a turn (Esc
stops it; what else is typed waits in the next prompt). While a turn runs, the bottom of the
screen is one live region: the paragraph being written, a spinner with the elapsed time, the
tokens received and "esc to interrupt", and the status line. NO_COLOR drops only the colours."""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from typing import Any, Callable, Iterator

from rich.console import Console
from rich.text import Text

from ...core.events import AssistantMessage, Event, PartialEvent, SystemInit, ToolFinished, ToolStarted
from ...core.types import BlockDelta, BlockStart, BlockStop
from ...compose.render import Progress, _gist, _short, visible
from .idle import Fire
from .watch import KeyWatch

REFRESH_S = 0.05  # the streaming Markdown is redrawn at most this often
EXPAND_LINES = 200
THINKING_LINES = 6  # thinking is shown dimmed, cut to its first lines
WORDS = {"y": "yes", "n": "no", "a": "always", "t": "tell the model instead"}


class Working:
    """The spinner line of a running turn, rendered afresh at each refresh of the live region."""

    def __init__(self) -> None:
        from rich.spinner import Spinner

        self.started, self.tokens, self.partial_chars = time.monotonic(), 0, 0
        self.spinner = Spinner("dots", style="cyan")

    def __rich__(self) -> Any:
        elapsed = int(time.monotonic() - self.started)
        clock = f"{elapsed // 60}m {elapsed % 60:02d}s" if elapsed >= 60 else f"{elapsed}s"
        tokens = self.tokens + self.partial_chars // 4  # an estimate until the message's usage arrives
        count = f"{tokens / 1000:.1f}k" if tokens >= 1000 else str(tokens)
        self.spinner.update(text=Text.assemble(("Working… ", "bold"), (f"{clock} · ↓ {count} tokens · ", "dim"),
                                               ("esc", "bold"), (" to interrupt", "dim")))
        return self.spinner


class RichFront(KeyWatch):
    def __init__(self) -> None:
        self.console = Console(highlight=False)  # rich drops colours itself when NO_COLOR is set
        self.progress = Progress(sys.stdout)
        self.room: Any = None
        self.session: Any = None
        self.live: Any = None  # the live region while a turn runs
        self.working: Working | None = None
        self.paragraph: Any = None  # the Markdown of the paragraph being written, shown live
        self.block, self.text, self.drawn, self.streamed = "", "", 0.0, False
        self.asking: asyncio.Future[str] | None = None
        self.draft, self.last_ctrl_c, self.last_output = "", 0.0, ""
        self.queued: list[str] = []

    def attach(self, room: Any) -> None:
        from .keys import prompt_session

        self.room, self.session = room, prompt_session(room, self)

    # ------------------------------------------------------------------ output

    def say(self, text: str) -> None:
        self._end_live()
        self.console.print(text, markup=False, highlight=False)

    def show(self, event: Event) -> None:
        if isinstance(event, PartialEvent):
            self._partial(event.event)
        elif isinstance(event, AssistantMessage):
            self.progress.turn = event.turn  # goal lines name the turn they judged
            if not self.streamed and event.message.text.strip():
                self._markdown(event.message.text)
            self.streamed = False
            if self.working is not None:
                self.working.tokens += event.usage.output_tokens
                self.working.partial_chars = 0
        elif isinstance(event, ToolStarted):
            self._end_live()
            self.console.print(Text("⏺ ", style="green") + Text(visible(_call(event.name, event.input)), style="bold"))
            for line in _diff(event.name, event.input):
                self.console.print(Text(visible(line), style="red" if line.startswith("  -") else "green"))
            if event.name == "Agent" and self.room is not None:  # the status line is not drawn during a turn
                self.console.print(Text("  ◦ running: " + visible(" · ".join(self.room.status.at_work())), style="dim"))
        elif isinstance(event, ToolFinished):
            self.last_output = event.output
            style = "red" if event.is_error else "dim"
            self.console.print(Text("  ⎿ " + visible(_gist(event.name, event.output)), style=style))
        elif not isinstance(event, SystemInit) and (note := self.progress.line(event)):
            self._end_live()
            self.console.print(Text(visible(note.strip("\n")), style="dim"))

    def _partial(self, event: Any) -> None:
        if isinstance(event, BlockStart):
            self.block, self.text = str(event.block.get("type", "")), ""
        elif isinstance(event, BlockDelta):
            piece = str(event.delta.get("text", event.delta.get("thinking", event.delta.get("partial_json", ""))))
            self.text += piece if self.block in ("text", "thinking") else ""
            if self.working is not None:
                self.working.partial_chars += len(piece)
            if self.block == "text":
                self._stream()
        elif isinstance(event, BlockStop):
            if self.block == "text" and self.text.strip():
                self._stream(final=True)
                self.streamed = True
            elif self.block == "thinking" and self.text.strip():
                lines = self.text.strip().splitlines()
                more = f"\n  (… {len(lines) - THINKING_LINES} more lines)" if len(lines) > THINKING_LINES else ""
                self.console.print(Text("✻ " + visible("\n  ".join(lines[:THINKING_LINES]) + more), style="dim italic"))
            self._end_live()
            self.block, self.text = "", ""

    def _stream(self, final: bool = False) -> None:
        """Redraws the paragraph being written; a finished paragraph (a blank line outside a code
        fence) is printed for good, so the live part stays within the screen."""
        from rich.markdown import Markdown

        head, tail = _finished(self.text)
        if head:
            self.paragraph = None
            self.console.print(Markdown(visible(head)))
            self.console.print()  # the blank line between paragraphs
            self.text = tail
        now = time.monotonic()
        if not final and self.paragraph is not None and now - self.drawn < REFRESH_S:
            return
        if self.text.strip():
            self.drawn = now
            self.paragraph = Markdown(visible(self.text))
            self._refresh()

    def _view(self) -> Any:
        from rich.console import Group

        parts: list[Any] = [self.paragraph] if self.paragraph is not None else []
        if self.working is not None:
            parts.append(self.working)
            if self.room is not None:
                width = max(20, self.console.width)
                parts.append(Text(visible(self.room.status.line(width)), style="dim reverse"))
        return Group(*parts)

    def _refresh(self) -> None:
        if self.live is not None:
            self.live.update(self._view(), refresh=True)
        elif self.paragraph is not None:  # no turn running (a resumed conversation replayed): print
            self._end_live()

    def _start_live(self) -> None:
        from rich.live import Live

        if self.live is None and self.console.is_terminal:
            self.live = Live(self._view(), console=self.console, auto_refresh=True, refresh_per_second=8,
                             transient=True, vertical_overflow="visible", get_renderable=self._view)
            self.live.start()

    def _stop_live(self) -> None:
        if self.live is not None:
            self.live.stop()
            self.live = None

    def _markdown(self, text: str) -> None:
        from rich.markdown import Markdown

        self._end_live()
        self.console.print(Markdown(visible(text)))

    def _end_live(self) -> None:
        """The paragraph shown live is printed for good (what comes next goes below it)."""
        if self.paragraph is not None:
            paragraph, self.paragraph = self.paragraph, None
            if self.live is not None:
                self.live.update(self._view(), refresh=True)
            self.console.print(paragraph)

    def expand(self) -> None:
        lines = self.last_output.splitlines()
        shown = lines[:EXPAND_LINES] + ([f"… {len(lines) - EXPAND_LINES} more lines"] if len(lines) > EXPAND_LINES else [])
        self.console.print(Text(visible("\n".join(shown) or "(no tool output yet)"), style="dim"))

    # ------------------------------------------------------------------ input

    async def read(self, due_in: Callable[[], float | None]) -> str | Fire | None:
        if (queued := self.queued_line()) is not None:
            return queued
        loop = asyncio.get_running_loop()
        while True:
            wait = due_in()
            if wait is not None and wait <= 0:
                return Fire("")
            timer = loop.call_later(wait, self._fire) if wait is not None else None
            try:
                got = await self.session.prompt_async("› ", default=self.draft, handle_sigint=False)
            except KeyboardInterrupt:
                if time.monotonic() - self.last_ctrl_c < 2.0:
                    return None
                self.last_ctrl_c = time.monotonic()
                self.say("(Ctrl-C again to leave, or Ctrl-D)")
                continue
            except EOFError:
                return None
            finally:
                if timer is not None:
                    timer.cancel()
            if isinstance(got, Fire):
                return got
            self.draft = ""
            return got

    def _fire(self) -> None:
        app = self.session.app
        if app.is_running:
            self.draft = app.current_buffer.text  # kept for the prompt after the iteration
            app.exit(result=Fire(""))

    def ctrl_c(self) -> None:
        pass  # at the prompt Ctrl-C is a key (see keys.py); during a turn it stops the turn

    async def pick(self, title: str, choices: list[str]) -> int | None:
        self.say(title)
        for n, choice in enumerate(choices, 1):
            self.say(visible(f"  {n}. {choice}"))
        try:
            answer = (await self._ask_line("number (Enter: none): ")).strip()
        except (EOFError, KeyboardInterrupt):
            return None
        return int(answer) - 1 if answer.isdigit() and 1 <= int(answer) <= len(choices) else None

    async def _ask_line(self, prompt: str) -> str:
        from prompt_toolkit import PromptSession

        with self._paused():
            return await PromptSession().prompt_async(prompt, handle_sigint=False)

    async def choose(self, lines: list[str], rule: str) -> tuple[str, str]:
        self._end_live()
        self.console.print(Text("? ", style="bold yellow") + Text(visible(lines[0]), style="bold"))
        for line in lines[1:-1]:
            self.console.print(Text(visible(line), style="cyan"))
        self.console.print(Text(visible(lines[-1]), style="dim"))
        self.console.print(Text.assemble(("  y", "bold"), " yes · ", ("n", "bold"), " no · ", ("a", "bold"),
                                         f" always allow {visible(rule)} · ", ("t", "bold"), " tell it instead"))
        self.asking = asyncio.get_running_loop().create_future()
        try:
            key = await self.asking
        finally:
            self.asking = None
        text = ""
        if key == "t":
            try:
                text = await self._ask_line("  tell the model: ")
            except (EOFError, KeyboardInterrupt):
                key = "n"
        self.console.print(Text(f"  → {WORDS[key]}", style="dim"))
        return key, text

    # ------------------------------------------------------------ during a turn

    @contextlib.contextmanager
    def watching(self) -> Iterator[None]:
        """Keys one at a time while a turn runs: Esc stops it, an ask takes its answer, the rest
        is typed ahead into the next prompt. The live region shows that it is working."""
        self._watch()
        self.working = Working()
        self._start_live()
        try:
            yield
        finally:
            self._unwatch()
            self._end_live()
            self.working = None
            self._stop_live()

    @contextlib.contextmanager
    def _paused(self) -> Iterator[None]:
        """A whole line read (prompt_toolkit draws it): the live region and the key watch wait."""
        had_live = self.live is not None
        self._end_live()
        self._stop_live()
        try:
            with super()._paused():
                yield
        finally:
            if had_live:
                self._start_live()

    def key(self, key: str) -> None:
        if key == "esc":
            if self.asking is not None and not self.asking.done():
                self.asking.set_result("n")
            self.room.interrupt()
        elif self.asking is not None and not self.asking.done():
            if key.lower() in WORDS:
                self.asking.set_result(key.lower())
        else:
            self.type_ahead(key)

    def close(self) -> None:
        self._end_live()
        self._stop_live()


def _finished(text: str) -> tuple[str, str]:
    """`text` split after its last blank line that is outside a code fence: (finished, rest)."""
    cut = text.rfind("\n\n")
    while cut > 0 and text[:cut].count("```") % 2:
        cut = text.rfind("\n\n", 0, cut)
    return (text[:cut], text[cut + 2:]) if cut > 0 else ("", text)


def _call(name: str, tool_input: dict[str, Any]) -> str:
    """`Bash(npm test)`, `Read(src/app.py)`: the tool and what it acts on, on one line."""
    for key in ("command", "file_path", "notebook_path", "pattern", "url", "description", "prompt"):
        value = tool_input.get(key)
        if isinstance(value, str):
            return f"{name}({_short(value, 66)})"
    return f"{name}({_short(tool_input, 66)})"


def _diff(name: str, tool_input: dict[str, Any], most: int = 8) -> list[str]:
    if name not in ("Edit", "MultiEdit") or not isinstance(tool_input.get("old_string"), str):
        return []
    old = tool_input["old_string"].splitlines()[:most]
    new = str(tool_input.get("new_string", "")).splitlines()[:most]
    return [f"  - {_short(x, 74)}" for x in old] + [f"  + {_short(x, 74)}" for x in new]
