"""The model table (data file) and cost arithmetic."""

from __future__ import annotations

import json
import re
from importlib import resources

import pytest
from hypothesis import given
from hypothesis import strategies as st

from loopwright.policy.models import (
    DEFAULT_MODEL,
    ModelInfo,
    Price,
    known_models,
    model_table_date,
    resolve_model,
)
from loopwright.policy.pricing import cost_usd
from loopwright.core.types import Usage

RAW = json.loads(resources.files("loopwright.policy").joinpath("models.json").read_text("utf-8"))

# anthropic-api.md section 5.4: the SDK's Model literal
REFERENCE_IDS = [
    "claude-fable-5-2", "claude-mythos-5-2", "claude-haiku-5-5", "claude-sonnet-5-5", "claude-fable-5-1",
    "claude-opus-5-5", "claude-mythos-5-1", "claude-sonnet-5", "claude-fable-5", "claude-mythos-5",
    "claude-opus-5", "claude-opus-4-8", "claude-opus-4-7", "claude-mythos-preview", "claude-opus-4-6",
    "claude-sonnet-4-6", "claude-haiku-4-5", "claude-haiku-4-5-20251001", "claude-opus-4-5",
    "claude-opus-4-5-20251101",
]  # fmt: skip


def test_table_header() -> None:
    assert model_table_date() == RAW["date"] == "2026-12-02"
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", model_table_date())
    assert "64000" in RAW["source"] and "32000" in RAW["source"]


@pytest.mark.parametrize("model_id", REFERENCE_IDS)
def test_every_reference_id_is_known(model_id: str) -> None:
    info = resolve_model(model_id)
    assert info.known and info.id == model_id and info.price is not None


@pytest.mark.parametrize("entry", RAW["models"], ids=lambda e: e["id"])
def test_every_row_is_complete_and_positive(entry: dict) -> None:
    assert {"id", "aliases", "context_window", "default_output", "max_output", "price"} <= set(entry)
    assert set(entry["price"]) == {"input", "output", "cache_write_5m", "cache_write_1h", "cache_read"}
    for value in (entry["context_window"], entry["default_output"], entry["max_output"], *entry["price"].values()):
        assert isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0
    assert entry["default_output"] <= entry["max_output"] < entry["context_window"]
    price = entry["price"]
    assert price["cache_read"] < price["input"] < price["cache_write_5m"] <= price["cache_write_1h"]
    assert price["input"] < price["output"]


def test_ids_and_aliases_are_unique_and_lower_case() -> None:
    names = [n for e in RAW["models"] for n in (e["id"], *e["aliases"])] + list(RAW["aliases"])
    assert len(names) == len(set(names))
    assert all(n == n.lower() for n in names)
    ids = {e["id"] for e in RAW["models"]}
    assert set(RAW["aliases"].values()) <= ids


@pytest.mark.parametrize(
    ("name", "model_id"),
    [
        ("opus", "claude-opus-5-5"),
        ("sonnet", "claude-sonnet-5"),
        ("haiku", "claude-haiku-4-5"),
        ("fable", "claude-fable-5-2"),
        ("  Sonnet ", "claude-sonnet-5"),
        ("CLAUDE-OPUS-4-7", "claude-opus-4-7"),
        ("claude-haiku-4-5-20251001", "claude-haiku-4-5-20251001"),
        ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5-20250929"),  # a dated id not listed
    ],
)
def test_resolution(name: str, model_id: str) -> None:
    info = resolve_model(name)
    assert info.known and info.id == model_id


def test_dated_ids_share_their_row() -> None:
    dated, plain = resolve_model("claude-haiku-4-5-20251001"), resolve_model("claude-haiku-4-5")
    assert (dated.context_window, dated.max_output, dated.price) == (plain.context_window, plain.max_output, plain.price)


def test_default_outputs() -> None:
    sonnet = resolve_model(DEFAULT_MODEL)
    assert (sonnet.context_window, sonnet.default_output, sonnet.max_output) == (1_000_000, 64_000, 128_000)
    haiku = resolve_model("haiku")
    assert (haiku.context_window, haiku.default_output, haiku.max_output) == (200_000, 32_000, 64_000)
    for info in known_models():
        assert info.default_output == {128_000: 64_000, 64_000: 32_000}[info.max_output]


def test_unknown_model_gets_a_conservative_default() -> None:
    assert resolve_model("Qwen/Qwen3-Coder") == ModelInfo("Qwen/Qwen3-Coder", 200_000, 32_000, 64_000, None, False)
    assert not resolve_model("claude-future-9").known


def test_known_models_matches_the_file() -> None:
    assert [m.id for m in known_models()] == [e["id"] for e in RAW["models"]]
    assert DEFAULT_MODEL in {m.id for m in known_models()}


# ---------------------------------------------------------------- pricing


def test_cost_of_a_known_call() -> None:
    # claude-sonnet-5: $2 in, $10 out, $2.50 5m cache write, $0.20 cache read per million tokens
    usage = Usage(input_tokens=1_000, output_tokens=2_000, cache_creation_input_tokens=10_000, cache_read_input_tokens=100_000)
    expected = (1_000 * 2 + 2_000 * 10 + 10_000 * 2.5 + 100_000 * 0.2) / 1e6  # = 0.067
    assert cost_usd(usage, resolve_model("sonnet")) == pytest.approx(expected) == pytest.approx(0.067)


def test_cost_of_a_million_tokens_each_is_the_price_row() -> None:
    info = resolve_model("claude-opus-4-8")
    assert cost_usd(Usage(1_000_000, 0, 0, 0), info) == pytest.approx(5.0)
    assert cost_usd(Usage(0, 1_000_000, 0, 0), info) == pytest.approx(25.0)
    assert cost_usd(Usage(0, 0, 1_000_000, 0), info) == pytest.approx(6.25)
    assert cost_usd(Usage(0, 0, 0, 1_000_000), info) == pytest.approx(0.5)


def test_haiku_5_5_uses_the_small_prompt_tier() -> None:
    assert resolve_model("claude-haiku-5-5").price == Price(0.10, 0.50, 0.125, 0.20, 0.01)


def test_unknown_model_costs_nothing() -> None:
    assert cost_usd(Usage(1_000, 1_000, 1_000, 1_000), resolve_model("mystery")) == 0.0


_counts = st.integers(min_value=0, max_value=10**9)


@given(a=st.builds(Usage, _counts, _counts, _counts, _counts), b=st.builds(Usage, _counts, _counts, _counts, _counts))
def test_cost_is_additive_and_non_negative(a: Usage, b: Usage) -> None:
    info = resolve_model("opus")
    assert cost_usd(a, info) >= 0
    assert cost_usd(a + b, info) == pytest.approx(cost_usd(a, info) + cost_usd(b, info))
