"""`--input-format stream-json`: user messages arrive as JSON lines on stdin, and each one is a
turn of one session (its own `--max-turns`), answered in stream-json with a `result` line per
turn. `"shouldQuery": false` adds a message without running a turn: it goes with the next one."""

from __future__ import annotations

import asyncio
import sys
from typing import TYPE_CHECKING, Any, Callable

from ..core import jsonsafe
from ..core.errors import UsageError
from ..core.events import Event, RunResult

if TYPE_CHECKING:
    from .options import Options

EXAMPLE = '{"type":"user","message":{"role":"user","content":"…"}}'
MAX_LINE_CHARS = 10 * 1024 * 1024  # one message; the same cap as a prompt piped to -p


def parse_line(line: str, number: int) -> tuple[str, bool]:
    """A stdin line's text and whether it asks for a turn."""
    where = f"stdin line {number}"
    try:
        data = jsonsafe.loads(line)
    except jsonsafe.JSONDepthError as exc:
        raise UsageError(f"{where}: {exc.msg} (the cap); expected a user message such as {EXAMPLE}") from None
    except ValueError as exc:
        raise UsageError(f"{where}: not JSON ({exc.msg}); expected a user message such as {EXAMPLE}") from None
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
    command = text.strip().split(maxsplit=1)[0] if text.strip() else ""
    if command in ("/goal", "/loop"):  # sent as a plain prompt they would silently mean something else
        raise UsageError(f"{where}: {command} is not supported in stream-json input yet; run it with -p \"{command} …\"")
    return text, data.get("shouldQuery", True) is not False


async def serve(agent: Any, emit: Callable[[Event], None], read_line: Callable[[], str]) -> RunResult | None:
    """Run a turn for each message until stdin ends; the last turn's result (None: no turn ran)."""
    result, pending, number = None, [], 0
    while True:
        line = await asyncio.to_thread(read_line)
        if not line:
            break
        number += 1
        if len(line.rstrip("\n")) > MAX_LINE_CHARS:
            raise UsageError(f"stdin line {number} is longer than {MAX_LINE_CHARS:,} characters, the cap for one "
                             "message; send a shorter message, or put the long text in a file and name it")
        if not line.strip():
            continue
        text, query = parse_line(line, number)
        pending.append(text)
        if query:
            result = await agent.run("\n\n".join(pending), on_event=emit)
            pending = []
            if result.terminal_reason == "aborted":
                break  # Ctrl-C: no further turns
    if pending:
        print(f"loopwright: warning: {len(pending)} message(s) with shouldQuery false were never sent: no turn "
              "followed them", file=sys.stderr, flush=True)
    return result


def _read_line() -> str:
    """One line of stdin, cut one character past the cap: a longer line is refused, never held."""
    return sys.stdin.readline(MAX_LINE_CHARS + 1)


def run_stream_input(opts: Options) -> int:
    from .core import (
        build_agent,
        foreground,
        init_fields,
        load_cli_settings,
        make_emitter,
        open_cli_session,
    )

    if opts.output_format != "stream-json":
        raise UsageError("--input-format stream-json needs --output-format stream-json")
    if opts.prompt:
        raise UsageError("--input-format stream-json reads the messages from stdin: give no prompt argument")
    settings = load_cli_settings(opts)
    agent = build_agent(opts, settings)
    session = open_cli_session(opts, agent)
    emit = make_emitter("stream-json", opts.verbose, agent.session_id, bool(opts.include_hook_events), init_fields(settings, agent))
    try:
        result = asyncio.run(foreground(agent, lambda: serve(agent, emit, _read_line), emit, agent.interrupt))
    finally:
        session.close()
    return 0 if result is None else result.exit_code
