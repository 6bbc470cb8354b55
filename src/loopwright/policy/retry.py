"""Pure retry policy for failed model calls: which error kinds are retried, how long to wait
(exponential backoff with jitter, `retry-after` as a floor), and when to stop."""

from __future__ import annotations

from ..core.errors import ErrorKind, ModelError

BASE_DELAY_S = 0.5
MAX_DELAY_S = 32.0
JITTER = 0.25

# The retry counter of each retryable error kind. Kinds not listed are final (spend limits,
# authentication, bad requests, prompt too long): retrying cannot help.
RETRYABLE: dict[ErrorKind, str] = {
    "rate_limit": "rate_limit",
    "overloaded": "overloaded",
    "server": "server",
    "network": "network",
    "stream_incomplete": "network",
}


def backoff_delay(attempt: int, jitter: float, retry_after: float | None = None) -> float:
    """Seconds to wait before retry number `attempt` (0-based). `jitter` is a uniform sample
    in [0, 1) supplied by the caller, so the function stays pure and testable."""
    base = min(BASE_DELAY_S * (2.0**attempt), MAX_DELAY_S)
    delay = base * (1.0 + JITTER * min(max(jitter, 0.0), 1.0))
    if retry_after is not None and retry_after > delay:
        return float(retry_after)
    return delay


QUICK_DELAY_S = 0.25


def quick_delay(attempt: int) -> float:
    """Seconds before retry number `attempt` of an API that never answered (refused, no such
    host): short, since a wrong URL is far likelier than an outage; enough for a server that is
    still starting."""
    return QUICK_DELAY_S * (attempt + 1)


def retry_category(error: ModelError) -> str | None:
    """The retry counter this error belongs to, or None when it must not be retried.
    `x-should-retry: false` vetoes a retry; `true` cannot make a final error (LOOP.md) retryable."""
    if error.should_retry is False:
        return None
    return RETRYABLE.get(error.kind)


# Runs that end on these terminal reasons fire StopFailure hooks, with Claude Code's error names.
STOP_FAILURES = frozenset({"api_error", "api_unreachable", "authentication_failed", "max_output_tokens",
                           "prompt_too_long"})
FAILURE_NAMES: dict[str, str] = {
    "rate_limit": "rate_limit", "overloaded": "overloaded", "server": "server_error", "network": "server_error",
    "stream_incomplete": "server_error", "invalid_request": "invalid_request", "not_found": "model_not_found",
    "billing": "billing_error", "spend_limit": "billing_error", "authentication": "authentication_failed",
    "permission": "authentication_failed", "unreachable": "server_error",
}


def stop_failure(terminal_reason: str, last_error: ModelError | None) -> str | None:
    """The StopFailure `error` for a run that ended this way, or None when it was no failure."""
    if terminal_reason not in STOP_FAILURES:
        return None
    if terminal_reason == "max_output_tokens":
        return "max_output_tokens"
    return FAILURE_NAMES.get(last_error.kind, "unknown") if last_error is not None else "unknown"
