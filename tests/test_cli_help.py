"""The help and shell completion of the real `loopwright` command: the commands first and
grouped, every flag and argument explained, every command with a help of its own, the Agent
SDK's flags accepted but out of sight (and in docs/cli.md), and completion scripts for bash, zsh
and fish that complete commands, flags and flag values when the shells themselves run them."""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from loopwright.cli.commands import command_parser
from loopwright.cli.options import parser as main_parser
from loopwright.cli.parsing import COMMANDS

CLI = [sys.executable, "-m", "loopwright"]
DOCS = Path(__file__).resolve().parents[1] / "docs" / "cli.md"
HIDDEN = ("--permission-prompt-tool", "--setting-sources", "--thinking", "--thinking-display",
          "--max-thinking-tokens", "--effort", "--betas", "--task-budget", "--resume-session-at",
          "--resume-drops-turn", "--session-mirror", "--replay-user-messages")


def run(args, cwd=None, **kwargs):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "LOOPWRIGHT_"))}
    return subprocess.run(CLI + args, capture_output=True, text=True, timeout=60, cwd=cwd, env=env, **kwargs)


def parsers():
    """(command path, its parser) for the main command and every subcommand, nested ones too."""
    found = [("", main_parser())]

    def walk(path, p):
        found.append((path, p))
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(f"{path} {name}", sub)

    for _, group in COMMANDS:
        for name, _, _ in group:
            walk(name, command_parser(name))
    return found


COMMAND_PATHS = [path for path, _ in parsers() if path]


def test_the_main_help_lists_the_commands_first_in_groups():
    out = run(["--help"])
    assert out.returncode == 0, out.stderr
    text = out.stdout
    commands = text.index("Commands (each takes --help):")
    assert commands < text.index("-p, --print")  # before any flag
    block = text[commands:text.index("\n\n", commands)].splitlines()
    headings = [line.strip() for line in block if line.startswith("  ") and not line.startswith("    ")]
    assert headings == ["Run", "Loops", "Sessions", "Service", "Setup"]
    named = {line.split()[0] for line in block if line.startswith("    ")}
    assert named == {name for _, group in COMMANDS for name, _, _ in group}
    assert {"schedule", "session", "completion", "worker", "trust"} <= named
    for group in ("prompt and output:", "model:", "limits:", "tools and permissions:", "context and settings:",
                  "sessions:", "goal loops:", "other:"):
        assert f"\n{group}\n" in text, group
    assert len(text.splitlines()) < 214  # the old help, a flat list ending in a paragraph of commands


def test_the_main_help_hides_the_sdk_flags_and_promises_nothing_it_ignores():
    out = run(["--help"])
    assert out.returncode == 0
    for flag in HIDDEN:
        assert flag not in out.stdout, flag
    assert "not supported" not in out.stdout and "ignored" not in out.stdout
    assert "docs/cli.md" in out.stdout


def test_hidden_flags_are_still_accepted(tmp_path):
    # the parser takes all of them; the one that cannot be honoured is refused by name afterwards
    out = run(["-p", "hi", "--thinking", "adaptive", "--effort", "high", "--betas", "x", "--task-budget", "5",
               "--setting-sources", "user,project", "--resume-session-at", "m1"], cwd=tmp_path)
    assert out.returncode == 2
    assert "--resume-session-at is not supported by loopwright" in out.stderr
    assert "unrecognized" not in out.stderr


def test_every_flag_of_the_main_command_is_in_docs_cli():
    docs = DOCS.read_text()
    for action in main_parser()._actions:
        for flag in action.option_strings:
            assert f"`{flag}" in docs, flag


@pytest.mark.parametrize("path,p", parsers(), ids=lambda v: v if isinstance(v, str) else "")
def test_every_argument_and_subcommand_has_a_help_line(path, p):
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help for a in action._choices_actions}
            assert all(helps.get(name) for name in action.choices), (path, helps)
        elif action.help == argparse.SUPPRESS:
            assert path == "" and set(action.option_strings) <= set(HIDDEN), (path, action.option_strings)
        else:
            assert action.help, (path, action.option_strings or action.dest)


@pytest.mark.parametrize("path", COMMAND_PATHS)
def test_every_command_has_a_help_of_its_own(path):
    out = run([*path.split(), "--help"])
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"usage: loopwright {path}"), out.stdout[:200]
    assert "Commands (each takes --help)" not in out.stdout  # not the main help


def test_session_alone_is_still_a_prompt_and_its_slip_is_named(tmp_path):
    out = run(["session", "list"], cwd=tmp_path)
    assert out.returncode == 2 and "loopwright sessions" in out.stderr


