"""MCP servers that misbehave (tests/mcpservers/hostile.py), driven through the real `loopwright`
command with the loopback simulator as the model: never stuck, never silent. A handshake that
never ends is cut and the server group killed; a call that never ends is bounded; SIGTERM leaves
no server behind; names are unique and valid on the wire and a call reaches the tool it names;
what a server returns is checked before the model sees it."""

from __future__ import annotations

import base64
import json
import os
import re
import signal
import sys
from pathlib import Path

import pytest

from loopwright.testing import Simulator
from procs import gone
from test_mcp import _popen, _wait_for, call, cli, lines, text_of, tool_results

pytest.importorskip("mcp")

HOSTILE = Path(__file__).parent / "mcpservers" / "hostile.py"
WIRE_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def hostile(mode, name="h", **extra):
    return json.dumps({"mcpServers": {name: {"command": sys.executable, "args": [str(HOSTILE), mode], **extra}}})


@pytest.fixture
def dirs(tmp_path):
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    return home, project


def server_pids(path: Path) -> list[int]:
    _wait_for(lambda: path.exists() and len(path.read_text().split()) == 2)
    return [int(p) for p in path.read_text().split()]


def test_a_server_that_never_finishes_its_handshake_is_stopped_and_the_run_prints_its_result(dirs, tmp_path):
    home, project = dirs
    pids = tmp_path / "pids"
    with Simulator([{"text": "finished anyway"}]) as sim:
        out = cli(["-p", "go", "--output-format", "stream-json", "--verbose", "--mcp-config", hostile("hang-init")],
                  project, home, sim.base_url, env={"MCP_TIMEOUT": "1500", "HOSTILE_PIDS": str(pids)}, timeout=60)
    assert out.returncode == 0, out.stderr
    frames = lines(out)
    [status] = frames[0]["mcp_servers"]
    assert status["status"] == "failed" and "handshake within 1.5 s (MCP_TIMEOUT)" in status["error"]
    assert "stopped" in status["error"]
    assert frames[-1]["type"] == "result" and frames[-1]["result"] == "finished anyway"
    server, child = server_pids(pids)
    assert gone(server) and gone(child)  # the server and the process it started: the whole group


def test_a_hung_call_is_bounded_and_its_error_names_the_bound(dirs, tmp_path):
    home, project = dirs
    script = [call("mcp__h__wait"), {"text": "moved on"}]
    with Simulator(script) as sim:
        out = cli(["-p", "go", "--output-format", "json", "--allowedTools", "mcp__h",
                   "--mcp-config", hostile("hang-call")], project, home, sim.base_url,
                  env={"MCP_TOOL_TIMEOUT": "1200", "HOSTILE_PIDS": str(tmp_path / "pids")}, timeout=60)
        reqs = sim.message_requests
    [late] = tool_results(reqs[1])
    assert late["is_error"] is True and "timed out after 1.2 s (MCP_TOOL_TIMEOUT)" in text_of(late)
    assert json.loads(out.stdout)["result"] == "moved on"


def test_without_a_timeout_variable_a_call_still_has_claude_codes_default_bound(monkeypatch):
    from loopwright.mcp.config import ServerSpec
    from loopwright.mcp.servers import tool_timeout

    monkeypatch.delenv("MCP_TOOL_TIMEOUT", raising=False)
    assert tool_timeout(ServerSpec("s", "stdio", command="x")) == (100_000.0, "the default; MCP_TOOL_TIMEOUT (ms) sets it")
    assert tool_timeout(ServerSpec("s", "stdio", command="x", timeout_s=2.5))[0] == 2.5


def test_sigterm_mid_call_stops_every_servers_whole_group(dirs, tmp_path):
    """One server is mid-call with no bound set, another never finished its handshake: after
    SIGTERM loopwright ends with its result and neither server, nor what they started, is left."""
    home, project = dirs
    log, calling, stuck = tmp_path / "calls.log", tmp_path / "calling.pids", tmp_path / "stuck.pids"
    config = {"mcpServers": {
        "h": {"command": sys.executable, "args": [str(HOSTILE), "hang-call"], "env": {"HOSTILE_PIDS": str(calling)}},
        "s": {"command": sys.executable, "args": [str(HOSTILE), "hang-init"], "env": {"HOSTILE_PIDS": str(stuck)}}}}
    with Simulator([call("mcp__h__wait"), {"text": "never"}]) as sim:
        proc = _popen(["-p", "go", "--output-format", "json", "--allowedTools", "mcp__h", "--mcp-config",
                       json.dumps(config)], project, home, sim.base_url, {"HOSTILE_LOG": str(log), "MCP_TIMEOUT": "6000"})
        _wait_for(lambda: log.exists() and "wait" in log.read_text())  # the call is running, no bound set
        pids = server_pids(calling) + server_pids(stuck)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    assert json.loads(out)["terminal_reason"] == "aborted", err
    assert all(gone(pid) for pid in pids)


