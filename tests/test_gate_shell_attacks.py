"""Attacks on how the gate reads shell lines (issue 21: links made earlier in the line, options
read unlike the programs read them, arguments that arrive at run time, words bash evaluates,
repository configuration that runs programs, `cat .env` past a Read deny rule; issue 17: reads
outside the roots), each in several variants of our own. Every line goes through the real loop,
the loopback simulator and the real Bash tool, so what the gate lets through really runs: a
victim outside the project must keep its content, a marker must not appear, a fake program
the repository configures must not run, a secret must not reach the model."""

from __future__ import annotations

import io
import os
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import pytest

from loopwright.agent import Agent
from loopwright.permissions.decide import PermissionRules
from loopwright.providers.anthropic import AnthropicModel
from loopwright.sandbox import SandboxConfig
from loopwright.testing import Simulator
from loopwright.testing.clock import FakeClock

pytestmark = pytest.mark.anyio
SECRET = "s3cret-value-42"


class Outcome:
    def __init__(self, result, sim):
        self.json = result.to_json()
        self.result = sim.message_requests[1].body["messages"][-1]["content"][0]
        self.content = str(self.result["content"])

    @property
    def denied(self) -> bool:
        return bool(self.json["permission_denials"])


@pytest.fixture
def world(tmp_path, monkeypatch):
    """project/ (the cwd) and outside/ beside it, holding a victim file and a secret; a
    loopwright home of its own."""
    project, outside, home = tmp_path / "project", tmp_path / "outside", tmp_path / "lw-home"
    for d in (project, outside, home):
        d.mkdir()
    (outside / "victim").write_text("keep me")
    (outside / "secret").write_text(SECRET)
    (project / "f").write_text("b\na\n")
    monkeypatch.setenv("LOOPWRIGHT_HOME", str(home))
    return project, outside


@pytest.fixture
def attempt(world):
    async def go(command: str, rules: PermissionRules = PermissionRules(), sandbox: Any = None) -> Outcome:
        script = [{"tool_use": {"name": "Bash", "input": {"command": command}}}, {"text": "done"}]
        with Simulator(script) as sim:
            agent = Agent(model_client=AnthropicModel(base_url=sim.base_url, api_key="sk-test"), cwd=world[0],
                          clock=FakeClock(), permissions=rules, sandbox=sandbox)
            async with agent.open() as running:
                result = await running.prompt("try it")
            assert not sim.unmatched
            return Outcome(result, sim)

    return go


def untouched(outside: Path) -> bool:
    return (outside / "victim").read_text() == "keep me" and sorted(p.name for p in outside.iterdir()) == [
        "secret", "victim"]


ACCEPT = PermissionRules(mode="acceptEdits")


# ------------------------------------------------------------ 2: links made earlier in the line


@pytest.mark.parametrize("command,rules", [
    ("cp --symb ../outside/victim s && cp f s", PermissionRules(mode="acceptEdits", allow=("Bash(cp *)",))),
    ("ln -s ../outside lnk && echo pwned > lnk/victim", PermissionRules(mode="acceptEdits", allow=("Bash(ln *)",))),
    ("(ln -s ../outside l2); echo pwned > l2/marker", PermissionRules(mode="acceptEdits", allow=("Bash(ln *)",))),
    ("cp -P out copy && touch copy/marker", ACCEPT),
    ("cp -a out copy2 && cp f copy2/", ACCEPT),
    ("tar xf links.tar && echo pwned >> t/victim", PermissionRules(mode="acceptEdits", allow=("Bash(tar *)",))),
], ids=["cp-symb-abbrev", "ln-then-redirect", "ln-in-a-subshell", "cp-P-copies-link", "cp-a-copies-link", "tar-unpacks-link"])
async def test_a_link_made_earlier_in_the_line_leaves_later_targets_unknown(attempt, world, command, rules):
    project, outside = world
    (project / "out").symlink_to(outside)
    tar = io.BytesIO()
    with tarfile.open(fileobj=tar, mode="w") as t:
        link = tarfile.TarInfo("t")
        link.type, link.linkname = tarfile.SYMTYPE, str(outside)
        t.addfile(link)
    (project / "links.tar").write_bytes(tar.getvalue())
    got = await attempt(command, rules)
    assert untouched(outside)
    assert got.denied


