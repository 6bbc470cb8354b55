"""Model API adapters: each turns one API family's wire format into loopwright's stream events
and errors (`types`, `errors`), one module per vendor, found through the provider table
(`registry`: a model name's prefix -> its provider). Imported lazily: `from loopwright.providers
import AnthropicModel` loads httpx only when first touched."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .anthropic import AnthropicModel
    from .registry import Provider, known_prefixes, register, unregister

__all__ = ["AnthropicModel", "Provider", "known_prefixes", "register", "unregister"]

_REGISTRY = frozenset({"Provider", "known_prefixes", "register", "unregister"})


def __getattr__(name: str) -> Any:
    if name == "AnthropicModel":
        from .anthropic import AnthropicModel

        return AnthropicModel
    if name in _REGISTRY:
        from . import registry

        return getattr(registry, name)
    raise AttributeError(f"module 'loopwright.providers' has no attribute {name!r}")
