"""`loopwright workflow run NAME [ARGS…] [FLAGS]`, `loopwright workflow list` and `-p "/NAME
args"`: a user's workflow script run in a session of its own, each of its agents a full subagent
loop under the session's permissions, its journal in the session's store; `--resume SESSION`
re-runs the script and replays the finished steps. Progress on stderr (text) or as
`system/workflow_status` lines (stream-json); the return value of `main` is the result."""

from __future__ import annotations

import asyncio
import shlex
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...core.errors import UsageError
from ...core.events import (
    AssistantMessage,
    ModelUsage,
    ResultEvent,
    RunResult,
    Subtype,
    SystemInit,
    TerminalReason,
    UserMessage,
)
from ...core.types import Message, TextBlock, Usage
from ...compose.render import dumps, visible

if TYPE_CHECKING:
    from ...agent.run import Run as LiveRun
    from ...agent.session import Session
    from ..options import Options

USAGE = ("loopwright workflow run NAME [ARGS…] [FLAGS] | loopwright workflow run --resume SESSION | "
         "loopwright workflow list [--json] [--plugin-dir DIR]")


def parser() -> Any:
    """`workflow`'s help and completion; `run` reads its flags with the main parser (parse_options)."""
    from ..parsing import Parser

    p = Parser(prog="loopwright workflow", description="Workflow scripts (NAME.py with `async def main(wf, "
               "args)` in .loopwright/workflows, ~/.loopwright/workflows or a plugin's workflows/), each run in "
               "a session of its own.")
    sub = p.add_subparsers(dest="action", required=True, metavar="{run,list}")
    run = sub.add_parser("run", help="Run a workflow; FLAGS are those of `loopwright -p`.",
                         usage="loopwright workflow run NAME [ARGS…] [FLAGS]\n"
                         "       loopwright workflow run --resume SESSION [FLAGS]",
                         description="Run the workflow NAME with ARGS, in a session of its own. FLAGS (after the "
                         "arguments) are those of `loopwright -p` (see `loopwright --help`): --model, "
                         "--max-budget-usd, --output-format, --allowedTools, …; --resume SESSION re-runs the "
                         "script and replays the steps it finished.")
    run.add_argument("name", metavar="NAME", help="The workflow (see `loopwright workflow list`).")
    run.add_argument("args", nargs="*", metavar="ARGS", help="Its arguments, before the flags (after `--` when "
                     "one starts with '-').")
    run.takes_run_flags = True
    listing = sub.add_parser("list", help="The workflows this folder can run.", description="The workflows "
                             "this folder can run: the project's, your own and the plugins'.")
    listing.add_argument("--json", action="store_true", help="A JSON array of name, path, scope, description.")
    listing.add_argument("--plugin-dir", metavar="DIR", action="append", help="Also the workflows of the "
                         "plugin in this folder (repeatable).")
    return p


def run_workflow_command(args: list[str]) -> int:
    flags = args[: args.index("--")] if "--" in args else args
    if not args or args[0] in ("-h", "--help") or (args[0] in ("run", "list") and ("-h" in flags or
                                                                                  "--help" in flags)):
        parser().parse_args([*args[:1], "--help"] if args and args[0] in ("run", "list") else ["--help"])
    action, rest = args[0], args[1:]
    if action == "list":
        return _list(rest)
    if action != "run":
        raise UsageError(f"workflow: unknown action {action!r}; expected run or list ({USAGE})")
    words = []
    while rest and not rest[0].startswith("-"):
        words.append(rest.pop(0))
    if rest[:1] == ["--"]:
        words, rest = words + rest[1:], []
    from ..options import parse_options

    opts = parse_options(rest)
    if opts.prompt is not None:
        raise UsageError(f"workflow run: give the workflow's arguments before the flags (got {opts.prompt!r} after)")
    if not words and opts.resume is None:
        raise UsageError(f"workflow run: which workflow? ({USAGE})")
    return run_named(opts, words[0] if words else None, words[1:])


def _list(rest: list[str]) -> int:
    from ...workflows.scripts import available, describe, folders
    from ..core import load_run_settings
    from ...compose.extensions import project_plugins
    from ..options import parse_options

    as_json = "--json" in rest
    opts = parse_options([a for a in rest if a != "--json"])
    if opts.prompt is not None:
        raise UsageError(f"workflow list: unexpected {opts.prompt!r}; expected nothing, --json or --plugin-dir DIR")
    plugins, _ = project_plugins(opts, load_run_settings(opts, announce=False))
    found = available(Path.cwd(), Path.home(), plugins)
    if as_json:
        print(dumps([{"name": s.name, "path": str(s.path), "scope": s.scope, "description": describe(s)}
                     for s in found.values()]))
        return 0
    if not found:
        places = ", ".join(str(f) for _, f in folders(Path.cwd(), Path.home()))
        print(f"no workflows (put NAME.py with `async def main(wf, args)` in one of: {places}, or a "
              "plugin's workflows/)", file=sys.stderr)
        return 0
    width = max(len(n) for n in found)
    for s in found.values():
        print(visible(f"{s.name:<{width}}  {s.scope:<7}  {describe(s)}  ({s.path})"))
    return 0