async def test_a_link_inside_the_project_still_lets_later_parts_run_with_bash_allowed(attempt, world):
    """The control: with `Bash` allowed outright, unknown targets are accepted (the sandbox's
    job), and the same line runs."""
    got = await attempt("ln -s sub lnk && mkdir sub && touch lnk/made", PermissionRules(allow=("Bash",)))
    assert (world[0] / "sub" / "made").exists() and not got.denied


# ------------------------------------------------------------ 4: options read as the programs read them


@pytest.mark.parametrize("command,rules", [
    ("sort --out=../outside/victim f", PermissionRules()),
    ("sort -k1 --outp ../outside/victim f", PermissionRules(mode="plan")),
    ("cp -vt ../outside f", ACCEPT),
    ("cp --targ ../outside f", ACCEPT),
    ("mv --target-d=../outside f", ACCEPT),
    ("mv -ft../outside f", ACCEPT),
], ids=["sort-out-abbrev", "sort-outp-plan", "cp-vt-cluster", "cp-targ-abbrev", "mv-target-d", "mv-glued-t"])
async def test_options_are_read_as_the_program_reads_them(attempt, world, command, rules):
    project, outside = world
    got = await attempt(command, rules)
    assert untouched(outside) and (project / "f").exists()
    assert got.denied


async def test_an_abbreviated_program_option_runs_nothing(attempt, world):
    """`sort --compress-prog=P` runs P once sort spills to temporary files."""
    project, outside = world
    (project / "big").write_text("".join(f"{n}\n" for n in range(60_000)))
    (project / "z.sh").write_text(f"#!/bin/sh\ntouch {outside}/marker\ncat\n")
    (project / "z.sh").chmod(0o755)
    got = await attempt("sort --compress-prog=./z.sh -S 1 big", PermissionRules())
    assert untouched(outside) and got.denied


async def test_a_plain_read_only_line_still_runs(attempt, world):
    got = await attempt("sort -r f | head -n 1", PermissionRules())
    assert got.content == "b" and not got.denied


# ------------------------------------------------------------ 5: arguments that arrive at run time


@pytest.mark.parametrize("command", [
    "echo -o../outside/victim | xargs sort f",
    "printf -- '--output=../outside/victim\\n' | xargs sort f",
    "printf '%s\\n' -delete | xargs find sub",
    "echo ../outside/secret | xargs cat",
    "echo -delete | xargs -I{} find sub {}",
], ids=["xargs-glued-o", "xargs-long-output", "xargs-find-delete", "xargs-cat-outside", "xargs-replace"])
async def test_arguments_from_input_are_unknown(attempt, world, command):
    project, outside = world
    (project / "sub").mkdir()
    (project / "sub" / "keep").write_text("x")
    got = await attempt(command, PermissionRules())
    assert untouched(outside) and (project / "sub" / "keep").exists() and SECRET not in got.content
    assert got.denied


@pytest.mark.parametrize("command", ["find * -name nothing", "ls *", "du *"])
async def test_a_glob_that_expands_to_an_option_is_unknown(attempt, world, command):
    """A file named `-delete` (or `--files0-from=…`) turns `*` into an option."""
    project, outside = world
    (project / "sub").mkdir()
    (project / "sub" / "keep").write_text("x")
    (project / "-delete").write_text("")
    (project / "--files0-from=list").write_text("")
    got = await attempt(command, PermissionRules())
    assert (project / "sub" / "keep").exists() and got.denied


async def test_a_glob_made_in_the_same_line_is_unknown(attempt, world):
    project, _ = world
    (project / "sub").mkdir()
    (project / "sub" / "keep").write_text("x")
    got = await attempt("touch ./-delete && find * -name nothing", ACCEPT)
    assert (project / "sub" / "keep").exists() and got.denied


# ------------------------------------------------------------ 6: words bash evaluates


