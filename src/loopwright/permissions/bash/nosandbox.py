"""The shell gate when no OS sandbox can start (`PermissionRules.strict`): nothing bounds what a
command does beyond what the gate read from its text, so only a short list of read-only
programs runs without asking (their options each known, every path they read judged where it
lands, inside the readable places), and allow rules that let one program run anything are set
aside. Pure."""

from __future__ import annotations

from .command_rules import broad
from .parts import Part
from .readonly import Reading, is_read_only

__all__ = ["ASKED", "runs_unasked", "sets_aside"]

ASKED = "asked because no sandbox runs here"

# Programs that only read and print, whose every allowed option is known (readonly_options,
# readonly's own grammars: find without -exec/-delete/-fprint …), and git's read-only subcommands that run
# with the repository's programs turned off (git_config).
_READERS = frozenset({"cat", "head", "tail", "wc", "grep", "egrep", "fgrep", "rg", "ls", "find", "pwd", "echo",
                      "stat", "file", "diff", "true", "false", "cd"})
_GIT = frozenset({"status", "log", "diff", "show"})
# Programs no option makes run another program or write: a rule for all their uses stays.
_INERT = frozenset({"cat", "head", "tail", "wc", "ls", "pwd", "echo", "stat", "grep", "egrep", "fgrep"})


def runs_unasked(part: Part, reading: Reading) -> bool:
    """Whether the part is one of the short list's readers, as read (options known, nothing
    given in its environment, no redirection to a file). Where it reads is judged apart."""
    if not (reading.ok and is_read_only(part)):
        return False
    if part.name == "git":
        return reading.git in _GIT
    if part.name == "diff":
        return len(reading.reads) == 2  # two files or folders, and nothing read on the side
    return part.name in _READERS


def sets_aside(spec: str | None) -> bool:
    """Whether a `Bash(...)` allow rule lets one program run anything (`Bash`, `Bash(*)`,
    `Bash(python:*)`, `Bash(git *)`): without a sandbox it does not allow on its own. A rule that
    names more than the program (`Bash(npm run test:*)`, `Bash(git diff *)`) stays."""
    if broad(spec):
        return True
    assert spec is not None
    if "*" not in spec:
        return False
    fixed = spec.split("*", 1)[0].removesuffix(":").split()
    return len(fixed) <= 1 and not (fixed and fixed[0] in _INERT)
