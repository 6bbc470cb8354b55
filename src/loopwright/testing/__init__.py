"""Test doubles shipped with loopwright: the loopback Messages API simulator and friends.
Exports are imported lazily so that `import loopwright.testing` stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Public name -> module defining it, imported on first access. To add an export, add it
# here and to __all__ (and to the TYPE_CHECKING block for type checkers).
_LAZY: dict[str, str] = {
    "RecordedRequest": "loopwright.testing.simulator",
    "ReplayDiverged": "loopwright.testing.replay",
    "assert_replays": "loopwright.testing.replay",
    "Script": "loopwright.testing.simulator",
    "ScriptError": "loopwright.testing.simulator",
    "Simulator": "loopwright.testing.simulator",
}

__all__ = [
    "RecordedRequest",
    "ReplayDiverged",
    "assert_replays",
    "Script",
    "ScriptError",
    "Simulator",
]

if TYPE_CHECKING:
    from .replay import ReplayDiverged, assert_replays
    from .simulator import RecordedRequest, Script, ScriptError, Simulator


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # cache: later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
