"""Model API adapters: each turns one API family's wire format into loopwright's stream events
and errors (`types`, `errors`). Imported lazily: `from loopwright.providers import AnthropicModel`
loads httpx only when first touched."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .anthropic import AnthropicModel

__all__ = ["AnthropicModel"]


def __getattr__(name: str) -> Any:
    if name == "AnthropicModel":
        from .anthropic import AnthropicModel

        return AnthropicModel
    raise AttributeError(f"module 'loopwright.providers' has no attribute {name!r}")
