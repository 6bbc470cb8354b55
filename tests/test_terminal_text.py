"""What reaches a terminal is shown, never obeyed: escape and control sequences from the model,
tools and hooks come out visible (`^[`) in text output, `--verbose`, the interactive prompt,
scheduler output and listings, while JSON outputs keep the exact text. Real processes against
the loopback simulator (and a real pseudo-terminal for the interactive prompt)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from loopwright.compose.render import visible
from loopwright.testing import Simulator

OSC52 = "\x1b]52;c;ZWNobyBwd25lZA==\x07"  # write to the clipboard
ERASE = "\x1b[2K\r"  # erase the line, back to its start
HOSTILE = f"fine{OSC52} then{ERASE}overwritten \x9b31m c1 \u202eevil"


@pytest.mark.parametrize(("raw", "shown"), [
    ("\x1b[31mred\x1b[0m", "^[[31mred^[[0m"),
    (OSC52, "^[]52;c;ZWNobyBwd25lZA==^G"),
    ("a\rb", "a^Mb"),
    ("line\r\nnext\ttab", "line\r\nnext\ttab"),
    ("\x00\x08\x7f", "^@^H^?"),
    ("\x9b2J \x85", "M-^[2J M-^E"),
    ("abc\u202edcba\u2066x\u2069", "abc<U+202E>dcba<U+2066>x<U+2069>"),
    ("plain text, üñíçødé, 漢字 and emoji 🙂", "plain text, üñíçødé, 漢字 and emoji 🙂"),
])
def test_visible_shows_controls_and_keeps_text(raw, shown):
    assert visible(raw) == shown


def no_raw_controls(text):
    return not any(c in text for c in ("\x1b", "\x07", "\x9b", "\u202e")) and "\r" not in text.replace("\r\n", "")


def cli(args, tmp_path, sim=None, cwd=None, **kw):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "LOOPWRIGHT_"))}
    env.update(ANTHROPIC_API_KEY="sk-test", LOOPWRIGHT_HOME=str(tmp_path / "home"), HOME=str(tmp_path / "fakehome"))
    if sim is not None:
        env["ANTHROPIC_BASE_URL"] = sim.base_url
    return subprocess.run([sys.executable, "-m", "loopwright", *args], cwd=cwd or tmp_path, env=env,
                          capture_output=True, text=True, timeout=90, **kw)


def test_text_output_and_verbose_show_escapes_json_keeps_them(tmp_path):
    hook = {"hooks": {"PostToolUse": [{"hooks": [{"type": "command", "command":
            "printf '{\"systemMessage\": \"hook says \\\\u001b]0;title\\\\u0007 hi\"}'"}]}]}}
    script = [{"tool_use": {"name": "Bash", "input": {"command": "printf 'tool \\033[2K\\033[1A out\\n'"}}},
              {"text": HOSTILE}]
    with Simulator(script) as sim:
        text = cli(["-p", "go", "--verbose", "--allowedTools", "Bash", "--settings", json.dumps(hook)], tmp_path, sim)
    assert text.returncode == 0, text.stderr
    assert no_raw_controls(text.stdout) and no_raw_controls(text.stderr)
    assert "fine^[]52;c;" in text.stdout and "then^[[2K^Moverwritten" in text.stdout and "M-^[31m" in text.stdout
    assert "tool ^[[2K^[[1A out" in text.stderr and "hook says ^[]0;title^G hi" in text.stderr
    with Simulator([{"text": HOSTILE, "repeat": -1}]) as sim:
        as_json = cli(["-p", "go", "--output-format", "json"], tmp_path, sim)
        streamed = cli(["-p", "go", "--output-format", "stream-json", "--verbose"], tmp_path, sim)
    assert json.loads(as_json.stdout)["result"] == HOSTILE
    last = json.loads(streamed.stdout.splitlines()[-1])
    assert last["type"] == "result" and last["result"] == HOSTILE


def test_structured_output_in_text_mode_is_shown_safely(tmp_path):
    schema = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}
    script = [{"tool_use": {"name": "StructuredOutput", "input": {"a": "x\x9b2Jy"}}}, {"text": "done"}]
    with Simulator(script) as sim:
        out = cli(["-p", "go", "--json-schema", json.dumps(schema)], tmp_path, sim)
    assert out.returncode == 0, out.stderr
    assert "x\x9b2Jy" not in out.stdout and "xM-^[2Jy" in out.stdout


def test_scheduler_output_and_listings_show_escapes(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    with Simulator([{"text": HOSTILE, "repeat": -1}]) as sim:
        added = cli(["schedule", "add", f"report {OSC52}", "--every", "1d", "--now", "--id", "esc"], tmp_path, cwd=project)
        assert added.returncode == 0, added.stderr
        served = cli(["scheduler", "--once"], tmp_path, sim)
    listed, runs = cli(["schedule", "list"], tmp_path), cli(["schedule", "runs"], tmp_path)
    for out in (served, listed, runs):
        assert out.returncode == 0 and no_raw_controls(out.stdout), out
    assert "report ^[]52;c;" in listed.stdout and "fine^[]52;c;" in runs.stdout and "fine^[]52;c;" in served.stdout
    assert json.loads(cli(["schedule", "runs", "--json"], tmp_path).stdout)[0]["note"] == HOSTILE
    assert json.loads(cli(["schedule", "list", "--json"], tmp_path).stdout)[0]["prompt"] == f"report {OSC52}"


def test_goal_status_and_session_warnings_show_escapes(tmp_path):
    judge = {"system_contains": "You decide whether an agent has met its goal"}
    script = {"rules": [{"match": judge, "responses": [{"text": '{"ok": false, "reason": "not \\u001b[2K yet"}',
                                                        "repeat": -1}]},
                        {"responses": [{"text": "done?", "repeat": -1}]}]}
    with Simulator(script) as sim:
        out = cli(["-p", "--goal", f"make it {OSC52} so", "--goal-max-turns", "2", "--allowedTools", "Bash",
                   "--output-format", "json"], tmp_path, sim)
    sid = json.loads(out.stdout)["session_id"]
    status = cli(["goal", "status", "--session", sid], tmp_path)
    assert status.returncode == 0 and no_raw_controls(status.stdout), status
    assert "make it ^[]52;c;" in status.stdout and "not ^[[2K yet" in status.stdout


def test_the_interactive_prompt_shows_escapes(tmp_path):
    from test_interactive import Terminal

    with Simulator([{"text": f"answer {OSC52} done"}]) as sim:
        t = Terminal(tmp_path, sim)
        try:
            t.expect("› ").send("hello").expect("answer ^[]52;c;ZWNobyBwd25lZA==^G done").expect("› ").send("/exit")
            assert t.close() == 0
        finally:
            t.proc.kill()
    assert "\x1b]52" not in t.seen and "\x07" not in t.seen


def test_the_sessions_listing_and_the_trust_listing_show_escapes(tmp_path):
    """A first prompt (a schedule's, perhaps one the model made) and a folder name are shown, not obeyed."""
    folder = tmp_path / f"repo{ERASE.strip()}x"
    folder.mkdir()
    with Simulator([{"text": "ok"}]) as sim:
        assert cli(["-p", f"report {OSC52} now"], tmp_path, sim, cwd=folder).returncode == 0
    assert cli(["trust", str(folder)], tmp_path).returncode == 0
    listed, trusted = cli(["sessions"], tmp_path, cwd=folder), cli(["trust", "--list"], tmp_path)
    for out in (listed, trusted):
        assert out.returncode == 0 and no_raw_controls(out.stdout), out
    assert "report ^[]52;c;" in listed.stdout and "repo\\x1b[2Kx" in trusted.stdout  # paths: printable()
    assert json.loads(cli(["sessions", "--json"], tmp_path, cwd=folder).stdout)[0]["first_prompt"] == \
        f"report {OSC52} now"
