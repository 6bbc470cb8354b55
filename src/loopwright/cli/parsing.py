"""The one argument parser of every command: flags spelled in full (no abbreviations, as in
Claude Code: a typo is an error, not a guess), errors as one usage line that names the flag
that was probably meant."""

from __future__ import annotations

import argparse
from typing import Any, NoReturn

from ..core.errors import UsageError


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
