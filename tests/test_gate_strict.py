"""The strict gate (issue 29, item 4): where no OS sandbox can start (`PermissionRules.strict`),
the shell runs without asking only a short list of readers with known options whose paths land
inside the readable places, and the parts an allow rule names, except a rule that lets one
program run anything. The table is judged by the real gate over a real folder (paths resolved as
the kernel will); the end-to-end test runs the real CLI where bubblewrap is missing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from loopwright.engine.gate import ToolGate
from loopwright.permissions.bash.nosandbox import sets_aside
from loopwright.permissions.decide import PermissionRules
from loopwright.testing import Simulator
from loopwright.tools.shell import BashTool

BASH = BashTool()
CLI = [sys.executable, "-m", "loopwright"]


@pytest.fixture
def proj(tmp_path, monkeypatch):
    home = tmp_path / "home"
    proj = home / "proj"
    (proj / "sub").mkdir(parents=True)
    (proj / "a.txt").write_text("a\n")
    (proj / "sub" / "b.txt").write_text("b\n")
    (home / "secret").write_text("s\n")
    monkeypatch.setenv("HOME", str(home))
    subprocess.run(["git", "init", "-q"], cwd=proj, check=True)
    return proj


def judged(proj, command, mode="default", strict=True, **rules):
    gate = ToolGate(PermissionRules(mode=mode, strict=strict, **rules), proj)
    return gate.verdict(BASH, {"command": command})


@pytest.mark.parametrize("command", [
    "ls", "ls -la sub", "cat a.txt", "head -n 1 a.txt", "tail -c 2 a.txt", "wc -l a.txt sub/b.txt",
    "grep -rn a .", "rg -n a", "find . -name '*.txt' -type f", "pwd", "echo hi", "stat a.txt", "file a.txt",
    "diff a.txt sub/b.txt", "git status --short", "git log --oneline -1", "git diff", "git show --stat",
    "cd sub && cat b.txt", "cat a.txt | grep a | wc -l", "ls 2>/dev/null", "LANG=C ls",
])
@pytest.mark.parametrize("mode", ["default", "plan", "acceptEdits", "dontAsk", "auto"])
def test_the_short_list_runs_without_asking(proj, command, mode):
    got = judged(proj, command, mode)
    assert got.decision == "allow", got.reason


@pytest.mark.parametrize("command,unless_strict", [
    ("sort a.txt", "allow"),  # read-only, but not on the short list
    ("uniq a.txt", "allow"),
    ("cut -c1 a.txt", "allow"),
    ("xxd a.txt", "allow"),
    ("git branch", "allow"),
    ("diff -X a.txt a.txt sub/b.txt", "allow"),  # reads a third file on the side
    ("ls --unknown-option", "ask"),
    ("find . -exec cat {} +", "ask"),
    ("cat ../secret", "ask"),  # outside the roots: asked in any case
    ("python3 -c 'print(1)'", "ask"),
])
def test_everything_else_is_asked_naming_the_missing_sandbox(proj, command, unless_strict):
    assert judged(proj, command, strict=False).decision == unless_strict
    got = judged(proj, command)
    assert got.decision == "ask"
    if unless_strict == "allow":
        assert got.reason.startswith("asked because no sandbox runs here:"), got.reason


@pytest.mark.parametrize("command", ["touch new.txt", "mkdir d", "cp a.txt c.txt", "mv a.txt c.txt",
                                     "echo x > out.txt", "echo x >> a.txt"])
def test_edits_acceptEdits_would_run_are_asked(proj, command):
    assert judged(proj, command, "acceptEdits", strict=False).decision == "allow"
    got = judged(proj, command, "acceptEdits")
    assert got.decision == "ask" and "no sandbox runs here" in got.reason and not got.hard


def test_plan_still_denies_what_it_denied(proj):
    assert judged(proj, "touch x", "plan").decision == "deny"


def test_bypass_permissions_is_not_strict_but_keeps_the_hard_asks(proj):
    assert judged(proj, "python3 -c 'print(1)'", "bypassPermissions").decision == "allow"
    assert judged(proj, "touch x", "bypassPermissions", ask=("Bash(touch *)",)).decision == "ask"
    got = judged(proj, "rm -rf ~", "bypassPermissions")
    assert got.decision == "ask" and got.hard


@pytest.mark.parametrize("rule,command,expected", [
    ("Bash(npm run test:*)", "npm run test -- -x", "allow"),  # a rule naming more than a program: the user chose
    ("Bash(git diff *)", "git diff HEAD~1", "allow"),
    ("Bash(sort a.txt)", "sort a.txt", "allow"),
    ("Bash(ls:*)", "ls --weird", "allow"),  # ls runs nothing whatever its options
    ("Bash(python3:*)", "python3 -c 'print(1)'", "ask"),
    ("Bash(git:*)", "git commit -m x", "ask"),
    ("Bash(*)", "sort a.txt", "ask"),
    ("Bash", "sort a.txt", "ask"),
    ("Bash(make *)", "make all", "ask"),
])
def test_allow_rules_still_allow_except_a_program_running_anything(proj, rule, command, expected):
    got = judged(proj, command, allow=(rule,))
    assert got.decision == expected, got.reason
    if expected == "ask":
        assert judged(proj, command, strict=False, allow=(rule,)).decision == "allow"
        assert f"the allow rule {rule} lets a program run anything" in got.reason and "set aside" in got.reason


def test_a_path_known_only_at_run_time_is_asked_even_under_a_broad_rule(proj):
    assert judged(proj, "cat $F", strict=False, allow=("Bash",)).decision == "allow"
    assert judged(proj, "cat $F", allow=("Bash",)).decision == "ask"


@pytest.mark.parametrize("spec,aside", [
    (None, True), ("*", True), ("python:*", True), ("python *", True), ("py*", True), ("git:*", True),
    ("npm run test:*", False), ("git diff *", False), ("make test", False), ("cat:*", False), ("grep *", False),
    ("find:*", True), ("rg:*", True),
])
def test_which_rules_are_set_aside(spec, aside):
    assert sets_aside(spec) is aside


def test_merged_rules_stay_strict():
    assert PermissionRules(strict=True).merged(PermissionRules(mode="plan")).strict
    assert PermissionRules().merged(PermissionRules(strict=True)).strict


# ------------------------------------------------------------ the real CLI where bubblewrap is missing


def cli(args, sim, cwd):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "LOOPWRIGHT_"))}
    env.update(ANTHROPIC_BASE_URL=sim.base_url, ANTHROPIC_API_KEY="sk-test", LOOPWRIGHT_BWRAP="/nonexistent",
               HOME=str(cwd.parent))
    return subprocess.run(CLI + args, capture_output=True, text=True, env=env, cwd=cwd, timeout=60)


def test_the_cli_without_a_sandbox_denies_all_but_the_short_list(proj):
    """The sandbox is asked for and may run without (failIfUnavailable false), bubblewrap is
    missing: the run is strict. Headless, what it asks is denied: `touch` (acceptEdits would run
    it) and `python3` (its allow rule is set aside); `ls` runs."""
    settings = json.dumps({"sandbox": {"enabled": True, "failIfUnavailable": False}})
    script = [
        {"tool_use": {"name": "Bash", "input": {"command": "touch made.txt"}}},
        {"tool_use": {"name": "Bash", "input": {"command": "python3 -c \"open('ran.txt', 'w')\""}}},
        {"tool_use": {"name": "Bash", "input": {"command": "ls"}}},
        {"text": "done"},
    ]
    with Simulator(script) as sim:
        out = cli(["-p", "go", "--output-format", "json", "--permission-mode", "acceptEdits", "--allowedTools",
                   "Bash(python3:*)", "--settings", settings], sim, proj)
        results = [m["content"][0] for r in sim.message_requests[1:] for m in r.body["messages"][-1:]]
    assert out.returncode == 0, out.stderr
    denied = [d["tool_input"]["command"] for d in json.loads(out.stdout)["permission_denials"]]
    assert denied == ["touch made.txt", "python3 -c \"open('ran.txt', 'w')\""]
    assert not (proj / "made.txt").exists() and not (proj / "ran.txt").exists()
    assert "no sandbox runs here" in str(results[0]["content"])
    assert "Bash(python3:*)" in str(results[1]["content"]) and "set aside" in str(results[1]["content"])
    assert "a.txt" in str(results[2]["content"]) and not results[2].get("is_error")


def test_the_cli_with_a_sandbox_is_not_strict(proj):
    """The same run where bubblewrap works (or the sandbox is not asked for) is not strict."""
    script = [{"tool_use": {"name": "Bash", "input": {"command": "touch made.txt"}}}, {"text": "done"}]
    with Simulator(script) as sim:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "LOOPWRIGHT_"))}
        env.update(ANTHROPIC_BASE_URL=sim.base_url, ANTHROPIC_API_KEY="sk-test", HOME=str(proj.parent))
        out = subprocess.run(CLI + ["-p", "go", "--output-format", "json", "--permission-mode", "acceptEdits"],
                             capture_output=True, text=True, env=env, cwd=proj, timeout=60)
    assert not json.loads(out.stdout)["permission_denials"] and (proj / "made.txt").exists(), out.stderr
