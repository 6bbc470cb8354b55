"""The prompt: prompt_toolkit with Enter to send and Alt-Enter (or Esc then Enter) for a new line,
history across sessions (`history` in loopwright's home, 0600), Tab completion of slash commands,
skills and `@file` paths, Shift-Tab to cycle permission modes, Ctrl-C to clear the line (on an
empty line: to leave, pressed twice), Ctrl-O to show the last tool's whole output, and the status
line at the bottom."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Iterator

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document
from prompt_toolkit.history import FileHistory
from prompt_toolkit.key_binding import KeyBindings

from .commands import NAMES

ESC_TWICE = 2.0  # seconds between two Esc presses that open the checkpoints (a listing only: nothing changes)

MAX_ENTRIES = 200  # a folder's names offered for one `@` completion
DESCRIBED = 50  # characters of a command's description beside its name
HINTED = 16  # characters of its argument hint


class Names(Completer):
    """`/command`, `/skill` and `/workflow` at the start of the input; `@path` anywhere, from the
    session's folder."""

    def __init__(self, agent: Any) -> None:
        self.agent = agent

    def get_completions(self, document: Document, complete_event: CompleteEvent) -> Iterator[Completion]:
        text = document.text_before_cursor
        if text.startswith("/") and " " not in text:
            for name in NAMES:
                if name.startswith(text):
                    yield Completion(name, start_position=-len(text))
            yield from self._custom(text)
            return
        word = text.split()[-1] if text and not text[-1].isspace() else ""
        if word.startswith("@"):
            yield from self._paths(word)

    def _custom(self, text: str) -> Iterator[Completion]:
        """Custom commands and skills the person may start (project, user, plugin), each with
        its argument hint and description."""
        skills = self.agent.skills.found if self.agent.skills is not None else {}
        for name in sorted(skills):
            skill = skills[name]
            if skill.user_invocable and f"/{name}".startswith(text) and f"/{name}" not in NAMES:
                hint = _one_line(str((skill.fields or {}).get("argument-hint") or ""), HINTED)
                yield Completion(f"/{name}", start_position=-len(text), display=f"/{name} {hint}".strip(),
                                 display_meta=_one_line(skill.description, DESCRIBED))
        from ...workflows.scripts import available

        for name in sorted(available(Path(self.agent.cwd), Path.home(), list(self.agent.plugins))):
            if f"/{name}".startswith(text) and name not in skills and f"/{name}" not in NAMES:
                yield Completion(f"/{name}", start_position=-len(text), display_meta="workflow")

    def _paths(self, word: str) -> Iterator[Completion]:
        folder, _, stem = word[1:].rpartition("/")
        base = Path(self.agent.cwd) / os.path.expanduser(folder) if folder else Path(self.agent.cwd)
        try:
            entries = sorted(os.scandir(base), key=lambda e: e.name)[:MAX_ENTRIES]
        except OSError:
            return
        for entry in entries:
            if entry.name.startswith(stem) and (stem.startswith(".") or not entry.name.startswith(".")):
                slash = "/" if entry.is_dir() else ""
                yield Completion(f"@{folder + '/' if folder else ''}{entry.name}{slash}", start_position=-len(word),
                                 display=entry.name + slash)


def _one_line(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def history_file() -> FileHistory:
    from ...core.home import home, make_private_dirs, private_file

    make_private_dirs(home())
    path = home() / "history"
    private_file(path)
    return FileHistory(str(path))


def prompt_session(room: Any, front: Any) -> PromptSession[Any]:
    keys = KeyBindings()

    @keys.add("enter")
    def _send(event: Any) -> None:
        buffer = event.current_buffer
        if buffer.complete_state is not None and buffer.complete_state.current_completion is not None:
            buffer.apply_completion(buffer.complete_state.current_completion)
        else:
            buffer.validate_and_handle()

    @keys.add("escape", "enter")
    @keys.add("c-j")
    def _newline(event: Any) -> None:
        event.current_buffer.insert_text("\n")

    escaped = [0.0]  # when Esc was last pressed on an empty prompt

    @keys.add("escape")
    def _rewind(event: Any) -> None:  # Esc twice on an empty prompt: the checkpoints (`/rewind`)
        if event.current_buffer.text:
            escaped[0] = 0.0
            return
        now = time.monotonic()
        if now - escaped[0] < ESC_TWICE:
            escaped[0] = 0.0
            event.app.exit(result="/rewind")
        else:
            escaped[0] = now

    @keys.add("s-tab")
    def _mode(event: Any) -> None:
        room.status.cycle()
        event.app.invalidate()

    @keys.add("c-c")
    def _clear(event: Any) -> None:
        if event.current_buffer.text:
            event.current_buffer.reset()
        else:
            event.app.exit(exception=KeyboardInterrupt())

    @keys.add("c-o")
    def _expand(event: Any) -> None:
        from prompt_toolkit.application import run_in_terminal

        run_in_terminal(front.expand)

    def toolbar() -> str:
        return room.status.line(os.get_terminal_size().columns if os.isatty(1) else 80)

    return PromptSession(history=history_file(), completer=Names(room.agent), complete_while_typing=False,
                         key_bindings=keys, multiline=True, bottom_toolbar=toolbar,
                         prompt_continuation=lambda width, line, wrap: " " * (width - 2) + "… ",
                         enable_open_in_editor=False, erase_when_done=False)
