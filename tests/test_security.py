"""Escapes that must not work, each driven through the real loop, the loopback simulator and the
real tools: the model asks for a call, the call must not happen (a marker file stays absent, a
victim file stays present), and the model is told why (a permission denial or an error result)."""

from __future__ import annotations

import os
import shutil
import socket
import sys
import tempfile
import threading
from pathlib import Path

import pytest

from loopwright.agent import Agent
from loopwright.permissions.decide import PermissionRules
from loopwright.providers.anthropic import AnthropicModel
from loopwright.sandbox import SandboxConfig, availability
from loopwright.testing import Simulator
from loopwright.testing.clock import FakeClock

pytestmark = pytest.mark.anyio
BWRAP = availability()
needs_bwrap = pytest.mark.skipif(BWRAP is not None, reason=f"sandbox cannot run here: {BWRAP}")


class Attempt:
    def __init__(self, result, sim):
        self.json = result.to_json()
        self.requests = [r.body for r in sim.message_requests]

    @property
    def tool_result(self):
        return self.requests[1]["messages"][-1]["content"][0]

    def refused(self) -> bool:
        """The model can read that the call did not go through."""
        return bool(self.json["permission_denials"]) or self.tool_result.get("is_error", False)


@pytest.fixture
def world(tmp_path):
    project, outside = tmp_path / "project", tmp_path / "outside"
    project.mkdir()
    outside.mkdir()
    (project / ".git" / "hooks").mkdir(parents=True)
    (project / "escape").symlink_to(outside)
    (project / "victim").write_text("keep me")
    return project, outside


@pytest.fixture
def attempt(world):
    project, _ = world

    async def go(tool, tool_input, permissions, sandbox=None):
        script = [{"tool_use": {"name": tool, "input": tool_input}}, {"text": "done"}]
        with Simulator(script) as sim:
            agent = Agent(model_client=AnthropicModel(base_url=sim.base_url, api_key="sk-test"), cwd=project,
                          clock=FakeClock(), permissions=permissions, sandbox=sandbox)
            async with agent.open() as running:
                result = await running.prompt("try it")
            assert not sim.unmatched
            return Attempt(result, sim)

    return go


ECHO_ONLY = PermissionRules(allow=("Bash(echo *)",))


# ------------------------------------------------------------ paths: .. and symlinks


@pytest.mark.parametrize("tool,tool_input,rules", [
    ("Write", {"file_path": "../outside/marker", "content": "x"}, PermissionRules(allow=("Write",))),
    ("Write", {"file_path": "sub/../../outside/marker", "content": "x"}, PermissionRules(mode="acceptEdits")),
    ("Bash", {"command": "echo x > ../outside/marker"}, ECHO_ONLY),
    ("Bash", {"command": "touch ../outside/marker"}, PermissionRules(mode="acceptEdits")),
    ("Bash", {"command": "cd .. && touch outside/marker"}, PermissionRules(mode="acceptEdits")),
], ids=["write", "write-acceptEdits", "bash-redirect", "bash-touch", "bash-cd"])
async def test_writing_through_dotdot_is_refused(attempt, world, tool, tool_input, rules):
    got = await attempt(tool, tool_input, rules)
    assert not (world[1] / "marker").exists()
    assert got.refused() and got.json["permission_denials"][0]["tool_name"] == tool


@pytest.mark.parametrize("tool,tool_input,rules", [
    ("Write", {"file_path": "escape/marker", "content": "x"}, PermissionRules(allow=("Write",))),
    ("Write", {"file_path": "escape/marker", "content": "x"}, PermissionRules(mode="acceptEdits")),
    ("Bash", {"command": "echo x > escape/marker"}, ECHO_ONLY),
    ("Bash", {"command": "touch escape/marker"}, PermissionRules(mode="acceptEdits")),
    ("Bash", {"command": "cp victim escape/marker"}, PermissionRules(mode="acceptEdits")),
], ids=["write", "write-acceptEdits", "bash-redirect", "bash-touch", "bash-cp"])
async def test_writing_through_a_symlink_that_points_outside_is_refused(attempt, world, tool, tool_input, rules):
    got = await attempt(tool, tool_input, rules)
    assert not (world[1] / "marker").exists()
    assert got.refused() and "outside the writable roots" in got.tool_result["content"]


