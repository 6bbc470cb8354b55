"""The CLI's last resort: an exception nobody expected ends the command with one error line that
names the crash log holding its traceback, and, for `--output-format json|stream-json`, a result
object scripts can read (`terminal_reason: internal_error`). Exit 1."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .options import Options


def report_crash(exc: Exception, opts: Options | None) -> int:
    from ..core.errors import crash_report
    from ..stores.crashlog import write_crash_log

    line = crash_report(exc, write_crash_log)
    print(f"loopwright: error: {line}", file=sys.stderr, flush=True)
    early_result(opts, None, line, "internal_error")
    return 1


def early_result(opts: Options | None, args: list[str] | None, line: str, reason: str = "startup_error") -> None:
    """For `--output-format json|stream-json`, the result object of a command that ended before
    its run began (a usage error, a session that cannot be opened, a crash), so a script reading
    stdout always gets one. `args`: the raw arguments, when the flags could not be parsed."""
    fmt = opts.output_format if opts is not None else _format_in(args or [])
    if fmt not in ("json", "stream-json"):
        return
    result = {"type": "result", "subtype": "error_during_execution", "is_error": True, "result": "",
              "session_id": (opts.session_id if opts is not None else None) or "", "terminal_reason": reason,
              "errors": [line]}
    try:
        print(json.dumps(result), flush=True)
    except (OSError, ValueError):
        pass  # stdout is gone: the line on stderr has said it


def _format_in(args: list[str]) -> str | None:
    for i, arg in enumerate(args):
        if arg == "--output-format" and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith("--output-format="):
            return arg.partition("=")[2]
    return None
