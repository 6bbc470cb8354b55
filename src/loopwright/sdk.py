"""The Agent SDK's one-line switch, from Python: `ClaudeAgentOptions` whose CLI is loopwright.

    from claude_agent_sdk import query
    from loopwright.sdk import options

    async for message in query(prompt="make the tests pass", options=options(max_turns=20)):
        print(message)

`options(**fields)` takes every `ClaudeAgentOptions` field; `cli_path()` is the `loopwright`
executable it points at (the one installed beside this Python, else the first on PATH)."""

from __future__ import annotations

import os
import shutil
import sys
from typing import Any

from .core.errors import UsageError


def cli_path() -> str:
    beside = os.path.join(os.path.dirname(sys.executable), "loopwright")
    if os.access(beside, os.X_OK):
        return beside
    found = shutil.which("loopwright")
    if found is None:
        raise UsageError("no `loopwright` executable beside this Python or on PATH: install the package "
                         "(pip install loopwright) or pass cli_path to ClaudeAgentOptions yourself")
    return found


def options(**fields: Any) -> Any:
    """`claude_agent_sdk.ClaudeAgentOptions(cli_path=<loopwright>, **fields)`."""
    try:
        from claude_agent_sdk import ClaudeAgentOptions
    except ImportError:
        raise UsageError("loopwright.sdk needs the Agent SDK: pip install claude-agent-sdk") from None
    fields.setdefault("cli_path", cli_path())
    return ClaudeAgentOptions(**fields)
