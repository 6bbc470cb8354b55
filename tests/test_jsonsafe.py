"""Untrusted JSON is decoded with a bounded depth everywhere it enters (tool inputs, API events,
hook output, settings, transcripts), and text that UTF-8 cannot hold is escaped, never a crash."""

import json

import pytest

from loopwright.core import jsonsafe
from loopwright.core.errors import ModelError, UsageError
from loopwright.core.types import BlockStart, BlockDelta, BlockStop, Message, StreamStart, StreamStop, TextBlock, Usage
from loopwright.engine.accumulate import Accumulator
from loopwright.hooks.output import from_text
from loopwright.providers.anthropic import _build, SSE_EVENTS
from loopwright.session.recorder import Recorder
from loopwright.settings.schema import parse
from loopwright.stores.jsonl import JsonlLog, encode, read_records


def nested(levels, inner="1", opener="[", closer="]"):
    return opener * levels + inner + closer * levels


def deep_object(levels):
    return '{"a":' * levels + "1" + "}" * levels


@pytest.mark.parametrize("text", [nested(512), deep_object(512), nested(3, '"' + "[{" * 1000 + '"')])
def test_json_up_to_the_bound_decodes(text):
    assert jsonsafe.loads(text) == json.loads(text)


@pytest.mark.parametrize("text", [nested(513), deep_object(513), nested(100_000), deep_object(100_000),
                                  "[" * 100_000, '{"a": [' + nested(600, "{}") + "]}"])
def test_json_past_the_bound_is_bad_json_not_a_crash(text):
    with pytest.raises(json.JSONDecodeError) as caught:  # a ValueError, as every caller expects
        jsonsafe.loads(text)
    assert "nested more than 512 arrays/objects deep" in str(caught.value)
    assert isinstance(caught.value, ValueError) and caught.value.pos > 0


def test_the_bound_is_reported_where_it_is_passed_and_bytes_work():
    with pytest.raises(jsonsafe.JSONDepthError) as caught:
        jsonsafe.loads(b'{"x": ' + b"[" * 40 + b"]" * 40 + b"}", max_depth=10)
    assert (caught.value.lineno, caught.value.colno) == (1, 16)  # the 11th opener: `{` and 9 `[`
    assert jsonsafe.loads(bytearray(b"[[1]]"), max_depth=2) == [[1]]


@pytest.mark.parametrize(("text", "shown"), [
    ("a\udcffb", "a\\xffb"), ("\ud800", "\\ud800"), ("x\udfff\ud83d", "x\\udfff\\ud83d"), ("plain ✓ 😀", "plain ✓ 😀"),
])
def test_lone_surrogates_become_visible_escapes(text, shown):
    assert jsonsafe.valid_text(text) == shown
    shown.encode("utf-8")


def test_a_tool_input_nested_100000_levels_is_a_malformed_call_not_a_crash():
    acc = Accumulator()
    for event in (StreamStart("msg_1", "m", Usage()), BlockStart(0, {"type": "tool_use", "id": "t1", "name": "Bash"}),
                  BlockDelta(0, {"type": "input_json_delta", "partial_json": '{"command": ' + nested(100_000) + "}"}),
                  BlockStop(0), StreamStop()):
        acc.add(event)
    block = acc.response().message.tool_uses[0]
    assert block.complete is False and block.input == {}  # never run


@pytest.mark.parametrize("depth", [600, 100_000])
def test_a_deeply_nested_api_event_is_a_malformed_event(depth):
    data = '{"type": "message_start", "message": ' + deep_object(depth) + "}"
    with pytest.raises(ModelError, match="malformed message_start event"):
        _build(SSE_EVENTS["message_start"], "message_start", data, None)


@pytest.mark.parametrize("depth", [600, 100_000])
def test_deeply_nested_hook_output_is_a_hook_error(depth):
    answer = from_text("PreToolUse", deep_object(depth))
    assert answer.error is not None and "nested more than 512" in answer.error and answer.decision is None


@pytest.mark.parametrize("depth", [600, 100_000])
def test_a_deeply_nested_settings_file_is_a_usage_error(depth):
    with pytest.raises(UsageError, match=r"settings\.json: invalid JSON at line 1 column \d+: nested more than 512"):
        parse('{"env": ' + deep_object(depth) + "}", "settings.json")


def test_a_deeply_nested_transcript_line_is_damage_not_a_crash(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_text('{"type": "user"}\n' + deep_object(100_000) + "\n")
    with pytest.raises(ValueError, match="line 2 is not a JSON record"):
        read_records(path)


@pytest.mark.parametrize("text", ["\ud800", "a\udcffb", "\udfff\ud800", "ok"])
def test_records_with_lone_surrogates_are_valid_utf8_lines_that_read_back_the_same(tmp_path, text):
    line = encode({"text": text, text: [text]})
    assert line.count(b"\n") == 1 and line.endswith(b"\n")
    assert json.loads(line.decode("utf-8")) == {"text": text, text: [text]}  # strict UTF-8 decodes
    log = JsonlLog(tmp_path / "s.jsonl")
    recorder = Recorder(log, "sid", str(tmp_path))
    from loopwright.session.records import UserEntry

    recorder.append(UserEntry(Message("user", (TextBlock(text),))))
    recorder.close()
    records, warnings = read_records(tmp_path / "s.jsonl")
    assert records[0]["message"]["content"][0]["text"] == text and not warnings
    (tmp_path / "s.jsonl").read_bytes().decode("utf-8")


def test_a_record_holding_input_at_the_bound_reads_back(tmp_path):
    deepest = jsonsafe.loads(nested(511, "{}"))  # a tool input may nest this deep
    log = JsonlLog(tmp_path / "s.jsonl")
    from loopwright.session.records import ToolStartedEntry

    Recorder(log, "sid", str(tmp_path)).append(ToolStartedEntry("t1", "Bash", {"x": deepest}))
    log.close()
    assert read_records(tmp_path / "s.jsonl")[0][0]["input"]["x"] == deepest
