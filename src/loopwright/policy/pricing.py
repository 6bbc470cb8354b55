"""What a model call cost in USD, from its usage and the model's price row. Pure arithmetic."""

from __future__ import annotations

from ..core.types import Usage

from .models import ModelInfo

__all__ = ["cost_usd"]

_PER_TOKEN = 1e-6  # prices are USD per million tokens


def cost_usd(usage: Usage, info: ModelInfo) -> float:
    """Input, output, cache reads and cache writes at the model's prices. `Usage` carries no
    5m/1h split of cache writes, so all are priced as 5-minute writes (the API's default TTL).
    0.0 for a model without a price (unknown to the table)."""
    price = info.price
    if price is None:
        return 0.0
    return (
        usage.input_tokens * price.input
        + usage.output_tokens * price.output
        + usage.cache_read_input_tokens * price.cache_read
        + usage.cache_creation_input_tokens * price.cache_write_5m
    ) * _PER_TOKEN
