"""A small MCP server of our own for the tests, on the official SDK's server side:
`python toolbox.py` speaks stdio; `python toolbox.py --http PORT` serves streamable HTTP on
127.0.0.1 (`--sse PORT`: the old SSE transport). Tools: add, echo, shout (structured), fail, huge, sleepy, count (reports progress), crash, grow (adds a tool
and says tools/list_changed), record (appends to $TOOLBOX_LOG: a call's side effect)."""

from __future__ import annotations

import os
import sys
import time

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ToolAnnotations

app = MCPServer("toolbox", instructions="Tools for loopwright's tests.")


@app.tool(annotations=ToolAnnotations(read_only_hint=True))
def add(a: int, b: int) -> str:
    """Add two integers."""
    return str(a + b)


@app.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@app.tool()
def shout(text: str) -> dict:
    """Upper-case the text, as structured content."""
    return {"loud": text.upper()}


@app.tool()
def fail(why: str) -> str:
    """Always fails."""
    raise ValueError(f"failing on purpose: {why}")


@app.tool()
def huge(chars: int) -> str:
    """Return that many characters."""
    return "x" * chars


@app.tool()
def sleepy(seconds: float) -> str:
    """Sleep, then answer."""
    time.sleep(seconds)
    return "awake"


@app.tool()
async def count(steps: int, pause: float, ctx: Context) -> str:
    """Count to `steps`, reporting progress at each, `pause` seconds apart."""
    import anyio

    for step in range(1, steps + 1):
        await anyio.sleep(pause)
        await ctx.report_progress(step, steps, f"step {step}")
    return f"counted to {steps}"


@app.tool()
def crash() -> str:
    """The server process dies mid-call."""
    sys.stderr.write("toolbox: crashing on purpose\n")
    sys.stderr.flush()
    os._exit(3)


@app.tool()
async def grow(ctx: Context) -> str:
    """Add a tool named `extra` and tell the client the list changed."""
    if "extra" not in {t.name for t in app._tool_manager.list_tools()}:
        app.add_tool(lambda: "extra ran", name="extra", description="Appeared later.")
    await ctx.session.send_tool_list_changed()
    return "grown"


@app.tool()
def record(note: str, then_sleep: float = 0) -> str:
    """Append the note to $TOOLBOX_LOG (each call's effect is visible on disk), then sleep."""
    with open(os.environ["TOOLBOX_LOG"], "a", encoding="utf-8") as f:
        f.write(note + "\n")
    time.sleep(then_sleep)
    return f"recorded {note}"


@app.resource("notes://today", name="today", description="Today's note.", mime_type="text/plain")
def today() -> str:
    return "buy milk"


@app.prompt(description="Ask for a review of one file.")
def review(path: str, focus: str = "bugs") -> str:
    return f"Review {path} and look for {focus}."


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        app.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    elif len(sys.argv) == 3 and sys.argv[1] == "--sse":
        app.run("sse", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        app.run()
