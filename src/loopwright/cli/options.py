"""The command line, parsed once: argparse reads the flags (start-up matters: click alone cost
~20 ms, measured) into a frozen `Options` that every command consumes."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from ..compose.runspec import NO_LIMIT, RunSpec, limit  # noqa: F401 (limit: re-exported)
from ..core.fastclass import dataclass


@dataclass(frozen=True)
class Options(RunSpec):
    """Every flag of `loopwright [-p] …`, as given (None/False/() when absent): the run's (`RunSpec`)
    and those that steer only the command line (its mode, the terminal, the Agent SDK's channel)."""

    print_mode: bool = False
    input_format: str = "text"
    verbose: bool = False
    max_iterations: int | None = None
    until: str | None = None
    version: bool = False
    # flags the Agent SDK sends (cli.sdk.flags says which are honoured)
    permission_prompt_tool: str | None = None
    thinking: str | None = None
    thinking_display: str | None = None
    max_thinking_tokens: int | None = None
    effort: str | None = None
    betas: str | None = None
    task_budget: int | None = None
    resume_session_at: str | None = None
    resume_drops_turn: str | None = None
    session_mirror: bool = False
    replay_user_messages: bool = False

    def telemetry_source(self) -> str:
        if self.input_format == "stream-json":
            return "sdk"
        if (self.prompt or "").lstrip().startswith("/loop"):
            return "loop"
        return "headless" if self.print_mode else "interactive"

    def recorded_argv(self) -> list[str]:
        from .core import recorded_argv

        return recorded_argv(self.argv)  # as given: without --store, secrets redacted

    def run_spec(self) -> RunSpec:
        """The run these flags describe, without the command line's own flags (its argv as recorded)."""
        return RunSpec(**{f.name: getattr(self, f.name) for f in fields(RunSpec) if f.name != "argv"},
                       argv=tuple(self.recorded_argv()))


def or_none(kind: type) -> Any:
    """An argparse type: a `kind` value, or `none` (NO_LIMIT)."""
    def parse(text: str) -> Any:
        return NO_LIMIT if text.strip().lower() == "none" else kind(text)

    parse.__name__ = kind.__name__  # argparse names it in "invalid int value"
    return parse


def parse_options(argv: list[str]) -> Options:
    values = vars(parser().parse_args(argv))
    known = {f.name for f in fields(Options)} - {"argv"}
    assert set(values) == known, set(values) ^ known  # the parser and Options name the same flags
    # argparse's values are untyped; the assert above ties their names to Options' fields
    flags: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in values.items()}
    return Options(**flags, argv=tuple(argv))


TAGLINE = ("Loop engineering for AI agents: an agent loop that never stops silently,\n"
           "never runs away, and proves it is done.")


