"""The CLI's last resort: an exception nobody expected ends the command with one error line that
names the crash log holding its traceback, and, for `--output-format json|stream-json`, a result
object scripts can read (`terminal_reason: internal_error`). Exit 1."""

from __future__ import annotations

import json
import sys
from typing import Any


def report_crash(exc: Exception, opts: Any) -> int:
    from ..engine.lastresort import crash_report
    from ..stores.crashlog import write_crash_log

    line = crash_report(exc, write_crash_log)
    print(f"loopwright: error: {line}", file=sys.stderr, flush=True)
    if getattr(opts, "output_format", None) in ("json", "stream-json"):
        result = {"type": "result", "subtype": "error_during_execution", "is_error": True, "result": "",
                  "session_id": getattr(opts, "session_id", None) or "", "terminal_reason": "internal_error",
                  "errors": [line]}
        try:
            print(json.dumps(result), flush=True)
        except (OSError, ValueError):
            pass  # stdout is gone: the line on stderr has said it
    return 1
