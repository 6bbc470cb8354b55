"""Recorded sessions as regression tests inside a project's own test suite: `assert_replays(path)`
replays a transcript (see `loopwright replay`) against today's loop and fails with the divergence
report when the replay leaves the record. The pytest fixture lives in `pytest_replay`."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

__all__ = ["ReplayDiverged", "assert_replays"]


class ReplayDiverged(AssertionError):
    """A replay left its record; `report` is the full `loopwright.replay.Report`."""

    def __init__(self, report: Any) -> None:
        super().__init__(report.text())
        self.report = report


def assert_replays(path: str | Path, *flags: str, cwd: str | Path | None = None, wire: str | None = None,
                   store: str | None = None, timeout: float = 600.0) -> Any:
    """Replay `path` (a .jsonl transcript, or a session id with `store`) with `flags` added to its
    recorded command line; the report when it follows the record, else `ReplayDiverged`. `cwd`:
    the project to replay in when the recorded folder is not on this machine (default: here)."""
    from ..replay import replay_session

    report = replay_session(str(path), store=store, cwd=None if cwd is None else str(cwd), flags=_flags(flags),
                            wire=wire, timeout=timeout)
    if not report.ok:
        raise ReplayDiverged(report)
    return report


def _flags(flags: Sequence[str]) -> list[str]:
    return [str(f) for f in flags]
