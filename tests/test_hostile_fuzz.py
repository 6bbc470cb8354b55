"""Property-based fuzz of hostile input (Hypothesis): deep nesting, lone surrogates, huge and
pathological text and patterns, fed to the JSON decoder, the schema validator, the Grep engine
and the whole loop. Whatever arrives, the decoder raises only ValueError, the validator returns
problems, and a run ends with a result and a transcript that is strict UTF-8 JSON lines."""

from __future__ import annotations

import json
import os
from pathlib import Path

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loopwright import Agent, Session
from loopwright.core import jsonsafe
from loopwright.core.regex import PatternError
from loopwright.core.types import (
    BlockDelta, BlockStart, BlockStop, StreamDelta, StreamStart, StreamStop, Usage,
)
from loopwright.engine.dispatch import MAX_CONTEXT_TOTAL, MAX_RESULT_CHARS, bounded_context, bounded_result
from loopwright.core.types import ToolResultBlock
from loopwright.policy.jsonschema import validate
from loopwright.providers.http import encode_json
from loopwright.session import open_session
from loopwright.stores.jsonl import JsonlStore, read_records
from loopwright.tools.files import ReadTool
from loopwright.tools.grepengine import compile_pattern
from loopwright.tools.search import GlobTool, GrepTool

_QUIET = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
# CI: a fixed seed and 40 examples, as the loop fuzz; `--hypothesis-profile loop-long` runs this
# fuzz at length too, with a new seed each run.
FUZZ = (settings(settings.default, deadline=None, suppress_health_check=_QUIET)
        if settings.default is settings.get_profile("loop-long")
        else settings(max_examples=40, derandomize=True, database=None, deadline=None, suppress_health_check=_QUIET))

surrogates = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
any_char = st.one_of(st.characters(), surrogates)
hostile_text = st.one_of(
    st.text(any_char, max_size=40),
    st.builds(lambda c, n: c * n, st.sampled_from(["a", "[", "{", "\\", '"', "\ud800", "(a+)+"]),
              st.integers(0, 20_000)),
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(any_char, max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(any_char, max_size=5), inner, max_size=3),
    max_leaves=30,
)


def nest(value, depth, as_object):
    for _ in range(depth):
        value = {"k": value} if as_object else [value]
    return value


def nested_text(depth: int, as_object: bool, inner: str = "1") -> str:
    return ('{"k":' * depth + inner + "}" * depth) if as_object else ("[" * depth + inner + "]" * depth)


@FUZZ
@given(st.integers(0, 3_000), st.booleans(), json_values)
def test_decoding_is_bounded_by_depth_and_never_crashes(depth, as_object, inner):
    text = nested_text(depth, as_object, json.dumps(inner))
    try:
        value = jsonsafe.loads(text)
    except ValueError as exc:
        assert "nested more than 512" in str(exc) and depth + jsonsafe.text_depth(json.dumps(inner)) > 512
    else:
        assert value == json.loads(text)


@FUZZ
@given(st.text(any_char, max_size=200))
def test_any_text_decodes_or_is_a_value_error(text):
    try:
        jsonsafe.loads(text)
    except ValueError:
        pass
    jsonsafe.valid_text(text).encode("utf-8")


SCHEMAS = [
    {"$defs": {"n": {"type": "object", "properties": {"k": {"anyOf": [{"$ref": "#/$defs/n"}, {"type": "array"},
                                                                      {"type": "string", "pattern": "^(a+)+$"}]}}}},
     "$ref": "#/$defs/n"},
    {"type": "array", "items": {"oneOf": [{"$ref": "#"}, {"type": "integer", "minimum": 0}, {"type": "string"}]}},
    {"anyOf": [{"type": "string", "pattern": "^([a-z]+)*[0-9]$", "maxLength": 50}, {"enum": [1, "x", None]}]},
    {"type": "object", "additionalProperties": {"$ref": "#"}},
]


@FUZZ
@given(st.sampled_from(SCHEMAS), json_values, st.integers(0, 1_500), st.booleans())
def test_validation_never_raises_whatever_the_value(schema, inner, depth, as_object):
    problems = validate(nest(inner, depth, as_object), schema)
    assert isinstance(problems, list) and all(isinstance(p, str) for p in problems)


