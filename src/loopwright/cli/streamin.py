"""`--input-format stream-json`: user messages arrive as JSON lines on stdin, and each one is a
turn of one session (its own `--max-turns`), answered in stream-json with a `result` line per
turn. `"shouldQuery": false` adds a message without running a turn: it goes with the next one.
`"client_composed": true` (the Agent SDK's `verbatim_prompts`) delivers a message as written: a
leading `/name` is text, never a command, and its `@path`s are not attached (other messages'
are, as at the terminal: `cli.mentioned`). This module reads one user line; `cli.sdk.mode` serves the stream with its control channel."""

from __future__ import annotations

import json

from ..core import jsonsafe
from ..core.errors import UsageError
from ..core.types import ModelText

EXAMPLE = '{"type":"user","message":{"role":"user","content":"…"}}'
MAX_LINE_CHARS = 10 * 1024 * 1024  # one message; the same cap as a prompt piped to -p


def parse_line(line: str, number: int) -> tuple[str, bool]:
    """A stdin line's text (a `ModelText` when the client composed it: delivered as written) and
    whether it asks for a turn."""
    where = f"stdin line {number}"
    try:
        data = jsonsafe.loads(line)
    except jsonsafe.JSONDepthError as exc:
        raise UsageError(f"{where}: {exc.msg} (the cap); expected a user message such as {EXAMPLE}") from None
    except ValueError as exc:
        detail = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
        raise UsageError(f"{where}: not JSON ({detail}); expected a user message such as {EXAMPLE}") from None
    message = data.get("message") if isinstance(data, dict) else None
    if not isinstance(message, dict) or data.get("type") != "user" or message.get("role") != "user":
        raise UsageError(f"{where}: expected a user message such as {EXAMPLE}")
    content = message.get("content")
    if isinstance(content, str):
        text = content
    elif isinstance(content, list) and all(isinstance(b, dict) and b.get("type") == "text"
                                           and isinstance(b.get("text"), str) for b in content):
        text = "\n\n".join(b["text"] for b in content)
    else:
        raise UsageError(f"{where}: content must be a string or a list of text blocks (other block types "
                         "are not supported yet)")
    verbatim = data.get("client_composed", False)
    if not isinstance(verbatim, bool):
        raise UsageError(f"{where}: client_composed: expected true or false, got {verbatim!r}")
    if verbatim:
        return ModelText(text), data.get("shouldQuery", True) is not False
    command = text.strip().split(maxsplit=1)[0] if text.strip() else ""
    if command in ("/goal", "/loop"):  # sent as a plain prompt they would silently mean something else
        raise UsageError(f"{where}: {command} is not supported in stream-json input yet; run it with -p \"{command} …\"")
    return text, data.get("shouldQuery", True) is not False
