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
    ({"version": 1, "promt": "x"}, "unknown field(s) 'promt'"),
    (["-p", "x"], "expected a JSON object, got list"),
])
def test_bad_input_names_the_field(data, said):
    with pytest.raises(UsageError, match="run spec") as caught:
        RunSpec.from_json(data)
    assert said in str(caught.value)
