"""A tool call as the policy sees it: what it touches, where the gate found those paths and,
for shell lines, what git said about the repositories its git calls read and what the folders
it reads whole hold. Pure data; the gate fills it in."""

from __future__ import annotations

from dataclasses import field
from typing import Any, Mapping

from ..core.fastclass import dataclass
from .bash.git_config import GitFacts
from .verdict import Resolved

__all__ = ["Call", "Want"]


@dataclass(frozen=True, slots=True)
class Want:
    """A path the gate must resolve before the decision; `glob`: it names what it matches."""

    path: str
    glob: bool = False


@dataclass(frozen=True, slots=True)
class Call:
    """`kind` is read, write, exec, session (acts on the session's own state only) or other;
    `resolved` maps each wanted path to its places (None: the gate could not tell). For shell
    lines, `git` maps each folder whose repository a git call reads to what git said about it,
    and `holds` each folder read whole to the files below it that Read deny or ask rules cover
    (None: too many to look through). `outside`: why the command would run outside the OS
    sandbox (the tool said so); `outside_refused`: trusted settings forbid that."""

    tool: str
    kind: str = "other"
    paths: tuple[str, ...] = ()
    command: str | None = None
    tool_input: Mapping[str, Any] = field(default_factory=dict)
    resolved: Mapping[str, tuple[Resolved, ...] | None] = field(default_factory=dict)
    git: Mapping[str, GitFacts] = field(default_factory=dict)
    holds: Mapping[str, tuple[str, ...] | None] = field(default_factory=dict)
    outside: str = ""
    outside_refused: bool = False
