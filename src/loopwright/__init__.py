"""loopwright: loop engineering for AI agents. An agent loop that never stops silently, never
runs away, and proves it is done. Heavy parts are imported lazily (start-up matters)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from .app import Agent

__all__ = ["Agent", "__version__"]


def __getattr__(name: str) -> Any:
    if name == "Agent":
        from .app import Agent

        return Agent
    raise AttributeError(f"module 'loopwright' has no attribute {name!r}")
