"""Tool calls that must not run (cut off by the output token limit, input that is not a JSON
object, or left unrun by a full context window) and what the conversation holds in their place."""

from __future__ import annotations

from collections.abc import Iterable

from ..core.types import Message, TextBlock, ToolResultBlock, ToolUseBlock

__all__ = ["CUT_TOOL_NOTE", "EXCERPT", "MALFORMED_ANSWER", "MALFORMED_NOTE", "UNRUN_TOOL_NOTE", "calls_as_notes",
           "malformed_answer", "malformed_answers", "sanitize"]

CUT_TOOL_NOTE = "[a call to the `{name}` tool was cut off by the output token limit here; it did not run]"
UNRUN_TOOL_NOTE = ("[a call to the `{name}` tool was here; it did not run, because the context window was full; "
                   "call it again if it is still needed]")
MALFORMED_NOTE = "[a call to the `{name}` tool whose input was not a JSON object was here; it did not run]"
MALFORMED_ANSWER = (
    "This call to the `{name}` tool did not run, because its input is not a usable JSON object: {problem}. "
    "A tool's input must be one JSON object, such as {{\"name\": \"value\"}}.\n\n"
    "What arrived ({size}):\n{excerpt}\n\n"
    "Usual causes: a backslash or a control character (a newline, a tab) inside a string that is not "
    "escaped (write \\\\ and \\n), an unescaped quote, a trailing comma, an answer cut off before its JSON "
    "was complete, or the arguments sent as a string or a list instead of an object. Call `{name}` again "
    "with its input as one valid JSON object; if the input is very large, split the work into smaller calls."
)
EXCERPT = 200  # characters of a malformed input the model is shown


def malformed_answer(block: ToolUseBlock) -> str:
    """The error result for a call whose input could not be used."""
    raw = block.raw_input or ""
    size = f"{len(raw)} characters" + (f", the first {EXCERPT} shown" if len(raw) > EXCERPT else "")
    return MALFORMED_ANSWER.format(name=block.name, problem=block.problem or "it did not arrive whole",
                                   size=size, excerpt=raw[:EXCERPT] if raw else "(nothing)")


def malformed_answers(blocks: Iterable[ToolUseBlock]) -> tuple[ToolResultBlock, ...]:
    """The error results that answer calls whose input could not be used, so they never run."""
    return tuple(ToolResultBlock(b.id, malformed_answer(b), True) for b in blocks)


def sanitize(message: Message) -> Message:
    """The message as it may enter the conversation with no tool results after it: a call that
    must never run (cut off, or malformed input) becomes a note, since a tool_use must be answered."""
    if all(not isinstance(b, ToolUseBlock) or b.complete for b in message.content):
        return message
    blocks = tuple(
        TextBlock((CUT_TOOL_NOTE if b.problem is None else MALFORMED_NOTE).format(name=b.name))
        if isinstance(b, ToolUseBlock) and not b.complete else b
        for b in message.content
    )
    return Message(message.role, blocks)


def calls_as_notes(message: Message) -> Message:
    """A response cut by a full context window, as it is continued after compaction: none of its
    calls ran, so each becomes a note (a tool_use would need a result)."""
    message = sanitize(message)
    return Message(message.role, tuple(TextBlock(UNRUN_TOOL_NOTE.format(name=b.name)) if isinstance(b, ToolUseBlock)
                                       else b for b in message.content))
