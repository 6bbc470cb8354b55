"""What loopwright knows about each model: context window, default and maximum output tokens,
price. The facts live in `models.json` (dated, sourced); this module only reads and resolves them."""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..core.fastclass import dataclass

__all__ = [
    "DEFAULT_MODEL",
    "ModelInfo",
    "Price",
    "UNKNOWN_CONTEXT_WINDOW",
    "UNKNOWN_DEFAULT_OUTPUT",
    "UNKNOWN_MAX_OUTPUT",
    "known_models",
    "model_table_date",
    "resolve_model",
]

DEFAULT_MODEL = "claude-sonnet-5"

# A model we have no row for gets limits every current Claude model can honour.
UNKNOWN_CONTEXT_WINDOW = 200_000
UNKNOWN_DEFAULT_OUTPUT = 32_000
UNKNOWN_MAX_OUTPUT = 64_000

_DATE_SUFFIX = re.compile(r"-\d{8}$")  # claude-sonnet-4-5-20250929 -> claude-sonnet-4-5


@dataclass(frozen=True, slots=True)
class Price:
    """USD per million tokens."""

    input: float
    output: float
    cache_write_5m: float
    cache_write_1h: float
    cache_read: float


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """`id` is the name to send to the API: an alias resolves to its model id; any other name
    is kept (lower-cased when known). `known` is False for names without a row in the table."""

    id: str
    context_window: int
    default_output: int
    max_output: int
    price: Price | None
    known: bool


@dataclass(frozen=True, slots=True)
class _Table:
    date: str
    aliases: dict[str, str]  # lower-cased alias -> model id
    rows: dict[str, ModelInfo]  # lower-cased id or dated id -> row (with the canonical id)
    models: tuple[ModelInfo, ...]


@lru_cache(maxsize=1)
def _table() -> _Table:
    # The file sits beside this module (package data); importlib.resources costs start-up time.
    raw = json.loads(Path(__file__).with_name("models.json").read_text("utf-8"))
    rows: dict[str, ModelInfo] = {}
    models = []
    for entry in raw["models"]:
        info = _row(entry)
        models.append(info)
        for name in (entry["id"], *entry.get("aliases", ())):
            rows[name.lower()] = info
    aliases = {k.lower(): v for k, v in raw.get("aliases", {}).items()}
    return _Table(raw["date"], aliases, rows, tuple(models))


def _row(entry: dict[str, Any]) -> ModelInfo:
    price = entry.get("price")
    return ModelInfo(
        id=entry["id"],
        context_window=int(entry["context_window"]),
        default_output=int(entry["default_output"]),
        max_output=int(entry["max_output"]),
        price=Price(**{k: float(v) for k, v in price.items()}) if price else None,
        known=True,
    )


@lru_cache(maxsize=256)  # called several times a turn; the table never changes in a process
def resolve_model(name: str) -> ModelInfo:
    """The table row for a model name: an alias (`sonnet`), an id, a dated id, any case.
    Unknown names get conservative limits and no price."""
    table = _table()
    given = name.strip()
    key = given.lower()
    target = table.aliases.get(key)
    if target is not None:
        aliased = table.rows[target.lower()]
        return aliased if aliased.id == target else _renamed(aliased, target)
    info = table.rows.get(key) or table.rows.get(_DATE_SUFFIX.sub("", key))
    if info is not None:
        return info if info.id == key else _renamed(info, key)
    return ModelInfo(given, UNKNOWN_CONTEXT_WINDOW, UNKNOWN_DEFAULT_OUTPUT, UNKNOWN_MAX_OUTPUT, None, False)


def _renamed(info: ModelInfo, model_id: str) -> ModelInfo:
    return ModelInfo(model_id, info.context_window, info.default_output, info.max_output, info.price, True)


def known_models() -> tuple[ModelInfo, ...]:
    """Every row of the table, in file order."""
    return _table().models


def model_table_date() -> str:
    """The date the model table's facts were checked (ISO 8601)."""
    return _table().date


def model_names() -> tuple[str, ...]:
    """Every alias and id the table knows, for checking a name a person typed."""
    table = _table()
    return tuple(dict.fromkeys([*table.aliases, *(m.id for m in table.models), *table.rows]))
