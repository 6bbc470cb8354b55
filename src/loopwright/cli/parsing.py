"""The one argument parser of every command: flags spelled in full (no abbreviations, as in
Claude Code: a typo is an error, not a guess), errors as one usage line that names the flag
that was probably meant."""

from __future__ import annotations

import argparse
import re
from typing import Any, NoReturn

from ..core.errors import UsageError

SUBCOMMANDS = ("attempts", "demo", "enqueue", "goal", "mcp", "replay", "rewind", "routine", "schedule", "scheduler",
               "serve", "sessions", "settings", "trust", "worker", "workers", "workflow")
# Subcommands of two words: the first alone stays an ordinary prompt ("session" is one) and a slip
# of another subcommand (`session list` means `sessions`).
TWO_WORD_SUBCOMMANDS = (("session", "export"),)


def subcommand_of(args: list[str]) -> str | None:
    """The subcommand the command line names, or None (a prompt and flags)."""
    if not args:
        return None
    if tuple(args[:2]) in TWO_WORD_SUBCOMMANDS:
        return args[0]
    return args[0] if args[0] in SUBCOMMANDS else None

# argparse's own words (stable since 3.9): "invalid choice: 'lst' (choose from 'list', 'get')"
_INVALID_CHOICE = re.compile(r"invalid choice: '?(.*?)'? \(choose from (.*)\)$")


class Parser(argparse.ArgumentParser):
    """`hint`: added to errors about unknown arguments (a command's own advice)."""

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
