"""`RunSpec`: a run as versioned JSON — what `loopwright -p` flags give, read back the same, and
bad input refused with the field named."""

import json

import pytest

from loopwright.cli.options import parse_options
from loopwright.compose.runspec import NO_LIMIT, RunSpec
from loopwright.core.errors import UsageError


def test_flags_become_a_spec_that_survives_json():
    opts = parse_options(["-p", "fix it", "--goal", "tests pass", "--check", "pytest -q", "--protect", "tests/**",
                          "--goal-max-turns", "none", "--max-turns", "none", "--max-budget-usd", "2.5",
                          "--permission-mode", "acceptEdits", "--allowedTools", "Bash", "Edit", "--resume",
                          "0e4c5f0e-3f39-4f0e-9d55-7a3b8a0c1b2d", "--output-format", "json", "--model", "sonnet",
                          "--verbose", "--store", "postgresql://me:hunter2secret@db/x"])
    spec = opts.run_spec()
    assert type(spec) is RunSpec and not hasattr(spec, "verbose")  # the command line's own flags stay behind
    stored = json.loads(json.dumps(spec.to_json()))
    assert stored["version"] == 1 and stored["max_turns"] == "none" and stored["check"] == ["pytest -q"]
    assert "hunter2secret" not in json.dumps(stored["argv"]) and "--store" not in stored["argv"]
    back = RunSpec.from_json(stored)
    assert back == spec and back.max_turns == NO_LIMIT and back.resuming
    assert back.allowed == ("Bash", "Edit") and back.goal_max_turns == "none" and back.max_budget_usd == 2.5


def test_a_default_spec_is_just_its_version():
    assert RunSpec().to_json() == {"version": 1}
    assert RunSpec.from_json({"version": 1}) == RunSpec()


@pytest.mark.parametrize("data, said", [
    ({"version": 2, "prompt": "x"}, "field 'version': expected 1"),
    ({"prompt": "x"}, "field 'version': expected 1"),
    ({"version": 1, "max_turns": "5"}, "field 'max_turns': expected a whole number or null or \"none\", got '5'"),
    ({"version": 1, "max_turns": True}, "field 'max_turns'"),
    ({"version": 1, "check": "pytest"}, "field 'check': expected a list of strings, got 'pytest'"),
    ({"version": 1, "bare": "yes"}, "field 'bare': expected true or false"),
    ({"version": 1, "max_budget_usd": float("nan")}, "field 'max_budget_usd'"),
    ({"version": 1, "output_format": "yaml"}, "field 'output_format': expected one of text, json, stream-json"),
    ({"version": 1, "promt": "x"}, "unknown field(s) 'promt'"),
    (["-p", "x"], "expected a JSON object, got list"),
])
def test_bad_input_names_the_field(data, said):
    with pytest.raises(UsageError, match="run spec") as caught:
        RunSpec.from_json(data)
    assert said in str(caught.value)


@pytest.fixture
def in_a_home(tmp_path, monkeypatch):
    """Runs in `tmp_path` with a home of their own there and the default store."""
    home = tmp_path / "home"
    monkeypatch.chdir(tmp_path)
    for name, value in (("HOME", str(home)), ("LOOPWRIGHT_HOME", str(home / ".loopwright")),
                        ("ANTHROPIC_API_KEY", "sk-test")):
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("LOOPWRIGHT_STORE", raising=False)
    return home


def test_a_spec_is_built_and_run_as_a_library_call(tmp_path, monkeypatch, in_a_home):
    """`compose.build`: a RunSpec read from JSON becomes the agent, the session and the run — no
    command line — with its goal armed (the judge says it is met) and its session recorded."""
    import asyncio
    import uuid

    from loopwright.compose.build import build
    from loopwright.testing import Simulator

    judge = {"system_contains": "You decide whether an agent has met its goal"}
    rules = [{"match": judge, "responses": [{"text": json.dumps({"ok": True, "reason": "said"}), "repeat": -1}]},
             {"match": {"last_user_contains": "say hi"}, "responses": [{"text": "hi", "repeat": -1}]}]
    session_id = str(uuid.uuid4())
    spec = RunSpec.from_json({"version": 1, "prompt": "say hi", "goal": "hi was said", "check": ["true"],
                              "max_turns": 4, "bare": True, "session_id": session_id})
    with Simulator({"rules": rules}) as sim:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", sim.base_url)
        built = build(spec, announce=False)
        assert built.goal is not None and built.goal.checks == ("true",) and built.prompt.endswith("say hi")
        run = built.start()

        async def go():
            try:
                return await run.prompt(built.prompt)
            finally:
                await run.aclose()

        try:
            result = asyncio.run(go())
        finally:
            built.close()
    assert (result.terminal_reason, result.result) == ("goal_met", "hi")
    assert built.session.session_id == session_id and built.opened.transcript_path
    assert "hi was said" in open(built.opened.transcript_path, encoding="utf-8").read()
    assert not sim.unmatched


def test_a_spec_runs_to_its_end_with_the_public_run_spec(tmp_path, monkeypatch, in_a_home):
    """`loopwright.run_spec`: a spec read from JSON, run in one call with only public names — its
    events seen, SessionEnd fired, its session recorded with the spec it ran."""
    import asyncio

    import loopwright
    from loopwright.testing import Simulator

    spec = loopwright.RunSpec.from_json({"version": 1, "prompt": "say hi", "max_turns": 2, "bare": True,
                                         "settings": json.dumps({"permissions": {"allow": ["Bash(curl -u me:sk-ant-secret123456 x)"]}})})
    seen = []
    with Simulator([{"text": "hi", "repeat": -1}]) as sim:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", sim.base_url)
        result = asyncio.run(loopwright.run_spec(spec, on_event=seen.append))
        with pytest.raises(loopwright.UsageError, match="run spec: no prompt"):
            asyncio.run(loopwright.run_spec(loopwright.RunSpec()))
    assert (result.terminal_reason, result.result) == ("completed", "hi")
    assert isinstance(seen[-1], loopwright.ResultEvent)
    (transcript,) = (in_a_home / ".loopwright").rglob(f"{result.session_id}.jsonl")
    first = json.loads(transcript.read_text(encoding="utf-8").splitlines()[0])
    assert first["spec"]["prompt"] == "say hi" and first["spec"]["max_turns"] == 2 and "argv" not in first
    assert "sk-ant-secret" not in json.dumps(first["spec"])  # kept for a replay, scrubbed of secrets
