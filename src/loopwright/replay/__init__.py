"""Record once, replay forever: a recorded session run again offline with today's loop, the model
played by a simulator that answers as the record did, and where the replay leaves the record.
`replay_session` runs one; `export` trims and scrubs a session to commit as a test fixture."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .compare import KINDS, Divergence
    from .run import Report, replay_session

__all__ = ["KINDS", "Divergence", "Report", "replay_session"]

# Loaded on first use: every new session's first record is scrubbed by `export.scrub_text`, and
# importing this package must not bring the simulator, difflib and the loop's replay machinery
# onto `loopwright -p`'s way to its first request.
_LAZY = {"KINDS": ".compare", "Divergence": ".compare", "Report": ".run", "replay_session": ".run"}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(_LAZY[name], __name__), name)
