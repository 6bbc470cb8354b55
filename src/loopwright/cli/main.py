"""The `loopwright` command: parse the flags once, then hand them to the one command that serves
them — the interactive session, stream-json input, a time-based loop, a headless prompt — or to a
subcommand. Errors are one line, never a traceback."""

from __future__ import annotations

import io
import sys
from typing import TYPE_CHECKING

from .. import __version__

if TYPE_CHECKING:
    from .options import Options


CLOSED_PIPE = 141  # 128 + SIGPIPE: what a shell reports for `git log | head -1`


def main(argv: list[str] | None = None) -> int:
    """The command, ended quietly when its reader closed the pipe (`loopwright sessions | head -1`):
    no error line, no crash log, exit 141 as the shell shows for git and other Unix tools."""
    try:
        return _main(argv)
    except BaseException as exc:
        from ..core.errors import reader_gone

        if not reader_gone(exc):
            raise
        if not _stdout_gone():  # a pipe of something else (a child process) broke: that is a bug
            from .crash import report_crash

            return report_crash(exc, None)  # type: ignore[arg-type]
        _stdout_to_devnull()
        return CLOSED_PIPE


def _stdout_gone() -> bool:
    """Whether stdout is a pipe (or socket) whose reader has closed it."""
    import select

    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(mask & (select.POLLERR | select.POLLHUP) for _, mask in poller.poll(0))
    except (AttributeError, ValueError, OSError):  # no poll() here, or no stdout descriptor: trust the error
        return True


def _stdout_to_devnull() -> None:
    """What is still buffered for stdout goes nowhere, so the interpreter's last flush at exit
    does not complain about the closed pipe."""
    import os

    try:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, sys.stdout.fileno())
        os.close(fd)
    except (AttributeError, ValueError, OSError):
        pass  # no descriptor to replace: nothing buffered can reach a pipe


def _main(argv: list[str] | None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args in (["--version"], ["-v"]):  # fast path: no imports beyond the package root
        print(f"{__version__} (loopwright)")
        return 0
    _without_httpx_cli()
    from ..core.errors import LoopwrightError
    from .parsing import refuse_subcommand_slip, subcommand_of

    _escape_undecodable()
    opts = None
    sub = subcommand_of(args)
    try:
        if sub is not None:
            from . import commands

            return commands.run(sub, args[1:])
        if args[:1] == ["--run-spec"]:  # hidden: a stored run (schedule fires, replays), as -p runs it
            from .specrun import spec_options

            opts = spec_options(args[1:])
            return _dispatch(opts)
        opts = _parse(args)
        if opts.version:
            print(f"{__version__} (loopwright)")
            return 0
        refuse_subcommand_slip(opts.prompt)
        return _dispatch(opts)
    except LoopwrightError as exc:
        from .crash import early_result
        from ..compose.render import visible

        print(f"loopwright: error: {visible(str(exc))}", file=sys.stderr, flush=True)
        if sub is None:
            early_result(opts, args, str(exc))
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # the last resort: one line and a result, the traceback in a log file
        from ..core.errors import reader_gone
        from .crash import report_crash

        if reader_gone(exc):
            raise  # a closed pipe is no bug: main() ends quietly

        return report_crash(exc, opts)


def _parse(args: list[str]) -> Options:
    """The flags; a parse that fails on a slip of a subcommand (`loopwright sheduler list`) names
    the subcommand meant, not the words after it."""
    from ..core.errors import UsageError
    from ..policy.names import subcommand_slip
    from .options import parse_options, parser
    from .parsing import SUBCOMMANDS, slip_error

    try:
        return parse_options(args)
    except UsageError as exc:
        if "unrecognized arguments" not in str(exc):
            raise
        try:
            prompt = parser().parse_known_args(args)[0].prompt
        except UsageError:
            raise exc from None
        if (meant := subcommand_slip(prompt, SUBCOMMANDS, words_too=True)) is None:
            raise
        raise slip_error(prompt.strip(), meant) from None


def _without_httpx_cli() -> None:
    """httpx imports its own command-line tool (click, rich and pygments: 50–90 ms) whenever those
    happen to be installed — and rich is, for the terminal. This process never runs httpx's
    command line, so the module is stood in for before httpx loads."""
    if "httpx" in sys.modules:
        return
    import types

    stand_in = types.ModuleType("httpx._main")

    def main(*args: object, **kwargs: object) -> None:
        raise SystemExit("httpx's command line is not available inside loopwright; run `httpx` itself")

    stand_in.main = main  # type: ignore[attr-defined]
    sys.modules.setdefault("httpx._main", stand_in)


def _escape_undecodable() -> None:
    """Bytes on stdin that are not UTF-8 arrive escaped, and text that UTF-8 cannot hold (a lone
    surrogate) is printed escaped: neither is a traceback."""
    for stream, errors in ((sys.stdin, "surrogateescape"), (sys.stdout, "backslashreplace")):
        if isinstance(stream, io.TextIOWrapper):  # not when a caller swapped in a stream of its own
            stream.reconfigure(errors=errors)


def _dispatch(opts: Options) -> int:
    from .sdk.flags import check_sdk_flags

    check_sdk_flags(opts)
    if not opts.print_mode and sys.stdin.isatty() and sys.stdout.isatty():
        from .interactive import run_interactive

        return run_interactive(opts)
    # piped use without -p behaves as -p
    if opts.input_format == "stream-json":  # stdin is a stream of messages, not the prompt
        from .sdk.mode import run_sdk  # with the control channel the Agent SDK speaks

        return run_sdk(opts)
    from .core import is_loop, read_prompt

    prompt = read_prompt(opts.prompt, required=not (opts.goal or opts.goal_file))
    if is_loop(prompt):
        from .loopcmd import run_loop

        return run_loop(opts, prompt)
    if prompt.lstrip().startswith("/"):
        from .commands.workflow import run_named, slash_workflow

        if (called := slash_workflow(prompt, opts)) is not None:
            return run_named(opts, *called)
    if opts.attempts is not None or opts.attempt_instructions or opts.judge_model or opts.keep_worktrees:
        if opts.attempts is None:
            from ..core.errors import UsageError

            raise UsageError("--attempt-instructions, --judge-model and --keep-worktrees go with --attempts N")
        from .attempts import run_attempts

        return run_attempts(opts, prompt)
    from .headless import run_headless

    return run_headless(opts, prompt)


if __name__ == "__main__":
    raise SystemExit(main())
