"""A property-based fuzz of the whole loop over real HTTP: Hypothesis writes random sequences of
responses (every stop reason and unknown ones, text, valid and malformed tool calls, empty
content, unknown block types, HTTP faults, resets and cut streams), one simulator serves them on
either API, and every run must end with a result the contract allows:

- a success whose `result` ends with the last text the model gave, or `is_error` with a
  `terminal_reason` and errors; never an exception, never a request our history got refused for;
- no tool call runs twice, and none runs from a refused, cut, faulted or malformed response;
  every valid call of a response dispatched by content runs;
- every transcript line parses, and its replay is a conversation the API accepts.

CI runs a fixed seed and a few dozen examples. A long run: `pytest tests/test_loop_fuzz.py
--hypothesis-profile loop-long` (registered in conftest.py; random seed, many examples)."""

from __future__ import annotations

import itertools
import json

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loopwright.agent import Agent, Session
from loopwright.core.events import RunResult
from loopwright.permissions.decide import PermissionRules
from loopwright.policy.stop import Limits
from loopwright.providers.anthropic import AnthropicModel
from loopwright.session.recorder import Recorder
from loopwright.session.records import Record, restore
from loopwright.stores.jsonl import encode
from loopwright.testing import Simulator
from loopwright.testing.clock import FakeClock
from loopwright.testing.simulator.validate import check_request
from loopwright.tools.base import tool

CI_EXAMPLES = 40
LONG_PROFILE = "loop-long"

KNOWN_STOPS = ["end_turn", "tool_use", "stop_sequence", "max_tokens", "pause_turn", "refusal",
               "model_context_window_exceeded"]
UNKNOWN_STOPS = ["brand_new_reason", "eos", "abort", 7]  # a broken server may send any JSON
BAD_INPUTS = ['{"marker": "x",}', '{"marker": "cut', "ls -la", "[1, 2]", '"ls"', "null", "true", "12",
              '{"marker": "C:\\dir"}', "{", '{"marker": "a"} trailing', "\u0000"]
CHAT_STOPS = {"model_context_window_exceeded": "max_tokens", "pause_turn": "end_turn", "stop_sequence": "end_turn"}
ENDING = {"text": "the end", "repeat": -1}  # after the drawn responses: the run can always finish
FINAL_ERRORS = {"max_turns", "api_error", "api_unreachable", "authentication_failed", "refusal", "pause_turn_limit",
                "empty_response", "max_output_tokens", "malformed_tool_input", "prompt_too_long",
                "compaction_thrashing"}

# Blocks of a response, before markers and texts are made unique (see `numbered`).
TEXT = st.just({"type": "text"})
GOOD = st.just({"type": "tool_use", "name": "Mark", "good": True})
BAD = st.sampled_from(BAD_INPUTS).map(lambda raw: {"type": "tool_use", "name": "Mark", "partial_json": raw})
NOT_OBJECT = st.sampled_from([[1], "ls", None, 3, False]).map(lambda v: {"type": "tool_use", "name": "Mark", "input": v})
OTHER = st.sampled_from([
    {"type": "tool_use", "name": "NoSuchTool", "input": {}},
    {"type": "thinking", "thinking": "hmm"},
    {"type": "mystery_block", "payload": {"x": 1}},
    {"type": "text", "text": "   "},
])
BLOCK = st.one_of(TEXT, TEXT, GOOD, GOOD, BAD, NOT_OBJECT, OTHER)
STOP = st.one_of(st.none(), st.sampled_from(KNOWN_STOPS), st.sampled_from(UNKNOWN_STOPS))


@st.composite
def replies(draw):
    blocks = draw(st.lists(BLOCK, max_size=4))
    kind = draw(st.sampled_from(["content"] * 6 + ["status", "final", "reset", "cut", "sse"]))
    spec = {"content": blocks}
    stop = draw(STOP)
    if stop is not None:
        spec["stop_reason"] = stop
    if kind == "status":
        return {"fault": {"status": draw(st.sampled_from([429, 500, 503, 529]))}}
    if kind == "final":
        return {"fault": {"status": draw(st.sampled_from([401, 403, 404]))}}
    if kind == "reset":
        return {"fault": {"reset": True}}
    if kind in ("cut", "sse"):
        after = draw(st.integers(0, len(blocks)))
        fault = {"cut": True} if kind == "cut" else {"sse_error": {"type": "overloaded_error", "message": "busy"}}
        spec["fault"] = fault | {"after_blocks": after}
    return spec


def numbered(specs):
    """Unique texts and markers, so every text and every call can be traced to its response."""
    n = itertools.count(1)
    out = []
    for spec in specs:
        spec = json.loads(json.dumps(spec))
        for block in spec.get("content", []):
            if block["type"] == "text" and "text" not in block:
                block["text"] = f"text {next(n)} "
            if block.pop("good", False):
                block["input"] = {"marker": f"m{next(n)}"}
        out.append(spec)
    return out


# ------------------------------------------------------------ one run


class MemoryLog:
    """A session log in memory, encoded exactly as the JSONL store encodes its lines."""

    location = "memory"

    def __init__(self):
        self.lines: list[bytes] = []

    def append(self, record, *, sync=False):
        self.lines.append(encode(record))

    def close(self):
        pass