def slash_workflow(prompt: str, opts: Options | None = None,
                   plugins: list[Any] | None = None) -> tuple[str, list[str]] | None:
    """`/NAME args` when a workflow NAME exists (`/PLUGIN:NAME`: one of `plugins`, or of the
    plugins `opts` bring): its name and arguments."""
    from ...workflows.scripts import RESERVED, find, valid

    head = prompt.strip()
    if not head.startswith("/"):
        return None
    name, _, rest = head[1:].partition(" ")
    name = name.strip()
    if name in RESERVED or not valid(name):
        return None
    if plugins is None and ":" in name and opts is not None:
        from ...compose.extensions import quiet_plugins

        plugins = quiet_plugins(opts)
    if find(name, Path.cwd(), Path.home(), plugins or ()) is None:
        return None
    try:
        words = shlex.split(rest)
    except ValueError:
        words = rest.split()
    return name, words


def run_named(opts: Options, name: str | None, args: list[str]) -> int:
    from ...workflows.journal import Journal
    from ...workflows.scripts import find, load, loader
    from ...compose.build import build

    if opts.continue_session or opts.fork_session:
        raise UsageError("a workflow resumes with --resume SESSION (not --continue or --fork-session)")
    if opts.attempts is not None or opts.goal or opts.goal_file:
        raise UsageError("a workflow runs alone: --attempts and --goal do not go with it")
    if opts.json_schema is not None:
        raise UsageError("--json-schema does not go with a workflow: give `schema=` to wf.agent, and return "
                         "the value from main")
    built = build(opts, goal=False)  # a workflow sets no goal (refused above)
    agent, session, conversation = built.agent, built.opened, built.session
    try:
        journal = Journal(session_journal(conversation))
        name, args = _what_to_run(opts, journal, name, args, conversation.session_id)
        plugins = list(agent.plugins)
        script = find(name, Path.cwd(), Path.home(), plugins)
        if script is None:
            from ...workflows.scripts import available

            names = ", ".join(available(Path.cwd(), Path.home(), plugins)) or "none"
            raise UsageError(f"workflow {name!r} not found (workflows: {names}; see `loopwright workflow list`)")
        main = load(script)
        if session.recorder is not None:  # the conversation holds the call and the final answer only
            said = " ".join(["/" + name, *args]) + (" (resumed)" if opts.resume is not None else "")
            session.recorder(UserMessage(Message.user(said), synthetic=False))
        journal.start(name, args, str(script.path))
        live = built.start()
        result = asyncio.run(_run(opts, live, journal, name, main, args, loader(Path.cwd(), Path.home(), plugins)))
        if session.recorder is not None:
            answer = result.result or "; ".join(result.errors) or "(no answer)"
            session.recorder(AssistantMessage(Message("assistant", (TextBlock(answer),)), "workflow", "end_turn",
                                              Usage(), id="wf_" + result.session_id[:8]))
            session.recorder(ResultEvent(result))  # its outcome and spend, for `loopwright sessions`
    finally:
        built.close()
    from ..core import print_result

    print_result(result, opts.output_format)
    return result.exit_code


def session_journal(session: Session) -> Any:
    """The journal store of a session (a `core.keeping.JournalStore`), in
    the store that holds its transcript; None when the session is not recorded."""
    if not session.transcript_path or session.stores is None:
        return None
    return session.stores.journal(session.session_id)


def _what_to_run(opts: Options, journal: Any, name: str | None, args: list[str],
                 session_id: str) -> tuple[str, list[str]]:
    if opts.resume is None:
        if journal.header is not None:
            raise UsageError(f"session {session_id} already holds a workflow: resume it with --resume")
        assert name is not None
        return name, args
    header = journal.header
    if header is None and name is not None:  # a session that ran no workflow: this one starts in it
        return name, args
    if header is None:
        raise UsageError(f"--resume {opts.resume}: that session ran no workflow; name the one to run")
    other = name != header.get("name") or (args and args != header.get("args"))
    if name is not None and other and (journal.finished or {}).get("subtype") == "success":  # the last one is done: a new one starts
        journal.set_aside()
        return name, args
    if name is not None and name != header.get("name"):
        raise UsageError(f"--resume {opts.resume}: that session ran workflow {header.get('name')!r}, not {name!r}")
    if args and args != header.get("args"):
        raise UsageError(f"--resume {opts.resume}: the workflow ran with arguments {header.get('args')!r}; "
                         "a resume takes the same ones (give none)")
    return str(header.get("name")), list(header.get("args") or [])


