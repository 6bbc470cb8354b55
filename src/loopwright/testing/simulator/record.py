"""What the simulator records of each request, and what a connection handler needs of the
simulator that serves it (so the handler does not import the server that imports it)."""

from __future__ import annotations

from typing import Any, Protocol

from ...core.fastclass import dataclass
from .script import Reply
from .wire import IdGen


@dataclass
class RecordedRequest:
    """One request as the simulator received it; `response_status` is None if none was sent."""

    method: str
    path: str  # without the query string (see `query`)
    query: str
    headers: dict[str, str]  # lower-case names
    body: Any  # parsed JSON, or None when the body was not JSON
    raw: bytes
    time: float  # time.monotonic() at arrival
    request_id: str
    response_status: int | None = None
    finished: float | None = None  # time.monotonic() once the last response byte was written

    @property
    def retry_count(self) -> int:
        """The SDK's `x-stainless-retry-count` (0 on a first attempt)."""
        return int(self.headers.get("x-stainless-retry-count", "0") or 0)


class Served(Protocol):
    """The part of the Simulator a connection handler uses."""

    validate: bool
    delay: float
    _ids: IdGen
    _cache: Any  # a PromptCache, or None

    def _record(self, method: str, target: str, headers: dict[str, str], raw: bytes) -> RecordedRequest: ...
    def _take(self, body: dict[str, Any], rec: RecordedRequest) -> Reply | None: ...
    def _answered(self, rec: RecordedRequest) -> None: ...
    def _failed(self, exc: BaseException | None) -> None: ...
