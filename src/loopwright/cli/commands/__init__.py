"""Subcommands beside the headless interface: `loopwright demo` (offline, no key), `loopwright goal
status|clear`, `schedule …`, `scheduler`, `routine …`, `workflow run|list`, `attempts clean`,
`rewind`, `sessions`, `trust`, `mcp …`, `serve`, `settings check`, `completion bash|zsh|fish`,
and on a durable store `worker`, `enqueue` and `workers`."""

from __future__ import annotations

from importlib import import_module
from pathlib import Path
from typing import Any


# name -> (module of this package, its entry point, its parser), for the commands that take their
# own arguments; each module is imported only when its command runs (or its help or completion is asked)
_COMMANDS = {
    "replay": ("replay", "run_replay", "parser"),
    "rewind": ("rewind", "run_rewind", "parser"),
    "session": ("sessions", "run_session", "session_parser"),
    "sessions": ("sessions", "run_sessions", "sessions_parser"),
    "goal": ("goal", "run", "parser"),
    "schedule": ("schedule", "run_schedule", "parser"),
    "routine": ("routines.command", "run_routine", "parser"),
    "scheduler": ("scheduler", "run_scheduler", "parser"),
    "serve": ("serve", "run_serve", "parser"),
    "mcp": ("mcp", "run_mcp", "parser"),
    "trust": ("trust", "run_trust", "parser"),
    "workflow": ("workflow", "run_workflow_command", "parser"),
    "worker": ("worker", "run_worker_command", "worker_parser"),
    "enqueue": ("worker", "run_enqueue", "enqueue_parser"),
    "workers": ("worker", "run_workers", "workers_parser"),
    "settings": ("settings", "run_settings", "parser"),
    "completion": ("completion", "run_completion", "parser"),
}


def command_parser(name: str) -> Any:
    """The argument parser of subcommand `name` (for its help and for shell completion)."""
    if name == "demo":
        return _demo_parser()
    if name == "attempts":
        return _attempts_parser()
    module, _, make = _COMMANDS[name]
    return getattr(import_module(f".{module}", __name__), make)()


def _demo_parser() -> Any:
    from ..parsing import Parser

    parser = Parser(prog="loopwright demo", description="Run a scripted agent on a generated project, offline.")
    # `which` is checked after parsing, so an unknown flag (`--di x`) is named before its value is
    which = parser.add_argument("which", nargs="?", default="goal", metavar="{goal,routine}",
                                help="goal (the default): a verified goal loop; routine: the bug-report routine")
    which.completes = ("goal", "routine")  # type: ignore[attr-defined]
    parser.add_argument("--dir", type=Path, default=None, help="Create the sample project here (kept; the routine "
                        "demo puts it in DIR/project, beside its own home and temporary folder).")
    return parser


def _attempts_parser() -> Any:
    from ..parsing import Parser

    parser = Parser(prog="loopwright attempts", description="Parallel attempts' leftovers.")
    parser.add_argument("action", choices=["clean"], help="clean: remove attempt worktrees an interrupted "
                        "run left (their branches stay)")
    return parser


def run(name: str, args: list[str]) -> int:
    if name == "demo":
        parser = _demo_parser()
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
        _attempts_parser().parse_args(args)
        from ..attempts import clean

        return clean(Path.cwd())
    if name in _COMMANDS:
        module, function, _ = _COMMANDS[name]
        return getattr(import_module(f".{module}", __name__), function)(args)
    raise AssertionError(name)
