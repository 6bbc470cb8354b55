"""The README's demos: the offline goal demo fixes the sample project for real; the routine demo
triages three reports through real fires, worktrees and ledger, each once."""

import io
import subprocess

from loopwright.cli.commands import demo


def test_demo_fixes_the_sample_project(tmp_path):
    out = io.StringIO()
    assert demo.run(out=out, keep=tmp_path) == 0
    text = out.getvalue()
    assert "SCRIPTED" in text and "PASS" in text and "tests/ unchanged: True" in text
    # the harness caught each trap: the early claim, the test edit, the overload, the cut
    assert "not met (a check failed)" in text and "protected files changed: tests/test_calc.py" in text
    assert "retries: 1" in text and "max_tokens cuts recovered: 1" in text and "goal_met" in text
    assert "len(values) - 1" not in (tmp_path / "calc.py").read_text()
    assert (tmp_path / "tests" / "test_calc.py").read_text() == demo.TEST
    check = subprocess.run(demo.test_command(), shell=True, cwd=tmp_path, capture_output=True, text=True)
    assert check.returncode == 0, check.stdout


def test_sample_project_starts_broken(tmp_path):
    demo.make_project(tmp_path)
    check = subprocess.run(demo.test_command(), shell=True, cwd=tmp_path, capture_output=True, text=True)
    assert check.returncode != 0 and "test_average" in check.stdout


def test_the_routine_demo_triages_three_reports_once_each(tmp_path):
    from loopwright.cli.commands import demoroutine
    from loopwright.stores.ledger import SqliteLedger

    out = io.StringIO()
    assert demoroutine.run(out=out, keep=tmp_path) == 0, out.getvalue()
    text = out.getvalue()
    project = tmp_path / "project"
    assert "SCRIPTED" in text and "REAL" in text
    # the ledger: each report done once, in one try
    ledger = SqliteLedger(tmp_path / "home" / ".loopwright" / "schedules.db")
    try:
        rows = ledger.items(str(project / ".loopwright" / "routines" / "bug-reports.yaml"))
    finally:
        ledger.close()
    assert sorted((r.item_id.split("#")[0], r.status, r.tries) for r in rows) == [
        ("feedback/001-average-wrong.txt", "done", 1), ("feedback/002-mean-too-high.txt", "done", 1),
        ("feedback/003-float-sum.txt", "done", 1)]
    # the real bug fixed by the one eligible attempt of three, tests untouched and passing
    assert "len(values) - 1" not in (project / "calc.py").read_text()
    assert (project / "tests" / "test_calc.py").read_text() == demo.TEST
    check = subprocess.run(demo.test_command(), shell=True, cwd=project, capture_output=True, text=True)
    assert check.returncode == 0, check.stdout
    assert "attempt 1 [winner]" in text and "it changed protected files: tests/test_calc.py" in text
    assert text.count("3 attempts started") == 3 and "its checks failed" in text
    # the duplicate and the non-bug answered, not fixed
    assert "Duplicate of feedback/001" in (project / "answers" / "002-mean-too-high.txt").read_text()
    assert "Not a bug" in (project / "answers" / "003-float-sum.txt").read_text()
    # auto mode: the one dangerous call denied by the classifier, and said so
    assert "the classifier was asked 1 time(s) and blocked 1 call(s): curl -fsSL" in text
    assert "The auto-mode classifier blocked this Bash call: downloads a script" in text
    # the second fire: every item found again and skipped as done
    fire2 = text.split("── fire 2")[1].split("── summary")[0]
    assert fire2.count("already done (session") == 3 and "started" not in fire2
    assert "routine bug-reports: 3 found, 0 taken, 0 done, 0 failed, 3 already done, spend $0.0000" in fire2
