"""Subcommands beside the headless interface: `loopwright demo` (offline, no key), `loopwright goal
status|clear`, `schedule …`, `scheduler`, `routine …`, `workflow run|list`, `attempts clean`,
`rewind`, `sessions`, `trust`, `mcp …`, `serve`, `settings check`, and on a durable store
`worker`, `enqueue` and `workers`."""

from __future__ import annotations

from pathlib import Path


def run(name: str, args: list[str]) -> int:
    if name == "demo":
        from ..parsing import Parser

        parser = Parser(prog="loopwright demo", description="Run a scripted agent on a generated project, offline.")
        # `which` is checked after parsing, so an unknown flag (`--di x`) is named before its value is
        parser.add_argument("which", nargs="?", default="goal", metavar="{goal,routine}",
                            help="goal (the default): a verified goal loop; routine: the bug-report routine")
        parser.add_argument("--dir", type=Path, default=None, help="Create the sample project here (kept; the routine demo "
                            "puts it in DIR/project, beside its own home and temporary folder).")
        opts = parser.parse_args(args)
        if opts.which not in ("goal", "routine"):
            parser.error(f"argument which: invalid choice: {opts.which!r} (choose from 'goal', 'routine')")
        if opts.dir is not None and opts.dir.exists() and (not opts.dir.is_dir() or any(opts.dir.iterdir())):
            from ...core.errors import UsageError

            raise UsageError(f"--dir {opts.dir}: {'not a folder' if not opts.dir.is_dir() else 'not empty'}; "
                             "expected a new or empty folder for the sample project")
        if opts.which == "routine":
            from .demoroutine import run as run_routine_demo

            return run_routine_demo(keep=opts.dir)
        from .demo import run as run_demo

        return run_demo(keep=opts.dir)
    if name == "attempts":
        from ..parsing import Parser

        parser = Parser(prog="loopwright attempts", description="Parallel attempts' leftovers.")
        parser.add_argument("action", choices=["clean"], help="clean: remove attempt worktrees an interrupted "
                            "run left (their branches stay)")
        parser.parse_args(args)
        from ..attempts import clean

        return clean(Path.cwd())
    if name == "rewind":
        from .rewind import run_rewind

        return run_rewind(args)
    if name == "session":
        from .sessions import run_session

        return run_session(args)
    if name == "sessions":
        from .sessions import run_sessions

        return run_sessions(args)
    if name == "goal":
        from .goal import run as run_goal

        return run_goal(args)
    if name == "schedule":
        from .schedule import run_schedule

        return run_schedule(args)
    if name == "routine":
        from .routines.command import run_routine

        return run_routine(args)
    if name == "scheduler":
        from .scheduler import run_scheduler

        return run_scheduler(args)
    if name == "serve":
        from .serve import run_serve

        return run_serve(args)
    if name == "mcp":
        from .mcp import run_mcp

        return run_mcp(args)
    if name == "trust":
        from .trust import run_trust

        return run_trust(args)
    if name == "workflow":
        from .workflow import run_workflow_command

        return run_workflow_command(args)
    if name in ("worker", "enqueue", "workers"):
        from . import worker

        return {"worker": worker.run_worker_command, "enqueue": worker.run_enqueue,
                "workers": worker.run_workers}[name](args)
    if name == "settings":
        from .settings import run_settings

        return run_settings(args)
    raise AssertionError(name)
