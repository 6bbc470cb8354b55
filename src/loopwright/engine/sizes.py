"""What the loop lets into the conversation from tools and hooks, bounded and made sendable: a
tool result keeps at most `MAX_RESULT_CHARS` (its start and end, with a note of what was left
out); hook `additionalContext` at most `MAX_CONTEXT_CHARS` a text and `MAX_CONTEXT_TOTAL` a
message (cut, with a note); lone surrogates (undecodable file names, a stray `\\ud800`) are made
visible escapes, so every message encodes as UTF-8."""

from __future__ import annotations

from typing import Iterable

from ..core.jsonsafe import valid_text
from ..core.types import ToolResultBlock

MAX_RESULT_CHARS = 200_000  # about 50,000 tokens: more would crowd out the conversation
MAX_CONTEXT_CHARS = 10_000  # Claude Code's cap on a hook's text
MAX_CONTEXT_TOTAL = 50_000  # all hooks together, for one message


def bounded_result(result: ToolResultBlock) -> ToolResultBlock:
    """The result as the model will get it: text capped and valid; other content untouched."""
    if not isinstance(result.content, str):
        return result
    text = valid_text(result.content)
    if len(text) > MAX_RESULT_CHARS:
        half = MAX_RESULT_CHARS // 2
        text = (f"{text[:half]}\n\n... [{len(text) - 2 * half:,} characters omitted: this result was "
                f"{len(text):,} characters, over the {MAX_RESULT_CHARS:,} a tool result may hold; ask for less, "
                f"e.g. a narrower search or a range of lines] ...\n\n{text[-half:]}")
    if text is result.content:
        return result
    return ToolResultBlock(result.tool_use_id, text, result.is_error)


def bounded_context(texts: Iterable[str]) -> list[str]:
    """Hook `additionalContext` texts as they may enter one message: each cut past
    `MAX_CONTEXT_CHARS`, and none past `MAX_CONTEXT_TOTAL` together, each cut said in the text."""
    kept: list[str] = []
    room = MAX_CONTEXT_TOTAL
    for text in texts:
        text = valid_text(str(text))
        cap = min(MAX_CONTEXT_CHARS, room)
        if len(text) > cap:
            why = (f"the {MAX_CONTEXT_CHARS:,}-character cap on one hook's context" if cap == MAX_CONTEXT_CHARS
                   else f"the {MAX_CONTEXT_TOTAL:,}-character cap on hook context in one message")
            text = f"{text[:cap]}\n[hook context cut: {len(text):,} characters, over {why}]"
        kept.append(text)
        room -= min(len(text), room)
    return kept
