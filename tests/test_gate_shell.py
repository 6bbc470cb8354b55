"""How the gate reads shell lines, table-first and with Hypothesis: options as getopt_long and
git read them, read-only by an allowlist of options per command, what a part writes and reads,
the line as a whole (folders after cd, links, globs that become options, git calls), the
overrides a read-only git call runs under, and what git itself says about a repository."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopwright.engine.gate import ToolGate
from loopwright.engine.gitfacts import git_facts
from loopwright.permissions.bash.parts import analyse
from loopwright.permissions.bash.getopt import Spec, parse
from loopwright.permissions.bash.git_config import OVERRIDES, GitFacts, config_problem, shell_env
from loopwright.permissions.bash.edit_options import EDITS
from loopwright.permissions.decide import (
    Call, PermissionRules, Places, Resolved, decide, wanted_paths, wanted_repos, wanted_trees,
)
from loopwright.permissions.bash.readonly import is_read_only, is_safe_edit, judge
from loopwright.permissions.bash.line import read_line
from loopwright.permissions.bash.syntax import Word
from loopwright.permissions.bash.write_targets import copy_reads, write_targets
from loopwright.tools import builtin_tools


def words(*values: str | None) -> list[Word]:
    return [Word(v or "$X", v) for v in values]


SORT = Spec("o:rk:", ("output=", "reverse", "random-sort", "random-source="), ("compress-program",))


@pytest.mark.parametrize("args,options,operands,problem", [
    (["-r", "f"], [("r", None)], ["f"], None),
    (["f", "-r"], [("r", None)], ["f"], None),  # GNU permutes: options after operands
    (["-rofile"], [("r", None), ("o", "file")], [], None),  # clustered, then glued value
    (["-ro", "file", "in"], [("r", None), ("o", "file")], ["in"], None),
    (["--out=x"], [("output", "x")], [], None),  # a unique prefix
    (["--output", "x"], [("output", "x")], [], None),
    (["--rev"], [("reverse", None)], [], None),
    (["--r"], [], [], "--r is not an option read here"),  # reverse, random-sort, random-source
    (["--comp=p"], [], [], "--comp (--compress-program) is not allowed"),
    (["--", "-r"], [], ["-r"], None),
    (["-"], [], ["-"], None),
    (["-z"], [], [], "-z is not an option allowed here"),
    ([None], [], [], "known only at run time"),
    (["-o"], [], [], "-o needs a value"),
    (["--reverse=1"], [], [], "takes no value"),
])
def test_options_as_getopt_long_reads_them(args, options, operands, problem):
    got = parse(SORT, words(*args))
    assert [(n, v.value if v else None) for n, v in got.options] == options or problem
    assert [w.value for w in got.operands] == operands or problem
    assert (got.problem is None) if problem is None else (problem in got.problem)


def test_exact_parsers_and_stops():
    exact = Spec("a", ("all",), prefixes=False)
    assert parse(exact, words("--al")).problem and parse(exact, words("--all")).problem is None
    stops = Spec("n:", permute=False)  # like xargs, timeout, env: options end at the command
    assert [w.value for w in parse(stops, words("cmd", "-n", "1")).operands] == ["cmd", "-n", "1"]
    assert parse(Spec("n:", number=True), words("-5")).options[0][0] == "#"
    assert [w.value for w in parse(Spec(), words(None, "x"), loose=True).operands] == [None, "x"]


SORT_DANGER = ["output", "compress-program", "temporary-directory", "files0-from"]


@given(st.sampled_from(SORT_DANGER), st.integers(min_value=1, max_value=30), st.sampled_from(["=", " "]))
def test_no_spelling_of_a_dangerous_sort_option_is_read_only(option, cut, sep):
    """Whatever prefix the model abbreviates to, a sort that writes or runs is never read-only."""
    prefix = option[:max(cut, 1)]
    a = analyse(f"sort --{prefix}{sep}x f")
    assert a.error is None and not is_read_only(a.parts[0])


@given(st.sampled_from(["cp", "mv"]), st.integers(min_value=3, max_value=17), st.sampled_from(["=", " "]))
def test_every_spelling_of_target_directory_is_the_target(name, cut, sep):
    prefix = "target-directory"[:cut]
    (part,) = analyse(f"{name} --{prefix}{sep}/elsewhere a").parts
    assert write_targets(part)[0].path == "/elsewhere"


@pytest.mark.parametrize("command,read_only", [
    ("ls --frobnicate", False), ("cat -Z f", False), ("ls -L", False), ("grep -R x .", False),  # unknown or not allowed
    ("sort --outp=F in", False), ("sort --compress-prog=sh in", False), ("sort -S 1M -T /tmp f", False),
    ("wc --files0-from=list", False), ("diff -r a b", False), ("file -z f", False), ("tail --pid=1 f", True),
    ("head -5 f", True), ("grep -e x -f pats f", True), ("rg --pre=x y", False), ("rg -z y", False),
    ("tree -o out", False), ("jq -rc . f", True), ("jq --arg a b . f", True), ("date +%s", True),
    ("date 0101", False), ("date --set=now", False), ("ps aux", True), ("ps eww", False), ("hostname x", False),
    ("echo -n $X", True), ("printf -- %s x", True), ("printf $F x", False), ("printf -vX y", False),
    ("[ -f \"$f\" ]", True), ("[ $f ]", False), ("[ -v x ]", True), ("[ -v 'a[1]' ]", False),
    ("test \"$a\" = \"$b\"", True), ("[ \"$a\" \"$b\" ]", False), ("find . -newer f -print0", True),
    ("find -L .", False), ("find . -delete", False), ("find . -fprint f", False), ("find $D", False),
    ("git log --oneline -5", True), ("git log --output=x", False), ("git log --outp=x", False),
    ("git diff --no-index a b", False), ("git diff --ext-diff", False), ("git log --show-signature", False),
    ("git tag -v v1", False), ("git tag -l 'v*'", True), ("git tag v2", False), ("git remote show origin", False),
    ("git remote show -n origin", True), ("git branch --list 'x*'", True), ("git -P log", True),
    ("git --git-dir=x log", False), ("git log *", False), ("basename $PWD", True), ("cat $F", True),
    ("xargs cat", False), ("echo x | xargs -0 grep y", False), ("strings @args", False), ("uniq a b", False),
])
def test_read_only_by_an_allowlist_of_options(command, read_only):
    a = analyse(command)
    assert a.error is None, a.error
    assert all(is_read_only(p) for p in a.parts) is read_only, [judge(p).why for p in a.parts]


@pytest.mark.parametrize("command,reads", [
    ("cat a b", [("a", False), ("b", False)]),
    ("grep -r x", [(".", True)]),
    ("grep x -d recurse src", [("src", True)]),
    ("grep -f pats x f", [("f", False), ("pats", False), ("x", False)]),  # with -f no operand is the pattern
    ("rg x src", [("src", True)]),
    ("find a b -newer ref", [("a", True), ("b", True), ("ref", False)]),
    ("ls", [(".", False)]),
    ("ls -R d", [("d", True)]),
    ("wc < in", [("in", False)]),
    ("date -r ref +%s", [("ref", False)]),
    ("jq --slurpfile v data.json -n .", [("v", False), ("data.json", False)]),
    ("cat $F", [(None, False)]),
    ("echo a b", []),
])
def test_what_read_only_commands_read(command, reads):
    (part,) = analyse(command).parts
    assert sorted(((t.path, t.tree) for t in judge(part).reads), key=str) == sorted(reads, key=str)


@pytest.mark.parametrize("command,writes,reads", [
    ("cp --target=d a b", ["d"], ["a", "b"]),
    ("cp -vtd a", ["d"], ["a"]),
    ("cp -to a", ["o"], ["a"]),
    ("cp -r src dst", ["dst"], ["src"]),
    ("cp --li .git/config gc", ["gc", ".git/config"], []),  # a hard link: both names write one file
    ("ln /etc/passwd pw", ["pw", "/etc/passwd"], []),
    ("ln -s /etc/passwd", ["passwd"], []),
    ("cp -s /a/b c", ["c"], []),
    ("mv -t d a b", ["d", "a", "b"], []),
    ("touch -r ref new", ["new"], ["ref"]),
    ("chmod -x a b", ["a", "b"], []),
    ("chmod --reference=r a", ["a"], []),
    ("sed -i -e s/a/b/ f", ["f"], ["f"]),
    ("sed --in-pl s/a/b/ f", ["f"], ["f"]),
    ("sort --outp=o f", ["o"], ["f"]),
    ("cp $X d", [None], [None]),
    ("install -d a b", ["a", "b"], []),
])
def test_what_file_commands_write_and_read(command, writes, reads):
    (part,) = analyse(command).parts
    assert [t.path for t in write_targets(part)] == writes
    assert [t.path for t in copy_reads(part)] == reads


@pytest.mark.parametrize("command,safe", [
    ("cp --sym a b", False), ("cp --li a b", False), ("cp -rs a b", False), ("cp -r a b", True),
    ("mv --target-d=x a", True), ("mkdir --mode=700 d", True), ("touch --frob x", False), ("xargs touch", False),
])
def test_safe_edits_read_options_as_the_programs_do(command, safe):
    (part,) = analyse(command).parts
    assert is_safe_edit(part) is safe


def touched(command: str, kind: str = "write") -> list[str | None]:
    return [t.path for t in read_line(analyse(command)).touches if t.kind == kind]


@pytest.mark.parametrize("command,writes", [
    ("touch a && touch b", ["a", "b"]),
    ("ln -s /etc e && touch e/x", ["e", None]),
    ("cp -P l c; echo x > c/f", ["c", None]),
    ("tar xf t.tar; echo x > a", [None]),
    ("mv a b && touch b/c", ["b", "a", None]),
    ("touch b/c | mv a b", [None, "b", "a"]),  # a pipeline runs at once: order proves nothing
    ("eval \"$X\"; touch a", [None]),
    ("git checkout x && touch a", [None]),
    ("git status && touch a", ["a"]),
])
def test_a_part_that_makes_links_leaves_the_others_unknown(command, writes):
    assert touched(command) == writes


def test_only_all_reading_git_lines_are_read_only():
    line = read_line(analyse("git status; git log -1"))
    assert line.git_read_only and all(r.ok for r in line.readings)
    line = read_line(analyse("git status && git commit -m x"))
    assert not line.git_read_only and not line.readings[0].ok
    assert touched("cd sub && git status", "repo") == [".", "sub"]
    assert touched("ln -s x y; git status", "repo") == [None]


def test_a_glob_may_expand_to_an_option():
    cwd = "/w"
    a = analyse("find * -name x")
    plain = {"*": (Resolved("/w/a", "/w/a"),)}
    dashed = {"*": (Resolved("/w/-delete", "/w/-delete"), Resolved("/w/a", "/w/a"))}
    assert read_line(a, plain, cwd).readings[0].ok
    assert not read_line(a, dashed, cwd).readings[0].ok
    assert not read_line(a, {"*": None}, cwd).readings[0].ok  # too many to check
    assert not read_line(analyse("touch ./-x; find * -name x"), plain, cwd).readings[1].ok  # made in the line
    assert read_line(analyse("find src/* -name x"), {}, cwd).readings[0].ok  # expands to src/…: never an option


def test_a_line_is_read_once_unless_its_globs_need_the_matches():
    """The gate reads a call's line several times: a line whose reading cannot depend on the
    matches is read once, and one whose can is read again for each set of matches."""
    cwd = "/w"
    a = analyse("git log -1 src/*.py; ls")  # no word starts with a pattern character
    assert read_line(a) is read_line(a) is read_line(a, {"src/*.py": None}, cwd)
    b = analyse("find * -name x")
    assert read_line(b) is read_line(b)
    plain = {"*": (Resolved("/w/a", "/w/a"),)}
    dashed = {"*": (Resolved("/w/-delete", "/w/-delete"),)}
    assert read_line(b, plain, cwd).readings[0].ok and not read_line(b, dashed, cwd).readings[0].ok
    assert read_line(b, plain, cwd) is not read_line(b, plain, cwd)


# ------------------------------------------------------------ the policy with reads and git

CWD, HOME = "/work/p", "/home/u"
PLACES = Places(CWD, (CWD,), HOME, "/home/u/.loopwright")


DEVICE_NODES = ("/dev/null", "/dev/zero", "/dev/urandom", "/dev/random", "/dev/tty")  # what the gate's lstat finds


def bash(command: str, *, links=None, git=None, holds=None, tree_holds=()) -> Call:
    c = Call("Bash", "exec", (), command)
    resolved = {}
    for w in wanted_paths(c):
        lexical = os.path.normpath(os.path.join(CWD, w.path.replace("~", HOME, 1)))
        real = lexical
        for link, target in (links or {}).items():
            if real == link or real.startswith(link + "/"):
                real = target + real[len(link):]
        resolved[w.path] = (Resolved(lexical, real, "device" if real in DEVICE_NODES else ""),)
    c = Call("Bash", "exec", (), command, {}, resolved, {p: git or GitFacts(CWD) for p in wanted_repos(c)})
    return Call("Bash", "exec", (), command, {}, resolved, c.git,
                holds if holds is not None else {t: tree_holds for t in wanted_trees(c, PLACES)})


@pytest.mark.parametrize("command,rules,expected", [
    ("cat f", {}, "allow"),
    ("cat /etc/passwd", {}, "ask"),
    ("cat /etc/passwd", {"mode": "bypassPermissions"}, "allow"),
    ("cat /etc/passwd", {"allow": ("Read(//etc/**)",)}, "allow"),
    ("cat /etc/passwd", {"allow": ("Bash(cat *)",)}, "ask"),  # a command rule does not widen where it reads
    ("cat /etc/passwd", {"allow": ("Bash",)}, "ask"),
    ("cat ~/.loopwright/t.jsonl", {}, "ask"),
    ("cat ~/.loopwright/t.jsonl", {"allow": ("Read(~/.loopwright/**)",)}, "allow"),
    ("cat $F", {}, "ask"),
    ("cat $F", {"allow": ("Bash",)}, "allow"),  # unknown paths with Bash allowed outright: the sandbox bounds them
    ("cat /dev/urandom | head -c 4", {}, "allow"),
    ("grep -r x /", {}, "ask"),
    ("cat link/secret", {}, "ask"),
    ("cat f > /dev/null", {"mode": "plan"}, "allow"),
    ("cat .env", {"deny": ("Read(.env)",)}, "deny"),  # as the Read tool: a deny rule denies (issue 29)
    ("cat .env", {"deny": ("Read(.env)",), "mode": "bypassPermissions"}, "deny"),
    ("cat .env", {"ask": ("Read(.env)",)}, "ask"),
    ("cat f", {"deny": ("Read(.env)",)}, "allow"),
    ("cat $F", {"deny": ("Read(.env)",), "allow": ("Bash",)}, "ask"),  # could be .env
])
def test_reads_are_judged_where_they_land(command, rules, expected):
    got = decide(bash(command, links={CWD + "/link": "/elsewhere"}), PermissionRules(**rules), PLACES)
    assert got.decision == expected, got.reason


@pytest.mark.parametrize("path,rules,tool", [
    ("f", {}, "allow"),
    ("/etc/passwd", {}, "ask"),
    ("/etc/passwd", {"allow": ("Read(//etc/**)",)}, "allow"),
    ("/srv/www/i.html", {"allow": ("Edit(//srv/www/**)",)}, "allow"),  # a place you let tools change is readable
    ("~/notes/a.md", {"allow": ("Read(~/notes/**)",)}, "allow"),
    ("~/notes/a.md", {"allow": ("Read",)}, "ask"),  # a bare allow widens nothing
    ("~/.loopwright/t.jsonl", {}, "ask"),
    ("~/.loopwright/t.jsonl", {"allow": ("Read(~/**)",)}, "ask"),  # a rule must name the own home itself
    ("~/.loopwright/t.jsonl", {"allow": ("Read(~/.loopwright/**)",)}, "allow"),
    (".env", {"deny": ("Read(.env)",)}, "deny"),
    ("link/.env", {"ask": ("Read(//elsewhere/.env)",)}, "ask"),  # met where it lands
    ("f", {"deny": ("Read",)}, "deny"),  # a bare Read rule keeps every file from the tools
])
def test_the_shell_reads_where_the_read_tool_reads(path, rules, tool):
    """One predicate (policy/reading) for both: a `cat` of a path is allowed exactly when the
    Read tool is, asked for a place with the same reason and hint; where a Read deny rule denies
    the tool, it denies the shell too (issue 29); its asks are hard."""
    rules = PermissionRules(**rules)
    shell = bash(f"cat {path}", links={CWD + "/link": "/elsewhere"})
    read = Call("Read", "read", (path,), None, {}, {path: shell.resolved[path]})
    by_tool, by_shell = decide(read, rules, PLACES), decide(shell, rules, PLACES)
    assert by_tool.decision == tool and by_shell.decision == tool
    if tool == "ask" and not by_tool.hard:  # asked for the place: the same words
        assert by_shell.reason == f"`cat {path}`: {by_tool.reason}" and by_shell.hint == by_tool.hint
    elif tool != "allow":  # met by a rule: both name it
        rule = (*rules.deny, *rules.ask)[0]
        assert rule in by_tool.reason and rule in by_shell.reason
    assert by_shell.hard or tool != "ask"


def test_a_folder_read_whole_that_holds_the_own_home_is_asked():
    home_places = Places(HOME, (HOME,), HOME, HOME + "/.loopwright")
    got = decide(bash("grep -r x ~"), PermissionRules(), home_places)
    assert got.decision == "ask" and got.hard and "holds loopwright's own home" in got.reason
    assert decide(bash("grep x ~/f"), PermissionRules(), home_places).decision == "allow"
    named = PermissionRules(allow=("Read(~/.loopwright/**)",))
    assert decide(bash("grep -r x ~"), named, home_places).decision == "allow"


def test_a_recursive_read_is_refused_when_the_folder_holds_a_covered_file():
    rules = PermissionRules(deny=("Read(.env)",))
    assert decide(bash("grep -r x ."), rules, PLACES).decision == "allow"
    assert decide(bash("grep -r x .", tree_holds=("/work/p/.env",)), rules, PLACES).decision == "deny"
    asked = PermissionRules(ask=("Read(.env)",))
    assert decide(bash("grep -r x .", tree_holds=("/work/p/.env",)), asked, PLACES).hard
    assert decide(bash("grep -r x .", tree_holds=None), rules, PLACES).decision == "ask"  # too many to look at
    assert decide(bash("rg x", tree_holds=("/work/p/a/.env",)), rules, PLACES).decision == "deny"
    assert decide(bash("git status", tree_holds=("/work/p/.env",)), rules, PLACES).decision == "allow"  # names only
    assert decide(bash("git diff", tree_holds=("/work/p/.env",)), rules, PLACES).decision == "ask"


@pytest.mark.parametrize("facts,mode,expected", [
    (GitFacts(CWD), "default", "allow"),
    (GitFacts(CWD, (("core.fsmonitor", "/x"), ("core.hookspath", ".husky"))), "default", "allow"),  # overridden
    (GitFacts(CWD, (("diff.x.textconv", "/x"),)), "default", "ask"),
    (GitFacts(CWD, (("filter.lfs.process", "/x"),)), "plan", "deny"),
    (GitFacts(CWD, (("diff.external", "/x"),)), "default", "ask"),
    (GitFacts(CWD, (("include.path", "../x"),)), "default", "ask"),
    (GitFacts(CWD, (("includeif.gitdir:/w/.path", "x"),)), "default", "ask"),
    (GitFacts(None), "default", "allow"),  # not a repository: git fails and runs nothing
    (GitFacts("/home/u"), "default", "ask"),  # it reads a worktree outside the roots
    (GitFacts(error="timed out"), "plan", "deny"),
])
def test_a_read_only_git_call_is_judged_on_its_repository(facts, mode, expected):
    assert decide(bash("git log -p", git=facts), PermissionRules(mode=mode), PLACES).decision == expected


def test_a_rule_for_the_git_call_accepts_the_repository_programs():
    facts = GitFacts(CWD, (("diff.x.textconv", "/x"),))
    assert decide(bash("git diff", git=facts), PermissionRules(allow=("Bash(git diff *)",)), PLACES).decision == "allow"


def test_config_problem_names_the_key():
    assert "diff.x.textconv" in config_problem(GitFacts(CWD, (("diff.x.textconv", "p"),)))
    assert config_problem(GitFacts(CWD, (("core.pager", "p"), ("alias.st", "!p")))) is None


def test_shell_env_overrides_only_all_reading_git_lines():
    env = shell_env("git status && git log -1", {})
    assert env["GIT_CONFIG_COUNT"] == str(len(OVERRIDES))
    assert ("core.fsmonitor", "false") in [(env[f"GIT_CONFIG_KEY_{k}"], env[f"GIT_CONFIG_VALUE_{k}"])
                                            for k in range(len(OVERRIDES))]
    assert shell_env("git status && git commit -m x", {}) == {}
    assert shell_env("ls", {}) == {}
    appended = shell_env("git status", {"GIT_CONFIG_COUNT": "2"})
    assert appended["GIT_CONFIG_KEY_2"] == OVERRIDES[0][0] and appended["GIT_CONFIG_COUNT"] == str(2 + len(OVERRIDES))
    assert shell_env("cd src && ls", {}) == {"CDPATH": ""}


# ------------------------------------------------------------ git and the gate, for real


def run_git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.email=a@b", "-c", "user.name=n", *args], cwd=cwd, check=True, capture_output=True)


def test_git_facts_come_from_git(tmp_path):
    repo = tmp_path / "r"
    repo.mkdir()
    assert git_facts(str(repo)).top is None
    run_git(repo, "init", "-q")
    run_git(repo, "config", "diff.x.textconv", "prog")
    (repo / "inc.cfg").write_text("[filter \"y\"]\n\tclean = other\n")
    run_git(repo, "config", "include.path", "../inc.cfg")
    (repo / "sub").mkdir()
    facts = git_facts(str(repo / "sub"))
    assert facts.top == str(repo) and ("diff.x.textconv", "prog") in facts.local
    assert ("filter.y.clean", "other") in facts.local  # git followed the include
    assert git_facts(str(repo / "not-yet" / "made")).top == str(repo)  # git would look upwards from there


def test_a_git_too_old_for_the_overrides_is_not_trusted(tmp_path, monkeypatch):
    """Before 2.31 git ignores GIT_CONFIG_COUNT: the overrides would not hold, so git calls are asked."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "git").write_text("#!/bin/sh\necho 'git version 2.30.9'\n")
    (bin_dir / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    facts = git_facts(str(tmp_path))
    assert facts.error and "2.31" in facts.error and config_problem(facts)


@pytest.mark.anyio
async def test_the_gate_hands_the_overrides_to_the_allowed_call(tmp_path):
    run_git(tmp_path, "init", "-q")
    gate = ToolGate(PermissionRules(), tmp_path)
    bash_tool = {t.name: t for t in builtin_tools()}["Bash"]
    allowed = await gate.check(bash_tool, {"command": "git status"})
    assert allowed.allowed and allowed.env["GIT_CONFIG_COUNT"]
    assert (await gate.check(bash_tool, {"command": "ls"})).env == {}


@pytest.mark.anyio
async def test_the_overrides_go_on_top_of_the_child_environment_never_alone(tmp_path, monkeypatch):
    """A loop whose context names no environment gives its tools `child_env()`; the overrides of
    a read-only git line are added to that (the rest of the environment is there, the harness's
    credentials are not)."""
    from loopwright.core.types import Message, Response, ToolUseBlock, Usage
    from loopwright.engine.loop import AgentLoop
    from loopwright.engine.loopconfig import LoopConfig
    from loopwright.testing.clock import FakeClock
    from loopwright.testing.scripted import ScriptedModel

    run_git(tmp_path, "init", "-q")
    monkeypatch.setenv("LW_MARKER", "here")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-harness-only")
    line = "git status --short; env > env.txt"
    use = ToolUseBlock("b1", "Bash", {"command": line})
    model = ScriptedModel([Response(Message("assistant", (use,)), "tool_use", "", Usage(1, 1)), "done"])
    tools = [t for t in builtin_tools() if t.name == "Bash"]
    config = LoopConfig(model="claude-sonnet-5", cwd=tmp_path, session_id="s1", tools=tools,
                        permissions=PermissionRules(allow=("Bash",)))
    await AgentLoop(model, config, clock=FakeClock()).run([Message.user("go")])
    env = dict(x.split("=", 1) for x in (tmp_path / "env.txt").read_text().splitlines() if "=" in x)
    assert env["GIT_CONFIG_COUNT"] == str(len(OVERRIDES)) and env["LW_MARKER"] == "here" and env["PATH"]
    assert "ANTHROPIC_API_KEY" not in env


@pytest.mark.anyio
async def test_the_overrides_follow_the_entries_the_session_environment_already_has(tmp_path):
    """Settings `env` (or --pass-env) may give tools GIT_CONFIG_COUNT entries of their own: the
    overrides are numbered after those, not after this process's."""
    run_git(tmp_path, "init", "-q")
    session = {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "user.name", "GIT_CONFIG_VALUE_0": "n"}
    gate = ToolGate(PermissionRules(), tmp_path, env=session)
    bash_tool = {t.name: t for t in builtin_tools()}["Bash"]
    allowed = await gate.check(bash_tool, {"command": "git status"})
    assert allowed.env["GIT_CONFIG_KEY_1"] == OVERRIDES[0][0] and "GIT_CONFIG_KEY_0" not in allowed.env
    assert allowed.env["GIT_CONFIG_COUNT"] == str(1 + len(OVERRIDES))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["git status", "ls", "cat f", "git log -1", "git diff", "cd sub", "echo x > o",
                                 "git commit -m x", "xargs git log", "git branch -D b"]), min_size=1, max_size=4),
       st.sampled_from([" && ", "; ", " | "]))
def test_a_line_the_policy_allows_as_reading_git_always_gets_the_overrides(parts, sep):
    """Whenever a git call is allowed because it only reads, its line runs with the overrides."""
    command = sep.join(parts)
    got = decide(bash(command), PermissionRules(), PLACES)
    if got.decision == "allow" and "git" in command:
        assert shell_env(command, {}).get("GIT_CONFIG_COUNT")
