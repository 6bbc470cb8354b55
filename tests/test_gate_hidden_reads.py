"""Issue 29, class 2: programs that read or write more than their words say. Run for real (the
loop, the loopback simulator, the real tools, real git): git turning two paths into an
outside-the-repository comparison, a variable given to a reader that names a file it loads,
a hex dumper's second operand (its output), options that name files read on the side, and
Read deny rules against the shell's readers. Nothing private may reach the model and no file
may change, in the default mode or in plan."""

from __future__ import annotations

import subprocess

import pytest

from loopwright.agent import Agent
from loopwright.permissions.decide import PermissionRules
from loopwright.providers.anthropic import AnthropicModel
from loopwright.testing import Simulator
from loopwright.testing.clock import FakeClock

pytestmark = pytest.mark.anyio
KEY = "tok-1618-never-shown"
ENV_SECRET = "tok-1414-env-file"
MODES = ["default", "plan"]


@pytest.fixture
def home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(f"{KEY}\nsecond line\n")
    proj = home / "proj"
    proj.mkdir()
    (proj / "a.txt").write_text("inside\n")
    (proj / "b.txt").write_text("keep me\n")
    (proj / ".env").write_text(f"TOKEN={ENV_SECRET}\n")
    (proj / "list0").write_bytes(str(home / ".ssh" / "id_rsa").encode() + b"\0")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("LOOPWRIGHT_HOME", raising=False)
    monkeypatch.setenv("LOOPWRIGHT_ALLOW_ROOT_BYPASS", "1")
    return home


def git_repo(proj):
    for args in (["init", "-q"], ["add", "a.txt", "b.txt"], ["commit", "-qm", "one"]):
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=proj, check=True)


async def attempt(home, line, mode, **rules):
    script = [{"tool_use": {"name": "Bash", "input": {"command": line}}}, {"text": "done"}]
    with Simulator(script) as sim:
        agent = Agent(model_client=AnthropicModel(base_url=sim.base_url, api_key="sk-test"), cwd=home / "proj",
                      clock=FakeClock(), permissions=PermissionRules(mode=mode, **rules))
        async with agent.open() as running:
            result = await running.prompt("try it")
        shown = str(sim.message_requests[1].body["messages"][-1]["content"])
    return result.to_json(), shown


async def refused(home, line, mode, **rules):
    done, shown = await attempt(home, line, mode, **rules)
    assert done["permission_denials"], shown
    assert KEY not in shown and ENV_SECRET not in shown
    assert (home / "proj" / "b.txt").read_text() == "keep me\n"
    return shown


# ------------------------------------------------------------ git compares files outside the repository


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("repo", [True, False])
@pytest.mark.parametrize("line", ["git diff a.txt {key}", "git diff --stat a.txt ../.ssh/id_rsa",
                                  "git diff -- a.txt ../.ssh/id_rsa", "git diff ../.ssh/id_rsa a.txt",
                                  "git diff --text ../.ssh ../proj"])
async def test_git_diff_of_a_path_outside_the_worktree_is_a_read_of_it(home, mode, repo, line):
    if repo:
        git_repo(home / "proj")
    await refused(home, line.format(key=home / ".ssh" / "id_rsa"), mode)


@pytest.mark.parametrize("line", ["git diff", "git diff HEAD -- a.txt", "git diff a.txt b.txt"])
async def test_git_diff_inside_the_worktree_still_runs(home, line):
    git_repo(home / "proj")
    done, shown = await attempt(home, line, "plan")
    assert not done["permission_denials"], shown


# ------------------------------------------------------------ a variable names a file the program loads


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("line", [
    "MAGIC={key} file a.txt",
    "GREP_OPTIONS='-f {key}' grep -c x a.txt",
    "LESSKEY={key} cat a.txt",
    "env TERMINFO_DIRS={home} cat a.txt",
    "TZ={key} date",
    "LC_ALL=../.ssh/id_rsa ls",
    "X=$(echo {key}) cat a.txt",
])
async def test_a_variable_given_to_a_reader_makes_it_not_read_only(home, mode, line):
    await refused(home, line.format(key=home / ".ssh" / "id_rsa", home=home), mode)


@pytest.mark.parametrize("line", ["LANG=C cat a.txt", "LC_ALL=C.UTF-8 TZ=UTC ls -l", "NO_COLOR=1 COLUMNS=80 ls",
                                  "env LANG=C grep -c x a.txt", "f=1; cat a.txt"])
async def test_the_locale_and_colours_stay_quiet(home, line):
    done, shown = await attempt(home, line, "plan")
    assert not done["permission_denials"], shown


# ------------------------------------------------------------ a dumper's second operand is its output


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("line", ["xxd a.txt b.txt", "xxd -ps a.txt b.txt", "xxd -c4 a.txt b.txt",
                                  "xxd -postscript -cols 4 a.txt b.txt", "xxd -co 8 a.txt b.txt",
                                  "xxd -- a.txt b.txt", "xxd $F a.txt"])
async def test_xxd_with_an_output_file_is_not_read_only(home, mode, line):
    await refused(home, line, mode)


@pytest.mark.parametrize("line", ["xxd a.txt", "xxd -ps -c 4 a.txt", "xxd -s +2 -l3 a.txt", "od -c a.txt b.txt",
                                  "hexdump -C a.txt b.txt", "base64 a.txt"])
async def test_dumpers_that_only_read_still_run(home, line):
    done, shown = await attempt(home, line, "plan")
    assert not done["permission_denials"], shown
    assert (home / "proj" / "b.txt").read_text() == "keep me\n"


# ------------------------------------------------------------ options that name files read on the side


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("line", [
    "grep -f {key} a.txt", "grep --file={key} -c . a.txt", "file -m a.txt:{key} a.txt",
    "wc --files0-from=list0", "sort --files0-from=list0", "du --files0-from=list0",
    "diff --from-file={key} a.txt", "jq -n --rawfile k {key} '$k'", "hexdump -f {key} a.txt",
])
async def test_options_that_name_files_are_reads_of_them(home, mode, line):
    await refused(home, line.format(key=home / ".ssh" / "id_rsa"), mode)


# ------------------------------------------------------------ Read deny rules hold for the shell's readers


@pytest.mark.parametrize("mode", ["default", "plan", "acceptEdits", "bypassPermissions"])
@pytest.mark.parametrize("line", ["cat .env", "head -n1 .env", "grep TOKEN .env", "cat < .env", "grep -r TOKEN .",
                                  "tail -c 100 a.txt ./.env", "rg TOKEN"])
async def test_a_read_deny_rule_denies_the_shell_readers(home, mode, line):
    done, shown = await attempt(home, line, mode, deny=("Read(.env)",))
    assert done["permission_denials"] and ENV_SECRET not in shown, shown
    assert "Permission denied" in shown and "Read(.env)" in shown  # denied, not asked
