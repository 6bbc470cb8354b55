"""Record once, replay forever — the record's side: a recorded session read back (`recording`), the
scratch copy of its project (`scratch`), where a replay leaves it (`compare`), the last reports kept
(`kept`), and `export`, which trims and scrubs a session to commit as a test fixture. The replay
itself runs against the simulator: `loopwright.testing.replay`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .compare import KINDS, Divergence

__all__ = ["KINDS", "Divergence"]

# Loaded on first use: every new session's first record is scrubbed by `export.scrub_text`, and
# importing this package must not bring difflib onto `loopwright -p`'s way to its first request.
_LAZY = {"KINDS": ".compare", "Divergence": ".compare"}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(_LAZY[name], __name__), name)