def parser() -> Any:
    """The main command's parser. Its help lists the commands first, then the flags in groups; the
    Agent SDK's flags and those not supported yet are accepted but left out of it (docs/cli.md)."""
    import argparse

    from .parsing import Parser, commands_help

    p = Parser(prog="loopwright", usage="loopwright [FLAGS] [PROMPT]\n       loopwright COMMAND [ARGS]",
               description=f"{TAGLINE}\n\n{commands_help()}", add_help=False,
               formatter_class=argparse.RawDescriptionHelpFormatter,
               epilog="Without -p and on a terminal: an interactive session; piped input is the prompt (as -p).\n"
               "Every flag, those of the Agent SDK too: docs/cli.md. Shell completion: loopwright completion --help.")
    run = p.add_argument_group("prompt and output")
    add = run.add_argument
    add("prompt", nargs="?", metavar="PROMPT", help="The prompt (also read from stdin when piped).")
    add("-p", "--print", dest="print_mode", action="store_true", help="Run headless: answer the prompt and exit.")
    add("--output-format", choices=["text", "json", "stream-json"], default="text",
        help="text (the answer), json (one result object) or stream-json (a JSON line per event).")
    add("--input-format", choices=["text", "stream-json"], default="text",
        help="stream-json: user messages as JSON lines on stdin, each a turn of one session.")
    add("--verbose", action="store_true", help="Show turns and tool calls on stderr as they happen.")
    add("--include-partial-messages", action="store_true", help="stream-json: add stream_event lines.")
    add("--include-hook-events", action="store_true", help="stream-json: add hook_started/hook_response lines.")
    add("--json-schema", metavar="SCHEMA_OR_FILE", help="End with an answer that fits this JSON Schema "
        "(the result's structured_output).")
    add = p.add_argument_group("model").add_argument
    add("--model", help="Model id or alias (opus, sonnet, haiku).")
    add("--fallback-model", metavar="MODELS", help="Comma-separated fallback models, at most 3 (used on "
        "overload and refusal).")
    add("--classifier-model", metavar="MODEL", help="The model that decides calls in auto mode (default: haiku "
        "beside an Anthropic model, else the main model).")
    add("--allow-unknown-model", action="store_true",
        help="Send a model name that looks like a typo or another provider's model as given.")
    add = p.add_argument_group("limits").add_argument
    add("--max-turns", type=or_none(int), metavar="N|none",
        help="Stop after this many model calls (error_max_turns). /loop: each iteration, default 100.")
    add("--final-turn", action="store_true", help="After --max-turns, one wrap-up call without tools.")
    add("--max-budget-usd", type=or_none(float), metavar="USD|none",
        help="Start no model call once this much was spent. /loop: the whole loop, default 10 where the model's "
        "price is known.")
    add("--max-tokens-total", type=int, metavar="N", help="Start no model call once this many tokens were used.")
    add("--max-duration", metavar="D", help="Wall-time limit such as 90s, 30m or 2h.")
    add = p.add_argument_group("tools and permissions").add_argument
    add("--allowedTools", "--allowed-tools", dest="allowed", nargs="+", action="extend", default=[],
        metavar="RULE", help='Rules that allow tools without asking, e.g. "Bash" "Edit" or "Bash,Edit".')
    add("--disallowedTools", "--disallowed-tools", dest="disallowed", nargs="+", action="extend", default=[],
        metavar="RULE", help="Rules that deny tools; a bare name removes the tool from the request.")
    add("--tools", dest="tools_flag", metavar="TOOLS", help='Exactly the tools to offer (Agent, Workflow and '
        'Skill too): "" none, "default" all, or "Bash,Read". MCP tools are not affected.')
    add("--permission-mode", metavar="MODE", help="default (manual), acceptEdits, plan, dontAsk, "
        "bypassPermissions or auto (default: the settings' defaultMode, else default).")
    add("--add-dir", dest="add_dir", nargs="+", action="extend", default=[], metavar="DIR",
        help="More directories the agent may write in, beside the working directory.")
    add("--sandbox", action=argparse.BooleanOptionalAction, default=None, help="Every command the model starts "
        "runs under bubblewrap (bwrap) by default: the filesystem read-only except the writable directories, "
        "protected paths read-only, credentials hidden, a private /tmp, no network, no host unix sockets. "
        "--sandbox: on even when your settings turn it off. --no-sandbox: off (commands run on the host, "
        "bounded by the permission rules only).")
    add("--pass-env", dest="pass_env", action="append", default=[], metavar="NAME",
        help="Give tools, hooks and goal checks this variable even when it is a credential loopwright keeps "
        "to itself (ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN, OPENAI_API_KEY, LOOPWRIGHT_STORE); repeatable.")
    add = p.add_argument_group("context and settings").add_argument
    add("--system-prompt", metavar="TEXT", help="Replace the default system prompt.")
    add("--system-prompt-file", metavar="FILE", help="Replace the default system prompt with this file's text.")
    add("--append-system-prompt", metavar="TEXT", help="Add to the system prompt.")
    add("--append-system-prompt-file", metavar="FILE", help="Add this file's text to the system prompt.")
    add("--agents", metavar="JSON", help='Subagents beside .claude/agents: {"name": {"description": ..., '
        '"prompt": ..., "tools": [...], "model": ...}}; these win a name clash.')
    add("--mcp-config", dest="mcp_config", nargs="+", action="extend", default=[], metavar="FILE_OR_JSON",
        help='MCP servers from these files or inline JSON ({"mcpServers": {...}}), beside .mcp.json and '
        "your own; repeatable.")
    add("--strict-mcp-config", action="store_true", help="Use only the servers of --mcp-config.")
    add("--plugin-dir", dest="plugin_dir", action="append", default=[], metavar="DIR",
        help="Load the plugin in this folder for this session (its commands as /PLUGIN:NAME, skills, agents, "
        "hooks, MCP servers); repeatable.")
    add("--settings", metavar="FILE_OR_JSON", help="A settings file or inline JSON, read after all others.")
    add("--bare", action="store_true", help="Read no settings files (only --settings).")
    add = p.add_argument_group("sessions").add_argument
    add("-c", "--continue", dest="continue_session", action="store_true",
        help="Continue the most recent session of this directory.")
    add("-r", "--resume", metavar="ID", help="Resume the session with this id.")
    add("--fork-session", action="store_true", help="With -c or -r: continue under a new session id.")
    add("--session-id", metavar="UUID", help="Use this UUID as the session id.")
    add("--no-session-persistence", action="store_true", help="Write no transcript for this run.")
    add("--store", metavar="URL", help="Where sessions live: sqlite:///PATH (the default: JSONL transcripts "
        "under the home) or postgresql://… (every session in one database); default: $LOOPWRIGHT_STORE.")
    add = p.add_argument_group("goal loops").add_argument
    add("--goal", metavar="CONDITION", help="Keep working until this condition holds (like -p \"/goal COND\").")
    add("--goal-file", metavar="FILE", help="Read the condition from a file; `check:` and `protect:` lines add "
        "checks.")
    add("--check", action="append", default=[], metavar="COMMAND", help="A command the harness runs at every "
        "stop; the goal cannot be met while it fails (repeatable).")
    add("--protect", action="append", default=[], metavar="GLOB", help="Files the agent must not change "
        "while pursuing the goal (repeatable).")
    add("--goal-model", metavar="MODEL", help="The evaluator model (default: haiku).")
    add("--goal-max-turns", metavar="N|none", help="Turns the goal may take (default 100; none: no limit).")
    add("--goal-max-duration", metavar="D|none", help="Such as 30m or 2h (default 2h; none: no limit).")
    add("--goal-max-budget-usd", metavar="USD|none", help="Spend the goal may reach, evaluator included (default "
        "10 where the model's price is known; none: no limit).")
    add = p.add_argument_group("time-based loops (-p \"/loop 5m PROMPT\", or \"/loop PROMPT\" self-paced)").add_argument
    add("--max-iterations", type=int, metavar="N", help="End the loop after this many iterations.")
    add("--until", metavar="WHEN", help="End the loop at this time: a duration (90m, 2h) or a local time "
        "(17:30, 2026-12-24T09:00).")
    add = p.add_argument_group("parallel attempts (in a git repository)").add_argument
    add("--attempts", type=int, metavar="N", help="Run N attempts in their own git worktrees; the checks and an "
        "adversarial judge pick one, whose changes reach your working tree.")
    add("--attempt-instructions", metavar="FILE", help="One variation per line, given to the attempts in turn "
        "(e.g. \"approach: minimal patch\").")
    add("--judge-model", metavar="MODEL", help="The judge of the attempts (default: the main model).")
    add("--keep-worktrees", action="store_true", help="Keep the attempts' worktrees (their branches are always "
        "kept).")
    add = p.add_argument_group("other").add_argument
    add("-h", "--help", action="help", help="Show this help and exit.")
    add("--version", action="store_true", help="Print the version and exit.")
    from .sdk.flags import add_sdk_flags

    add_sdk_flags(p)
    return p
