"""MCP configuration as Claude Code reads it: entries checked with one error naming the file and
the key, `${VAR}` / `${VAR:-default}` expansion, the scopes and their precedence, and
`loopwright mcp add|list|get|remove` on the real files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from loopwright.core.errors import UsageError
from loopwright.mcp.config import expand, parse_servers, tool_name
from loopwright.settings.mcpfiles import load_mcp_servers

TOOLBOX = Path(__file__).parent / "mcpservers" / "toolbox.py"


def test_expansion_of_variables_with_and_without_defaults():
    missing = []
    env = {"A": "1", "EMPTY": ""}
    assert expand("${A}-${B:-two}-${EMPTY:-d}-${EMPTY}", env, missing) == "1-two-d-"
    assert expand("x${NOPE}y", env, missing) == "x${NOPE}y" and missing == ["NOPE"]


def test_an_unset_variable_is_kept_and_warned_about():
    [spec] = parse_servers({"s": {"command": "run", "args": ["--key=${KEY}"]}}, "f.json", "project", {})
    assert spec.args == ("--key=${KEY}",)
    assert spec.warnings and "KEY" in spec.warnings[0] and "f.json: mcpServers.s" in spec.warnings[0]


@pytest.mark.parametrize("entry, key, expected", [
    ({"args": ["x"]}, "mcpServers.s.command", "required"),
    ({"command": "a", "args": "x"}, "mcpServers.s.args", "list of strings"),
    ({"command": "a", "env": {"K": 1}}, "mcpServers.s.env", "string values"),
    ({"url": "http://h/mcp"}, "mcpServers.s", '"type": "http" or "sse"'),
    ({"type": "ws", "url": "ws://h"}, "mcpServers.s.type", "one of stdio, http, sse"),
    ({"type": "http", "url": "h/mcp"}, "mcpServers.s.url", "http:// or https://"),
    ({"type": "http", "url": "http://h", "command": "x"}, "mcpServers.s.command", "not a key of a http server"),
    ({"command": "a", "timeout": "5s"}, "mcpServers.s.timeout", "milliseconds"),
    ("npx thing", "mcpServers.s", "expected an object"),
])
def test_a_bad_entry_names_the_file_and_the_key(entry, key, expected):
    with pytest.raises(UsageError) as caught:
        parse_servers({"s": entry}, "/p/.mcp.json", "project", {})
    assert str(caught.value).startswith(f"/p/.mcp.json: {key}") and expected in str(caught.value)


def test_names_of_tools_and_plugin_servers():
    assert tool_name("github", "create_issue") == "mcp__github__create_issue"
    assert tool_name("plugin:demo:db", "q") == "mcp__plugin_demo_db__q"


def _write(path: Path, servers: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"mcpServers": servers}))


def test_scopes_local_over_project_over_user_and_flags_over_all(tmp_path):
    home, cwd = tmp_path / "home", tmp_path / "proj"
    cwd.mkdir()
    env = {"HOME": str(home), "LOOPWRIGHT_HOME": str(home / ".lw")}
    home.mkdir()
    (home / ".claude.json").write_text(json.dumps({
        "mcpServers": {"a": {"command": "user-a"}, "b": {"command": "user-b"}, "u": {"command": "user-u"}},
        "projects": {str(cwd): {"mcpServers": {"a": {"command": "local-a"}}}}}))
    _write(cwd / ".mcp.json", {"a": {"command": "proj-a"}, "b": {"command": "proj-b"}, "p": {"command": "proj-p"}})
    specs = {s.name: s for s in load_mcp_servers(cwd, env=env)}
    assert {n: s.command for n, s in specs.items()} == {"a": "local-a", "b": "proj-b", "u": "user-u", "p": "proj-p"}
    assert specs["a"].scope == "local" and specs["b"].scope == "project" and specs["u"].scope == "user"
    flagged = {s.name: s.command for s in load_mcp_servers(cwd, env=env, flags=['{"mcpServers": {"b": {"command": "flag-b"}}}'])}
    assert flagged["b"] == "flag-b"
    strict = load_mcp_servers(cwd, env=env, strict=True, flags=['{"mcpServers": {"z": {"command": "z"}}}'])
    assert [s.name for s in strict] == ["z"]
    untrusted = {s.name for s in load_mcp_servers(cwd, env=env, project=False)}
    assert untrusted == {"a", "b", "u"}  # the project's own servers stay off; yours stay
    assert "p" not in {s.name for s in load_mcp_servers(cwd, env=env, disabled=("p",))}


def test_a_flag_naming_a_missing_file_is_refused(tmp_path):
    with pytest.raises(UsageError, match="--mcp-config: expected a JSON file or inline JSON; no file"):
        load_mcp_servers(tmp_path, env={"HOME": str(tmp_path)}, flags=["nope.json"])


def _mcp(args, cwd, home):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOOPWRIGHT_", "MCP_"))}
    env.update(HOME=str(home), LOOPWRIGHT_HOME=str(home / ".lw"))
    return subprocess.run([sys.executable, "-m", "loopwright", "mcp", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=90)


def test_mcp_add_list_get_remove(tmp_path):
    home, cwd = tmp_path / "home", tmp_path / "proj"
    home.mkdir()
    cwd.mkdir()
    out = _mcp(["add", "tb", "--", sys.executable, str(TOOLBOX)], cwd, home)
    assert out.returncode == 0, out.stderr
    local = json.loads((home / ".claude.json").read_text())["projects"][str(cwd)]["mcpServers"]
    assert local == {"tb": {"type": "stdio", "command": sys.executable, "args": [str(TOOLBOX)]}}
    assert oct((home / ".claude.json").stat().st_mode & 0o777) == "0o600"
    out = _mcp(["add", "-s", "project", "-t", "http", "web", "http://127.0.0.1:9/mcp", "-H", "X-Key: ${KEY:-k}"],
               cwd, home)
    assert out.returncode == 0, out.stderr
    assert json.loads((cwd / ".mcp.json").read_text())["mcpServers"]["web"]["headers"] == {"X-Key": "${KEY:-k}"}
    listed = _mcp(["list", "--json"], cwd, home)
    assert listed.returncode == 1  # one server is down
    by_name = {e["name"]: e for e in json.loads(listed.stdout)}
    assert by_name["tb"]["status"] == "connected" and "mcp__tb__add" in by_name["tb"]["tools"]
    assert by_name["web"]["status"] == "failed" and by_name["web"]["scope"] == "project"
    got = _mcp(["get", "tb"], cwd, home)
    assert got.returncode == 0 and "mcp__tb__echo" in got.stdout
    again = _mcp(["add", "tb", "other"], cwd, home)
    assert again.returncode == 2 and "already defined" in again.stderr
    assert _mcp(["remove", "web"], cwd, home).returncode == 0
    assert "web" not in json.loads((cwd / ".mcp.json").read_text())["mcpServers"]
    missing = _mcp(["remove", "web"], cwd, home)
    assert missing.returncode == 2 and "no MCP server named 'web'" in missing.stderr
    bad = _mcp(["add", "-t", "sse", "old", "ftp://x"], cwd, home)
    assert bad.returncode == 2 and "http:// or https://" in bad.stderr
