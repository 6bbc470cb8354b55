"""File checkpoints and rewind, end to end: the real process, the simulator as the model, real
files. Write and Edit keep a file as it was before a prompt first changes it; `loopwright rewind`
puts the code (and, if asked, the conversation) back to before a prompt; the Agent SDK's
`rewind_files` does the same for files, by the id of a replayed user message."""

import json
import os
import subprocess
import sys

import anyio
import pytest

from loopwright.testing import Simulator

ON = {"CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING": "true"}


def write(path, content):
    return {"tool_use": {"name": "Write", "input": {"file_path": path, "content": content}}}


def edit(path, old, new):
    return {"tool_use": {"name": "Edit", "input": {"file_path": path, "old_string": old, "new_string": new}}}


def bash(command):
    return {"tool_use": {"name": "Bash", "input": {"command": command}}}


@pytest.fixture
def place(tmp_path):
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    home.mkdir()
    (work / "b.txt").write_text("b original\n")
    os.chmod(work / "b.txt", 0o640)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "LOOPWRIGHT_", "CLAUDE_CODE_"))}
    env |= {"HOME": str(home), "LOOPWRIGHT_HOME": str(home / ".lw"), "ANTHROPIC_API_KEY": "sk-test"}
    return work, env


def loopwright(args, work, env, sim=None, extra=None):
    e = env | (extra or {}) | ({"ANTHROPIC_BASE_URL": sim.base_url} if sim else {})
    return subprocess.run([sys.executable, "-m", "loopwright", *args], cwd=work, env=e, capture_output=True, text=True,
                          timeout=60)


def two_prompts(work, env, sim, extra=ON):
    """Prompt 1 creates a.txt and edits b.txt; prompt 2 edits b.txt again, creates c.txt and,
    through Bash, d.txt. Returns the session id."""
    first = loopwright(["-p", "first", "--permission-mode", "acceptEdits", "--output-format", "json"], work, env, sim,
                       extra)
    sid = json.loads(first.stdout)["session_id"]
    loopwright(["-p", "second", "-r", sid, "--permission-mode", "acceptEdits", "--allowedTools", "Bash",
                "--output-format", "json"], work, env, sim, extra)
    return sid


SCRIPT = [write("a.txt", "a new\n"), edit("b.txt", "b original", "b after one"), {"text": "one done"},
          edit("b.txt", "b after one", "b after two"), write("c.txt", "c new\n"), bash("echo shell > d.txt"),
          {"text": "two done"}]


def test_rewind_lists_the_checkpoints_and_puts_the_code_back_before_a_prompt(place):
    work, env = place
    with Simulator(SCRIPT) as sim:
        sid = two_prompts(work, env, sim)
    listed = loopwright(["rewind", "--session", sid], work, env)
    lines = listed.stdout.splitlines()
    assert len(lines) == 2 and "2 file(s): a.txt, b.txt" in lines[0] and "2 file(s): b.txt, c.txt" in lines[1]
    back = loopwright(["rewind", "--session", sid, "--to", "2"], work, env)
    assert back.returncode == 0, back.stderr
    assert (work / "b.txt").read_text() == "b after one\n" and not (work / "c.txt").exists()
    assert (work / "a.txt").read_text() == "a new\n" and (work / "d.txt").exists()  # shell changes stay
    assert "not tracked" in back.stderr
    loopwright(["rewind", "--session", sid, "--to", "1"], work, env)
    assert (work / "b.txt").read_text() == "b original\n" and not (work / "a.txt").exists()
    assert oct(os.stat(work / "b.txt").st_mode & 0o777) == "0o640"  # the mode comes back too


