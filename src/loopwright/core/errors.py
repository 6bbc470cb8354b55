"""The one error tree. Every exception loopwright raises on purpose is a `LoopwrightError`;
each class carries typed fields and the process exit code it maps to.

    LoopwrightError                 exit 1
    ├── UsageError                  exit 2   bad flags, bad input files, invalid settings
    ├── ModelError                  exit 1   a model call failed; `kind` says how (table below)
    ├── SessionError                exit 1   a session cannot be found, read or written
    └── ToolInputError              exit 1   a tool's input failed its schema (becomes an is_error result)

`ModelError.kind` is provider-neutral; adapters map HTTP statuses, error types and transport
failures to it through tables, and `policy.retry` decides on it:

    rate_limit  spend_limit  overloaded  server  network  stream_incomplete
    prompt_too_long  invalid_request  not_found  authentication  permission  billing
    unreachable  (refused or no such host, and this base URL never answered in this process)

An exception raised by mistake (a bug) is no part of the tree: the last resort of the loop and of
the CLI reports it in one line (`crash_report`) that names where its traceback went.
"""

from __future__ import annotations

from typing import Callable, Literal, get_args

ErrorKind = Literal[
    "rate_limit",
    "spend_limit",
    "overloaded",
    "server",
    "network",
    "stream_incomplete",
    "prompt_too_long",
    "invalid_request",
    "not_found",
    "authentication",
    "permission",
    "billing",
    "unreachable",
]
ERROR_KINDS: tuple[str, ...] = get_args(ErrorKind)


class LoopwrightError(Exception):
    exit_code: int = 1


class UsageError(LoopwrightError):
    """The user asked for something malformed: a flag, a file, a setting. Exit 2."""

    exit_code = 2


class SessionError(LoopwrightError):
    """A session cannot be found, read or written (exit 1, as Claude Code for an unknown ID)."""


class ToolInputError(LoopwrightError):
    """A tool call's input does not fit the tool's schema; `message` tells the model what to fix."""


class ModelError(LoopwrightError):
    """A model call failed. Nothing of the failed call ran (no tool of it was executed)."""

    def __init__(
        self,
        kind: ErrorKind,
        message: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
        should_retry: bool | None = None,
        request_id: str | None = None,
        error_type: str | None = None,
    ) -> None:
        super().__init__(message)
        self.kind: ErrorKind = kind
        self.message = message
        self.status = status
        self.retry_after = retry_after
        self.should_retry = should_retry
        self.request_id = request_id
        self.error_type = error_type

    def __repr__(self) -> str:
        return f"ModelError(kind={self.kind!r}, status={self.status!r}, message={self.message!r})"

    def describe(self) -> str:
        status = f" ({self.status})" if self.status else ""
        rid = f" [request {self.request_id}]" if self.request_id else ""
        return f"API error{status} {self.kind}: {self.message}{rid}"


def reader_gone(exc: BaseException) -> bool:
    """Whether `exc` is only a closed pipe (`BrokenPipeError`, alone or every member of an
    exception group): whoever read the output went away (`loopwright sessions | head -1`). Not a
    bug, so no last resort turns it into a crash; the command's entry point ends quietly."""
    if isinstance(exc, BaseExceptionGroup):
        return all(reader_gone(inner) for inner in exc.exceptions)
    return isinstance(exc, BrokenPipeError)


CrashLog = Callable[[BaseException], "str | None"]  # writes the traceback somewhere; says where


def crash_report(exc: BaseException, crash_log: CrashLog | None) -> str:
    """The error line of an internal error: what it was and where its traceback went."""
    where = None
    if crash_log is not None:
        try:
            where = crash_log(exc)
        except Exception:  # noqa: BLE001 - the log is a courtesy; the run still ends with its result
            where = None
    said = str(exc)
    said = said if len(said) <= 300 else said[:297] + "..."
    line = f"Internal error: {type(exc).__name__}{': ' + said if said else ''} (a bug in loopwright"
    return f"{line}; the traceback is in {where})" if where else f"{line})"
