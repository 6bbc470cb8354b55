"""The flags the official Agent SDK (`claude-agent-sdk`) puts on the command line that loopwright
has no other use for: accepted, honoured where loopwright can, else said in one stderr line;
refused only where ignoring one would run something other than what was asked."""

from __future__ import annotations

import json
import sys
from typing import Any

from ...compose.settingfiles import reads_setting_files, setting_sources
from ...core.errors import UsageError

Options = Any  # cli.options.Options (which imports this module)



def add_sdk_flags(p: Any) -> None:
    """Accepted, and left out of `--help` and shell completion: the SDK writes them, a person has no
    use for them (docs/cli.md describes each)."""
    from argparse import SUPPRESS

    add = p.add_argument
    add("--permission-prompt-tool", help=SUPPRESS)  # stdio: ask can_use_tool over the control channel
    add("--setting-sources", help=SUPPRESS)  # user,project,local: which settings files to read
    add("--thinking", choices=["adaptive", "enabled", "disabled"], help=SUPPRESS)  # not supported yet: ignored
    add("--thinking-display", help=SUPPRESS)  # likewise the next five
    add("--max-thinking-tokens", type=int, help=SUPPRESS)
    add("--effort", help=SUPPRESS)
    add("--betas", help=SUPPRESS)
    add("--task-budget", type=int, help=SUPPRESS)
    add("--resume-session-at", help=SUPPRESS)  # refused: see check_sdk_flags
    add("--resume-drops-turn", help=SUPPRESS)
    add("--session-mirror", action="store_true", help=SUPPRESS)  # ignored: no transcript_mirror lines
    add("--replay-user-messages", action="store_true", help=SUPPRESS)  # echo each user prompt with its uuid


def check_sdk_flags(opts: Options) -> None:
    """Refuse what cannot be honoured safely; say once on stderr what is accepted but ignored."""
    for flag, value in (("--resume-session-at", opts.resume_session_at), ("--resume-drops-turn", opts.resume_drops_turn)):
        if value is not None:
            raise UsageError(f"{flag} is not supported by loopwright: resuming the whole session instead would "
                             "give the model a conversation other than the one asked for")
    tool = opts.permission_prompt_tool
    if tool == "stdio" and opts.input_format != "stream-json":
        raise UsageError("--permission-prompt-tool stdio asks over the stream-json control channel: use it with "
                         "--input-format stream-json --output-format stream-json")
    ignored = [flag for flag, given in (
        ("--thinking", opts.thinking), ("--thinking-display", opts.thinking_display),
        ("--max-thinking-tokens", opts.max_thinking_tokens is not None), ("--effort", opts.effort),
        ("--betas", opts.betas), ("--task-budget", opts.task_budget is not None),
        ("--session-mirror", opts.session_mirror)) if given]
    if ignored:
        warn(f"{', '.join(ignored)}: not supported by loopwright yet; ignored")
    if tool is not None and tool != "stdio":
        warn(f"--permission-prompt-tool {tool}: only stdio is supported; a call the rules would ask about is denied")
    sources = setting_sources(opts)
    if sources is not None and not reads_setting_files(opts) and "user" in sources:
        warn("--setting-sources: loopwright reads your own and the project's settings together or not at all; "
             "without project no settings file is read (only --settings)")
    elif sources is not None and reads_setting_files(opts) and "local" not in sources:
        warn("--setting-sources: the project's local settings files are read too")


def split_sdk_servers(configs: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """`--mcp-config` values without their `{"type": "sdk"}` servers (served by the SDK process over
    the control channel), and those servers' names."""
    kept, sdk = [], []
    for value in configs:
        text = value.strip()
        try:
            data = json.loads(text) if text.startswith("{") else None
        except ValueError:
            data = None
        servers = data.get("mcpServers") if isinstance(data, dict) else None
        if not isinstance(data, dict) or not isinstance(servers, dict) or not any(_is_sdk(s) for s in servers.values()):
            kept.append(value)
            continue
        sdk += [name for name, s in servers.items() if _is_sdk(s)]
        rest = {name: s for name, s in servers.items() if not _is_sdk(s)}
        if rest:
            kept.append(json.dumps({**data, "mcpServers": rest}))
    return tuple(kept), tuple(sdk)


def _is_sdk(server: Any) -> bool:
    return isinstance(server, dict) and server.get("type") == "sdk"


def warn(text: str) -> None:
    print(f"loopwright: warning: {text}", file=sys.stderr, flush=True)
