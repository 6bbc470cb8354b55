"""Unattended runs use the sandbox by default where bubblewrap works: nobody is there to read a
question, so the OS boundary carries the weight. The one place that decides it — a schedule's
fire calls `unattended_args`; routines and `--permission-mode auto` are to call it too."""

from __future__ import annotations

from typing import Sequence

from .bwrap import availability

__all__ = ["OPT_IN", "OPT_OUT", "unattended_args", "unattended_note"]

OPT_IN, OPT_OUT = "--sandbox", "--no-sandbox"


def unattended_args(args: Sequence[str]) -> list[str]:
    """The flags of an unattended `loopwright -p` run: `--sandbox` added where bwrap runs here,
    unless the flags already choose (`--sandbox`, or `--no-sandbox` to opt out)."""
    if OPT_IN in args or OPT_OUT in args or availability() is not None:
        return list(args)
    return [*args, OPT_IN]


def unattended_note() -> str | None:
    """One line for the operator when unattended runs cannot have the sandbox here; else None."""
    why = availability()
    if why is None:
        return None
    return (f"unattended runs go without the sandbox: {why} (install bubblewrap; a run whose flags say "
            f"{OPT_IN} refuses Bash instead)")