async def _run(opts: Options, live: LiveRun, journal: Any, name: str, main: Any, args: list[str],
               load: Any) -> RunResult:
    """`live`: the run whose subagents the workflow's agents are."""
    from ...workflows.runtime import Run, run_workflow
    from ..core import foreground, make_emitter

    started = time.monotonic()
    agent, session_id = live.agent, live.session.session_id
    emit = make_emitter(opts.output_format, opts.verbose, session_id, opts.include_hook_events)
    subs = live.resources.subagents()
    subs.tool(live.hooks(emit), emit)  # SubagentStart hooks and the agents' warnings, as for the Agent tool
    emit(SystemInit(session_id, str(agent.cwd), agent.model, tuple(t.name for t in live.tools()),
                    agent.permissions.mode))
    budget = opts.max_budget_usd if isinstance(opts.max_budget_usd, (int, float)) and opts.max_budget_usd != float(
        "inf") else None
    run = Run(journal, subs.workflow_runner(), budget_usd=budget, on_status=_status_printer(opts, session_id),
              load=load, stop_agents=subs.interrupt)
    task: asyncio.Task[Any] | None = None

    async def work() -> RunResult:
        nonlocal task
        task = asyncio.ensure_future(run_workflow(run, name, main, args))
        outcome = await task
        result = _result(session_id, run, outcome, started, journal)
        emit(ResultEvent(result))  # the stream-json result line
        return result

    def interrupt() -> None:
        """Running agents end as aborted, their spend counted; no agent starts after. A script
        that is not waiting on an agent is cancelled where it waits."""
        run.abort()
        if task is not None and not run.running:
            task.cancel()

    return await foreground(live, work, emit, interrupt)




def _status_printer(opts: Options, session_id: str) -> Any:
    last: list[tuple[Any, ...]] = []

    def show(status: dict[str, Any]) -> None:
        if opts.output_format == "stream-json":
            sys.stdout.write(dumps(status_frame(status, session_id)) + "\n")
            sys.stdout.flush()
            return
        if opts.output_format != "text":
            return
        key = (status["phase"], status["running"], status["done"], status.get("message"))
        if last and last[0] == key:
            return
        last[:] = [key]
        print(visible(f"loopwright: {status_line(status)}"), file=sys.stderr, flush=True)

    return show


def status_frame(status: dict[str, Any], session_id: str) -> dict[str, Any]:
    """A workflow's progress as its stream-json line, `system/workflow_status`."""
    from ...core.ids import uuid4

    return {"type": "system", "subtype": "workflow_status", **status, "session_id": session_id, "uuid": uuid4()}


def status_line(status: dict[str, Any]) -> str:
    """A workflow's progress in one line: phase, agents running and done, spend, its last log."""
    replayed = f" ({status['replayed']} replayed)" if status["replayed"] else ""
    said = f": {status['message']}" if "message" in status else ""
    return (f"workflow {status['workflow']} [{status['phase']}] {status['running']} running, "
            f"{status['done']} done{replayed}, ${status['total_cost_usd']:.4f}{said}")


_REASON_OF_STATUS: dict[str, TerminalReason] = {
    "budget": "budget_exhausted", "aborted": "aborted", "not_deterministic": "not_deterministic"}


def _result(session_id: str, run: Any, outcome: Any, started: float, journal: Any) -> RunResult:
    value = outcome.value
    try:
        text = value if isinstance(value, str) else ("" if value is None else dumps(value))
    except (TypeError, ValueError):  # not JSON: its repr, and no structured output
        text, value = repr(value), repr(value)
    subtype: Subtype = "success"
    reason: TerminalReason = "completed"
    errors: tuple[str, ...] = ()
    if outcome.status != "success":
        subtype = "error_max_budget_usd" if outcome.status == "budget" else "error_during_execution"
        reason = _REASON_OF_STATUS.get(outcome.status, "workflow_failed")
        errors = (outcome.error + (f"; resume with --resume {session_id}" if outcome.status in
                                   ("budget", "aborted") else ""),)
    journal.finish(subtype, text or outcome.error)
    usage = Usage()
    total = ModelUsage()
    for mu in run.model_usage.values():
        usage, total = usage + mu.usage, total + mu
    elapsed = int((time.monotonic() - started) * 1000)
    return RunResult(subtype=subtype, is_error=subtype != "success", result=text, session_id=session_id,
                     num_turns=run.done - run.replayed, duration_ms=elapsed, duration_api_ms=elapsed,
                     total_cost_usd=run.cost_usd, usage=usage, model_usage=dict(run.model_usage),
                     stop_reason=None, terminal_reason=reason, errors=errors,
                     role_usage={"subagents": total} if total.calls else {},
                     structured_output=None if isinstance(value, str) else value,
                     workflow={"name": run.name, "agents": run.done, "replayed": run.replayed,
                               "journal": journal.location})


__all__ = ["run_named", "run_workflow_command", "slash_workflow", "status_frame", "status_line"]