@pytest.mark.parametrize("tool,tool_input", [
    ("Write", {"file_path": ".git/hooks/post-commit", "content": "touch /tmp/pwned"}),
    ("Write", {"file_path": ".bashrc", "content": "x"}),
    ("Write", {"file_path": ".loopwright/settings.json", "content": "{}"}),
    ("Write", {"file_path": ".claude/settings.json", "content": "{}"}),
    ("Bash", {"command": "echo x >> .bashrc"}),
    ("Bash", {"command": "cp victim .git/hooks/post-commit"}),
    ("Bash", {"command": "mkdir -p .claude && touch .claude/settings.json"}),
], ids=lambda v: v if isinstance(v, str) else next(iter(v.values())))
async def test_protected_paths_are_not_written_in_accept_edits(attempt, world, tool, tool_input):
    project = world[0]
    got = await attempt(tool, tool_input, PermissionRules(mode="acceptEdits", allow=("Write", "Edit")))
    for name in (".git/hooks/post-commit", ".bashrc", ".loopwright/settings.json", ".claude/settings.json"):
        assert not (project / name).exists(), name
    assert got.refused() and "protected path" in got.tool_result["content"]


async def test_an_edit_inside_the_roots_still_works_in_accept_edits(attempt, world):
    """The control case: the same route does write when nothing is wrong."""
    got = await attempt("Write", {"file_path": "marker", "content": "x"}, PermissionRules(mode="acceptEdits"))
    assert (world[0] / "marker").read_text() == "x" and not got.refused()


# ------------------------------------------------------------ reads outside the readable places

SECRET = "s3cret-0f-the-neighbour"


@pytest.fixture
def neighbour(world):
    """A secret in the folder beside the project, the way `~/.ssh` or another checkout sits."""
    (world[1] / "secret").write_text(SECRET)
    return world[1]


def leaked(got: Attempt) -> bool:
    return any(SECRET in str(m) for r in got.requests for m in r["messages"])


@pytest.mark.parametrize("tool,tool_input", [
    ("Read", {"file_path": "../outside/secret"}),
    ("Read", {"file_path": "{outside}/secret"}),
    ("Read", {"file_path": "escape/secret"}),
    ("Grep", {"pattern": "s3cret", "path": "{outside}", "output_mode": "content"}),
    ("Grep", {"pattern": "s3cret", "path": "escape", "output_mode": "content"}),
    ("Glob", {"pattern": "../outside/*"}),
    ("Glob", {"pattern": "*", "path": "escape"}),
], ids=["read-dotdot", "read-absolute", "read-symlink", "grep-absolute", "grep-symlink", "glob-dotdot",
        "glob-symlink"])
async def test_reads_outside_the_working_directory_are_refused(attempt, neighbour, tool, tool_input):
    tool_input = {k: v.replace("{outside}", str(neighbour)) for k, v in tool_input.items()}
    got = await attempt(tool, tool_input, PermissionRules())
    assert not leaked(got) and str(neighbour / "secret") not in got.tool_result["content"].split("is outside")[-1]
    assert got.json["permission_denials"] and "outside the readable places" in got.tool_result["content"]
    assert "--add-dir" in got.tool_result["content"] and "Read(" in got.tool_result["content"]


async def test_a_search_leaves_out_a_file_linked_from_outside(attempt, world, neighbour):
    (world[0] / "notes.txt").symlink_to(neighbour / "secret")
    got = await attempt("Grep", {"pattern": "s3cret", "output_mode": "content"}, PermissionRules())
    assert not leaked(got) and "1 file left out" in got.tool_result["content"]


@pytest.fixture
def own_home(world, monkeypatch):
    """loopwright's home inside the project (cwd = home is common): its transcripts hold prompts,
    answers and secrets passed in flags."""
    home = world[0] / ".lw-home"
    (home / "projects").mkdir(parents=True)
    (home / "projects" / "old.jsonl").write_text(f'{{"prompt": "{SECRET}"}}\n')
    monkeypatch.setenv("LOOPWRIGHT_HOME", str(home))
    return home


@pytest.mark.parametrize("tool,tool_input", [
    ("Read", {"file_path": ".lw-home/projects/old.jsonl"}),
    # the home is a hidden folder, which searches skip anyway: these name it, so the gate must leave it out
    ("Grep", {"pattern": "s3cret", "output_mode": "content", "glob": "**/.lw-home/**"}),
    ("Glob", {"pattern": "**/.lw-home/**/*.jsonl"}),
], ids=["read", "grep", "glob"])
async def test_loopwrights_own_home_is_not_read_even_inside_the_project(attempt, own_home, tool, tool_input):
    got = await attempt(tool, tool_input, PermissionRules(allow=("Read(./**)",)))
    assert not leaked(got) and "old.jsonl" not in got.tool_result["content"].split("is in loopwright")[-1]
    assert got.json["permission_denials"] or "left out" in got.tool_result["content"]


