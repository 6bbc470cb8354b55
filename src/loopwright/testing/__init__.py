"""Test doubles shipped with loopwright: the loopback Messages API simulator and friends.
Exports are imported lazily so that `import loopwright.testing` stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Public name -> module defining it, imported on first access. To add an export, add it
# here and to __all__ (and to the TYPE_CHECKING block for type checkers).
_LAZY: dict[str, str] = {
    # the loopback Messages API (and Chat Completions) simulator and its script types
    "Simulator": "loopwright.testing.simulator.server",
    "ScriptLike": "loopwright.testing.simulator.server",
    "RecordedRequest": "loopwright.testing.simulator.record",
    "Script": "loopwright.testing.simulator.script",
    "ScriptError": "loopwright.testing.simulator.script",
    "Rule": "loopwright.testing.simulator.script",
    "Reply": "loopwright.testing.simulator.script",
    "Fault": "loopwright.testing.simulator.script",
    # an in-process scripted `Model` and a clock tests move by hand
    "ScriptedModel": "loopwright.testing.scripted",
    "Step": "loopwright.testing.scripted",
    "FakeClock": "loopwright.testing.clock",
    # a recorded session replayed as a regression test (loopwright.replay)
    "ReplayDiverged": "loopwright.testing.replay",
    "assert_replays": "loopwright.testing.replay",
}

__all__ = [
    "FakeClock", "Fault", "RecordedRequest", "Reply", "Rule", "Script", "ScriptError", "ScriptLike", "ScriptedModel",
    "ReplayDiverged", "Simulator", "Step", "assert_replays",
]

if TYPE_CHECKING:
    from .clock import FakeClock
    from .replay import ReplayDiverged, assert_replays
    from .scripted import ScriptedModel, Step
    from .simulator.record import RecordedRequest
    from .simulator.script import Fault, Reply, Rule, Script, ScriptError
    from .simulator.server import ScriptLike, Simulator


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # cache: later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
