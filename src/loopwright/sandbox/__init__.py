"""OS-level isolation for the shell tool: bubblewrap (`bwrap`) when present. See `bwrap.py`."""

from .bwrap import SandboxConfig, active, availability, unavailable_warning, wrap

__all__ = ["SandboxConfig", "active", "availability", "unavailable_warning", "wrap"]
