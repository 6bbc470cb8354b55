"""The adversarial judge of parallel attempts: one tool-less model call given, per eligible
attempt, its diff, its check results and its final summary, in a shuffled order under neutral
labels; told to find the defects of each before choosing; answering as JSON. It fails closed:
an answer that cannot be read is asked for once more, then there is no winner."""

from __future__ import annotations

import json
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.errors import ModelError
from ..core.events import ModelUsage
from ..core.ports import Model
from ..core.types import Message, ModelRequest
from ..policy.models import resolve_model
from ..policy.pricing import cost_usd
from ..engine.accumulate import Accumulator

SYSTEM = """You are the reviewer of several independent attempts at the same software task. Be \
adversarial: for each attempt, look for defects first — wrong or incomplete behaviour, tests \
weakened or skipped, changes outside the task, hard-coded answers, missing edge cases, security \
problems. Only then choose. An attempt with a defect that makes it wrong must not win; choose no \
winner rather than a wrong one. Passing checks are evidence, not proof.

Answer with one JSON object and nothing else:
{"attempts": [{"label": "A", "defects": ["…"], "verdict": "acceptable" or "reject"}, …],
 "winner": "A" or null, "reasons": "why this one, or why none"}"""

SCHEMA = {
    "type": "object", "required": ["attempts", "winner", "reasons"], "additionalProperties": False,
    "properties": {
        "attempts": {"type": "array", "items": {
            "type": "object", "required": ["label", "defects", "verdict"], "additionalProperties": False,
            "properties": {"label": {"type": "string"}, "defects": {"type": "array", "items": {"type": "string"}},
                           "verdict": {"type": "string", "enum": ["acceptable", "reject"]}}}},
        "winner": {"type": ["string", "null"]},
        "reasons": {"type": "string"},
    },
}


@dataclass(frozen=True)
class Candidate:
    number: int  # the attempt's own number (1-based)
    diff: str
    checks: str
    summary: str


@dataclass
class Ruling:
    winner: int | None  # an attempt's number
    reasons: str
    defects: dict[int, list[str]] = field(default_factory=dict)
    verdicts: dict[int, str] = field(default_factory=dict)
    order: list[int] = field(default_factory=list)  # attempt numbers in the order shown
    usage: ModelUsage = field(default_factory=ModelUsage)
    model: str = ""
    # each model call that was answered (model, id, stop_reason, usage as the API gives it,
    # duration_ms, cost_usd): telemetry draws them as chat spans
    calls: list[dict[str, Any]] = field(default_factory=list)


def labels(n: int) -> list[str]:
    return [chr(ord("A") + i) if i < 26 else f"A{i}" for i in range(n)]


def request_text(task: str, shown: Sequence[tuple[str, Candidate]]) -> str:
    parts = [f"TASK:\n{task}"]
    for label, c in shown:
        parts.append(f"=== ATTEMPT {label} ===\nFINAL SUMMARY:\n{c.summary or '(none)'}\n\nCHECKS:\n"
                     f"{c.checks or '(no checks configured)'}\n\nDIFF:\n{c.diff or '(no changes)'}")
    return "\n\n".join(parts)


def parse(text: str, by_label: dict[str, int]) -> Ruling | None:
    """The ruling in the judge's text, or None when it cannot be read or names no shown attempt."""
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        return None
    try:
        data = json.loads(text[start:end + 1])
    except ValueError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("attempts"), list):
        return None
    winner = data.get("winner")
    if winner is not None and winner not in by_label:
        return None
    ruling = Ruling(by_label[winner] if winner is not None else None, str(data.get("reasons") or ""))
    for entry in data["attempts"]:
        if isinstance(entry, dict) and entry.get("label") in by_label:
            number = by_label[entry["label"]]
            ruling.defects[number] = [str(d) for d in entry.get("defects") or [] if isinstance(d, (str, int, float))]
            ruling.verdicts[number] = str(entry.get("verdict") or "")
    if ruling.winner is not None and ruling.verdicts.get(ruling.winner) == "reject":
        return None  # a winner its own review rejects: contradictory, so unreadable
    return ruling


async def judge(model: Model, model_name: str, task: str, candidates: Sequence[Candidate],
                rng: random.Random) -> Ruling:
    shuffled = list(candidates)
    rng.shuffle(shuffled)
    shown = list(zip(labels(len(shuffled)), shuffled))
    by_label = {label: c.number for label, c in shown}
    request = ModelRequest(model=model_name, max_tokens=4096, system=SYSTEM,
                           messages=(Message.user(request_text(task, shown)),),
                           extra={"output_config": {"format": {"type": "json_schema", "schema": SCHEMA}}})
    usage, problem = ModelUsage(), "its answer could not be read"
    calls: list[dict[str, Any]] = []
    for _ in range(2):  # an unreadable answer is asked for once more
        acc, began = Accumulator(), time.monotonic()
        try:
            async for event in model.stream(request):
                acc.add(event)
        except ModelError as error:
            problem = f"API error: {error.describe()}"
            break
        response = acc.response(fallback_model=model_name)
        cost = cost_usd(response.usage, resolve_model(response.model))
        usage = usage.add(response.usage, cost)
        calls.append({"model": response.model, "id": response.id, "stop_reason": response.raw_stop_reason,
                      "usage": response.usage.to_api(), "duration_ms": int((time.monotonic() - began) * 1000),
                      "cost_usd": cost})
        ruling = parse(response.message.text, by_label)
        if ruling is not None:
            ruling.order, ruling.usage, ruling.model = [c.number for c in shuffled], usage, model_name
            ruling.calls = calls
            return ruling
    return Ruling(None, f"no winner: the judge gave no usable ruling ({problem})", order=[c.number for c in shuffled],
                  usage=usage, model=model_name, calls=calls)


def describe_order(order: Sequence[int]) -> dict[str, Any]:
    return {label: number for label, number in zip(labels(len(order)), order)}
