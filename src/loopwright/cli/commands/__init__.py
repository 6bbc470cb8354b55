"""Subcommands beside the headless interface: `loopwright demo` (offline, no key), `loopwright goal
status|clear`, `schedule …`, `scheduler`, `routine …`, `workflow run|list`, `attempts clean`,
`rewind`, `sessions`, `trust`, `mcp …`, `serve`, `settings check`, and on a durable store
`worker`, `enqueue` and `workers`."""

from __future__ import annotations

from pathlib import Path


# name -> (module of this package, its entry point), for the commands that take their own arguments
_COMMANDS = {
    "replay": ("replay", "run_replay"),
    "rewind": ("rewind", "run_rewind"),
    "session": ("sessions", "run_session"),
    "sessions": ("sessions", "run_sessions"),
    "goal": ("goal", "run"),
    "schedule": ("schedule", "run_schedule"),
    "routine": ("routines.command", "run_routine"),
    "scheduler": ("scheduler", "run_scheduler"),
    "serve": ("serve", "run_serve"),
    "mcp": ("mcp", "run_mcp"),
    "trust": ("trust", "run_trust"),
    "workflow": ("workflow", "run_workflow_command"),
    "worker": ("worker", "run_worker_command"),
    "enqueue": ("worker", "run_enqueue"),
    "workers": ("worker", "run_workers"),
    "settings": ("settings", "run_settings"),
}


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
    if name in _COMMANDS:  # each command's module is imported only when it runs
        from importlib import import_module

        module, function = _COMMANDS[name]
        return getattr(import_module(f".{module}", __name__), function)(args)
    raise AssertionError(name)