@pytest.mark.parametrize("rules", [
    PermissionRules(additional_dirs=("../outside",)),
    PermissionRules(allow=("Read(../outside/**)",)),
    PermissionRules(mode="bypassPermissions"),
], ids=["add-dir", "allow-rule", "bypass"])
async def test_a_read_outside_goes_through_when_the_user_allows_it(attempt, neighbour, rules, monkeypatch):
    """The control case: `--add-dir`, an allow rule naming the place, or bypassPermissions."""
    monkeypatch.setenv("LOOPWRIGHT_ALLOW_ROOT_BYPASS", "1")
    got = await attempt("Read", {"file_path": "escape/secret"}, rules)
    assert SECRET in got.tool_result["content"] and not got.refused()


async def test_own_home_opens_only_to_a_rule_that_names_it(attempt, own_home):
    wide = await attempt("Read", {"file_path": ".lw-home/projects/old.jsonl"}, PermissionRules(allow=("Read(/**)",)))
    assert not leaked(wide) and wide.json["permission_denials"]
    named = await attempt("Read", {"file_path": ".lw-home/projects/old.jsonl"},
                          PermissionRules(allow=("Read(./.lw-home/**)",)))
    assert SECRET in named.tool_result["content"]


# ------------------------------------------------------------ smuggling past Bash(echo *)

SMUGGLED = [
    "echo hi; touch marker", "echo hi && touch marker", "false || touch marker", "echo hi | touch marker",
    "echo hi\ntouch marker", "echo $(touch marker)", "echo `touch marker`", "echo \"$(touch marker)\"",
    "bash -c 'touch marker'", "echo hi; sh -c \"touch marker\"", "env X=1 touch marker", "echo hi & touch marker",
    "echo <(touch marker)", "(touch marker)", "{ touch marker; }", "eval 'touch marker'", "time touch marker",
    "cat <<EOF\n$(touch marker)\nEOF", "X=$(touch marker) echo hi", "echo hi #\ntouch marker",
    "echo hi\\\n; touch marker", "echo hi |& touch marker", "nohup timeout 5 nice -n 1 touch marker",
    "echo $'\\x41'; touch marker", "bash -c \"echo ok; bash -c 'touch marker'\"",
]


@pytest.mark.parametrize("command", SMUGGLED)
async def test_nothing_is_smuggled_past_an_echo_rule(attempt, world, command):
    got = await attempt("Bash", {"command": command}, ECHO_ONLY)
    assert not (world[0] / "marker").exists()
    assert got.refused() and got.json["permission_denials"], got.tool_result


@pytest.mark.parametrize("command", ["env X=1 rm victim", "echo hi; env -i rm -f victim",
                                     "xargs rm < /dev/null; rm victim"])
async def test_env_and_wrappers_do_not_hide_rm(attempt, world, command):
    got = await attempt("Bash", {"command": command}, ECHO_ONLY)
    assert (world[0] / "victim").read_text() == "keep me"
    assert got.refused()


async def test_the_echo_rule_itself_still_runs_echo(attempt, world):
    got = await attempt("Bash", {"command": "echo allowed"}, ECHO_ONLY)
    assert got.tool_result["content"] == "allowed" and not got.refused()


# ------------------------------------------------------------ deny beats allow


@pytest.mark.parametrize("tool,tool_input,rules", [
    ("Bash", {"command": "touch marker"}, PermissionRules(allow=("Bash",), deny=("Bash(touch *)",))),
    ("Bash", {"command": "touch marker"}, PermissionRules(allow=("Bash(touch *)",), deny=("Bash(touch *)",))),
    ("Bash", {"command": "'touch' marker"}, PermissionRules(allow=("Bash",), deny=("Bash(touch:*)",))),
    ("Bash", {"command": "nohup touch marker"}, PermissionRules(allow=("Bash",), deny=("Bash(touch *)",))),
    ("Bash", {"command": "$(echo touch) marker"}, PermissionRules(allow=("Bash",), deny=("Bash(touch *)",))),
    ("Bash", {"command": "touch marker"}, PermissionRules(mode="bypassPermissions", deny=("Bash(touch *)",))),
    ("Bash", {"command": "echo x > marker"}, PermissionRules(allow=("Bash",), deny=("Edit(./marker)",))),
    ("Write", {"file_path": "marker", "content": "x"}, PermissionRules(allow=("Write",), deny=("Edit(marker)",))),
    ("Write", {"file_path": "marker", "content": "x"}, PermissionRules(mode="acceptEdits", deny=("Write",))),
], ids=["bare-allow", "same-rule", "quoted", "wrapper", "substituted-name", "bypass", "bash-edit-rule",
        "write-edit-rule", "acceptEdits-bare-deny"])
