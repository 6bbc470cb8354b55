"""What the official Agent SDK receives from the CLI it starts, reduced to shapes: for each
scenario, the kinds of stdout lines in order (`type/subtype`) and the keys of each kind. The
expectation in `fixtures/sdk_shapes.json` was recorded from the CLI bundled with the SDK, run
offline against the simulator (`python tests/sdkshapes.py record`); `test_sdk_shapes.py` runs
the same scenarios against loopwright, so a protocol change shows up as a failing test."""

from __future__ import annotations

import json
import stat
import sys
import tempfile
from pathlib import Path

import anyio

HERE = Path(__file__).resolve().parent
FIXTURE = HERE / "fixtures" / "sdk_shapes.json"
SRC = HERE.parent / "src"
BASH = {"name": "Bash", "input": {"command": "echo shaped", "description": "Print a word"}}
TOUCH = {"name": "Bash", "input": {"command": "touch made.txt", "description": "Make a file"}}
SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}

# scenario: (prompt, simulator script, ClaudeAgentOptions fields, whether to answer can_use_tool)
SCENARIOS = {
    "text": ("Say hi", [{"text": "Hi."}], {}, False),
    "tool": ("Run it", [{"tool_use": BASH}, {"text": "Ran."}], {"allowed_tools": ["Bash"]}, False),
    "ask": ("Make it", [{"tool_use": TOUCH}, {"text": "Made."}], {}, True),
    "partial": ("Stream", [{"text": "In pieces."}], {"include_partial_messages": True}, False),
    "max_turns": ("Loop", [{"tool_use": BASH, "repeat": -1}], {"allowed_tools": ["Bash"], "max_turns": 1}, False),
    "structured": ("Count", [{"tool_use": {"name": "StructuredOutput", "input": {"n": 3}}}, {"text": "done"}],
                   {"output_format": {"type": "json_schema", "schema": SCHEMA}}, False),
}


def kind(line: dict) -> str:
    if line.get("type") in ("control_request", "control_response"):
        inner = line.get("request") or line.get("response") or {}
        return f"{line['type']}/{inner.get('subtype')}"
    if line.get("type") == "stream_event":
        return f"stream_event/{line.get('event', {}).get('type')}"
    return f"{line.get('type')}/{line.get('subtype', '')}".rstrip("/")


def keys(line: dict) -> set[str]:
    out = set(line)
    for inner in ("message", "request", "response"):
        if isinstance(line.get(inner), dict):
            out |= {f"{inner}.{k}" for k in line[inner]}
    return out


def shapes(lines: list[dict]) -> dict:
    order, fields = [], {}
    for line in lines:
        k = kind(line)
        if not order or order[-1] != k:
            order.append(k)
        fields.setdefault(k, set()).update(keys(line))
    return {"order": order, "keys": {k: sorted(v) for k, v in fields.items()}}


def tee_cli(real: list[str], log: Path, folder: Path) -> Path:
    """A CLI for the SDK that is `real` with its stdout copied, line by line, to `log`."""
    cli = folder / "cli"
    argv = " ".join(f'"{a}"' for a in real)
    cli.write_text(f'#!/bin/sh\nexec {argv} "$@" | tee "{log}"\n')
    cli.chmod(cli.stat().st_mode | stat.S_IXUSR)
    return cli


def run(name: str, real: list[str], env: dict[str, str]) -> dict:
    from claude_agent_sdk import ClaudeAgentOptions, PermissionResultAllow, query

    from loopwright.testing import Simulator

    prompt, script, fields, ask = SCENARIOS[name]
    with tempfile.TemporaryDirectory() as tmp, Simulator(script) as sim:
        folder = Path(tmp)
        (folder / "work").mkdir()
        (folder / "home").mkdir()
        log = folder / "stdout.jsonl"
        extra = {}
        if ask:
            async def allow(tool, tool_input, context):
                return PermissionResultAllow()
            extra["can_use_tool"] = allow
        opts = ClaudeAgentOptions(cli_path=str(tee_cli(real, log, folder)), cwd=str(folder / "work"),
                                  env=env | {"ANTHROPIC_BASE_URL": sim.base_url, "HOME": str(folder / "home"),
                                             "LOOPWRIGHT_HOME": str(folder / "home" / ".lw")},
                                  **fields, **extra)

        async def go():
            try:
                if ask:  # can_use_tool needs the streaming form of the prompt
                    async def prompts():
                        yield {"type": "user", "message": {"role": "user", "content": prompt}}
                    return [m async for m in query(prompt=prompts(), options=opts)]
                return [m async for m in query(prompt=prompt, options=opts)]
            except Exception as exc:  # noqa: BLE001 - max_turns ends in the SDK's error, by design
                return exc

        anyio.run(go)
        lines = [json.loads(x) for x in log.read_text().splitlines() if x.strip()]
    return shapes(lines)


ENV = {"ANTHROPIC_API_KEY": "sk-test", "ANTHROPIC_MODEL": "", "CLAUDE_CODE_STREAM_CLOSE_TIMEOUT": "",
       "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1"}


def loopwright_cli() -> list[str]:
    return ["env", f"PYTHONPATH={SRC}", sys.executable, "-m", "loopwright"]


def bundled_cli() -> list[str]:
    import claude_agent_sdk

    return [str(Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude")]


def record() -> None:
    import claude_agent_sdk

    got = {name: run(name, bundled_cli(), ENV) for name in SCENARIOS}
    version = (Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude.version").read_text().strip()
    FIXTURE.write_text(json.dumps({"recorded_from": version, "sdk": claude_agent_sdk.__version__,
                                   "scenarios": got}, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    sys.path.insert(0, str(SRC))
    if sys.argv[1:] == ["record"]:
        record()
    else:
        which = bundled_cli() if sys.argv[1:] == ["bundled"] else loopwright_cli()
        print(json.dumps({n: run(n, which, ENV) for n in SCENARIOS}, indent=1))
