"""What a cloned repository's symlinks may not pull into the conversation (issue 29 item 5): a
memory file, rule, import, skill, command, agent or plugin file that is a link leading out of its
root is left out with one warning naming it, and nothing of /proc is ever loaded — not even
loopwright's own environment, API key and all; links that stay inside still work; Grep and Glob
do not follow a link out of the folder they search, even where the gate would allow the target.
Real files, the real CLI in a subprocess, the loopback simulator; the main cases run twice: on this
kernel's `openat2`, and under a seccomp filter that makes `openat2` ENOSYS, as a kernel older than
5.6 (or a container's filter) would, so the component-by-component walk is what judges them."""

import json
import os
import platform
import subprocess
import sys

import pytest

from loopwright.testing import Simulator

FAKE_KEY = "sk-ant-FAKE-0123456789-kernelread"
SECRET = "OUTSIDE-SECRET-7f3a"


@pytest.fixture
def world(tmp_path):
    home, project, outside = tmp_path / "home", tmp_path / "proj", tmp_path / "outside"
    for folder in (home / ".claude", home / ".lw", project / ".claude" / "rules", project / "sub", outside / "skill"):
        folder.mkdir(parents=True)
    (outside / "secret.md").write_text(f"{SECRET}\n")
    (outside / "skill" / "SKILL.md").write_text(f"---\ndescription: {SECRET} skill\n---\n{SECRET} body\n")
    (project / "AGENTS.md").write_text("AGENTS-RULE shared with other tools\n")
    (project / "sub" / "data.txt").write_text("plain data\n")
    return home, project, outside


# Installs a seccomp filter (classic BPF: on this architecture, openat2 fails with ENOSYS; every
# other call is allowed), checks that openat2 now fails so, then becomes the CLI: the filter holds
# across exec.
NO_OPENAT2 = r"""
import ctypes, os, struct, sys
arch, nr = {"x86_64": (0xC000003E, 437), "aarch64": (0xC00000B7, 437)}[os.uname().machine]
ALLOW, ENOSYS = 0x7FFF0000, 0x00050000 | 38
code = [(0x20, 0, 0, 4), (0x15, 0, 3, arch), (0x20, 0, 0, 0), (0x15, 0, 1, nr), (0x06, 0, 0, ENOSYS),
        (0x06, 0, 0, ALLOW)]
raw = b"".join(struct.pack("HBBI", *c) for c in code)
buf = ctypes.create_string_buffer(raw)
prog = struct.pack("HxxxxxxQ", len(code), ctypes.addressof(buf))
libc = ctypes.CDLL(None, use_errno=True)
assert libc.prctl(38, 1, 0, 0, 0) == 0  # PR_SET_NO_NEW_PRIVS
assert libc.prctl(22, 2, ctypes.c_char_p(prog), 0, 0) == 0, ctypes.get_errno()  # PR_SET_SECCOMP, FILTER
how = ctypes.create_string_buffer(24)
assert libc.syscall(ctypes.c_long(nr), -100, b".", how, ctypes.c_size_t(24)) == -1 and ctypes.get_errno() == 38
os.execv(sys.executable, [sys.executable, "-m", "loopwright", *sys.argv[1:]])
"""


@pytest.fixture(params=["openat2", "walk"])
def how(request):
    """How the kernel lets loopwright open a file beneath a root."""
    if request.param == "walk" and platform.machine() not in ("x86_64", "aarch64"):
        pytest.skip("the filter is written for x86_64 and aarch64")
    return request.param


def run(args, home, project, sim, key=FAKE_KEY, how="openat2"):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "LOOPWRIGHT_"))}
    env.update(HOME=str(home), LOOPWRIGHT_HOME=str(home / ".lw"), ANTHROPIC_API_KEY=key,
               ANTHROPIC_BASE_URL=sim.base_url)
    start = ["-c", NO_OPENAT2] if how == "walk" else ["-m", "loopwright"]
    return subprocess.run([sys.executable, *start, *args], env=env, cwd=project, capture_output=True,
                          text=True, timeout=60)


