"""`loopwright -p`: build an agent from the flags, run one prompt, print the result in the chosen
format, exit with the result's code. First Ctrl-C aborts the run cleanly; a second exits at once."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path
from typing import Any, Awaitable, Callable

from .. import __version__
from ..config import goal_from_options, parse_duration, parse_fallbacks, positive, read_text_file
from ..core.errors import UsageError
from ..core.events import Event, HookResponse, HookStarted, RunResult
from ..core.ids import uuid4
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
    from ..policy.rules import parse_tool_list
    from ..settings import default_limits, load_settings, permission_rules
    from ..tools import BUILTIN_TOOL_NAMES, builtin_tools

    settings = load_settings(Path.cwd(), settings=opts.get("settings"), bare=bool(opts.get("bare")))
    os.environ.update(settings.env)  # settings `env` applies to the whole session: API client, tools, hooks

    positive(opts["max_turns"], "--max-turns")
    positive(opts["max_budget_usd"], "--max-budget-usd")
    positive(opts["max_tokens_total"], "--max-tokens-total")
    duration = parse_duration(opts["max_duration"], "--max-duration") if opts["max_duration"] else None
    rules = permission_rules(settings, mode=opts["permission_mode"], allow=parse_tool_list(opts["allowed"]),
                             deny=parse_tool_list(opts["disallowed"]))
    rules, sandbox = writable_dirs_and_sandbox(opts, settings, rules)
    tools = builtin_tools(sandbox=sandbox)
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
    session_id = opts["session_id"] or uuid4()
    if opts["session_id"]:
        import uuid

        try:
            uuid.UUID(session_id)
        except ValueError:
            raise UsageError(f"--session-id: expected a UUID, got {session_id!r}") from None
    hooks = None
    if settings.hooks and not settings.disable_all_hooks:
        from ..hooks import HookRunner

        hooks = HookRunner.from_settings(settings, project_dir=Path.cwd())
    model = opts["model"] or os.environ.get("ANTHROPIC_MODEL") or settings.model or DEFAULT_MODEL
    _warn_if_unpriced(model)
    return Agent(
        output_schema=output_schema(opts.get("json_schema")),
        model=model,
        tools=tools, system_prompt=system, append_system_prompt=append, hooks=hooks,
        limits=default_limits(max_turns=opts["max_turns"],
                              fallback_models=parse_fallbacks(opts["fallback_model"] or settings.fallback_model)),
        budget=Budget(opts["max_budget_usd"], opts["max_tokens_total"], duration),
        permissions=rules, sandbox=sandbox,
        include_partial=opts["include_partial_messages"], session_id=session_id, final_turn=opts["final_turn"],
    )


def _warn_if_unpriced(model: str) -> None:
    from ..policy.models import resolve_model

    if resolve_model(model).price is None:
        print(f"loopwright: warning: no price is known for model {model}: its calls count as $0 in "
              "total_cost_usd and --max-budget-usd cannot bound them; --max-tokens-total can",
              file=sys.stderr, flush=True)


def output_schema(value: str | None) -> Any:
    """`--json-schema`: the schema as JSON text, or the path of a file holding it."""
    if value is None:
        return None
    import json

    text = value if value.lstrip()[:1] in ("{", "[") or value.strip() in ("true", "false") \
        else read_text_file(value, "--json-schema")
    try:
        schema = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"--json-schema: not JSON ({exc}); give a JSON Schema or the path of a file with one") from None
    from ..engine.structured import StructuredAnswer

    try:
        StructuredAnswer(schema)
    except ValueError as exc:
        raise UsageError(f"--json-schema: {exc}") from None
    return schema


def writable_dirs_and_sandbox(opts: dict[str, Any], settings: Any, rules: Any) -> tuple[Any, Any]:
    """`--add-dir` and `additionalDirectories` become writable roots (for the rules and inside
    the sandbox); `--sandbox` or `sandbox.enabled` turns the sandbox on. Warns when it cannot run."""
    import dataclasses

    from ..sandbox import SandboxConfig, unavailable_warning

    added = tuple(opts.get("add_dir") or ())
    dirs = tuple(dict.fromkeys(rules.additional_dirs + settings.additional_directories + added))
    rules = dataclasses.replace(rules, additional_dirs=dirs)
    sandbox = SandboxConfig.from_settings(settings.sandbox)
    if opts.get("sandbox"):
        sandbox = dataclasses.replace(sandbox, enabled=True)
    writable = tuple(os.path.join(os.getcwd(), os.path.expanduser(d)) for d in dirs)
    sandbox = dataclasses.replace(sandbox, writable=writable)
    if (warning := unavailable_warning(sandbox)) is not None:
        print(f"loopwright: warning: {warning}", file=sys.stderr, flush=True)
    return rules, sandbox


def make_emitter(fmt: str, verbose: bool, session_id: str, hook_events: bool = False) -> Callable[[Event], None]:
    """`hook_events` (`--include-hook-events`): hook_started/hook_response lines for every hook;
    without it only SessionStart's, as Claude Code does."""
    progress = Progress(sys.stderr) if verbose or (fmt == "text" and sys.stderr.isatty()) else None

    def emit(event: Event) -> None:
        if progress is not None:
            progress(event)
        if isinstance(event, (HookStarted, HookResponse)) and not (hook_events or event.hook_event == "SessionStart"):
            return
        if fmt == "stream-json":
            line = stream_json(event, session_id, __version__)
            if line is not None:
                sys.stdout.write(dumps(line) + "\n")
                sys.stdout.flush()

    return emit