async def one_run(sim, api, tmp_path, max_turns):
    runs: list[str] = []

    @tool(name="Mark")
    def mark(marker: str) -> str:
        """Record that this call ran."""
        runs.append(marker)
        return f"marked {marker}"

    log = MemoryLog()
    if api == "messages":
        kw = {"model_client": AnthropicModel(base_url=sim.base_url, api_key="sk-test")}
    else:
        kw = {"model": f"openai-compatible:{sim.base_url}/v1#fuzz"}
    agent = Agent(cwd=tmp_path, clock=FakeClock(), tools=[mark], permissions=PermissionRules(allow=("Mark",)),
                  limits=Limits(max_turns=max_turns), **kw)
    async with agent.open(Session(session_id="fuzz", recorder=Recorder(log, "fuzz", str(tmp_path)))) as running:
        with anyio.fail_after(60):  # a hang guard only: a healthy run takes milliseconds
            result = await running.prompt("go")
    return result, runs, log


def served(sim, api, specs):
    """(spec, body) of every main-loop request, in order: each took the next response."""
    requests = sim.message_requests if api == "messages" else sim.chat_requests
    pairs = [(specs[i] if i < len(specs) else ENDING, r) for i, r in enumerate(requests)]
    return pairs


def check(result: RunResult, runs, log, sim, api, specs, max_turns):
    assert not sim.errors and not sim.unmatched
    pairs = served(sim, api, specs)
    assert all(r.response_status != 400 for _, r in pairs), "a request of ours was refused as malformed"
    assert len(pairs) <= 2 * len(specs) + 12  # bounded: retries and recoveries included
    assert max_turns is None or result.num_turns <= max_turns

    # tools: never twice, never from a response that must not run, always from one that must
    assert len(runs) == len(set(runs)), f"a tool ran twice: {runs}"
    allowed, required = set(), set()
    for spec, request in pairs:
        if "fault" in spec or "tools" not in request.body:  # faulted, or a compaction summary call
            continue
        calls = [b for b in spec.get("content", []) if b["type"] == "tool_use"]
        stop = spec.get("stop_reason")
        if api == "chat":  # finish reasons are fewer: "length" also for a full context window,
            stop = CHAT_STOPS.get(stop, stop)  # and the fold leaves a cut response's last call open
            calls = calls[:-1] if stop == "max_tokens" else calls
        good = {b["input"]["marker"] for b in calls if isinstance(b.get("input"), dict) and "marker" in b["input"]}
        if stop in ("refusal", "model_context_window_exceeded"):
            continue
        allowed |= good
        if stop not in ("max_tokens", "pause_turn"):
            required |= good
    assert set(runs) <= allowed, f"ran calls that must not run: {set(runs) - allowed}"
    assert required <= set(runs), f"valid calls never ran: {required - set(runs)}"

    # the result
    if result.is_error:
        assert result.terminal_reason in FINAL_ERRORS and result.errors, result
        assert result.subtype == ("error_max_turns" if result.terminal_reason == "max_turns" else "error_during_execution")
    else:
        assert result.subtype == "success" and result.terminal_reason == "completed", result
        texts = [m.text for m in result.messages if m.role == "assistant" and m.text.strip()]
        assert texts and result.result.endswith(texts[-1])
        last_spec = pairs[-1][0]
        last_text = "".join(b["text"] for b in last_spec.get("content", [last_spec]) if b.get("type", "text") == "text"
                            and "text" in b)
        if last_text.strip():
            assert result.result.endswith(last_text)
    unknown = {s.get("stop_reason") for s, r in pairs if "fault" not in s and "tools" in r.body} & set(UNKNOWN_STOPS)
    for value in unknown:
        assert sum(repr(str(value)) in w for w in result.warnings) == 1, (value, result.warnings)
    if result.api_error_status is not None:
        assert result.terminal_reason in ("api_error", "authentication_failed", "prompt_too_long")

    # the transcript: every line parses, and its replay can be sent
    records = [Record.from_json(json.loads(line)) for line in log.lines]
    messages = [m.to_api() for m in restore(records).messages]
    if messages and messages[-1]["role"] == "assistant":
        messages.append({"role": "user", "content": "and now?"})
    assert check_request({"model": "m", "max_tokens": 1, "messages": messages}) is None


# ------------------------------------------------------------ the property


@pytest.fixture(scope="module")
def sim():
    with Simulator() as server:
        yield server


def fuzz_settings():
    long = settings.default is settings.get_profile(LONG_PROFILE)
    if long:  # many examples, a new seed each run
        return settings(settings.default, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    return settings(max_examples=CI_EXAMPLES, derandomize=True, database=None, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


def test_any_sequence_of_responses_ends_with_a_result_the_contract_allows(sim, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")

    @fuzz_settings()
    @given(st.sampled_from(["messages", "chat"]), st.lists(replies(), min_size=1, max_size=10),
           st.one_of(st.none(), st.integers(1, 6)))
    def prop(api, drawn, max_turns):
        specs = numbered(drawn)
        sim.reset(specs + [ENDING])
        result, runs, log = anyio.run(one_run, sim, api, tmp_path, max_turns)
        check(result, runs, log, sim, api, specs, max_turns)

    prop()