def sent(sim) -> str:
    return json.dumps([r.body for r in sim.message_requests])


def kept(home) -> str:
    """Everything loopwright wrote down: transcripts, session records."""
    return "\n".join(p.read_text(errors="replace") for p in (home / ".lw").rglob("*") if p.is_file())


def warnings(out, word):
    return [ln for ln in out.stderr.splitlines() if word in ln]


def tool_result(sim, n=1):
    return sim.message_requests[n].body["messages"][-1]["content"][0]


# ------------------------------------------------------------------ memory files and rules


def test_a_claude_md_linked_to_a_file_outside_is_not_loaded(world, how):
    home, project, outside = world
    (project / "CLAUDE.md").symlink_to(outside / "secret.md")
    with Simulator([{"text": "ok"}]) as sim:
        out = run(["-p", "go"], home, project, sim, how=how)
        body = sent(sim)
    assert out.returncode == 0, out.stderr
    assert SECRET not in body and SECRET not in kept(home)
    [said] = warnings(out, "memory:")
    assert f"{project / 'CLAUDE.md'}: the symlink CLAUDE.md -> {outside / 'secret.md'} leads outside {project}" in said


@pytest.mark.parametrize("where", [".claude/rules/x.md", "CLAUDE.local.md", ".claude/CLAUDE.md"])
def test_a_rule_linked_to_proc_self_environ_never_sends_the_api_key(world, where, how):
    home, project, _ = world
    (project / where).symlink_to("/proc/self/environ")
    with Simulator([{"text": "ok"}]) as sim:
        out = run(["-p", "go"], home, project, sim, how=how)
        body = sent(sim)
    assert out.returncode == 0, out.stderr
    assert FAKE_KEY not in body and FAKE_KEY not in kept(home) and "ANTHROPIC_BASE_URL" not in body
    [said] = warnings(out, "memory:")
    assert f"{project / where}: the symlink" in said and "/proc/self/environ leads outside" in said


def test_the_users_own_files_may_link_into_home_but_nothing_of_proc_is_loaded(world, how):
    """A dotfile manager links `~/.claude/CLAUDE.md` into `~/dotfiles`: that works. A user file may
    import anything, so its root is the whole filesystem: /proc is still never loaded from it."""
    home, project, _ = world
    (home / "dotfiles").mkdir()
    (home / "dotfiles" / "CLAUDE.md").write_text("DOTFILES-RULE\n@/proc/self/environ\n")
    (home / ".claude" / "CLAUDE.md").symlink_to(home / "dotfiles" / "CLAUDE.md")
    with Simulator([{"text": "ok"}]) as sim:
        out = run(["-p", "go"], home, project, sim, how=how)
        body = sent(sim)
    assert out.returncode == 0, out.stderr
    assert "DOTFILES-RULE" in body and FAKE_KEY not in body and FAKE_KEY not in kept(home)
    [said] = warnings(out, "memory:")
    assert "/proc/self/environ is a file of proc, never loaded" in said


def test_an_import_through_a_folder_linked_outside_is_not_loaded(world):
    home, project, outside = world
    (project / "vendor").symlink_to(outside)
    (project / "CLAUDE.md").write_text("PROJECT-RULE\n@vendor/secret.md\n")
    with Simulator([{"text": "ok"}]) as sim:
        out = run(["-p", "go"], home, project, sim)
        body = sent(sim)
    assert out.returncode == 0, out.stderr
    assert "PROJECT-RULE" in body and SECRET not in body
    [said] = warnings(out, "memory:")
    assert "@vendor/secret.md is outside the project and was not loaded" in said