def test_completion_refuses_an_unknown_shell():
    out = run(["completion", "tcsh"])
    assert out.returncode == 2
    assert "invalid choice: 'tcsh'" in out.stderr and "'bash', 'zsh', 'fish'" in out.stderr


# ------------------------------------------------------------------ the shells themselves

CASES = [  # words typed (the last one being completed) -> what must be offered, what must not
    (["sch"], {"schedule", "scheduler"}, set()),
    (["schedule", "a"], {"add"}, set()),
    (["schedule", "add", "--ev"], {"--every"}, set()),
    (["--output-format", "s"], {"stream-json"}, {"--output-format"}),
    (["--model", "sonnet", "--max-t"], {"--max-turns", "--max-tokens-total"}, set()),
    (["goal", "status", "--se"], {"--session"}, set()),
    (["session", "e"], {"export"}, set()),
    (["workflow", "run", "fix", "--mod"], {"--model"}, set()),
    (["completion", ""], {"bash", "zsh", "fish"}, set()),
    (["mcp", "add", "-t", ""], {"stdio", "http", "sse"}, set()),
    (["--th"], set(), {"--thinking"}),  # hidden flags are not offered
    (["-p", "sch"], set(), {"schedule"}),  # a subcommand only ever comes first
]


@pytest.fixture(scope="module")
def scripts(tmp_path_factory):
    folder = tmp_path_factory.mktemp("completion")
    for shell in ("bash", "zsh", "fish"):
        out = run(["completion", shell])
        assert out.returncode == 0, out.stderr
        (folder / f"loopwright.{shell}").write_text(out.stdout)
    return folder


def _quoted(words):
    return " ".join("'" + w.replace("'", "'\\''") + "'" for w in words)


@pytest.mark.parametrize("typed,offered,not_offered", CASES)
def test_bash_completes_commands_flags_and_values(scripts, tmp_path, typed, offered, not_offered):
    program = (f"source {scripts / 'loopwright.bash'}\n"
               f"COMP_WORDS=(loopwright {_quoted(typed)}); COMP_CWORD={len(typed)}; COMPREPLY=()\n"
               "_loopwright\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n")
    out = subprocess.run(["bash", "--norc", "--noprofile", "-c", program], capture_output=True, text=True,
                         timeout=30, cwd=tmp_path)
    assert out.returncode == 0 and out.stderr == "", out.stderr
    got = set(out.stdout.split())
    assert offered <= got and not (not_offered & got), (typed, got)


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed")
@pytest.mark.parametrize("typed,offered,not_offered", CASES)
def test_zsh_script_parses_and_completes(scripts, tmp_path, typed, offered, not_offered):
    script = scripts / "loopwright.zsh"
    assert subprocess.run(["zsh", "-n", str(script)], capture_output=True, timeout=30).returncode == 0
    # the completion system's own functions stand in as printers: the walk and the offers are the script's
    program = ("compdef() { :; }\n"
               "_describe() { local entry; for entry in \"${(@P)4}\"; do print -r -- \"${entry%%:*}\"; done; }\n"
               "compadd() { print -rl -- \"${(@P)2}\"; }\n_files() { :; }\n"
               f"source {script}\nwords=(loopwright {_quoted(typed)}); CURRENT={len(typed) + 1}\n"
               f"PREFIX={_quoted(typed[-1:])}\n_loopwright\n")
    out = subprocess.run(["zsh", "-f", "-c", program], capture_output=True, text=True, timeout=30, cwd=tmp_path)
    assert out.stderr == "", out.stderr
    got = set(out.stdout.split())
    assert offered <= got and not (not_offered & got), (typed, got)


@pytest.mark.skipif(shutil.which("fish") is None, reason="fish is not installed")
@pytest.mark.parametrize("typed,offered,not_offered", CASES)
def test_fish_script_parses_and_completes(scripts, tmp_path, typed, offered, not_offered):
    script = scripts / "loopwright.fish"
    assert subprocess.run(["fish", "-n", str(script)], capture_output=True, timeout=30).returncode == 0
    line = " ".join(["loopwright", *typed])
    program = f"source {script}; complete -C {_quoted([line])}"
    out = subprocess.run(["fish", "--no-config", "-c", program], capture_output=True, text=True, timeout=30,
                         cwd=tmp_path, env={**os.environ, "HOME": str(tmp_path)})
    assert out.stderr == "", out.stderr
    got = {entry.split("\t")[0] for entry in out.stdout.splitlines()}
    assert offered <= got and not (not_offered & got), (typed, got)
