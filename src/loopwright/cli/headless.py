"""`loopwright -p`: build an agent from the flags, run one prompt, print the result in the chosen
format, exit with the result's code. First Ctrl-C aborts the run cleanly; a second exits at once."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import uuid
from typing import Any, Callable

from .. import __version__
from ..config import goal_from_options, parse_duration, parse_fallbacks, parse_mode, positive, read_text_file
from ..errors import UsageError
from ..events import Event, RunResult
from .render import Progress, dumps, stream_json

MAX_STDIN = 10 * 1024 * 1024


def read_prompt(prompt: str | None, required: bool = True) -> str:
    piped = ""
    if not sys.stdin.isatty():
        piped = sys.stdin.read(MAX_STDIN)
    text = "\n\n".join(p for p in (prompt, piped.strip()) if p)
    if not text.strip() and required:
        raise UsageError("no prompt: give one as an argument (loopwright -p \"…\") or pipe it on stdin")
    return text


def build_agent(opts: dict[str, Any]) -> Any:
    from ..app import Agent
    from ..policy.budget import Budget
    from ..policy.models import DEFAULT_MODEL
    from ..policy.permissions import PermissionRules, parse_tool_list
    from ..policy.stop import Limits
    from ..tools import BUILTIN_TOOL_NAMES, builtin_tools

    positive(opts["max_turns"], "--max-turns")
    positive(opts["max_budget_usd"], "--max-budget-usd")
    positive(opts["max_tokens_total"], "--max-tokens-total")
    duration = parse_duration(opts["max_duration"], "--max-duration") if opts["max_duration"] else None
    tools = builtin_tools()
    if opts["tools_flag"] is not None and opts["tools_flag"] != "default":
        wanted = parse_tool_list([opts["tools_flag"]])
        unknown = [n for n in wanted if n not in BUILTIN_TOOL_NAMES]
        if unknown:
            raise UsageError(f"--tools: unknown tool(s) {', '.join(unknown)}; expected names from "
                             f"{', '.join(BUILTIN_TOOL_NAMES)}")
        tools = [t for t in tools if t.name in wanted]
    system = opts["system_prompt"]
    if opts["system_prompt_file"]:
        system = read_text_file(opts["system_prompt_file"], "--system-prompt-file")
    append = opts["append_system_prompt"] or ""
    if opts["append_system_prompt_file"]:
        append = "\n\n".join(x for x in (append, read_text_file(opts["append_system_prompt_file"],
                                                                 "--append-system-prompt-file")) if x)
    session_id = opts["session_id"] or str(uuid.uuid4())
    try:
        uuid.UUID(session_id)
    except ValueError:
        raise UsageError(f"--session-id: expected a UUID, got {session_id!r}") from None
    return Agent(
        model=opts["model"] or os.environ.get("ANTHROPIC_MODEL") or DEFAULT_MODEL,
        tools=tools, system_prompt=system, append_system_prompt=append,
        limits=Limits(max_turns=opts["max_turns"], fallback_models=parse_fallbacks(opts["fallback_model"])),
        budget=Budget(opts["max_budget_usd"], opts["max_tokens_total"], duration),
        permissions=PermissionRules(parse_mode(opts["permission_mode"]), parse_tool_list(opts["allowed"]),
                                    parse_tool_list(opts["disallowed"])),
        include_partial=opts["include_partial_messages"], session_id=session_id, final_turn=opts["final_turn"],
    )


def make_emitter(fmt: str, verbose: bool, session_id: str) -> Callable[[Event], None]:
    progress = Progress(sys.stderr) if verbose or (fmt == "text" and sys.stderr.isatty()) else None

    def emit(event: Event) -> None:
        if progress is not None:
            progress(event)
        if fmt == "stream-json":
            line = stream_json(event, session_id, __version__)
            if line is not None:
                sys.stdout.write(dumps(line) + "\n")
                sys.stdout.flush()

    return emit


def print_result(result: RunResult, fmt: str) -> None:
    if fmt == "json":
        print(dumps(result.to_json()), flush=True)
    elif fmt == "text":
        text = result.result
        if result.is_error and result.errors:
            text = (text + "\n" if text else "") + "Error: " + "; ".join(result.errors)
        print(text, flush=True)


def open_cli_session(opts: dict[str, Any], agent: Any) -> Any:
    """The session flags, composed: JSONL store -> replayed history and recorder, wired into the
    agent (the recorder sees each event before the renderer). `session.source` (startup, resume,
    fork) is SessionStart's `source`."""
    from ..session import open_session
    from ..stores.jsonl import JsonlStore

    resuming = opts["resume"] is not None or opts["continue_session"]
    if opts["resume"] is not None and opts["continue_session"]:
        raise UsageError("use either --continue or --resume, not both")
    if opts["fork_session"] and not resuming:
        raise UsageError("--fork-session needs --continue or --resume")
    if opts["session_id"] and resuming and not opts["fork_session"]:
        raise UsageError("--session-id can be used with --continue or --resume only with --fork-session")
    session = open_session(JsonlStore.default(agent.cwd), str(agent.cwd), resume=opts["resume"],
                           continue_last=opts["continue_session"], fork=opts["fork_session"],
                           session_id=opts["session_id"], persist=not opts["no_session_persistence"])
    for warning in session.warnings:
        print(f"loopwright: warning: {warning}", file=sys.stderr, flush=True)
    agent.session_id, agent.history = session.session_id, session.history
    agent.transcript_path, agent.recorder = session.transcript_path, session.recorder
    return session


def run_headless(opts: dict[str, Any]) -> int:
    if not opts["print_mode"]:
        if sys.stdin.isatty() and sys.stdout.isatty():
            raise UsageError("the interactive terminal is not available yet; run headless with -p \"PROMPT\"")
        opts["print_mode"] = True  # piped use without -p behaves as -p
    goal_given = bool(opts.get("goal") or opts.get("goal_file"))
    prompt = read_prompt(opts["prompt"], required=not goal_given)
    spec, prompt = goal_from_options(opts, prompt)
    if prompt is None:  # `/goal clear`: a headless run has no goal to clear beyond this line
        print("No goal set")
        return 0
    agent = build_agent(opts)
    session = open_cli_session(opts, agent)
    agent.set_goal(spec)
    fmt = opts["output_format"]
    emit = make_emitter(fmt, opts["verbose"], agent.session_id)
    try:
        result = asyncio.run(_run(agent, prompt, emit))
    finally:
        session.close()
    print_result(result, fmt)
    return result.exit_code


async def _run(agent: Any, prompt: str, emit: Callable[[Event], None]) -> RunResult:
    loop = asyncio.get_running_loop()
    presses = 0

    def on_signal() -> None:
        nonlocal presses
        presses += 1
        if presses > 1:
            os._exit(130)  # a second interrupt: leave now
        agent.interrupt()

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, on_signal)
    try:
        return await agent.run(prompt, on_event=emit)
    finally:
        await agent.aclose()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)


__all__ = ["run_headless"]
