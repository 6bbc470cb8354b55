"""Record once, replay forever: a recorded session run again offline with today's loop, the model
played by a simulator that answers as the record did, and where the replay leaves the record.
`replay_session` runs one; `export` trims and scrubs a session to commit as a test fixture."""

from __future__ import annotations

from .compare import KINDS, Divergence
from .run import Report, replay_session

__all__ = ["KINDS", "Divergence", "Report", "replay_session"]