def test_colliding_and_overlong_names_are_unique_valid_and_each_call_reaches_its_own_tool(dirs, tmp_path):
    home, project = dirs
    log = tmp_path / "calls.log"
    with Simulator([{"text": "listed"}]) as sim:
        out = cli(["-p", "go", "--output-format", "stream-json", "--verbose", "--mcp-config", hostile("collide")],
                  project, home, sim.base_url)
        offered = [t["name"] for t in sim.message_requests[0].body["tools"] if t["name"].startswith("mcp__")]
    init = lines(out)[0]
    assert len(offered) == 3 and len(set(offered)) == 3 and all(WIRE_NAME.fullmatch(n) for n in offered)
    renamed = init["mcp_servers"][0]["renamed_tools"]
    assert sorted(renamed.values()) == sorted(["rm/rf", "rm.rf", "very_" * 17 + "long_name"])
    assert set(renamed) == set(offered) and set(offered) <= set(init["tools"])
    by_original = {v: k for k, v in renamed.items()}
    script = [call(by_original["rm.rf"]), call(by_original["rm/rf"]), {"text": "done"}]
    with Simulator(script) as sim:
        again = cli(["-p", "go", "--output-format", "stream-json", "--verbose", "--allowedTools", "mcp__h",
                     "--mcp-config", hostile("collide")], project, home, sim.base_url, env={"HOSTILE_LOG": str(log)})
        reqs = sim.message_requests
    assert lines(again)[0]["mcp_servers"][0]["renamed_tools"] == renamed  # stable from run to run
    assert log.read_text().splitlines() == ["rm.rf", "rm/rf"]
    assert "harmless" in text_of(tool_results(reqs[1])[0]) and "DESTRUCTIVE" in text_of(tool_results(reqs[2])[0])


def test_mcp_list_shows_which_name_is_which_tool(dirs):
    home, project = dirs
    (project / ".mcp.json").write_text(hostile("collide"))
    out = cli(["mcp", "list"], project, home, "http://127.0.0.1:9")
    assert out.returncode == 0, out.stderr
    assert "'rm/rf'" in out.stdout and "'rm.rf'" in out.stdout and "long_name'" in out.stdout
    shown = re.findall(r"(mcp__h__\S+) is the server's tool", out.stdout)
    assert len(shown) == 3 and all(WIRE_NAME.fullmatch(n) for n in shown)


def test_images_the_api_would_refuse_become_a_short_text(dirs):
    home, project = dirs
    with Simulator([call("mcp__h__pics"), {"text": "seen"}]) as sim:
        out = cli(["-p", "go", "--output-format", "json", "--allowedTools", "mcp__h",
                   "--mcp-config", hostile("bad-images")], project, home, sim.base_url)
        [result] = tool_results(sim.message_requests[1])
    assert out.returncode == 0, out.stderr
    blocks = result["content"]
    images = [b for b in blocks if b["type"] == "image"]
    assert len(images) == 1 and images[0]["source"]["media_type"] == "image/png"
    assert base64.b64decode(images[0]["source"]["data"]).startswith(b"\x89PNG")
    notes = [b["text"] for b in blocks if b["type"] == "text"]
    assert len(notes) == 4 and all(n.startswith("[an image was dropped:") and len(n) < 300 for n in notes)
    assert "'text/html'" in notes[0] and "over the 5,242,880" in notes[1]
    assert "not a PNG image" in notes[2] and "not valid base64" in notes[3]


def test_a_flood_of_text_beside_an_image_is_capped_as_a_whole(dirs):
    home, project = dirs
    with Simulator([call("mcp__h__flood"), {"text": "ok"}]) as sim:
        out = cli(["-p", "go", "--output-format", "json", "--allowedTools", "mcp__h",
                   "--mcp-config", hostile("flood")], project, home, sim.base_url)
        [result] = tool_results(sim.message_requests[1])
    assert out.returncode == 0, out.stderr
    text = "".join(b.get("text", "") for b in result["content"])
    assert len(text) < 101_000 and "output truncated" in text and "6,000,000" in text
    assert [b["type"] for b in result["content"]].count("image") == 1


def test_a_schema_the_api_would_refuse_is_replaced_and_said(dirs):
    home, project = dirs
    with Simulator([{"text": "ok"}]) as sim:
        out = cli(["-p", "go", "--mcp-config", hostile("lies")], project, home, sim.base_url)
        tools = {t["name"]: t for t in sim.message_requests[0].body["tools"]}
    assert out.returncode == 0, out.stderr
    bloated = tools["mcp__h__bloated"]
    assert bloated["input_schema"] == {"type": "object", "properties": {}}
    assert "unusable (it is 3" in bloated["description"] and "over 100,000" in bloated["description"]
    assert tools["mcp__h__fine"]["input_schema"] == {"type": "object", "properties": {}}
