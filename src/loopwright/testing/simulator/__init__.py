"""A loopback Anthropic Messages API for tests: real HTTP and SSE, scripted replies, faults.
The official SDK runs against it unmodified; see `script.py` for the script format.
"""

from __future__ import annotations

from .script import Script, ScriptError
from .server import RecordedRequest, Simulator

__all__ = ["RecordedRequest", "Script", "ScriptError", "Simulator"]
