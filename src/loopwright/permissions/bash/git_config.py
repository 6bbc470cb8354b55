"""git without the repository's programs. A line whose git calls all only read runs with
configuration overrides (command scope, above every file) that turn off each fixed key a
repository can use to start a program; the keys no fixed override reaches (per-driver diff and
filter programs, diff.external, more files included) make such a call asked. Pure."""

from __future__ import annotations

from typing import Mapping

from ...core.fastclass import dataclass
from .git_options import SUBCOMMANDS
from .line import analysed, read_line

__all__ = ["OVERRIDES", "GitFacts", "config_problem", "shell_env"]

OVERRIDES: tuple[tuple[str, str], ...] = (
    ("core.fsmonitor", "false"),  # a hook program run by status, diff, describe …
    ("core.hooksPath", "/dev/null"),
    ("core.pager", "cat"),  # git pages only on a terminal; belt and braces
    ("core.editor", ":"), ("sequence.editor", ":"),  # git treats ':' as "no editor"
    ("core.sshCommand", "false"), ("credential.helper", ""), ("protocol.allow", "never"),
    ("log.showSignature", "false"),
    ("gpg.program", "false"), ("gpg.openpgp.program", "false"), ("gpg.x509.program", "false"),
    ("gpg.ssh.program", "false"),
    ("diff.ignoreSubmodules", "all"),  # a submodule has a configuration of its own
    ("status.submoduleSummary", "false"), ("submodule.recurse", "false"),
    ("blame.ignoreRevsFile", ""),
    ("gc.auto", "0"), ("maintenance.auto", "false"),  # no repacking or maintenance behind a read
    *((f"pager.{sub}", "false") for sub in sorted(SUBCOMMANDS)),
)


@dataclass(frozen=True, slots=True)
class GitFacts:
    """What the gate learnt from git about the repository a call would use: its worktree's top
    folder (None outside a repository), the (key, value) pairs its own configuration sets
    (local and worktree scope, includes followed; user and system files are trusted), or why
    that could not be learnt."""

    top: str | None = None
    local: tuple[tuple[str, str], ...] = ()
    error: str | None = None


def config_problem(facts: GitFacts) -> str | None:
    """Why the repository's own configuration could still start a program under the overrides."""
    if facts.error is not None:
        return f"its configuration could not be read ({facts.error})"
    for key, _ in facts.local:
        section, _, rest = key.lower().partition(".")
        driver, _, name = rest.rpartition(".")
        if key.lower() == "diff.external":
            return "its configuration sets diff.external, a program git diff runs"
        if driver and (section, name) in _PER_DRIVER:
            return f"its configuration sets {key}, a program git runs for some files"
        if section in ("include", "includeif") and name == "path":
            return f"its configuration includes another file ({key}), which no check here reads"
    return None


_PER_DRIVER = frozenset({("diff", "textconv"), ("diff", "command"), ("filter", "clean"), ("filter", "smudge"),
                         ("filter", "process"), ("merge", "driver")})


def shell_env(command: str, environ: Mapping[str, str]) -> dict[str, str]:
    """Environment to add to a shell line: the overrides when it calls git and every git call
    only reads (appended after any `GIT_CONFIG_COUNT` entries already in `environ`), and an
    empty CDPATH when it changes directory (the reader follows `cd` only to named folders)."""
    analysis = analysed(command)
    if analysis.error is not None:
        return {}
    out: dict[str, str] = {}
    if any(p.name in ("cd", "pushd") for p in analysis.parts):
        out["CDPATH"] = ""
    line = read_line(analysis)
    if line.git_read_only and any(p.name == "git" for p in line.parts):
        count = environ.get("GIT_CONFIG_COUNT", "")
        start = int(count) if count.isdigit() else 0
        for k, (key, value) in enumerate(OVERRIDES, start):
            out[f"GIT_CONFIG_KEY_{k}"], out[f"GIT_CONFIG_VALUE_{k}"] = key, value
        out["GIT_CONFIG_COUNT"] = str(start + len(OVERRIDES))
        out["GIT_OPTIONAL_LOCKS"] = "0"  # status and diff then leave the index as it is
    return out