def print_result(result: RunResult, fmt: str) -> None:
    if fmt == "json":
        print(dumps(result.to_json()), flush=True)
    elif fmt == "text" and result.structured_output is not None:
        print(dumps(result.structured_output), flush=True)
    elif fmt == "text":
        text = result.result
        if result.is_error and result.errors:
            text = (text + "\n" if text else "") + "Error: " + "; ".join(result.errors)
        print(text, flush=True)


def open_cli_session(opts: dict[str, Any], agent: Any) -> Any:
    """The session flags, composed: JSONL store -> replayed history and recorder, wired into the
    agent (the recorder sees each event before the renderer) with SessionStart's `source`
    (startup, resume, fork)."""
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
    agent.session_source = session.source
    return session


def goal_command(saved: Any, session: Any, *, clear: bool) -> int:
    from ..engine.goal import cleared_status
    from .goalcmd import describe

    if not clear:
        print(describe(saved))
    elif saved is not None and saved.active and session.recorder is not None:
        session.recorder.attach(cleared_status(saved.spec.condition))
        print(f"Goal cleared: {saved.spec.condition}")
    else:
        print("No goal set")
    return 0


def run_headless(opts: dict[str, Any]) -> int:
    if not opts["print_mode"]:
        if sys.stdin.isatty() and sys.stdout.isatty():
            from .interactive import run_interactive

            return run_interactive(opts)
        opts["print_mode"] = True  # piped use without -p behaves as -p
    if opts.get("input_format") == "stream-json":  # stdin is a stream of messages, not the prompt
        from .streamin import run_stream_input

        return run_stream_input(opts)
    goal_given = bool(opts.get("goal") or opts.get("goal_file"))
    prompt = read_prompt(opts["prompt"], required=not goal_given)
    from .loopcmd import is_loop

    if is_loop(prompt):
        from .loopcmd import run_loop

        return run_loop(opts, prompt)
    if opts.get("max_iterations") is not None or opts.get("until"):
        raise UsageError("--max-iterations and --until bound a time-based loop: use them with -p \"/loop …\"")
    status_only = prompt.strip() == "/goal"
    spec, prompt = (None, "") if status_only else goal_from_options(opts, prompt)
    agent = build_agent(opts)
    session = open_cli_session(opts, agent)
    saved = None
    if session.records:  # a resumed session may hold a goal (goals load only when needed)
        from ..engine.goal import saved_goal
        from .goalcmd import attachments

        saved = saved_goal(attachments(session.records))
    if status_only or prompt is None:  # `/goal` shows, `/goal clear` clears, and no run starts
        try:
            return goal_command(saved, session, clear=prompt is None)
        finally:
            session.close()
    if spec is None and saved is not None and saved.active:
        agent.set_goal(saved.spec, saved.baseline)  # a resumed session keeps its goal
    else:
        agent.set_goal(spec)
    fmt = opts["output_format"]
    emit = make_emitter(fmt, opts["verbose"], agent.session_id, bool(opts.get("include_hook_events")))
    try:
        result = asyncio.run(_run(agent, prompt, emit))
    finally:
        session.close()
    print_result(result, fmt)
    return result.exit_code


async def _run(agent: Any, prompt: str, emit: Callable[[Event], None]) -> RunResult:
    return await foreground(agent, lambda: agent.run(prompt, on_event=emit), emit, agent.interrupt)


async def foreground(agent: Any, work: Callable[[], Awaitable[RunResult]], emit: Callable[[Event], None],
                     interrupt: Callable[[], None]) -> RunResult:
    """Run `work` with Ctrl-C/SIGTERM wired to `interrupt` (a second one exits at once), then end
    the session and close the agent."""
    loop = asyncio.get_running_loop()
    presses = 0

    def on_signal() -> None:
        nonlocal presses
        presses += 1
        if presses > 1:
            os._exit(130)  # a second interrupt: leave now
        interrupt()

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, on_signal)
    try:
        result = await work()
        await agent.end_session("other", on_event=emit)
        return result
    finally:
        await agent.aclose()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)


__all__ = ["run_headless"]
