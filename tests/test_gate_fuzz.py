"""The differential fuzz of the shell gate (issue 21): Hypothesis writes shell lines from a grammar
(tests/gategrammar.py), the gate judges each in `default` and `acceptEdits`, and every line it
allows runs for real under bubblewrap in a throwaway world whose every folder is writable
(tests/gatefuzz.py), so the kernel says what the line really changed. Any change the gate's
judgement rules out fails the test with the line. CI runs a fixed seed and a bounded number of
lines; `--hypothesis-profile gate-long` runs many more with a new seed each time:

    .venv/bin/python -m pytest tests/test_gate_fuzz.py --hypothesis-profile gate-long

The lines under `@example` are escapes this fuzz found (each closed in the policy, with its
regression test in test_gate_holes.py); they run first, every time."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, example, given, settings

import gatefuzz
import gategrammar

pytestmark = pytest.mark.skipif(not gatefuzz.bwrap_works(),
                                reason="bubblewrap cannot create namespaces here (the fuzz needs it as its oracle)")

LONG_PROFILE, CI_EXAMPLES = "gate-long", 300
_QUIET = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture]


def long_profile() -> bool:
    return settings.default is settings.get_profile(LONG_PROFILE)


def fuzz_settings() -> settings:
    if long_profile():  # many lines, a new seed each run
        return settings(settings.default)
    return settings(max_examples=CI_EXAMPLES, derandomize=True, database=None, deadline=None,
                    suppress_health_check=_QUIET)


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    return gatefuzz.build_template(tmp_path_factory.mktemp("gate-world"))


@pytest.mark.timeout(0 if long_profile() else 300)  # the long profile runs for as long as it takes
@fuzz_settings()
@given(line=gategrammar.lines, mode=gategrammar.modes)
@example(line="echo $( stat -c%s a.txt 1> - 2>/dev/null )", mode="default")  # `> -` is a file named "-"
@example(line="git diff", mode="default")  # refreshes the index's file times only
@example(line="git status --short", mode="default")
@example(line="mv a.txt /dev/null", mode="acceptEdits")  # (the oracle's /dev is private: see the holes test)
@example(line="echo x >> /dev/fd/../../..@W@/outside/victim", mode="default")  # issue 29: a device prefix walked out of
@example(line="xxd -ps a.txt sub/b.txt", mode="default")  # issue 29: xxd writes its second operand
def test_what_the_gate_allows_changes_only_what_it_said(template, tmp_path_factory, line, mode):
    scratch = tmp_path_factory.mktemp("run", numbered=True)
    trial = gatefuzz.trial(line, mode, template, scratch)
    assert not trial.escaped, (f"the gate allowed `{line}` in {mode} mode, and it changed {trial.escaped}\n"
                               f"output: {trial.output}")


@pytest.mark.timeout(0 if long_profile() else 300)
@fuzz_settings()
@given(line=gategrammar.lines, mode=gategrammar.modes)
@example(line="cat /dev/fd/../../..@W@/outside/victim", mode="default")
@example(line="xxd -ps a.txt sub/b.txt", mode="acceptEdits")
def test_what_the_strict_gate_allows_changes_nothing_it_ruled_out(template, tmp_path_factory, line, mode):
    """Where no sandbox can start (issue 29), the strict gate is all there is: every line it lets
    run without asking must keep to what it said, in the same world, with the kernel as oracle."""
    scratch = tmp_path_factory.mktemp("strict", numbered=True)
    trial = gatefuzz.trial(line, mode, template, scratch, strict=True)
    assert not trial.escaped, (f"the strict gate allowed `{line}` in {mode} mode, and it changed "
                               f"{trial.escaped}\noutput: {trial.output}")


def test_the_oracle_sees_an_escape(template, tmp_path_factory):
    """The harness itself: a line the gate would never allow, run anyway, is seen changing the decoy."""
    scratch = tmp_path_factory.mktemp("oracle")
    world = scratch / "w"
    import shutil

    shutil.copytree(template, world, symlinks=True)
    before = gatefuzz.snapshot(world)
    gatefuzz.run_in_sandbox("echo gotcha > ../outside/victim; touch ln_out/planted", world, {})
    moved = gatefuzz.changes(before, gatefuzz.snapshot(world))
    assert moved == ["outside/planted", "outside/victim"]
    assert not any(gatefuzz.allowed_change(p, "acceptEdits") for p in moved)
    assert gatefuzz.allowed_change("proj/n1", "acceptEdits") and not gatefuzz.allowed_change("proj/n1", "default")
    assert not gatefuzz.allowed_change("proj/.git/config", "acceptEdits")