@pytest.mark.parametrize("command", [
    "test -v 'x[$(touch ../outside/marker)]'",
    "[ ! -v \"a[\\$(touch ../outside/marker)]\" ]",
    "x='a[$(touch ../outside/marker)]'; [ -v 'b[x]' ]",
    "c='-v a[$(touch${IFS}../outside/marker)]'; [ $c ]",
    "c='-v'; [ \"$c\" \"a[\\$(touch ../outside/marker)]\" ]",
], ids=["test-v", "not-v-double-quoted", "subscript-in-a-value", "split-into-v", "operator-in-a-var"])
async def test_subscripts_bash_evaluates_are_not_read_only(attempt, world, command):
    got = await attempt(command, PermissionRules(mode="plan"))
    assert untouched(world[1]) and got.denied


async def test_plain_tests_still_run(attempt, world):
    got = await attempt('f=f; [ -f "$f" ] && test -n "$f" && echo yes', PermissionRules())
    assert got.content == "yes" and not got.denied


# ------------------------------------------------------------ 7: repository configuration runs programs


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.email=a@b", "-c", "user.name=n", *args], cwd=cwd, check=True,
                   capture_output=True)


@pytest.fixture
def repo(world):
    """A repository in the project with one commit, a changed file and a fake program that
    leaves a marker beside the victim when anything runs it."""
    project, outside = world
    git(project, "init", "-q")
    (project / ".gitattributes").write_text("f diff=x filter=y\n")
    git(project, "add", ".")
    git(project, "commit", "-qm", "one")
    (project / "f").write_text("c\n")
    evil = outside.parent / "evil.sh"
    evil.write_text(f"#!/bin/sh\necho ran >> {outside}/marker\ncat\n")
    evil.chmod(0o755)
    return project, str(evil)


@pytest.mark.parametrize("command,mode", [
    ("git status", "default"),
    ("git diff --stat && git log --oneline -1", "plan"),
    ("git describe --always --dirty", "default"),
    ("cd sub && git status --short", "plan"),
], ids=["status", "diff-and-log-plan", "describe-dirty", "after-cd-plan"])
async def test_read_only_git_runs_with_the_repository_programs_turned_off(attempt, world, repo, command, mode):
    """The call is allowed (it only reads) and runs, but under overrides: the fsmonitor
    program the repository configures does not start."""
    project, evil = repo
    (project / "sub").mkdir()
    git(project, "config", "core.fsmonitor", evil)
    got = await attempt(command, PermissionRules(mode=mode))
    assert untouched(world[1]), (world[1] / "marker").read_text()
    assert not got.denied and not got.result.get("is_error"), got.content


async def test_a_git_file_pointing_elsewhere_is_read_as_git_reads_it(attempt, world, repo):
    """`.git` as a file (`gitdir: …`, as worktrees and submodules have) leads to a config
    outside the project: git says which, and the overrides hold there too."""
    project, evil = repo
    moved = world[1].parent / "gitdir"
    (project / ".git").rename(moved)
    (project / ".git").write_text(f"gitdir: {moved}\n")
    git(project, "config", "core.fsmonitor", evil)
    got = await attempt("git status", PermissionRules())
    assert untouched(world[1]) and not got.denied


@pytest.mark.parametrize("key,command,mode", [
    ("diff.x.textconv", "git log -p -1", "default"),
    ("diff.x.command", "git diff", "plan"),
    ("diff.external", "git diff", "default"),
    ("filter.y.clean", "git status", "plan"),
    ("include.path", "git status", "default"),
], ids=["textconv", "diff-driver-plan", "external-diff", "clean-filter-plan", "include"])
async def test_read_only_git_is_asked_when_the_repository_names_a_program_no_override_reaches(
        attempt, world, repo, key, command, mode):
    project, evil = repo
    if key == "include.path":
        (project / "more.cfg").write_text(f"[core]\n\tfsmonitor = {evil}\n[diff \"x\"]\n\ttextconv = {evil}\n")
        evil = "../more.cfg"
    git(project, "config", key, evil)
    os.utime(project / "f", (1, 1))  # a stat change makes status run the clean filter
    got = await attempt(command, PermissionRules(mode=mode))
    assert untouched(world[1])
    assert got.denied and "repository configures" in got.content


