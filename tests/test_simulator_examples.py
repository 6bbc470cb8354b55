"""The simulator as a person uses it from a shell (issue 23 item 7): every example script under
examples/simulator/ is served by `python -m loopwright.testing.simulator --script FILE` and run
with the command docs/simulator.md gives for it, with no API key set; each ends as documented."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "simulator"
DOC = (ROOT / "docs" / "simulator.md").read_text()


class Served:
    def __init__(self, script: Path):
        self.proc = subprocess.Popen([sys.executable, "-m", "loopwright.testing.simulator", "--script", str(script)],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        assert line.startswith("listening on "), line + self.proc.stderr.read()
        self.url = line.split()[-1]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.proc.terminate()
        self.proc.wait(timeout=30)


def loopwright(args, url, cwd, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_", "LOOPWRIGHT_"))}
    env.update(HOME=str(tmp_path / "home"), LOOPWRIGHT_HOME=str(tmp_path / "home" / ".lw"), ANTHROPIC_BASE_URL=url)
    out = subprocess.run([sys.executable, "-m", "loopwright", *args, "--output-format", "json"], cwd=cwd, env=env,
                         capture_output=True, text=True, timeout=120)
    return out, json.loads(out.stdout.strip().splitlines()[-1])


def documented_command(name):
    """The `loopwright …` command the docs' table gives for an example."""
    row = next(line for line in DOC.splitlines() if line.startswith(f"| `{name}` |"))
    command = re.findall(r"`(loopwright [^`]*)`", row)[-1]
    import shlex

    return shlex.split(command)[1:]


EXPECTED = {
    "hello.json": lambda r, cwd: r["result"] == "Hello from the simulator.",
    "tool-call.json": lambda r, cwd: r["result"] == "I wrote notes.txt." and (cwd / "notes.txt").read_text() == "written\n",
    "goal.json": lambda r, cwd: r["terminal_reason"] == "goal_met" and r["goal"]["iterations"] == 2,
    "fault-and-recover.json": lambda r, cwd: r["result"].startswith("Answered after") and r["retries"]["overloaded"] == 1,
    "self-paced-loop.json": lambda r, cwd: r["loop"]["terminal_reason"] == "stopped",
}


def test_every_example_is_documented_and_tested():
    shipped = sorted(p.name for p in EXAMPLES.glob("*.json"))
    assert shipped == sorted(EXPECTED)
    assert all(f"| `{name}` |" in DOC for name in shipped)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_an_example_runs_as_documented_without_a_key(tmp_path, name):
    cwd = tmp_path / "project"
    cwd.mkdir()
    with Served(EXAMPLES / name) as sim:
        out, result = loopwright(documented_command(name), sim.url, cwd, tmp_path)
    assert not result["is_error"] or name == "goal.json" and result["terminal_reason"] == "goal_met", out.stderr
    assert EXPECTED[name](result, cwd), (result, out.stderr)


def test_a_remote_url_still_needs_a_key(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "LOOPWRIGHT_"))}
    env.update(HOME=str(tmp_path), ANTHROPIC_BASE_URL="https://models.example.invalid")
    out = subprocess.run([sys.executable, "-m", "loopwright", "-p", "hi"], env=env, cwd=tmp_path, capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 2 and "No Anthropic API key" in out.stderr
