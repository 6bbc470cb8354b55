"""The incremental SSE decoder: framing rules, line ends, and that chunking never matters."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopwright.providers.sse import SSEDecoder, aiter_sse


def decode(*chunks: bytes) -> list[tuple[str, str]]:
    decoder = SSEDecoder()
    out: list[tuple[str, str]] = []
    for chunk in chunks:
        out.extend(decoder.feed(chunk))
    return out


def test_event_and_data() -> None:
    assert decode(b'event: ping\ndata: {"type":"ping"}\n\n') == [("ping", '{"type":"ping"}')]


def test_frames_come_out_as_soon_as_their_blank_line_arrives() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"event: a\ndata: 1\n") == []
    assert decoder.feed(b"\nevent: b\n") == [("a", "1")]
    assert decoder.feed(b"data: 2\n\n") == [("b", "2")]


def test_crlf_and_lone_cr_line_ends() -> None:
    assert decode(b"event: a\r\ndata: 1\r\n\r\n") == [("a", "1")]
    assert decode(b"event: a\rdata: 1\r\r") == [("a", "1")]
    # a CRLF split across two chunks is one line end, not two
    assert decode(b"event: a\r", b"\ndata: 1\r", b"\n\r", b"\n") == [("a", "1")]


def test_multi_line_data_joins_with_newline() -> None:
    assert decode(b"event: x\ndata: one\ndata: two\ndata:\ndata:three\n\n") == [("x", "one\ntwo\n\nthree")]


def test_comments_and_unknown_fields_are_ignored() -> None:
    raw = b": keep-alive\n:another\nevent: x\nid: 7\nretry: 100\nfoo: bar\ndata: 1\n\n"
    assert decode(raw) == [("x", "1")]


def test_only_one_leading_space_is_dropped() -> None:
    assert decode(b"event:x\ndata:  two spaces\n\n") == [("x", " two spaces")]


def test_colon_in_value_is_kept() -> None:
    assert decode(b'event: x\ndata: {"a": "b:c"}\n\n') == [("x", '{"a": "b:c"}')]


def test_field_without_colon() -> None:
    assert decode(b"event: x\ndata\n\n") == [("x", "")]


def test_frame_without_data_is_not_dispatched_and_event_defaults_to_message() -> None:
    assert decode(b"event: lonely\n\ndata: hi\n\n") == [("message", "hi")]


def test_blank_lines_between_frames() -> None:
    assert decode(b"\n\n\nevent: a\ndata: 1\n\n\n\nevent: b\ndata: 2\n\n") == [("a", "1"), ("b", "2")]


def test_cut_final_frame_is_not_emitted() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"event: a\ndata: 1\n\nevent: b\ndata: 2\n") == [("a", "1")]
    assert decoder.pending
    assert decoder.feed(b"") == []


def test_not_pending_after_complete_frames() -> None:
    decoder = SSEDecoder()
    decoder.feed(b"event: a\ndata: 1\n\n")
    assert not decoder.pending


def test_utf8_split_inside_a_character() -> None:
    raw = 'event: t\ndata: {"text":"héllo ✓ 🎉"}\n\n'.encode()
    cut = raw.index("🎉".encode()) + 2
    assert decode(raw[:cut], raw[cut:]) == [("t", '{"text":"héllo ✓ 🎉"}')]


def test_byte_order_mark_at_start_is_dropped() -> None:
    assert decode(b"\xef\xbb", b"\xbfevent: a\ndata: 1\n\n") == [("a", "1")]


def test_feed_line() -> None:
    decoder = SSEDecoder()
    assert decoder.feed_line("event: a") is None
    assert decoder.feed_line("data: 1") is None
    assert decoder.feed_line("") == ("a", "1")


@pytest.mark.anyio
async def test_aiter_sse() -> None:
    async def chunks():
        for c in (b"event: a\nda", b"ta: 1\n", b"\n"):
            yield c

    assert [f async for f in aiter_sse(chunks())] == [("a", "1")]


# ---------------------------------------------------------------- any chunking, same frames

_frames = st.lists(
    st.tuples(
        st.sampled_from(["message_start", "content_block_delta", "ping", "error", "x"]),
        st.lists(st.text(alphabet=st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)), max_size=20), min_size=1, max_size=3),
    ),
    max_size=6,
)


def _encode(frames: list[tuple[str, list[str]]], eol: bytes) -> bytes:
    out = bytearray()
    for name, lines in frames:
        out += b"event: " + name.encode() + eol
        for line in lines:
            out += b"data: " + line.encode() + eol
        out += eol
    return bytes(out)


@settings(max_examples=300, deadline=None)
@given(frames=_frames, eol=st.sampled_from([b"\n", b"\r\n", b"\r"]), data=st.data())
def test_any_chunking_yields_the_same_frames(frames, eol, data) -> None:
    raw = _encode(frames, eol)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(raw)), max_size=12)))
    chunks = [raw[a:b] for a, b in zip([0, *cuts], [*cuts, len(raw)])]
    expected = [(name, "\n".join(lines)) for name, lines in frames]
    assert decode(raw) == expected
    assert decode(*chunks) == expected
    assert decode(*(raw[i : i + 1] for i in range(len(raw)))) == expected


def test_realistic_stream_byte_by_byte() -> None:
    events = [
        ("message_start", {"type": "message_start", "message": {"id": "msg_1"}}),
        ("ping", {"type": "ping"}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"text": "a\nb"}}),
        ("message_stop", {"type": "message_stop"}),
    ]
    raw = b"".join(f"event: {n}\r\ndata: {json.dumps(d)}\r\n\r\n".encode() for n, d in events)
    frames = decode(*(raw[i : i + 1] for i in range(len(raw))))
    assert [(n, json.loads(d)) for n, d in frames] == events
