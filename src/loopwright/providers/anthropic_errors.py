"""Anthropic API failures, normalised by tables: HTTP status, error type and error code to our
`ModelError.kind`; retry hints from headers; httpx transport errors translated in one place."""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Iterator, Mapping
from typing import Any

import httpx

from ..core import jsonsafe
from ..core.errors import ErrorKind, ModelError, UsageError
from .http import Endpoint

# ---------------------------------------------------------------- error tables

# HTTP status -> kind. Statuses not listed fall back by range (status_kind).
# 408: the request did not reach the model in time, retry like a timeout; 409: a conflict with
# resource state is transient (the SDK retries it).
STATUS_KIND: dict[int, ErrorKind] = {
    400: "invalid_request", 401: "authentication", 402: "billing", 403: "permission", 404: "not_found",
    408: "network", 409: "server", 413: "invalid_request", 429: "rate_limit",
    500: "server", 502: "server", 503: "server", 504: "server", 529: "overloaded",
}  # fmt: skip

# error.type values specific enough to win over the HTTP status (e.g. 503 + overloaded_error).
ERROR_TYPE_OVERRIDES: dict[str, ErrorKind] = {
    "overloaded_error": "overloaded",
    "rate_limit_error": "rate_limit",
    "authentication_error": "authentication",
    "permission_error": "permission",
    "billing_error": "billing",
    "not_found_error": "not_found",
}

# Every error.type we know, for errors without an HTTP status (an SSE `error` event after a 200).
# The generic types below are not overrides: the docs say invalid_request_error is also used for
# other 4xx, and api_error is any internal error, so the status says more.
ERROR_TYPE_KIND: dict[str, ErrorKind] = {
    **ERROR_TYPE_OVERRIDES,
    "invalid_request_error": "invalid_request",
    "request_too_large": "invalid_request",
    "api_error": "server",
    "timeout_error": "server",
    "conflict_error": "server",
}

# error.details.error_code -> kind; wins over everything. A spend cap does not lift on retry.
ERROR_CODE_KIND: dict[str, ErrorKind] = {
    "enforced_spend_limit_reached": "spend_limit",
    "contract_spend_limit_reached": "spend_limit",
    "linked_organization_spend_limit_reached": "spend_limit",
    "ramp_limit_exceeded": "rate_limit",  # acceleration limit: ramp up more slowly, then retry
    "compaction_unavailable": "overloaded",
}

# The API gives no code for an over-long prompt: only the message says so
# ("prompt is too long: 200082 tokens > 200000 maximum"). This is the one prose match.
PROMPT_TOO_LONG_TEXT = "prompt is too long"

SHOULD_RETRY: dict[str, bool] = {"true": True, "false": False}


def status_kind(status: int) -> ErrorKind:
    kind = STATUS_KIND.get(status)
    if kind is not None:
        return kind
    return "server" if status >= 500 else "invalid_request"


def parse_retry_after(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """Seconds to wait from `retry-after-ms` (milliseconds) or else `retry-after` (seconds,
    possibly fractional, or an HTTP-date, measured from `now`). None when absent or unusable."""
    raw_ms = headers.get("retry-after-ms")
    if raw_ms:
        seconds = _finite(raw_ms)
        if seconds is not None:
            return max(seconds / 1000.0, 0.0)
    raw = headers.get("retry-after")
    if not raw:
        return None
    seconds = _finite(raw)
    if seconds is not None:
        return max(seconds, 0.0)
    from email.utils import parsedate_to_datetime

    try:
        when = parsedate_to_datetime(raw).timestamp()
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    return max(when - (time.time() if now is None else now), 0.0)


def _finite(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def json_object(body: bytes | str | Mapping[str, Any] | None) -> dict[str, Any]:
    if isinstance(body, Mapping):
        return dict(body)
    if not body:
        return {}
    try:
        parsed = jsonsafe.loads(body)
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def map_status_error(
    status: int | None,
    headers: Mapping[str, str],
    body: bytes | str | Mapping[str, Any] | None,
    *,
    now: float | None = None,
) -> ModelError:
    """Build the `ModelError` for an HTTP error response, or (status None) for an SSE `error`
    event whose parsed payload is `body`. Precedence: error_code, the prompt-too-long text,
    a specific error.type, the status."""
    payload = json_object(body)
    error = payload.get("error")
    error = error if isinstance(error, dict) else {}
    error_type = error.get("type") if isinstance(error.get("type"), str) else None
    message = error.get("message") if isinstance(error.get("message"), str) else None
    details = error.get("details")
    code = details.get("error_code") if isinstance(details, dict) else None
    if status is None and isinstance(error.get("status"), int):
        status = error["status"]

    kind: ErrorKind | None = ERROR_CODE_KIND.get(code) if isinstance(code, str) else None
    if kind is None and status == 400 and message and PROMPT_TOO_LONG_TEXT in message.lower():
        kind = "prompt_too_long"
    if kind is None and error_type is not None:
        kind = ERROR_TYPE_OVERRIDES.get(error_type)
    if kind is None:
        if status is not None:
            kind = status_kind(status)
        else:
            kind = ERROR_TYPE_KIND.get(error_type or "", "server")

    if not message:
        message = fallback_message(status, body)
    request_id = headers.get("request-id") or payload.get("request_id")
    return ModelError(
        kind,
        message,
        status=status,
        retry_after=parse_retry_after(headers, now=now),
        should_retry=SHOULD_RETRY.get((headers.get("x-should-retry") or "").strip().lower()),
        request_id=request_id if isinstance(request_id, str) else None,
        error_type=error_type,
    )


def fallback_message(status: int | None, body: bytes | str | Mapping[str, Any] | None) -> str:
    """For bodies that are not the API's JSON (a proxy's HTML page, an empty 503)."""
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body if isinstance(body, str) else ""
    text = " ".join(text.split())[:200]
    head = f"HTTP {status}" if status is not None else "stream error"
    return f"{head}: {text}" if text else head


# Transport failures -> (kind, message). Ordered: the first isinstance match wins.
TRANSPORT_ERRORS: tuple[tuple[type[httpx.HTTPError], ErrorKind, str], ...] = (
    (httpx.TimeoutException, "network", "request timed out"),
    (httpx.LocalProtocolError, "invalid_request", "could not send the request (check headers and API key)"),
    (httpx.TransportError, "network", "connection error"),  # connect/read/write, protocol, proxy
    (httpx.DecodingError, "network", "could not decode the response body"),
    (httpx.HTTPError, "network", "HTTP error"),
)


@contextlib.contextmanager
def map_errors(endpoint: Endpoint | None = None) -> Iterator[None]:
    """Translate httpx exceptions into `ModelError`/`UsageError`, in this one place.
    Only `httpx.HTTPError` is caught: cancellation and every other exception pass through.
    With the `endpoint` being connected to, a URL that never answered is `unreachable`."""
    try:
        yield
    except (httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
        raise UsageError(f"bad model API base URL (ANTHROPIC_BASE_URL, OPENAI_BASE_URL or the model name?): {exc}") from exc
    except httpx.HTTPError as exc:
        line = endpoint.unreachable(exc) if endpoint is not None and isinstance(exc, httpx.ConnectError) else None
        if line is not None:
            raise ModelError("unreachable", line) from exc
        for cls, kind, text in TRANSPORT_ERRORS:
            if isinstance(exc, cls):
                detail = str(exc) or type(exc).__name__
                raise ModelError(kind, f"{text}: {detail}") from exc
        raise  # unreachable: the last row matches every HTTPError
