"""A `Model` that sends each request to the API serving its model name: Anthropic's for our
table's names, an OpenAI-compatible one for `openai:` / `openai-compatible:` names. One client
per API, made on first use, so the main model, fallbacks, the goal's evaluator and prompt hooks
can each name a model of another provider."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping
from typing import Any

from ..core.errors import ModelError
from ..core.types import ModelRequest, StreamEvent


OPENAI_PREFIXES = ("openai:", "openai-compatible:")


def served_by_openai(name: str) -> bool:
    """Whether a model name goes to an OpenAI-compatible API (`openai:…`, `openai-compatible:…`)."""
    return name.startswith(OPENAI_PREFIXES)


class ModelRouter:
    def __init__(self, env: Mapping[str, str] = os.environ, origins: Mapping[str, str] | None = None) -> None:
        self.env = env
        self.origins = dict(origins or {})  # variable -> the settings file that set it, if one did
        self.clients: dict[str, Any] = {}

    def client_for(self, model: str) -> Any:
        """The client for a model name; made now, so a missing key is said before any run."""
        found = None
        if served_by_openai(model):  # the OpenAI adapter loads only then
            from .openai import split_model

            found = split_model(model, self.env)
        key = "anthropic" if found is None else found[0]  # one client per API base URL
        if key not in self.clients:
            if found is None:
                from .anthropic import AnthropicModel

                self.clients[key] = AnthropicModel.from_env(self.env, self.origins)
            else:
                from .openai import OpenAIChatModel

                self.clients[key] = OpenAIChatModel.for_name(model, self.env, self.origins)
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

    def __repr__(self) -> str:  # never shows credentials: keys are base URLs
        return f"ModelRouter({sorted(self.clients)!r})"