async def test_a_deny_rule_is_never_beaten_by_an_allow(attempt, world, tool, tool_input, rules, monkeypatch):
    monkeypatch.setenv("LOOPWRIGHT_ALLOW_ROOT_BYPASS", "1")
    got = await attempt(tool, tool_input, rules)
    assert not (world[0] / "marker").exists()
    assert got.refused()


async def test_an_ask_rule_is_a_denial_headless_even_in_bypass(attempt, world, monkeypatch):
    monkeypatch.setenv("LOOPWRIGHT_ALLOW_ROOT_BYPASS", "1")
    got = await attempt("Bash", {"command": "touch marker"},
                        PermissionRules(mode="bypassPermissions", ask=("Bash(touch *)",)))
    assert not (world[0] / "marker").exists()
    assert got.json["permission_denials"] and "ask rule" in got.tool_result["content"]


# ------------------------------------------------------------ the sandbox


@pytest.fixture
def var_tmp():
    """A directory outside the roots and outside /tmp (which the sandbox replaces)."""
    path = tempfile.mkdtemp(dir="/var/tmp", prefix="loopwright-test-")
    yield Path(path)
    shutil.rmtree(path, ignore_errors=True)


@needs_bwrap
@pytest.mark.parametrize("where", ["var-tmp", "tmp"])
async def test_sandbox_stops_writes_the_policy_cannot_see(attempt, world, var_tmp, where):
    """`Bash` is allowed outright, so the policy lets python run; the sandbox stops its write:
    the filesystem is read-only, and /tmp is a private one."""
    target = (var_tmp if where == "var-tmp" else world[1]) / "marker"
    code = f"open({str(target)!r}, 'w').write('x')"
    got = await attempt("Bash", {"command": f"{sys.executable} -c \"{code}\""}, PermissionRules(allow=("Bash",)),
                        sandbox=SandboxConfig(enabled=True))
    assert not target.exists()
    why = "Read-only file system" if where == "var-tmp" else "No such file or directory"
    assert got.tool_result.get("is_error") and why in got.tool_result["content"]


@needs_bwrap
async def test_sandbox_still_writes_inside_the_roots(attempt, world):
    code = "open('inside', 'w').write('x')"
    got = await attempt("Bash", {"command": f"{sys.executable} -c \"{code}\""}, PermissionRules(allow=("Bash",)),
                        sandbox=SandboxConfig(enabled=True))
    assert (world[0] / "inside").read_text() == "x" and not got.refused()


@pytest.fixture
def listener():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    server.settimeout(3)
    accepted = []

    def serve():
        try:
            conn, _ = server.accept()
            accepted.append(conn)
            conn.close()
        except OSError:
            pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1], accepted
    server.close()
    thread.join(5)


@needs_bwrap
async def test_sandbox_has_no_network(attempt, listener):
    port, accepted = listener
    code = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=2)"
    got = await attempt("Bash", {"command": f"{sys.executable} -c \"{code}\""}, PermissionRules(allow=("Bash",)),
                        sandbox=SandboxConfig(enabled=True))
    assert not accepted
    assert got.tool_result.get("is_error") and "Connection refused" in got.tool_result["content"]


@needs_bwrap
async def test_network_allowed_reaches_the_listener(attempt, listener):
    """The control case: with `network` on the same connection gets through."""
    port, accepted = listener
    code = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=2)"
    got = await attempt("Bash", {"command": f"{sys.executable} -c \"{code}\""}, PermissionRules(allow=("Bash",)),
                        sandbox=SandboxConfig(enabled=True, network=True))
    assert not got.refused()
    for _ in range(50):
        if accepted:
            break
        threading.Event().wait(0.05)
    assert accepted


async def test_sandbox_unavailable_fails_closed(attempt, world, monkeypatch):
    monkeypatch.setenv("LOOPWRIGHT_BWRAP", os.devnull + "-missing")
    got = await attempt("Bash", {"command": "touch marker"}, PermissionRules(allow=("Bash",)),
                        sandbox=SandboxConfig(fail_closed=True))
    assert not (world[0] / "marker").exists()
    assert got.tool_result.get("is_error") and "the sandbox cannot run here" in got.tool_result["content"]
