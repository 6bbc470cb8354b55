"""The one argument parser of every command: flags spelled in full (no abbreviations, as in
Claude Code: a typo is an error, not a guess), errors as one usage line that names the flag
that was probably meant."""

from __future__ import annotations

import argparse
import re
from typing import Any, NoReturn

from ..core.errors import UsageError

# Every subcommand, grouped as the main help lists them: (name, its arguments, what it does).
COMMANDS: tuple[tuple[str, tuple[tuple[str, str, str], ...]], ...] = (
    ("Run", (
        ("demo", "[goal|routine]", "A scripted agent on a sample project, offline"),
        ("workflow", "run|list", "Run or list workflow scripts"),
    )),
    ("Loops", (
        ("goal", "status|clear", "Show or clear a session's goal"),
        ("attempts", "clean", "Remove worktrees an interrupted --attempts left"),
        ("schedule", "add|list|runs|…", "Schedules that survive restarts"),
        ("scheduler", "", "Serve the schedules: fire each when due"),
        ("routine", "list|run|items|…", "Items found by a source, an agent run per item"),
    )),
    ("Sessions", (
        ("sessions", "", "List sessions, newest first"),
        ("session", "export ID", "Write a session as a Claude Code JSONL transcript"),
        ("rewind", "--session ID", "A session's checkpoints, and going back to one"),
        ("replay", "SESSION|--check DIR", "Run a recorded session again offline; name where it diverges"),
    )),
    ("Service", (
        ("serve", "", "A local web view of sessions, schedules and cost"),
        ("worker", "", "Run queued goal loops from a durable --store"),
        ("enqueue", "PROMPT [FLAGS]", "Put a goal loop on a queue for the workers"),
        ("workers", "", "The workers of a store and what each runs"),
    )),
    ("Setup", (
        ("mcp", "list|get|add|remove", "Configure and check MCP servers"),
        ("settings", "check", "The settings files of this folder, checked"),
        ("trust", "[PATH]", "Apply a folder's project settings without asking"),
        ("completion", "bash|zsh|fish", "Print a shell completion script"),
    )),
)
# Subcommands of two words: the first alone stays an ordinary prompt ("session" is one) and a slip
# of another subcommand (`session list` means `sessions`).
TWO_WORD_SUBCOMMANDS = (("session", "export"),)
SUBCOMMANDS = tuple(sorted(name for _, group in COMMANDS for name, _, _ in group
                           if name not in {first for first, _ in TWO_WORD_SUBCOMMANDS}))


def subcommand_of(args: list[str]) -> str | None:
    """The subcommand the command line names, or None (a prompt and flags)."""
    if not args:
        return None
    if tuple(args[:2]) in TWO_WORD_SUBCOMMANDS:
        return args[0]
    if args[1:] in (["--help"], ["-h"]) and any(args[0] == first for first, _ in TWO_WORD_SUBCOMMANDS):
        return args[0]  # `session --help`: its own help, not the main one
    return args[0] if args[0] in SUBCOMMANDS else None


def commands_help() -> str:
    """The commands block of the main help, a group under each heading."""
    width = max(len(f"{name} {shape}".strip()) for _, group in COMMANDS for name, shape, _ in group) + 2
    lines = ["Commands (each takes --help):"]
    for heading, group in COMMANDS:
        lines.append(f"  {heading}")
        lines += [f"    {f'{name} {shape}'.strip():<{width}}{what}" for name, shape, what in group]
    return "\n".join(lines)

# argparse's own words (stable since 3.9): "invalid choice: 'lst' (choose from 'list', 'get')"
_INVALID_CHOICE = re.compile(r"invalid choice: '?(.*?)'? \(choose from (.*)\)$")


class Parser(argparse.ArgumentParser):
    """`hint`: added to errors about unknown arguments (a command's own advice)."""

    takes_run_flags = False  # its FLAGS, after its arguments, are `loopwright -p`'s (`workflow run`)

    def __init__(self, *args: Any, hint: str = "", **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)
        self.hint = hint

    def error(self, message: str) -> NoReturn:
        prefix = "" if self.prog == "loopwright" else f"{self.prog}: "
        if "unrecognized arguments" in message:
            message += self._did_you_mean(message.split(":", 1)[1].split())
            if self.hint:
                message += f" ({self.hint})"
        elif (choice := _INVALID_CHOICE.search(message)) is not None:
            message += _choice_meant(choice.group(1), choice.group(2))
        raise UsageError(prefix + message)

    def _did_you_mean(self, words: list[str]) -> str:
        from ..policy.names import nearest

        flags = [f for f in _flags(self) if f.startswith("--")]
        for word in words:
            if word.startswith("--") and (meant := nearest(word.split("=", 1)[0], flags, 3)) is not None:
                return f"; did you mean {meant}?"
        return ""

    def add_subparsers(self, **kwargs: Any) -> Any:
        kwargs.setdefault("parser_class", Parser)
        return super().add_subparsers(**kwargs)


def _flags(parser: argparse.ArgumentParser) -> list[str]:
    """The option strings of `parser` and of its subcommands' parsers (argparse reports a
    subcommand's unknown flags from the parent)."""
    found = list(parser._option_string_actions)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found += _flags(sub)
    return found


def _choice_meant(given: str, choices: str) -> str:
    from ..policy.names import choice_slip

    names = [c.strip().strip("'") for c in choices.split(",")]
    meant = choice_slip(given, names)
    return f"; did you mean {meant!r}?" if meant is not None else ""


def refuse_subcommand_slip(prompt: str | None) -> None:
    """A one-word prompt a letter or two from a subcommand (`loopwright sheduler`) is a typo far
    more often than a prompt: refused with the command that was meant."""
    from ..policy.names import subcommand_slip

    if (meant := subcommand_slip(prompt, SUBCOMMANDS)) is not None:
        raise slip_error(str(prompt).strip(), meant)


def slip_error(word: str, meant: str) -> UsageError:
    return UsageError(f"{word!r} looks like a subcommand: did you mean `loopwright {meant}`? To send it to the "
                      f"model as a prompt, say it in more than one word (-p '{word} please')")