@FUZZ
@given(hostile_text, st.booleans(), st.booleans(), st.binary(max_size=2_000))
def test_the_grep_engine_compiles_or_refuses_and_matches_any_bytes(pattern, ignore_case, multiline, data):
    try:
        engine = compile_pattern(pattern, ignore_case=ignore_case, multiline=multiline)
    except PatternError:
        return
    try:
        if not engine.backtracking:
            lines, matched = engine.match(data)
            assert all(0 <= i < len(lines) for i in matched)
    finally:
        engine.close()


@FUZZ
@given(st.lists(hostile_text, max_size=8), st.text(any_char, max_size=2_000), st.integers(0, 3))
def test_what_enters_a_message_is_bounded_and_encodable(contexts, result, copies):
    text = result * (1 + copies * 200)
    bounded = bounded_result(ToolResultBlock("t", text)).content
    assert len(bounded) <= MAX_RESULT_CHARS + 300
    bounded.encode("utf-8")
    kept = bounded_context(contexts)
    assert sum(len(k) for k in kept) <= MAX_CONTEXT_TOTAL + 200 * len(kept)
    for k in kept:
        k.encode("utf-8")


class RawModel:
    """A `Model` that answers the first call with tool calls whose input is the raw JSON text
    given, and every later call with text."""

    def __init__(self, calls: list[tuple[str, str]], text: str) -> None:
        self.calls, self.text, self.count = calls, text, 0

    async def stream(self, request):
        self.count += 1
        yield StreamStart(f"msg_{self.count}", request.model, Usage(10))
        blocks = self.calls if self.count == 1 else []
        for i, (name, raw) in enumerate(blocks):
            yield BlockStart(i, {"type": "tool_use", "id": f"toolu_{i}", "name": name, "input": {}})
            for start in range(0, max(len(raw), 1), 4096):
                yield BlockDelta(i, {"type": "input_json_delta", "partial_json": raw[start:start + 4096]})
            yield BlockStop(i)
        if not blocks:
            yield BlockStart(0, {"type": "text", "text": ""})
            yield BlockDelta(0, {"type": "text_delta", "text": self.text})
            yield BlockStop(0)
        yield StreamDelta("tool_use" if blocks else "end_turn", {"output_tokens": 5})
        yield StreamStop()

    async def aclose(self):
        return None


tool_inputs = st.one_of(
    st.builds(lambda d, o: '{"pattern": "x", "path": ' + nested_text(d, o, '"a"') + "}", st.integers(0, 100_000),
              st.booleans()),
    st.builds(lambda p, g: json.dumps({"pattern": p, "glob": g, "output_mode": "content", "-C": 1}),
              hostile_text, st.sampled_from([None, "*", "*a" * 12 + "*b", "[!/]*", "**/*"])),
    st.builds(lambda p: json.dumps({"pattern": p}, ensure_ascii=False).encode("utf-8", "surrogatepass").decode(
        "utf-8", "surrogatepass"), hostile_text),
    st.builds(lambda p: json.dumps({"file_path": p}), st.text(any_char, max_size=30)),
    hostile_text,
)


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    root = tmp_path_factory.mktemp("fuzz-tree")
    (root / "a.txt").write_text(("a" * 30 + "!\n") * 3)
    (root / os.fsdecode(b"caf\xe9.txt")).write_text("needle \udcff".encode("utf-8", "surrogateescape").decode(
        "utf-8", "replace"))
    os.mkfifo(root / "pipe")
    return root


@FUZZ
@given(st.lists(st.tuples(st.sampled_from(["Grep", "Glob", "Read"]), tool_inputs), min_size=1, max_size=3),
       st.text(any_char, max_size=50))
def test_a_run_always_ends_with_a_result_and_a_clean_transcript(tree, tmp_path_factory, calls, final):
    home = tmp_path_factory.mktemp("home")
    grep = GrepTool()
    grep.timeout_s = 2.0  # backtracking patterns the fuzz finds give up quickly
    session = open_session(JsonlStore(home, tree), str(tree))
    agent = Agent(model_client=RawModel(calls, final), cwd=tree, tools=[grep, GlobTool(), ReadTool()],
                  crash_log=lambda exc: None)

    async def go():
        try:
            return await agent.run("go", session=Session.opened(session))
        finally:
            session.close()

    result = anyio.run(go)
    assert result.terminal_reason != "internal_error", result.errors
    for message in result.messages:
        encode_json({"m": message.to_api()}).decode("utf-8")
    path = Path(session.transcript_path)
    path.read_bytes().decode("utf-8")  # strict: every line valid UTF-8
    records, warnings = read_records(path)
    assert records[-1]["subtype"] == "run_result" and not warnings
