"""The README's first command: the offline demo fixes the sample project for real."""

import io
import subprocess

from loopwright.cli import demo


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
