"""Auto mode's classifier: a separate, tool-less model call that decides a call the rules would
ask about, so an unattended loop does not stall on approvals while the harmful calls still stop.

It fails closed: an answer that cannot be read (after `TRIES` tries), a timeout or an API error
blocks. After `FALLBACK_IN_A_ROW` blocks in a row, or `FALLBACK_TOTAL` in the session, a block
is no longer final: the call goes to the person (headless: denied as any unapproved call) while
the run goes on; an allow resets the count in a row. Its spend is the run's (`classifier`)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from typing import Any
from dataclasses import dataclass

import anyio

from ..core.errors import ModelError
from ..core.events import Event, ModelCall, ModelUsage
from ..core.ports import Model
from ..core.types import Message, ModelRequest
from ..permissions import automode
from ..policy.models import resolve_model
from ..policy.pricing import cost_usd
from .accumulate import Accumulator

TRIES = 3
FALLBACK_IN_A_ROW = 3
FALLBACK_TOTAL = 20
TIMEOUT_S = 60.0
MAX_TOKENS = 256


@dataclass(frozen=True)
class Judgement:
    allowed: bool
    reason: str = ""
    evaluated: bool = True  # False: no verdict (unreadable, timeout, API error)
    fallback: bool = False  # blocked, and blocks have piled up: the person decides instead
    calls: tuple[dict[str, Any], ...] = ()  # its model calls (model, stop_reason, usage, duration_ms): telemetry's


class AutoClassifier:
    def __init__(self, model: Model, model_name: str, memory: Callable[[], str] = lambda: "",
                 read_only: frozenset[str] = frozenset()) -> None:
        self.model, self.model_name, self.memory, self.read_only = model, model_name, memory, read_only
        self.history: Callable[[], Sequence[Message]] = list
        self.emit: Callable[[Event], None] = lambda event: None
        self.usage = ModelUsage()
        self.in_a_row = self.total = 0
        self.timeout_s = _timeout()

    def bind(self, history: Callable[[], Sequence[Message]], emit: Callable[[Event], None] | None = None) -> None:
        """The conversation the classifier reads (the loop's, as it stands at each call), and where
        its calls are told (the transcript keeps them for `loopwright replay`)."""
        self.history = history
        if emit is not None:
            self.emit = emit

    def elsewhere(self) -> list[tuple[str, str, ModelUsage]]:
        return [("classifier", self.model_name, self.usage)] if self.usage.calls else []

    async def judge(self, tool_name: str, tool_input: dict[str, Any]) -> Judgement:
        history = automode.transcript(self.history(), tool_name, tool_input, self.read_only)
        if history is None:  # judged whole or not at all: a cut would hide what padding pushed out
            return self._counted(Judgement(False, automode.too_long(tool_name), evaluated=False))
        request = ModelRequest(model=self.model_name, max_tokens=MAX_TOKENS, system=automode.SYSTEM,
                               messages=(Message.user(automode.request_text(self.memory(), history)),),
                               extra={"temperature": 0})
        problem = "its answer could not be read"
        calls: list[dict[str, Any]] = []
        for _ in range(TRIES):
            text, problem = await self._call(request, problem, calls)
            verdict = automode.parse_answer(text) if text is not None else None
            if verdict is not None:
                blocked, reason = verdict
                return self._counted(Judgement(not blocked, reason, calls=tuple(calls)))
            if text is None:
                break  # an API error or a timeout: asking again at once would not help
        return self._counted(Judgement(False, f"the auto-mode classifier could not evaluate this call ({problem}); "
                                              "this is not a verdict on the call, it may succeed later",
                                       evaluated=False, calls=tuple(calls)))

    def _counted(self, judgement: Judgement) -> Judgement:
        if judgement.allowed:
            self.in_a_row = 0
            return judgement
        self.in_a_row += 1
        self.total += 1
        if self.in_a_row >= FALLBACK_IN_A_ROW or self.total >= FALLBACK_TOTAL:
            return Judgement(False, judgement.reason, judgement.evaluated, fallback=True, calls=judgement.calls)
        return judgement

    async def _call(self, request: ModelRequest, problem: str, calls: list[dict[str, Any]]) -> tuple[str | None, str]:
        acc = Accumulator()
        began = time.monotonic()
        with anyio.move_on_after(self.timeout_s) as scope:
            try:
                async for event in self.model.stream(request):
                    acc.add(event)
            except ModelError as error:
                return None, f"API error: {error.describe()}"
        if scope.cancelled_caught:
            return None, f"no answer within {self.timeout_s:g} s"
        response = acc.response(fallback_model=request.model)
        self.emit(ModelCall.of("classifier", request, response))
        self.usage = self.usage.add(response.usage, cost_usd(response.usage, resolve_model(response.model)))
        calls.append({"model": response.model, "id": response.id, "stop_reason": response.raw_stop_reason,
                      "usage": response.usage.to_api(), "duration_ms": int((time.monotonic() - began) * 1000)})
        return response.message.text, "its answer could not be read"


def classifier_for(model: Model, main: str, chosen: str | None, memory: Any, tools: Sequence[Any]) -> AutoClassifier:
    """A session's classifier: `chosen` or the main provider's small model; the memory files are
    read when the first call is judged, not at start-up (a fresh copy: the session's own memory
    keeps its record of what it gave), and shown to it as untrusted file text, each under its path."""
    text: list[str] = []

    def standing() -> str:
        if not text:
            files = memory.fork().at_start() if memory is not None else []
            text.append("\n\n".join(f"Contents of {f.path}:\n{f.text}" for f in files))
        return text[0]

    return AutoClassifier(model, resolve_model(chosen or default_model(main)).id, standing,
                          frozenset(t.name for t in tools if t.read_only))


def default_model(main: str) -> str:
    """The main provider's small model: haiku beside an Anthropic model, else the main model."""
    return "haiku" if resolve_model(main).id.startswith("claude-") else main


def _timeout() -> float:
    try:
        value = float(os.environ.get("LOOPWRIGHT_CLASSIFIER_TIMEOUT", TIMEOUT_S))
    except ValueError:
        return TIMEOUT_S
    return value if value > 0 else TIMEOUT_S