def test_a_dry_run_changes_nothing_and_an_unknown_checkpoint_is_a_clear_error(place):
    work, env = place
    with Simulator(SCRIPT) as sim:
        sid = two_prompts(work, env, sim)
    dry = loopwright(["rewind", "--session", sid, "--to", "1", "--dry-run"], work, env)
    assert "would be removed: " in dry.stdout and (work / "a.txt").exists()
    bad = loopwright(["rewind", "--session", sid, "--to", "9"], work, env)
    assert bad.returncode == 2 and "--to 9: no checkpoint" in bad.stderr
    missing = loopwright(["rewind", "--session", "no-such-session"], work, env)
    assert missing.returncode == 2 and "no such session" in missing.stderr


def test_rewinding_the_conversation_makes_a_resume_continue_from_before_that_prompt(place):
    work, env = place
    with Simulator([*SCRIPT, {"text": "three"}]) as sim:
        sid = two_prompts(work, env, sim)
        out = loopwright(["rewind", "--session", sid, "--to", "2", "--conversation"], work, env)
        assert out.returncode == 0 and "continues from there" in out.stdout
        loopwright(["-p", "third", "-r", sid], work, env, sim)
        sent = json.dumps(sim.message_requests[-1].body["messages"])
    assert "first" in sent and "one done" in sent and "second" not in sent and "two done" not in sent
    assert (work / "c.txt").exists()  # --conversation leaves the files


def test_without_checkpointing_a_headless_run_keeps_no_copies(place):
    work, env = place
    with Simulator(SCRIPT) as sim:
        sid = two_prompts(work, env, sim, extra={})
    listed = loopwright(["rewind", "--session", sid], work, env)
    assert listed.stdout == "" and "no checkpoints in this session" in listed.stderr


def test_a_write_through_a_symlink_is_kept_and_put_back_where_it_landed(place, tmp_path):
    work, env = place
    outside = tmp_path / "outside.txt"
    outside.write_text("outside\n")
    script = [write("link.txt", "x\n"), {"text": "ok"}]
    (work / "link.txt").symlink_to(outside)
    with Simulator(script) as sim:
        first = loopwright(["-p", "go", "--permission-mode", "acceptEdits", "--add-dir", str(tmp_path),
                            "--output-format", "json"], work, env, sim, ON)
    sid = json.loads(first.stdout)["session_id"]
    assert outside.read_text() == "x\n"
    out = loopwright(["rewind", "--session", sid, "--to", "1"], work, env)
    assert out.stdout == f"restored: {outside}\n"  # the file that changed, not the link's name
    assert outside.read_text() == "outside\n" and (work / "link.txt").is_symlink()


def test_the_sdk_rewinds_files_to_a_replayed_user_message(place):
    pytest.importorskip("claude_agent_sdk")
    from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient, TextBlock, UserMessage
    from test_agent_sdk import SRC

    work, env = place
    cli = work.parent / "lw"
    cli.write_text(f'#!/bin/sh\nPYTHONPATH="{SRC}" exec "{sys.executable}" -m loopwright "$@"\n')
    cli.chmod(0o755)

    async def go(opts):
        ids = []
        async with ClaudeSDKClient(opts) as client:
            for prompt in ("first", "second"):
                await client.query(prompt)
                async for m in client.receive_response():
                    if isinstance(m, UserMessage) and m.uuid and any(isinstance(b, TextBlock) for b in m.content):
                        ids.append(m.uuid)
            await client.rewind_files(ids[1])
        return ids

    script = [write("a.txt", "one\n"), {"text": "1"}, write("a.txt", "two\n"), {"text": "2"}]
    with Simulator(script) as sim:
        opts = ClaudeAgentOptions(cli_path=str(cli), cwd=str(work), permission_mode="acceptEdits",
                                  enable_file_checkpointing=True, extra_args={"replay-user-messages": None},
                                  env={k: v for k, v in env.items() if k in ("HOME", "LOOPWRIGHT_HOME")}
                                  | {"ANTHROPIC_BASE_URL": sim.base_url, "ANTHROPIC_API_KEY": "sk-test"})
        ids = anyio.run(go, opts)
    assert len(ids) == 2 and (work / "a.txt").read_text() == "one\n"
