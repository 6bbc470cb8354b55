"""The full-screen-less terminal (prompt_toolkit and rich) driven through a real pseudo-terminal
with pexpect, 80 columns wide, against the simulator: streamed Markdown and tool lines, Esc
mid-tool, an "always" answer, Shift-Tab, an idle /loop, Ctrl-C, NO_COLOR and the trust question.
Waits are bounded; no time is asserted."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import time
import sys

import pexpect
import pytest

from loopwright.testing import Simulator
from test_interactive import hooks_ran, project_hook

ESC, SHIFT_TAB, ENTER = "\x1b", "\x1b[Z", "\r"
PROMPT = "›"  # prompt_toolkit draws the space after it as a cursor move
ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][0-9A-B]|\x1b[=>]")


def spawn(tmp_path, sim, args=(), **extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "NO_COLOR"))}
    env.update({"ANTHROPIC_API_KEY": "sk-test", "ANTHROPIC_BASE_URL": sim.base_url, "HOME": str(tmp_path / "fakehome"),
                "TERM": "xterm-256color", "COLUMNS": "80", "LINES": "24", **extra})
    child = pexpect.spawn(sys.executable, ["-m", "loopwright", *args], cwd=str(tmp_path), env=env,
                          dimensions=(24, 80), encoding="utf-8", codec_errors="replace", timeout=60)
    child.logfile_read = io.StringIO()  # everything the terminal was sent
    return child


def shown(child):
    """What the terminal showed, escape sequences left out."""
    return ANSI.sub("", child.logfile_read.getvalue())


@pytest.fixture
def term(tmp_path):
    opened = []

    def start(script, args=(), **extra):
        sim = Simulator(script).start()
        child = spawn(tmp_path, sim, args, **extra)
        opened.append((child, sim))
        return child, sim

    yield start
    for child, sim in opened:
        child.close(force=True)
        sim.stop()


def see(child, pattern, timeout=60):
    """Waits for `pattern`, answering the cursor-position requests prompt_toolkit sends on the way
    as a terminal does (it draws the status line only once it knows where the cursor is)."""
    while see_or_cpr(child, pattern, timeout):
        child.send("\x1b[20;1R")


def see_or_cpr(child, pattern, timeout):
    return child.expect([pattern, re.escape("\x1b[6n")], timeout=timeout) == 1


def say(child, text):
    child.send(text + ENTER)


def leave(child):
    say(child, "/exit")
    see(child, pexpect.EOF)
    child.close()
    return child.exitstatus


def valid_pairs(messages):
    """Every tool_use of an assistant message is answered by a tool_result in the next message."""
    for i, m in enumerate(messages):
        if m["role"] != "assistant" or isinstance(m["content"], str):
            continue
        ids = {b["id"] for b in m["content"] if b["type"] == "tool_use"}
        if ids:
            answered = {b.get("tool_use_id") for b in messages[i + 1]["content"] if isinstance(b, dict)}
            assert ids <= answered, messages
    return True


def test_a_prompt_streams_markdown_and_a_tool_line_with_the_status_below(term, tmp_path):
    (tmp_path / "notes.txt").write_text("one\nbravo-line\n")
    child, sim = term([{"tool_use": {"name": "Read", "input": {"file_path": str(tmp_path / "notes.txt")}}},
                       {"text": "The file has **two** lines.\n\n- one\n- two"}])
    see(child, PROMPT)
    see(child, "default")  # the status line: model, mode, turn, context, spend
    say(child, "read the notes")
    see(child, r"Read\(")
    see(child, "⎿")
    see(child, "lines")
    see(child, PROMPT)
    text = shown(child)
    assert "**two**" not in text and "- one" not in text and "• one" in text, text  # rendered as Markdown
    see(child, "turn 2")
    assert "bravo-line" not in shown(child)  # the result is collapsed to its first line
    child.send("\x0f")  # Ctrl-O: the last tool's whole output
    see(child, "bravo-line")
    assert leave(child) == 0 and len(sim.message_requests) == 2


def test_esc_mid_tool_stops_the_turn_and_the_transcript_stays_valid(term):
    child, sim = term([{"tool_use": {"name": "Bash", "input": {"command": "sleep 30"}}}, {"text": "after the stop"}],
                      args=("--allowedTools", "Bash(sleep *)"))
    see(child, PROMPT)
    say(child, "wait a while")
    see(child, r"Bash\(sleep 30\)")
    # while it works the screen says so: a spinner with the elapsed time, how to stop it, the status line
    see(child, "Working… ")
    see(child, "to interrupt")
    see(child, "claude-sonnet-5 · default · turn 1")
    assert re.search(r"Working… \d+s · ↓ \d+ tokens · esc to interrupt", shown(child))
    child.send("still ")  # typed while the turn runs: it waits in the next prompt
    child.send(ESC)
    see(child, "Interrupted by you", timeout=20)  # not the 30 s of the sleep; the person's own stop
    assert "error_during_execution" not in shown(child)
    see(child, PROMPT)
    say(child, "there?")
    see(child, "after the stop")
    see(child, PROMPT)
    assert leave(child) == 0
    messages = sim.message_requests[-1].body["messages"]
    assert valid_pairs(messages) and messages[-1]["content"][-1]["text"] == "still there?"
    answer = next(b for m in messages if m["role"] == "user" and not isinstance(m["content"], str)
                  for b in m["content"] if b.get("type") == "tool_result")
    assert "interrupt" in str(answer).lower(), answer


def test_always_answers_the_second_identical_call_without_asking(term, tmp_path):
    touch = {"tool_use": {"name": "Bash", "input": {"command": "touch made"}}}
    child, sim = term([touch, touch, {"text": "both done"}])
    see(child, PROMPT)
    say(child, "touch it twice")
    see(child, "touch made")  # the exact command is shown
    see(child, r"always allow Bash\(touch made\)")
    child.send("a")
    see(child, "both done")
    see(child, PROMPT)
    assert shown(child).count("always allow") == 1  # asked once only
    assert leave(child) == 0 and (tmp_path / "made").exists() and len(sim.message_requests) == 3


def test_tell_it_instead_sends_the_words_to_the_model(term, tmp_path):
    child, sim = term([{"tool_use": {"name": "Bash", "input": {"command": "touch made"}}}, {"text": "ok, not that"}])
    see(child, PROMPT)
    say(child, "touch it")
    see(child, "tell it instead")
    child.send("t")
    see(child, "tell the model:")
    say(child, "use the other folder")
    see(child, "ok, not that")
    see(child, PROMPT)
    assert leave(child) == 0 and not (tmp_path / "made").exists()
    result = sim.message_requests[1].body["messages"][-1]["content"][0]
    assert result["is_error"] and "use the other folder" in str(result["content"])


def test_shift_tab_cycles_the_mode_shown_in_the_status_line(term):
    child, sim = term([{"text": "ok"}])
    see(child, PROMPT)
    child.send(SHIFT_TAB)
    see(child, "acceptEdits")
    child.send(SHIFT_TAB)
    see(child, "plan")
    say(child, "/permissions")
    see(child, "mode: plan")
    see(child, PROMPT)
    assert leave(child) == 0


def test_a_loop_fires_while_the_prompt_is_idle_and_stops(term):
    child, sim = term([{"text": "tick", "repeat": -1}])
    see(child, PROMPT)
    say(child, "/loop 2s check the build")
    # the same rule as -p, schedules and routines: seconds round up to a clean cron step, said once
    see(child, "2s is not a clean cron step; using every 1m")
    see(child, "every 1m")
    see(child, "tick")
    see(child, PROMPT)
    see(child, "loop iteration 2", timeout=100)  # nothing typed: the idle prompt gave way
    see(child, "tick")
    see(child, PROMPT)
    say(child, "/loop stop")
    see(child, "loop over after 2 iteration")
    assert leave(child) == 0
    prompts = [r.body["messages"][-1]["content"] for r in sim.message_requests]
    assert len(prompts) == 2 and all("check the build" in str(p) for p in prompts)


def test_ctrl_c_clears_the_line_and_twice_on_an_empty_prompt_leaves(term, tmp_path):
    child, sim = term([{"text": "ok"}], LOOPWRIGHT_HOME=str(tmp_path / "home"))
    see(child, PROMPT)
    say(child, "remember me")
    see(child, "ok")
    see(child, PROMPT)
    child.send("half typed")
    child.send("\x03")
    child.send("\x03")
    see(child, "Ctrl-C again")
    child.send("\x03")
    see(child, pexpect.EOF)
    child.close()
    assert child.exitstatus == 0 and len(sim.message_requests) == 1
    history = tmp_path / "home" / "history"
    assert history.stat().st_mode & 0o777 == 0o600 and "remember me" in history.read_text()


def test_multi_line_input_and_commands_complete(term):
    child, sim = term([{"text": "got both lines"}])
    see(child, PROMPT)
    child.send("/he\t")
    see(child, "/help")
    child.send("\x15")  # Ctrl-U: clear that line
    child.send("first line" + ESC + ENTER + "second line" + ENTER)
    see(child, "got both lines")
    see(child, PROMPT)
    assert leave(child) == 0
    assert sim.message_requests[0].body["messages"][-1]["content"][-1]["text"] == "first line\nsecond line"


COLOUR = re.compile(r"\x1b\[[0-9;]*(?:3[0-9]|4[0-9]|9[0-7]|10[0-7])(?:;[0-9;]*)?m")


def test_no_color_drops_only_the_colours(term):
    # before: NO_COLOR switched the whole terminal to plain lines (no status line, no Markdown)
    child, sim = term([{"text": "a **plain** answer\n\n- one"}], NO_COLOR="1")
    see(child, PROMPT)
    say(child, "hi")
    see(child, "one")
    see(child, PROMPT)
    see(child, "claude-sonnet-5 · default")  # the status line is there
    say(child, "/help")
    see(child, "/loop")
    see(child, PROMPT)
    assert leave(child) == 0
    raw = child.logfile_read.getvalue()
    assert "**plain**" not in shown(child) and "• one" in shown(child)  # Markdown still rendered
    assert not COLOUR.search(raw), COLOUR.search(raw)


def test_a_dumb_terminal_gets_plain_lines_without_escape_sequences(term):
    child, sim = term([{"text": "plain answer"}], TERM="dumb")
    see(child, PROMPT)
    say(child, "hi")
    see(child, "plain answer")
    see(child, PROMPT)
    assert leave(child) == 0
    assert "\x1b" not in child.logfile_read.getvalue(), repr(child.logfile_read.getvalue())


def test_output_that_is_not_a_terminal_gets_plain_lines(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    with Simulator([{"text": "piped answer"}]) as sim:
        env.update(ANTHROPIC_API_KEY="sk-test", ANTHROPIC_BASE_URL=sim.base_url, HOME=str(tmp_path / "fakehome"),
                   TERM="xterm-256color")
        out = subprocess.run([sys.executable, "-m", "loopwright"], input="hi\n", capture_output=True,
                             text=True, cwd=tmp_path, env=env, timeout=60)
    assert out.returncode == 0 and out.stdout == "piped answer\n"  # piped use is headless (as -p)
    assert "\x1b" not in out.stdout + out.stderr


def test_the_trust_question_still_comes_first(term, tmp_path):
    project_hook(tmp_path)
    child, sim = term([{"text": "trusted now"}])
    see(child, r"\[y\]es / \[n\]o")
    assert hooks_ran(tmp_path) == []  # asked before any project hook ran
    child.sendline("y")
    see(child, PROMPT)
    say(child, "hi")
    see(child, "trusted now")
    see(child, PROMPT)
    assert leave(child) == 0 and "SessionStart" in hooks_ran(tmp_path)


def test_resume_picks_another_session_of_this_folder_and_clear_starts_anew(term):
    child, sim = term([{"text": "noted"}])
    see(child, PROMPT)
    say(child, "remember the word pelican")
    see(child, "noted")
    see(child, PROMPT)
    assert leave(child) == 0
    child, sim = term([{"text": "it was pelican"}, {"text": "fresh start"}])
    see(child, PROMPT)
    say(child, "/resume")
    see(child, "Resume which session")
    see(child, "remember the word pelican")  # the picker names each session by its first prompt
    see(child, "number")
    say(child, "1")
    see(child, r"resumed .* \(\d+ messages\)")
    see(child, PROMPT)
    say(child, "which word?")
    see(child, "it was pelican")
    see(child, PROMPT)
    say(child, "/clear")
    see(child, "new conversation")
    see(child, PROMPT)
    say(child, "hello")
    see(child, "fresh start")
    see(child, PROMPT)
    assert leave(child) == 0
    first, second = (r.body["messages"] for r in sim.message_requests)
    assert "pelican" in str(first[0]) and "pelican" not in str(second)


def test_print_mode_loads_neither_prompt_toolkit_nor_rich(tmp_path):
    code = ("import sys\nfrom loopwright.cli.main import main\ntry:\n    main(['-p', 'hi'])\nexcept SystemExit:\n"
            "    pass\nprint(sorted({m.split('.')[0] for m in sys.modules} & {'rich', 'prompt_toolkit'}), "
            "file=sys.stderr)")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    with Simulator([{"text": "fine"}]) as sim:
        env.update(ANTHROPIC_API_KEY="sk-test", ANTHROPIC_BASE_URL=sim.base_url, HOME=str(tmp_path / "fakehome"))
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, env=env,
                             timeout=60)
    assert "fine" in out.stdout and out.stderr.strip().endswith("[]"), out.stderr


def test_ctrl_c_mid_tool_stops_the_turn_not_the_session(term):
    child, sim = term([{"tool_use": {"name": "Bash", "input": {"command": "sleep 30"}}}, {"text": "here still"}],
                      args=("--allowedTools", "Bash(sleep *)"))
    see(child, PROMPT)
    say(child, "wait")
    see(child, r"Bash\(sleep 30\)")
    child.send("\x03")
    see(child, "Interrupted by you", timeout=20)
    see(child, PROMPT)
    say(child, "hello?")
    see(child, "here still")
    see(child, PROMPT)
    assert leave(child) == 0 and valid_pairs(sim.message_requests[-1].body["messages"])


def test_a_line_typed_and_ended_during_a_turn_is_the_next_prompt(term):
    child, sim = term([{"text": "first done", "delay": 2}, {"text": "second done"}])
    see(child, PROMPT)
    say(child, "first")
    deadline = time.monotonic() + 30
    while not sim.message_requests and time.monotonic() < deadline:
        time.sleep(0.05)
    say(child, "second")  # typed and ended while the first turn runs
    see(child, "queued")
    see(child, "second done")
    see(child, PROMPT)
    assert leave(child) == 0
    prompts = [r.body["messages"][-1]["content"] for r in sim.message_requests]
    assert len(prompts) == 2 and "second" in str(prompts[1])


def test_compact_takes_a_focus_and_the_status_line_fits_a_resized_terminal(term):
    child, sim = term([{"text": "one"}, {"text": "two"}, {"text": "three"}, {"text": "<summary>all of it</summary>"}])
    for n, word in enumerate(("one", "two", "three")):
        see(child, PROMPT)
        say(child, f"say {word}")
        see(child, "■ success")  # the turn ended (its answer's word is also in the echoed prompt)
    see(child, PROMPT)
    say(child, "/compact the API names")
    see(child, "compacted")
    see(child, PROMPT)
    assert "Focus the summary on: the API names" in str(sim.message_requests[-1].body["messages"][-1])
    child.setwinsize(24, 50)
    child.send(SHIFT_TAB)
    see(child, "acceptEdits")
    status = [ln for ln in shown(child).splitlines() if "acceptEdits" in ln][-1]
    assert len(status.rstrip()) <= 50, status
    assert leave(child) == 0


def test_an_idle_loop_fires_in_plain_lines_too(term):
    child, sim = term([{"text": "tick", "repeat": -1}], TERM="dumb")
    see(child, PROMPT)
    say(child, "/loop 2s look around")
    see(child, "using every 1m")
    see(child, "tick")
    see(child, PROMPT)
    say(child, "/loop stop")
    see(child, "loop over after")
    assert leave(child) == 0 and len(sim.message_requests) == 1


def test_the_status_line_shows_the_goal_and_its_last_verdict(term):
    judge = {"system_contains": "You decide whether an agent has met its goal"}
    script = {"rules": [{"match": judge, "responses": [{"text": '{"ok": false, "reason": "not yet"}'},
                                                       {"text": '{"ok": true, "reason": "it is done"}'}]},
                        {"responses": [{"text": "working on it", "repeat": -1}]}]}
    child, sim = term(script)
    see(child, PROMPT)
    say(child, "/goal the report is written")
    see(child, "not met yet")
    see(child, "MET")
    see(child, PROMPT)
    see(child, "goal met: the rep")  # the verdict first: 80 columns cut the condition
    assert leave(child) == 0


def test_the_listing_commands_and_completion_of_skills_and_files(term, tmp_path):
    (tmp_path / ".claude" / "skills" / "tidy-up").mkdir(parents=True)
    (tmp_path / ".claude" / "skills" / "tidy-up" / "SKILL.md").write_text("---\ndescription: tidy the repo\n---\nTIDY\n")
    (tmp_path / ".claude" / "agents").mkdir()
    (tmp_path / ".claude" / "agents" / "checker.md").write_text(
        "---\nname: checker\ndescription: checks the work\n---\nYou check.\n")
    (tmp_path / "notebook-of-ideas.txt").write_text("idea\n")
    (tmp_path / ".loopwright" / "workflows").mkdir(parents=True)
    (tmp_path / ".loopwright" / "workflows" / "tally-votes.py").write_text("async def main(wf, args):\n    return 1\n")
    child, sim = term([{"text": "seen"}])
    see(child, PROMPT)
    for command, answer in (("/skills", "/tidy-up: tidy the repo"), ("/agents", "checker: checks the work"),
                            ("/mcp", "no MCP servers"), ("/context", r"context: ~[\d,]+ of [\d,]+ tokens"),
                            ("/model haiku", "model: claude-haiku"), ("/permissions allow Bash(ls)",
                                                                      r"added allow rule Bash\(ls\)"),
                            ("/permissions", r"allow: .*Bash\(ls\)"), ("/rewind", "no checkpoints yet"),
                            ("/cost", "this session"), ("/nonesuch", "unknown command /nonesuch")):
        say(child, command)
        see(child, answer)
        see(child, PROMPT)
    child.send("/tid\t")
    see(child, "/tidy-up")
    child.send("\x15/tal\t")
    see(child, "ly-votes")  # a workflow's name completes too
    child.send("\x15look at @notebook\t")
    see(child, "-of-ideas.txt")  # the rest of the name, filled in
    child.send(ENTER)
    see(child, "seen")
    see(child, PROMPT)
    assert leave(child) == 0
    assert sim.message_requests[0].body["model"].startswith("claude-haiku")
    text = sim.message_requests[0].body["messages"][-1]["content"][-1]["text"]
    assert text.startswith("look at @notebook-of-ideas.txt\n\nCalled the Read tool") and "idea" in text, text


def test_always_for_a_tool_still_asks_about_a_write_outside_the_project(term, tmp_path):
    inside, outside = tmp_path / "in.txt", tmp_path.parent / f"{tmp_path.name}-outside.txt"
    child, sim = term([{"tool_use": {"name": "Write", "input": {"file_path": str(inside), "content": "a\n"}}},
                       {"tool_use": {"name": "Write", "input": {"file_path": str(outside), "content": "b\n"}}},
                       {"text": "wrote"}])
    see(child, PROMPT)
    say(child, "write both")
    see(child, r"always allow Write")
    child.send("a")
    see(child, str(outside))  # asked again: the rule does not reach outside the project
    see(child, r"always allow Write")
    child.send("n")
    see(child, "wrote")
    see(child, PROMPT)
    assert leave(child) == 0 and inside.exists() and not outside.exists()


def test_shift_tab_keeps_bypass_in_the_cycle_only_when_the_session_started_with_it(monkeypatch):
    from loopwright.agent import Agent
    from loopwright.cli.tui.status import Status
    from loopwright.permissions.rules import PermissionRules

    monkeypatch.setenv("LOOPWRIGHT_ALLOW_ROOT_BYPASS", "1")  # the test machine may run as root
    plain = Status(Agent(permissions=PermissionRules(mode="default")).open())
    assert [plain.cycle() for _ in range(4)] == ["acceptEdits", "plan", "auto", "default"]
    bypass = Status(Agent(permissions=PermissionRules(mode="bypassPermissions")).open())
    assert [bypass.cycle() for _ in range(5)] == ["default", "acceptEdits", "plan", "auto", "bypassPermissions"]
    asked_never = Status(Agent(permissions=PermissionRules(mode="dontAsk")).open())
    assert asked_never.cycle() == "default"  # a mode outside the cycle goes back to its start


def write(content):
    """A model turn that writes `content` to notes.txt."""
    return {"tool_use": {"name": "Write", "input": {"file_path": "notes.txt", "content": content}}}


def test_rewind_puts_the_files_back_to_before_a_prompt(term, tmp_path):
    child, sim = term([write("one\n"), {"text": "first done"}, write("two\n"), {"text": "second done"}],
                      args=("--permission-mode", "acceptEdits"))
    see(child, PROMPT)
    say(child, "write one")
    see(child, "first done")
    see(child, PROMPT)
    say(child, "write two")
    see(child, "second done")
    see(child, PROMPT)
    assert (tmp_path / "notes.txt").read_text() == "two\n"
    child.send(ESC)
    time.sleep(0.6)  # past prompt_toolkit's wait for a key after Esc: two presses, not one sequence
    child.send(ESC)  # Esc twice on an empty prompt: the checkpoints, as /rewind lists them
    see(child, r"2  1 file\(s\) notes.txt")
    see(child, PROMPT)
    say(child, "/rewind 2")
    see(child, "restored: ")
    see(child, PROMPT)
    assert (tmp_path / "notes.txt").read_text() == "one\n"
    say(child, "/rewind 1 both")
    see(child, "conversation rewound to before prompt 1")
    see(child, PROMPT)
    assert not (tmp_path / "notes.txt").exists()
    assert leave(child) == 0


def test_clear_gives_the_new_conversation_its_own_checkpoints(term, tmp_path):
    child, sim = term([write("one\n"), {"text": "first done"}, write("two\n"), {"text": "second done"}],
                      args=("--permission-mode", "acceptEdits"))
    see(child, PROMPT)
    say(child, "write one")
    see(child, "first done")
    see(child, PROMPT)
    say(child, "/clear")
    see(child, "new conversation")
    see(child, PROMPT)
    say(child, "write two")
    see(child, "second done")
    see(child, PROMPT)
    mark = len(shown(child))
    say(child, "/rewind")  # the new conversation's checkpoints: its one prompt, not the old one's
    see(child, r"1  1 file\(s\) notes.txt")
    see(child, PROMPT)
    assert "2  1 file" not in shown(child)[mark:]
    say(child, "/rewind 1")
    see(child, "restored: ")
    see(child, PROMPT)
    assert (tmp_path / "notes.txt").read_text() == "one\n"  # as it was before the new conversation's prompt
    assert leave(child) == 0


def test_memory_hooks_and_schedule_commands(term, tmp_path):
    (tmp_path / "CLAUDE.md").write_text("Be brief.\n")
    settings = {"hooks": {"Stop": [{"matcher": "", "hooks": [{"type": "command", "command": "true"}]}]}}
    (tmp_path / "s.json").write_text(json.dumps(settings))
    child, sim = term([{"text": "ok"}], args=("--settings", str(tmp_path / "s.json")))
    see(child, PROMPT)
    for command, answer in (("/memory", "CLAUDE.md"), ("/hooks", r"Stop \[\*\] command: true"),
                            ("/schedule --every 1h --id nightly tidy the docs", "nightly")):
        say(child, command)
        see(child, answer)
        see(child, PROMPT)
    assert leave(child) == 0


def test_custom_commands_complete_with_their_descriptions(term, tmp_path):
    from test_plugins import RALPH

    (tmp_path / ".claude" / "commands").mkdir(parents=True)
    (tmp_path / ".claude" / "commands" / "tidy-docs.md").write_text(
        "---\ndescription: tidy the docs folder\nargument-hint: FOLDER\n---\nTidy $ARGUMENTS\n")
    (tmp_path / "fakehome" / ".claude" / "commands").mkdir(parents=True)
    (tmp_path / "fakehome" / ".claude" / "commands" / "tidy-home.md").write_text("Tidy my home folder, gently.\n")
    (tmp_path / ".claude" / "skills" / "tidy-secret").mkdir(parents=True)
    (tmp_path / ".claude" / "skills" / "tidy-secret" / "SKILL.md").write_text(
        "---\ndescription: only for the model\nuser-invocable: false\n---\nX\n")
    child, sim = term([{"text": "tidied"}], args=("--plugin-dir", str(RALPH)))
    see(child, PROMPT)
    child.send("/tid\t")
    see(child, "tidy the docs folder")  # the menu: each name with its description
    see(child, "Tidy my home folder")
    assert "/tidy-docs FOLDER" in shown(child) and "tidy-secret" not in shown(child)
    child.send("\x15/r\t")
    see(child, "Keep working on a prompt")  # a plugin's command, namespaced
    assert "/ralph:ralph-loop" in shown(child) and "/rewind" in shown(child)
    child.send("\x15/tidy-d\t")
    see(child, "ocs")  # the rest of the name, filled in
    child.send(" notes" + ENTER)
    see(child, "tidied")
    see(child, PROMPT)
    assert leave(child) == 0
    assert "Tidy notes" in str(sim.message_requests[0].body["messages"][-1]["content"])


def test_a_self_paced_loop_is_paced_by_the_model_and_ends_when_it_says_so(term):
    wake = {"tool_use": {"name": "ScheduleWakeup", "input": {"delaySeconds": 90, "reason": "the build runs"}}}
    done = {"tool_use": {"name": "ScheduleWakeup", "input": {"stop": True, "reason": "all green"}}}
    child, sim = term([wake, {"text": "checked once"}, {"text": "a plain answer"}, done, {"text": "finished"}])
    see(child, PROMPT)
    say(child, "/loop check the build")
    see(child, "self-paced loop")
    see(child, "checked once")
    see(child, "next iteration at")
    see(child, PROMPT)
    see(child, r"loop \d\d:\d\d:\d\d")  # the next fire, in the status line
    say(child, "/loop")
    see(child, r"self-paced loop, 1 iteration\(s\), next at")
    see(child, PROMPT)
    say(child, "/loop stop")
    see(child, "loop over after 1 iteration")
    see(child, PROMPT)
    say(child, "just a question")
    see(child, "a plain answer")
    see(child, PROMPT)
    say(child, "/loop watch the deploy")
    see(child, "finished")
    see(child, r"loop over after 1 iteration\(s\): the model ended it")
    see(child, PROMPT)
    assert leave(child) == 0
    offered = [{t["name"] for t in r.body.get("tools", [])} for r in sim.message_requests]
    systems = [str(r.body.get("system")) for r in sim.message_requests]
    assert "ScheduleWakeup" in offered[0] and "self-paced loop" in systems[0]
    assert "ScheduleWakeup" not in offered[2] and "self-paced loop" not in systems[2]  # gone with the loop
    assert "ScheduleWakeup" in offered[3] and "check the build" in str(sim.message_requests[0].body["messages"][-1])


def test_the_status_line_shows_background_shells_and_running_subagents(term):
    from loopwright.agent import Agent
    from loopwright.cli.tui.status import Status
    from loopwright.core.events import ToolFinished, ToolStarted

    shell = {"command": "sleep 300", "run_in_background": True, "description": "a long wait"}
    child, sim = term([{"tool_use": {"name": "Bash", "input": shell}}, {"text": "started it"}],
                      args=("--allowedTools", "Bash(sleep *)"))
    see(child, PROMPT)
    say(child, "start the wait")
    see(child, "started it")
    see(child, PROMPT)
    see(child, "1 shell: a long")  # 80 columns cut the rest
    assert leave(child) == 0
    calls = [{"name": "Agent", "input": {"description": d, "prompt": f"{d.upper()}-TASK", "subagent_type": t}}
             for d, t in (("red", "general-purpose"), ("blue", "general-purpose"))]
    script = {"rules": [{"match": {"last_user_contains": "-TASK"}, "responses": [{"text": "helped", "repeat": -1}]},
                        {"responses": [{"tool_use": calls}, {"text": "both helped"}]}]}
    child, sim = term(script)
    see(child, PROMPT)
    say(child, "ask two helpers")
    see(child, "running: 1 agent: general-purpose")
    see(child, "both helped")
    assert "running: 2 agents: general-purpose, general-pu" in shown(child)  # both calls, while they run
    assert leave(child) == 0
    status = Status(Agent().open())  # subagents are counted from the Agent calls of the running turn
    status.seen(ToolStarted("t1", "Agent", {"subagent_type": "checker", "prompt": "check"}))
    status.seen(ToolStarted("t2", "Agent", {"prompt": "look"}))
    assert "2 agents: checker, general-purpose" in status.line(120)
    status.seen(ToolFinished("t1", "Agent", False, "fine"))
    assert "1 agent: general-purpose" in status.line(120) and "shell" not in status.line(120)
