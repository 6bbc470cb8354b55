"""An incremental Server-Sent Events decoder: feed it bytes as they arrive (or whole lines) and
it returns the finished `(event, data)` frames. Pure and stdlib-only; on every turn's hot path.

Follows the WHATWG event-stream rules that matter to a client: lines end in LF, CRLF or CR;
`:` starts a comment; `data:` lines of one frame join with "\\n"; one space after the colon is
dropped; a blank line ends the frame; a frame with no `data:` field is not dispatched; the event
name defaults to "message"; `id:` and `retry:` are ignored (we never reconnect a stream). A last
frame that is not closed by a blank line is never emitted: the stream was cut.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator

__all__ = ["SSEDecoder", "aiter_sse"]

Frame = tuple[str, str]

_DEFAULT_EVENT = "message"


class SSEDecoder:
    """Holds the unfinished tail between feeds. One decoder per stream."""

    __slots__ = ("_tail", "_event", "_data", "_started", "_skip_lf")

    def __init__(self) -> None:
        self._tail = b""  # bytes after the last line end seen (never decoded yet)
        self._event: str | None = None
        self._data: list[str] | None = None
        self._started = False  # a byte-order mark is dropped only at the very start
        self._skip_lf = False  # the last byte fed was a CR, which may pair with an LF

    def feed(self, chunk: bytes) -> list[Frame]:
        """Decode a chunk of the byte stream; return the frames it completed (often none)."""
        if self._skip_lf and chunk:
            # the previous chunk ended in CR: an LF starting this one completes that CRLF
            self._skip_lf = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
        buf = self._tail + chunk if self._tail else chunk
        if b"\r" in buf:
            self._skip_lf = buf[-1:] == b"\r"
            buf = buf.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        end = buf.rfind(b"\n")
        if end < 0:
            self._tail = buf
            return []
        self._tail = buf[end + 1 :]
        complete = buf[:end]
        # Only whole lines are decoded, and LF never occurs inside a multi-byte UTF-8
        # sequence, so a character split across chunks is always decoded whole.
        text = complete.decode("utf-8", "replace")
        if not self._started:
            self._started = True
            if text.startswith("\ufeff"):
                text = text[1:]
        return self._lines(text.split("\n"))

    def feed_line(self, line: str) -> Frame | None:
        """Decode one line without its line end (as from `aiter_lines`); return a frame when
        this line was the blank line that closes one."""
        frames = self._lines((line,))
        return frames[0] if frames else None

    def _lines(self, lines: tuple[str, ...] | list[str]) -> list[Frame]:
        out: list[Frame] = []
        event = self._event
        data = self._data
        for line in lines:
            if not line:
                if data is not None:
                    out.append((event or _DEFAULT_EVENT, data[0] if len(data) == 1 else "\n".join(data)))
                event = None
                data = None
                continue
            # The two fields that carry every Anthropic frame come first, without partition().
            if line.startswith("data:"):
                value = line[5:]
                if value[:1] == " ":
                    value = value[1:]
                if data is None:
                    data = [value]
                else:
                    data.append(value)
                continue
            if line.startswith("event:"):
                value = line[6:]
                event = value[1:] if value[:1] == " " else value
                continue
            if line[0] == ":":
                continue  # comment (keep-alive)
            name, _, value = line.partition(":")
            if value[:1] == " ":
                value = value[1:]
            if name == "data":  # "data" with no colon: an empty data line
                data = [value] if data is None else [*data, value]
            elif name == "event":
                event = value
            # id, retry and unknown fields are ignored.
        self._event = event
        self._data = data
        return out

    @property
    def pending(self) -> bool:
        """True when bytes or fields of an unfinished frame are held (a cut stream if it ends here)."""
        return bool(self._tail) or self._data is not None or self._event is not None


async def aiter_sse(chunks: AsyncIterable[bytes]) -> AsyncIterator[Frame]:
    """Frames from an async byte stream, e.g. `response.aiter_bytes()`."""
    decoder = SSEDecoder()
    async for chunk in chunks:
        for frame in decoder.feed(chunk):
            yield frame
