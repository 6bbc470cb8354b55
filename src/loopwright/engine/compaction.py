"""Context compaction, the pure parts: where to cut the conversation (never between a tool call
and its result), the summary request, and the conversation rebuilt around the summary. The loop
makes the model call."""

from __future__ import annotations

import json
import re
from typing import Sequence

from ..core.fastclass import dataclass
from ..core.types import Message, ModelRequest, TextBlock, ToolResultBlock

KEEP_EXCHANGES = 2

SUMMARY_INSTRUCTIONS = """\
Stop the task for a moment: the conversation above is about to be replaced by a summary, \
because the context window is nearly full. Do not call any tools. Reply with plain text only, \
in this form:

<summary>
1. Request: every instruction and goal the user gave, in their words where it matters.
2. State: the files, commands and facts that matter now, with exact paths and names.
3. Done: what has been completed and verified, and how it was verified.
4. Errors: problems met and how they were solved (or not).
5. Next: what remains, and the very next step.
</summary>

Be complete but brief: the work continues from this summary alone, plus the most recent \
messages, which are kept word for word."""

RESUME_PREFIX = (
    "This conversation was compacted because the context window filled up. The summary of the "
    "earlier part follows; the most recent messages are kept unchanged after it. Continue the "
    "task from where it stands, without asking the user anything new.\n\n"
)


@dataclass(frozen=True, slots=True)
class Cut:
    older: tuple[Message, ...]
    kept: tuple[Message, ...]


def plan(messages: list[Message] | tuple[Message, ...], keep: int = KEEP_EXCHANGES) -> Cut | None:
    """Split into an older part to summarise and the last `keep` exchanges (an assistant message
    and the user message after it) to keep word for word. None when there is nothing older
    than the kept exchanges but the first prompt: then compaction cannot free room."""
    assistant_at = [i for i, m in enumerate(messages) if m.role == "assistant"]
    if len(assistant_at) <= keep:
        return None
    cut = assistant_at[-keep] if keep else len(messages)
    older, kept = tuple(messages[:cut]), tuple(messages[cut:])
    if not any(m.role == "assistant" for m in older):
        return None
    return Cut(older, kept)


def summary_request(cut: Cut, model: str, system: str, max_tokens: int, focus: str = "") -> ModelRequest:
    """The older part, with the summary instructions added to its last user message (after any
    tool results, where text is allowed), and no tools. `focus`: what the person asked the
    summary to keep in view (`/compact FOCUS`)."""
    older = list(cut.older)
    last = older[-1]
    asked = SUMMARY_INSTRUCTIONS + (f"\n\nFocus the summary on: {focus}" if focus else "")
    if last.role == "user":
        older[-1] = Message("user", last.content + (TextBlock(asked),))
    else:
        older.append(Message.user(asked))
    return ModelRequest(model=model, messages=tuple(older), max_tokens=max_tokens, system=system)


_SUMMARY = re.compile(r"<summary>(.*?)(?:</summary>|$)", re.S)


def extract_summary(text: str) -> str:
    match = _SUMMARY.search(text)
    return (match.group(1) if match else text).strip()


def rebuild(summary: str, cut: Cut, opening: Sequence[str] = ()) -> list[Message]:
    """The conversation after compaction: one user message with what opens every conversation
    (`opening`, e.g. the memory files) and the summary, then the kept tail (which starts with an
    assistant message, so roles still alternate)."""
    summary_text = RESUME_PREFIX + "<summary>\n" + summary + "\n</summary>"
    head = Message("user", (*(TextBlock(t) for t in opening), TextBlock(summary_text)))
    return [head, *cut.kept]


def estimate_tokens(messages: list[Message] | tuple[Message, ...]) -> int:
    """A cheap upper-side estimate (about 4 characters a token) for messages the API has not
    counted yet."""
    chars = 0
    for m in messages:
        for b in m.content:
            if isinstance(b, (TextBlock, ToolResultBlock)):
                chars += len(b.text)
            else:
                chars += len(json.dumps(b.to_api()))
    return chars // 4 + 4 * len(messages)
