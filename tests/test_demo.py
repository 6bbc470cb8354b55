"""The README's first command: the offline demo fixes the sample project for real."""

import io
import subprocess

from loopwright import demo


def test_demo_fixes_the_sample_project(tmp_path):
    out = io.StringIO()
    assert demo.run(out=out, keep=tmp_path) == 0
    text = out.getvalue()
    assert "SCRIPTED" in text and "PASS" in text and "[turn 5]" in text
    assert "len(values) - 1" not in (tmp_path / "calc.py").read_text()
    check = subprocess.run(demo.test_command(), shell=True, cwd=tmp_path, capture_output=True, text=True)
    assert check.returncode == 0, check.stdout


def test_sample_project_starts_broken(tmp_path):
    demo.make_project(tmp_path)
    check = subprocess.run(demo.test_command(), shell=True, cwd=tmp_path, capture_output=True, text=True)
    assert check.returncode != 0 and "test_average" in check.stdout
