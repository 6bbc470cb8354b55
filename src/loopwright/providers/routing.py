"""A `Model` that sends each request to the provider serving its model name, as the provider
table (`registry`) says: Anthropic's API for names without a prefix, an OpenAI-compatible one for
`openai:` / `openai-compatible:` names, a registered provider for its own prefix. One client per
API, made on first use, so the main model, fallbacks, the goal's evaluator and prompt hooks can
each name a model of another provider."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping
from typing import Any

from ..core.errors import ModelError
from ..core.types import ModelRequest, StreamEvent
from .registry import provider_for, table_key


class ModelRouter:
    def __init__(self, env: Mapping[str, str] = os.environ, origins: Mapping[str, str] | None = None) -> None:
        self.env = env
        self.origins = dict(origins or {})  # variable -> the settings file that set it, if one did
        self.clients: dict[str, Any] = {}

    def client_for(self, model: str) -> Any:
        """The client for a model name; made now, so a missing key or an unknown provider prefix
        is said before any run."""
        provider = provider_for(model)  # the provider's module (and httpx) loads only now
        prefix = table_key(model)  # one client per provider, or per its client_key (a base URL)
        key = f"{prefix}:" if prefix else "anthropic"
        if provider.client_key is not None:
            key += " " + provider.client_key(model, self.env)
        if key not in self.clients:
            self.clients[key] = provider.factory(model, self.env, self.origins)
        return self.clients[key]

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        async for event in self.client_for(request.model).stream(request):
            yield event

    async def count_tokens(self, request: ModelRequest) -> int:
        counter = getattr(self.client_for(request.model), "count_tokens", None)
        if counter is None:
            raise ModelError("invalid_request", f"no token counting for {request.model}: estimated instead")
        return int(await counter(request))

    async def aclose(self) -> None:
        clients, self.clients = list(self.clients.values()), {}
        for client in clients:
            await client.aclose()

    def __repr__(self) -> str:  # never shows credentials: keys are prefixes and base URLs
        return f"ModelRouter({sorted(self.clients)!r})"
