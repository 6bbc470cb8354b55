"""Proactive routines end to end: real `loopwright routine …` processes against the simulator, real
routine files, sources, marker files written by real Bash calls, and the ledger they leave."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from loopwright.session import UNKNOWN_OUTCOME
from loopwright.testing import Simulator


def env_for(tmp_path, sim=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "LOOPWRIGHT_"))}
    env.update(ANTHROPIC_API_KEY="sk-test", LOOPWRIGHT_HOME=str(tmp_path / "home"), HOME=str(tmp_path / "fakehome"))
    if sim is not None:
        env["ANTHROPIC_BASE_URL"] = sim.base_url
    return env


def cli(args, tmp_path, sim=None):
    return subprocess.run([sys.executable, "-m", "loopwright", *args], cwd=tmp_path / "project",
                          env=env_for(tmp_path, sim), capture_output=True, text=True, timeout=90)


def project(tmp_path, name, text):
    root = tmp_path / "project"
    (root / ".loopwright" / "routines").mkdir(parents=True, exist_ok=True)
    (root / ".loopwright" / "routines" / f"{name}.yaml").write_text(text)
    return root


def items(tmp_path, name):
    out = cli(["routine", "items", name, "--json"], tmp_path)
    assert out.returncode == 0, out.stderr
    return {i["id"]: i for i in json.loads(out.stdout)}


def bash(command):
    return {"name": "Bash", "input": {"command": command}}


COMMAND_ROUTINE = """\
source:
  command: cat items.jsonl
prompt: "Handle report {id}: {title}"
allowed_tools: [Bash]
sandbox: false
"""


def test_command_items_run_once_across_two_fires(tmp_path):
    root = project(tmp_path, "triage", COMMAND_ROUTINE)
    (root / "items.jsonl").write_text('{"id": "r1", "title": "crash on start"}\n{"id": 2, "title": "typo"}\n')
    script = [{"tool_use": bash("echo r1 >> marks.txt")}, {"text": "r1 fixed"}, {"text": "2 is not a bug"}]
    with Simulator(script) as sim:
        first = cli(["routine", "run", "triage", "--once"], tmp_path, sim)
        second = cli(["routine", "run", "triage", "--once"], tmp_path, sim)
        requests = len(sim.message_requests)
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    assert "routine triage: 2 found, 2 taken, 2 done, 0 failed, spend $" in first.stdout
    assert "routine triage: 2 found, 0 taken, 0 done, 0 failed, spend $0.0000" in second.stdout
    assert requests == 3 and (root / "marks.txt").read_text() == "r1\n"
    ledger = items(tmp_path, "triage")
    assert {k: (v["status"], v["tries"]) for k, v in ledger.items()} == {"r1": ("done", 1), "2": ("done", 1)}
    assert ledger["r1"]["outcome"] == "r1 fixed" and ledger["r1"]["cost_usd"] > 0 and ledger["r1"]["session_id"]
