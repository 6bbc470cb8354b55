"""A recorded session run again against today's loop, the model played by the simulator (`run`:
`replay_session`, behind `loopwright replay`; `script`: the record as the simulator's script), and
as a regression test in a project's own suite: `assert_replays(path)` fails with the divergence
report when the replay leaves the record. The pytest fixture lives in `pytest_replay`."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

__all__ = ["ReplayDiverged", "assert_replays"]


class ReplayDiverged(AssertionError):
    """A replay left its record; `report` is the full `Report` (`loopwright.testing.replay.run`)."""

    def __init__(self, report: Any) -> None:
        super().__init__(report.text())
        self.report = report


def assert_replays(path: str | Path, *flags: str, cwd: str | Path | None = None, wire: str | None = None,
                   store: str | None = None, timeout: float = 600.0) -> Any:
    """Replay `path` (a .jsonl transcript, or a session id with `store`) with `flags` over its
    recorded run (each replaces what the record says of what it sets); the report when it follows
    the record, else `ReplayDiverged`. `cwd`: the project to replay in when the recorded folder is
    not on this machine (default: here)."""
    from .run import replay_session

    report = replay_session(str(path), store=store, cwd=None if cwd is None else str(cwd), flags=_flags(flags),
                            wire=wire, timeout=timeout)
    if not report.ok:
        raise ReplayDiverged(report)
    return report


def _flags(flags: Sequence[str]) -> list[str]:
    return [str(f) for f in flags]
