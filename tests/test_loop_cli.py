"""`-p "/loop …"` as a user runs it (issue 23 items 1 and 6): default bounds said once and kept
(each iteration's turns, the whole loop's money where prices are known, a week), `none` lifts
one; the result's top-level totals cover the whole loop with the last iteration under
`loop.last` (test_timeloop.py, on a fake clock); Ctrl-C while the loop waits ends it as `aborted` with exit 130 and a line."""

import json
import signal
import subprocess
import sys

from test_goal_session import cli, env  # noqa: F401  (env is a fixture)

from loopwright.testing import Simulator

CALL = {"tool_use": {"name": "Bash", "input": {"command": "true"}}}


def bounds_line(stderr):
    [line] = [ln for ln in stderr.splitlines() if "loop bounds" in ln]
    return line


def test_the_default_bounds_are_said_and_each_iteration_is_bounded(tmp_path, env):
    with Simulator([{**CALL, "repeat": -1}]) as sim:  # an iteration that never ends by itself
        out = cli(["-p", "/loop check it", "--max-iterations", "1", "--allowedTools", "Bash",
                   "--output-format", "json"], env, tmp_path, sim)
    result = json.loads(out.stdout)
    line = bounds_line(out.stderr)
    assert "100 turns an iteration (default), $10 in all (default), 1 iterations (flag)" in line, line
    assert "(a week at most)" in line
    assert result["loop"]["last"]["terminal_reason"] == "max_turns" and result["num_turns"] == 100


def test_none_lifts_a_default_and_a_model_without_a_price_has_no_money_bound(tmp_path, env):
    with Simulator([{"text": "ok"}]) as sim:
        out = cli(["-p", "/loop check it", "--max-iterations", "1", "--max-turns", "none", "--max-budget-usd",
                   "none", "--output-format", "json"], env, tmp_path, sim)
        assert "no turn bound an iteration (removed), no money bound (removed)" in bounds_line(out.stderr)
        out = cli(["-p", "/loop check it", "--max-iterations", "1", "--model", "acme-reasoner-7",
                   "--output-format", "json"], env, tmp_path, sim)
        assert "no money bound (no price is known for the model)" in bounds_line(out.stderr)
    assert json.loads(out.stdout)["loop"]["iterations"] == 1


def test_ctrl_c_while_the_loop_waits_says_so_in_text_mode(tmp_path, env):
    """(stream-json: test_timeloop.py's Ctrl-C test reads the result object.)"""
    with Simulator([{"text": "checked"}]) as sim:
        proc = subprocess.Popen([sys.executable, "-m", "loopwright", "-p", "/loop 1h check it"],
                                env=dict(env, ANTHROPIC_BASE_URL=sim.base_url), cwd=tmp_path,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            for line in proc.stdout:  # the iteration's answer: the loop now waits an hour
                if line.strip() == "checked":
                    break
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=60)
        finally:
            proc.kill()
    assert proc.returncode == 130, err
    assert "loop ended: interrupted by the user, after 1 iteration(s), 1 turns" in err


def test_each_iteration_of_a_loop_with_a_goal_is_a_goal_loop(tmp_path, env):
    evaluator = {"system_contains": "You decide whether an agent has met its goal"}
    verdicts = [{"text": json.dumps({"ok": True, "reason": "the check passes"})}]  # the failing check needs no call
    work = [{"text": "All done."}, {"tool_use": {"name": "Bash", "input": {"command": "touch done.txt"}}},
            {"text": "Created it."}]
    script = {"rules": [{"match": evaluator, "responses": verdicts}, {"responses": work}]}
    with Simulator(script) as sim:
        out = cli(["-p", "/loop /goal done.txt exists", "--max-iterations", "1", "--allowedTools", "Bash",
                   "--check", "test -f done.txt", "--output-format", "json"], env, tmp_path, sim)
        judged = [r for r in sim.message_requests if "You decide whether" in json.dumps(r.body.get("system"))]
    result = json.loads(out.stdout)
    assert "goal bounds, each iteration:" in out.stderr, out.stderr
    assert result["loop"]["iterations"] == 1 and result["loop"]["last"]["terminal_reason"] == "goal_met"
    assert (tmp_path / "done.txt").exists() and len(judged) == 1


def test_goal_flags_without_a_goal_are_refused_in_a_loop_too(tmp_path, env):
    with Simulator([{"text": "never"}]) as sim:
        out = cli(["-p", "/loop check it", "--check", "true"], env, tmp_path, sim)
        assert not sim.message_requests
    assert out.returncode == 2 and "--check" in out.stderr