async def test_git_in_a_submodule_runs_no_program_either(attempt, world, repo):
    project, evil = repo
    sub = world[1].parent / "subrepo"
    sub.mkdir()
    git(sub, "init", "-q")
    (sub / "g").write_text("x")
    git(sub, "add", ".")
    git(sub, "commit", "-qm", "s")
    git(project, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(sub), "s")
    git(project / "s", "config", "core.fsmonitor", evil)
    (project / "s" / "g").write_text("changed")
    got = await attempt("git status", PermissionRules())
    assert untouched(world[1]) and not got.denied


async def test_a_git_line_that_also_changes_things_is_not_read_only(attempt, world, repo):
    """With `git commit` allowed by a rule, `git status` in the same line gets no overrides, so
    it is not auto-allowed either."""
    project, evil = repo
    git(project, "config", "core.fsmonitor", evil)
    got = await attempt("git status && git commit -qam two", PermissionRules(allow=("Bash(git commit *)",)))
    assert untouched(world[1]) and got.denied


# ------------------------------------------------------------ 10 and issue 17: reads


DENY_ENV = PermissionRules(deny=("Read(.env)",))


@pytest.mark.parametrize("command,rules", [
    ("cat .env", DENY_ENV),
    ("head -c 40 sub/../.env", DENY_ENV),
    ("cat .e*", DENY_ENV),
    ("grep -rn s3cret .", DENY_ENV),
    ("cat < .env", PermissionRules(deny=("Read(**/.env)",))),
    ("base64 ./.env", PermissionRules(deny=("Read(./.env)",))),
    ("sort nested/.env", DENY_ENV),
    ("find . -name '.env*'", PermissionRules(ask=("Read(.env)",))),
    ("git diff", DENY_ENV),
], ids=["cat", "dotdot", "glob", "grep-r", "redirect", "base64", "nested", "find-ask-rule", "git-diff"])
async def test_a_read_deny_rule_holds_for_shell_reads(attempt, world, command, rules):
    project, _ = world
    (project / "sub").mkdir()
    (project / "nested").mkdir()
    for where in (project, project / "nested"):
        (where / ".env").write_text(f"KEY={SECRET}\n")
    if command.startswith("git"):
        git(project, "init", "-q")
        git(project, "add", "-f", ".env")
        git(project, "commit", "-qm", "x")
        (project / ".env").write_text(f"KEY={SECRET}-changed\n")
    got = await attempt(command, rules)
    assert SECRET not in got.content and got.denied


@pytest.mark.parametrize("command", [
    "cat ../outside/secret",
    "cat out/secret",
    "cd .. && cat outside/secret",
    "grep -r s3cret ..",
    "sort -m f ../outside/secret",
    "cat $(echo ../outside/secret)",
    "head -n 3 < ../outside/secret",
    "cat {home}/transcript.jsonl",
    "cp ../outside/secret mine",
], ids=["cat", "symlink", "cd", "grep-r", "sort-m", "substituted", "input", "loopwright-home", "cp-source"])
async def test_reads_outside_the_roots_are_asked(attempt, world, command):
    project, outside = world
    (project / "out").symlink_to(outside)
    home = Path(os.environ["LOOPWRIGHT_HOME"])
    (home / "transcript.jsonl").write_text(SECRET)
    got = await attempt(command.format(home=home), PermissionRules(mode="acceptEdits"))
    assert SECRET not in got.content and got.denied and not (project / "mine").exists()
    # the denial names the place and how to allow it (or says it is known only at run time)
    assert "Read(" in got.content or "known only when it runs" in got.content


async def test_a_read_allow_rule_opens_a_folder_outside(attempt, world):
    # on the host: the gate's verdict is under test (inside the sandbox the private /tmp would hide
    # this test's outside folder, which lives under /tmp)
    got = await attempt("cat ../outside/secret", PermissionRules(allow=(f"Read(/{world[1]}/**)",)),
                        sandbox=SandboxConfig(enabled=False))
    assert got.content == SECRET and not got.denied