def test_links_that_stay_inside_the_project_still_work(world, how):
    """`CLAUDE.md -> AGENTS.md` is common; an absolute link inside and a rule linked to a shared
    file of the project too."""
    home, project, _ = world
    (project / "CLAUDE.md").symlink_to("AGENTS.md")
    (project / "docs").mkdir()
    (project / "docs" / "rule.md").write_text("SHARED-RULE from docs\n")
    (project / ".claude" / "rules" / "shared.md").symlink_to(project / "docs" / "rule.md")
    (project / ".claude" / "rules" / "up.md").symlink_to("../../docs/rule.md")
    with Simulator([{"text": "ok"}]) as sim:
        out = run(["-p", "go"], home, project, sim, how=how)
        [memory] = [b["text"] for b in sim.message_requests[0].body["messages"][0]["content"] if b["type"] == "text"]
    assert out.returncode == 0, out.stderr
    assert f"Contents of {project / 'CLAUDE.md'} (project instructions" in memory and "AGENTS-RULE" in memory
    assert memory.count("SHARED-RULE") == 1  # the same file through two links: given once
    assert not warnings(out, "memory:")


def test_a_link_planted_in_a_subfolder_is_not_loaded_by_the_next_read_there(world, how):
    """A command run earlier (or the clone itself) leaves `sub/CLAUDE.md -> /proc/self/environ`;
    the model's Read in `sub` must not bring the environment in as that folder's memory."""
    home, project, _ = world
    (project / "sub" / "CLAUDE.md").symlink_to("/proc/self/environ")
    (project / "sub" / "deep").mkdir()
    (project / "sub" / "deep" / "CLAUDE.md").write_text("DEEP-RULE\n")
    (project / "sub" / "deep" / "x.txt").write_text("x\n")
    script = [{"tool_use": {"name": "Read", "input": {"file_path": "sub/deep/x.txt"}}}, {"text": "done"}]
    with Simulator(script) as sim:
        out = run(["-p", "read it"], home, project, sim, how=how)
        body = sent(sim)
    assert out.returncode == 0, out.stderr
    assert "DEEP-RULE" in body and FAKE_KEY not in body and FAKE_KEY not in kept(home)
    [said] = warnings(out, "memory:")
    assert f"{project / 'sub' / 'CLAUDE.md'}: the symlink" in said


def test_the_read_tool_does_not_open_a_planted_link_out_of_the_project(world):
    home, project, outside = world
    (project / "sub" / "notes.md").symlink_to(outside / "secret.md")
    script = [{"tool_use": {"name": "Read", "input": {"file_path": "sub/notes.md"}}}, {"text": "done"}]
    with Simulator(script) as sim:
        out = run(["-p", "read it"], home, project, sim)
        body, result = sent(sim), tool_result(sim)
    assert out.returncode == 0, out.stderr
    assert SECRET not in body and result.get("is_error")


# ------------------------------------------------------------ skills, commands, agents, plugins


def test_a_skill_folder_linked_outside_is_left_out_and_one_inside_is_listed(world, how):
    home, project, outside = world
    skills = project / ".claude" / "skills"
    (skills / "real").mkdir(parents=True)
    (skills / "real" / "SKILL.md").write_text("---\ndescription: the real one\n---\nREAL-BODY\n")
    (skills / "alias").symlink_to("real")
    (skills / "evil").symlink_to(outside / "skill")
    with Simulator([{"text": "ok"}]) as sim:
        out = run(["-p", "go"], home, project, sim, how=how)
        body = sent(sim)
    assert out.returncode == 0, out.stderr
    assert "- real: the real one" in body and "- alias: the real one" in body and SECRET not in body
    [said] = warnings(out, "skills:")
    assert f"{skills / 'evil' / 'SKILL.md'}: the symlink evil -> {outside / 'skill'} leads outside" in said


def test_a_command_linked_to_proc_is_not_loaded_nor_startable(world):
    home, project, _ = world
    (project / ".claude" / "commands").mkdir()
    (project / ".claude" / "commands" / "env.md").symlink_to("/proc/self/environ")
    with Simulator([{"text": "ok"}]) as sim:
        started = run(["-p", "/env"], home, project, sim)
        out = run(["-p", "go"], home, project, sim)
        body = sent(sim)
    assert started.returncode != 0 and "Unknown command: /env" in started.stderr
    assert out.returncode == 0, out.stderr
    assert FAKE_KEY not in body + started.stderr + out.stderr and FAKE_KEY not in kept(home)
    [said] = warnings(out, "skills:")
    assert "env.md: the symlink env.md -> /proc/self/environ leads outside" in said


