"""File checkpoints as a capability: each file Write or Edit is about to change is kept first
(`session.checkpoints.Checkpoints`), so `/rewind` can put it back."""

from __future__ import annotations

from typing import Any

from ..engine.capability import Capability


class FileCheckpoints(Capability):
    name = "checkpoints"

    def __init__(self, checkpoints: Any) -> None:
        """`checkpoints`: the session's `Checkpoints` (they outlive the run)."""
        self.checkpoints = checkpoints

    def before_write(self, real_path: str) -> None:
        self.checkpoints.before_write(real_path)
