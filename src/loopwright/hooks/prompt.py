"""Prompt hooks: a small model reads the hook's prompt (with `$ARGUMENTS` replaced by the event
JSON) and answers `{"ok": bool, "reason": str, "impossible"?: bool}`; ok:false blocks."""

from __future__ import annotations

import re
from typing import Any, Callable

from ..engine.accumulate import Accumulator
from ..core import jsonsafe
from ..core.errors import ModelError
from ..policy.models import resolve_model
from ..core.ports import Model
from ..core.types import Message, ModelRequest, Response
from .output import BLOCKABLE, Answer, cap, no_answer
from .spec import PromptSpec

DEFAULT_PROMPT_MODEL = "haiku"
MAX_TOKENS = 4096
PROMPT_HOOK_SYSTEM = (
    "You check a hook condition for an AI coding agent's loop. Read the condition and the event data "
    "the user gives you and decide whether the condition holds. Answer with one JSON object and "
    'nothing else: {"ok": true} when it holds, or {"ok": false, "reason": "<what is missing, '
    'written as an instruction to the agent>"} when it does not. Add "impossible": true only when '
    "the condition can never be met, whatever the agent does."
)
_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


def render(prompt: str, payload_json: str) -> str:
    if "$ARGUMENTS" in prompt:
        return prompt.replace("$ARGUMENTS", payload_json)
    return f"{prompt}\n\n{payload_json}"


async def ask(model: Model, spec: PromptSpec, event: str, payload_json: str,
              spent: Callable[[ModelRequest, Response], None] = lambda q, r: None) -> tuple[Answer, str]:
    """The evaluator's answer and its raw text; `spent` hears of each answered call (its usage,
    and what it was asked and answered, for the transcript)."""
    request = ModelRequest(model=resolve_model(spec.model or DEFAULT_PROMPT_MODEL).id,
                           messages=(Message.user(render(spec.prompt, payload_json)),),
                           max_tokens=MAX_TOKENS, system=PROMPT_HOOK_SYSTEM)
    acc = Accumulator()
    try:
        async for item in model.stream(request):
            acc.add(item)
    except ModelError as exc:
        return no_answer(f"the evaluator model failed: {exc.describe()}"), ""
    if not acc.finished:
        return no_answer("the evaluator model's response ended early"), ""
    response = acc.response(fallback_model=request.model)
    spent(request, response)
    return verdict(event, response.message.text), response.message.text


def verdict(event: str, text: str) -> Answer:
    data = _parse(text)
    if data is None or not isinstance(data.get("ok"), bool):
        return no_answer(f'the evaluator did not answer {{"ok": true|false, ...}}: {text.strip()[:200]!r}')
    if data["ok"] or data.get("impossible") is True:  # impossible: stopping is the only way out
        return Answer()
    reason = cap(str(data.get("reason") or "the hook's condition is not met"))
    if event == "PreToolUse":
        return Answer(decision="deny", reason=reason)
    if event in BLOCKABLE:
        return Answer(decision="block", reason=reason)
    return Answer(notice=reason)


def _parse(text: str) -> dict[str, Any] | None:
    found = _OBJECT.search(text)  # tolerate code fences and a sentence around the object
    if found is None:
        return None
    try:
        data = jsonsafe.loads(found.group(0))
    except ValueError:
        return None
    return data if isinstance(data, dict) else None
