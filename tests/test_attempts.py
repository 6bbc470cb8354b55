"""Parallel attempts end to end (`-p PROMPT --attempts N`): real git repositories in temporary
folders, the real process, the simulator playing every attempt (told apart by its instruction
line) and the judge (by its system prompt)."""

import json
import signal
import subprocess
import sys
import time

import pytest

from test_goal_session import env  # noqa: F401  (env is a fixture)

from loopwright.testing import Simulator

JUDGE = {"system_contains": "reviewer of several independent attempts"}
RIGHT = "def add(a, b):\n    return a + b\n"
WRONG = "def add(a, b):\n    return a - b\n"
CHECK = "python3 -c 'import app; assert app.add(2, 3) == 5'"


def git(repo, *args):
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, check=True,
                          capture_output=True, text=True).stdout


@pytest.fixture
def aenv(env, tmp_path):
    """The goal tests' environment, with a temporary directory of the test's own (the worktrees go there)."""
    (tmp_path / "tmp").mkdir()
    return dict(env, TMPDIR=str(tmp_path / "tmp"))


@pytest.fixture
def repo(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "app.py").write_text("def add(a, b):\n    return 0\n")
    (repo / "tests").mkdir()
    (repo / "tests" / "test_app.py").write_text("import app\n\ndef test_add():\n    assert app.add(2, 3) == 5\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "start")
    (repo / "notes.txt").write_text("user-change\n")  # untracked, not committed: the attempts must see it
    (repo / "README").write_text("uncommitted edit\n")
    return repo


def write(path, content):
    return {"tool_use": {"name": "Write", "input": {"file_path": path, "content": content}}}


def verdict(winner, defects=()):
    return {"text": json.dumps({"attempts": [{"label": "A", "defects": list(defects),
                                              "verdict": "reject" if defects else "acceptable"}],
                                "winner": winner, "reasons": "reviewed"})}


def script(judge, per_attempt):
    rules = [{"match": JUDGE, "responses": judge}]
    rules += [{"match": {"last_user_contains": f"approach {k}"}, "responses": [r]} for k, r in per_attempt.items()]
    rules.append({"responses": [{"text": "done", "repeat": -1}]})
    return {"rules": rules}


def cli(args, env, cwd, sim, **kw):
    e = dict(env, ANTHROPIC_BASE_URL=sim.base_url)
    return subprocess.run([sys.executable, "-m", "loopwright", *args], env=e, cwd=cwd, capture_output=True,
                          text=True, timeout=120, **kw)


def instructions(tmp_path, n=3):
    f = tmp_path / "ways.txt"
    f.write_text("# one variation per line\n" + "".join(f"approach {k}\n" for k in range(1, n + 1)))
    return ["--attempt-instructions", str(f)]


FLAGS = ["--permission-mode", "acceptEdits", "--allowedTools", "Bash(python3 *)", "--output-format", "json", "--check", CHECK,
         "--check", "grep -q user-change notes.txt", "--protect", "tests/**"]


def judge_requests(sim):
    return [r for r in sim.message_requests if "reviewer of several" in json.dumps(r.body.get("system"))]


def test_the_right_attempt_wins_and_only_its_change_reaches_the_working_tree(repo, tmp_path, aenv):
    weaken = {"name": "Bash", "input": {"command": "python3 -c \"open('tests/test_app.py', 'w').write('')\""}}
    per = {1: {"tool_use": [write("app.py", RIGHT)["tool_use"], weaken]}, 2: write("app.py", WRONG),
           3: write("app.py", RIGHT)}
    with Simulator(script([verdict("A")], per)) as sim:
        out = cli(["-p", "make add() add", "--attempts", "3", *instructions(tmp_path), *FLAGS], aenv, repo, sim)
        judged = judge_requests(sim)
        listed, table = (cli(["sessions", *more], aenv, repo, sim).stdout for more in (["--json"], []))
    result = json.loads(out.stdout)
    assert result["subtype"] == "success" and out.returncode == 0, out.stderr
    rows = {row["attempt"]: row for row in result["attempts"]["attempts"]}
    assert rows[1]["why_not"] == "it changed protected files: tests/test_app.py"
    assert rows[2]["why_not"].startswith("its checks failed: python3")
    assert rows[3]["eligible"] and result["attempts"]["winner"] == 3 and result["attempts"]["applied"]
    assert all(row["checks"][1]["passed"] for row in rows.values())  # the untracked notes.txt was in every worktree
    assert (repo / "app.py").read_text() == RIGHT
    assert "assert app.add" in (repo / "tests" / "test_app.py").read_text()  # attempt 1's change never arrived
    assert (repo / "notes.txt").read_text() == "user-change\n" and (repo / "README").read_text() == "uncommitted edit\n"
    assert len(judged) == 1
    shown = judged[0].body["messages"][0]["content"]
    shown = shown if isinstance(shown, str) else shown[0]["text"]
    assert "=== ATTEMPT A ===" in shown and "=== ATTEMPT B ===" not in shown and "return a + b" in shown
    assert "judge" in result["usageByRole"]
    branches = git(repo, "branch", "--list", "loopwright/*").split()
    assert len(branches) == 3  # branches are kept
    assert git(repo, "worktree", "list").count("\n") == 1  # worktrees are not
    # the session list tells the attempts from ordinary sessions, and says which one won
    run = branches[0].split("/")[1]
    marks = {r["id"]: r["attempt"] for r in json.loads(listed)}
    assert {rows[k]["session_id"]: k for k in rows} == {sid: m["number"] for sid, m in marks.items()}
    assert all(m["of"] == 3 and m["run"].startswith(run) and m["won"] == (m["number"] == 3) for m in marks.values())
    assert {line.split()[0]: line for line in table.splitlines()}[rows[3]["session_id"]].count(
        f"[attempt 3/3 of run {run}, won]") == 1
    assert f"[attempt 1/3 of run {run}, attempt 3 won] make add() add" in table


def test_a_judge_that_finds_a_defect_in_the_only_passing_attempt_means_no_winner(repo, tmp_path, aenv):
    per = {1: write("app.py", RIGHT), 2: write("app.py", WRONG)}
    with Simulator(script([verdict(None, ["hard-codes the answer"])], per)) as sim:
        out = cli(["-p", "make add() add", "--attempts", "2", *instructions(tmp_path, 2), *FLAGS], aenv, repo, sim)
    result = json.loads(out.stdout)
    assert out.returncode == 1 and result["terminal_reason"] == "no_winner" and result["is_error"]
    assert result["attempts"]["winner"] is None and result["attempts"]["judge"]["defects"] == {
        "1": ["hard-codes the answer"]}
    assert (repo / "app.py").read_text() == "def add(a, b):\n    return 0\n"  # nothing applied


def test_an_unreadable_ruling_is_asked_for_once_more_then_there_is_no_winner(repo, tmp_path, aenv):
    per = {1: write("app.py", RIGHT)}
    with Simulator(script([{"text": "A looks good to me", "repeat": 2}], per)) as sim:
        out = cli(["-p", "make add() add", "--attempts", "1", *instructions(tmp_path, 1), *FLAGS], aenv, repo, sim)
        asked = len(judge_requests(sim))
    result = json.loads(out.stdout)
    assert asked == 2 and result["terminal_reason"] == "no_winner"
    assert "no usable ruling" in result["errors"][0]
    assert (repo / "app.py").read_text() == "def add(a, b):\n    return 0\n"


def test_outside_a_git_repository_attempts_are_one_clear_error(tmp_path, aenv):
    with Simulator([{"text": "never"}]) as sim:
        out = cli(["-p", "x", "--attempts", "2"], aenv, tmp_path, sim)
        assert not sim.message_requests
    assert out.returncode == 2 and "--attempts needs a git repository" in out.stderr and "Traceback" not in out.stderr


def test_an_interrupt_leaves_nothing_after_attempts_clean(repo, tmp_path, aenv):
    slow = {"text": "still thinking", "delay": 30}
    with Simulator(script([verdict("A")], {1: slow, 2: slow})) as sim:
        proc = subprocess.Popen([sys.executable, "-m", "loopwright", "-p", "x", "--attempts", "2", "--keep-worktrees",
                                 *instructions(tmp_path, 2), "--output-format", "json"],
                                env=dict(aenv, ANTHROPIC_BASE_URL=sim.base_url), cwd=repo, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        for _ in range(600):  # both attempts have sent their request
            if len(sim.message_requests) >= 2:
                break
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    result = json.loads(out)
    assert proc.returncode == 130 and result["terminal_reason"] == "aborted", err
    assert git(repo, "worktree", "list").count("\n") == 3  # kept, as asked
    cleaned = subprocess.run([sys.executable, "-m", "loopwright", "attempts", "clean"], env=aenv, cwd=repo,
                             capture_output=True, text=True, timeout=60)
    assert cleaned.returncode == 0 and "removed 2 attempt worktree(s)" in cleaned.stdout
    assert git(repo, "worktree", "list").count("\n") == 1
    assert not [p for p in (tmp_path / "tmp").glob("loopwright-attempts-*/*/*")]


def test_attempts_killed_before_their_ruling_are_still_marked_in_the_session_list(repo, tmp_path, aenv):
    slow = {"text": "still thinking", "delay": 30}
    with Simulator(script([verdict("A")], {1: slow, 2: slow})) as sim:
        proc = subprocess.Popen([sys.executable, "-m", "loopwright", "-p", "x", "--attempts", "2",
                                 *instructions(tmp_path, 2), "--output-format", "json"],
                                env=dict(aenv, ANTHROPIC_BASE_URL=sim.base_url), cwd=repo, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        try:
            for _ in range(600):  # both attempts have sent their request
                if len(sim.message_requests) >= 2:
                    break
                time.sleep(0.05)
        finally:
            proc.kill()
            proc.wait(timeout=30)
        listed = json.loads(cli(["sessions", "--json"], aenv, repo, sim).stdout)
        table = cli(["sessions"], aenv, repo, sim).stdout
    run = git(repo, "for-each-ref", "--format=%(refname:short)", "refs/heads/loopwright").split()[0].split("/")[1]
    assert sorted((r["attempt"]["number"], r["attempt"]["of"], r["attempt"]["won"], r["outcome"]) for r in listed) == [
        (1, 2, None, "interrupted"), (2, 2, None, "interrupted")]
    assert f"[attempt 2/2 of run {run}] x" in table and "won" not in table
    subprocess.run([sys.executable, "-m", "loopwright", "attempts", "clean"], env=aenv, cwd=repo, capture_output=True,
                   timeout=60)


def test_each_attempt_is_a_goal_loop_judged_before_the_attempts_are(repo, tmp_path, aenv):
    evaluator = {"system_contains": "You decide whether an agent has met its goal"}
    met = {"text": json.dumps({"ok": True, "reason": "the check passes"})}
    per = {1: write("app.py", RIGHT), 2: write("app.py", RIGHT)}
    rules = script([verdict("A")], per)
    rules["rules"].insert(0, {"match": evaluator, "responses": [{**met, "repeat": -1}]})
    with Simulator(rules) as sim:
        out = cli(["-p", "make add() add", "--goal", "add(2, 3) returns 5", "--attempts", "2",
                   *instructions(tmp_path, 2), *FLAGS], aenv, repo, sim)
        judged = [r for r in sim.message_requests if "You decide whether" in json.dumps(r.body.get("system"))]
    result = json.loads(out.stdout)
    assert out.returncode == 0, out.stderr
    assert len(judged) == 2  # one goal verdict per attempt
    rows = result["attempts"]["attempts"]
    assert [r["terminal_reason"] for r in rows] == ["goal_met", "goal_met"] and result["attempts"]["applied"]
    assert (repo / "app.py").read_text() == RIGHT


def test_the_attempts_are_shown_side_by_side_while_they_run(repo, tmp_path, aenv):
    per = {1: write("app.py", RIGHT), 2: write("app.py", WRONG)}
    with Simulator(script([verdict("A")], per)) as sim:
        out = cli(["-p", "make add() add", "--attempts", "2", *instructions(tmp_path, 2), *FLAGS, "--verbose"],
                  aenv, repo, sim)
    assert out.returncode == 0, out.stderr
    assert "attempt 1 · turn 1 · Write(app.py)" in out.stderr and "attempt 2 · turn 1 · Write(app.py)" in out.stderr
    import pexpect

    with Simulator(script([verdict("A")], per)) as sim:  # on a terminal: one line, redrawn
        child = pexpect.spawn(sys.executable, ["-m", "loopwright", "-p", "make add() add", "--attempts", "2",
                                               *instructions(tmp_path, 2), "--permission-mode", "acceptEdits",
                                               "--check", CHECK],
                              cwd=str(repo), env=dict(aenv, ANTHROPIC_BASE_URL=sim.base_url), encoding="utf-8",
                              timeout=90)
        child.expect(r"1: turn 1 Write\(app\.py\)")
        child.expect(pexpect.EOF)
        child.close()
    assert child.exitstatus == 0