def test_an_agent_file_linked_outside_is_skipped_with_a_warning(world):
    home, project, outside = world
    (outside / "agent.md").write_text(f"---\nname: leaker\ndescription: {SECRET}\n---\n{SECRET}\n")
    (project / ".claude" / "agents").mkdir()
    (project / ".claude" / "agents" / "leaker.md").symlink_to(outside / "agent.md")
    (project / ".claude" / "agents" / "fine.md").write_text("---\nname: fine\ndescription: FINE-AGENT\n---\nok\n")
    with Simulator([{"text": "ok"}]) as sim:
        out = run(["-p", "go"], home, project, sim)
        body = sent(sim)
    assert out.returncode == 0, out.stderr
    assert "FINE-AGENT" in body and SECRET not in body
    [said] = warnings(out, "agents:")
    assert "leaker.md: the symlink leaker.md -> " in said and "leads outside" in said


def test_a_plugin_whose_manifest_links_outside_is_not_loaded(world, tmp_path):
    home, project, outside = world
    plugin = tmp_path / "plug"
    (plugin / ".claude-plugin").mkdir(parents=True)
    (outside / "plugin.json").write_text(json.dumps({"name": "stolen", "description": SECRET}))
    (plugin / ".claude-plugin" / "plugin.json").symlink_to(outside / "plugin.json")
    (plugin / "commands").mkdir()
    (plugin / "commands" / "hi.md").write_text("HI-BODY\n")
    with Simulator([{"text": "ok"}]) as sim:
        out = run(["-p", "go", "--plugin-dir", str(plugin)], home, project, sim)
        body = sent(sim)
    assert out.returncode == 0, out.stderr
    assert SECRET not in body and "stolen" not in body
    [said] = warnings(out, "plugin:")
    assert "plugin.json: the symlink plugin.json -> " in said and "the plugin is not loaded" in said


# ------------------------------------------------------------------------------ Grep and Glob


@pytest.mark.parametrize("tool,tool_input", [
    ("Grep", {"pattern": "OUTSIDE-SECRET", "output_mode": "content"}),
    ("Grep", {"pattern": "OUTSIDE-SECRET", "path": "sub", "output_mode": "files_with_matches"}),
    ("Glob", {"pattern": "**/*.md"}),
], ids=["grep-content", "grep-subfolder", "glob"])
def test_a_search_does_not_follow_a_link_out_of_its_folder_even_where_the_gate_allows(world, tool, tool_input,
                                                                                     how):
    """The link's target is readable (`--add-dir`), so the gate would show it; the search still
    leaves it out, as ripgrep does, and says so. A folder linked outside is not entered either."""
    home, project, outside = world
    (project / "sub" / "notes.md").symlink_to(outside / "secret.md")
    (project / "sub" / "vendor").symlink_to(outside)
    (project / "sub" / "own.md").write_text("OUTSIDE-SECRET-lookalike of our own\n")
    script = [{"tool_use": {"name": tool, "input": tool_input}}, {"text": "done"}]
    with Simulator(script) as sim:
        out = run(["-p", "search", "--add-dir", str(outside)], home, project, sim, how=how)
        result = tool_result(sim)
    assert out.returncode == 0, out.stderr
    content = result["content"]
    assert not result.get("is_error") and "own.md" in content
    assert SECRET not in content and "notes.md" not in content and "vendor" not in content
    assert "1 file left out" in content


def test_a_search_still_follows_a_link_that_stays_inside(world):
    home, project, _ = world
    (project / "sub" / "real.md").write_text("INSIDE-NEEDLE\n")
    (project / "sub" / "alias.md").symlink_to("real.md")
    script = [{"tool_use": {"name": "Grep", "input": {"pattern": "INSIDE-NEEDLE"}}}, {"text": "done"}]
    with Simulator(script) as sim:
        out = run(["-p", "search"], home, project, sim)
        content = tool_result(sim)["content"]
    assert out.returncode == 0, out.stderr
    assert "Found 2 files" in content and "alias.md" in content and "left out" not in content
