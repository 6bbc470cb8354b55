"""The `loopwright` command: parse the flags once, then hand them to the one command that serves
them — the interactive session, stream-json input, a time-based loop, a headless prompt — or to a
subcommand. Errors are one line, never a traceback."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from .. import __version__

if TYPE_CHECKING:
    from .options import Options

SUBCOMMANDS = ("demo", "goal", "mcp", "schedule", "scheduler", "sessions", "settings", "trust")


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args in (["--version"], ["-v"]):  # fast path: no imports beyond the package root
        print(f"{__version__} (loopwright)")
        return 0
    from ..core.errors import LoopwrightError

    _escape_undecodable()
    opts = None
    try:
        if args and args[0] in SUBCOMMANDS:
            from . import subcommands

            return subcommands.run(args[0], args[1:])
        from .options import parse_options

        opts = parse_options(args)
        if opts.version:
            print(f"{__version__} (loopwright)")
            return 0
        _not_a_subcommand(opts.prompt)
        return _dispatch(opts)
    except LoopwrightError as exc:
        from .crash import early_result
        from .render import visible

        print(f"loopwright: error: {visible(str(exc))}", file=sys.stderr, flush=True)
        if not (args and args[0] in SUBCOMMANDS):
            early_result(opts, args, str(exc))
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # the last resort: one line and a result, the traceback in a log file
        from .crash import report_crash

        return report_crash(exc, opts)


def _not_a_subcommand(prompt: str | None) -> None:
    """A one-word prompt a letter or two from a subcommand (`loopwright sheduler`) is a typo far
    more often than a prompt: refused with the command that was meant."""
    word = (prompt or "").strip()
    if len(word.split()) != 1 or len(word) < 3 or word.startswith("/"):  # /goal, /loop: commands
        return
    from ..core.errors import UsageError
    from ..policy.names import nearest

    meant = nearest(word, SUBCOMMANDS, 1 if len(word) <= 5 else 2)  # a short word: one slip, not two
    if meant is not None:
        raise UsageError(f"{word!r} looks like a subcommand: did you mean `loopwright {meant}`? To send it "
                         "to the model as a prompt, say it in more than one word")


def _escape_undecodable() -> None:
    """Bytes on stdin that are not UTF-8 arrive escaped, and text that UTF-8 cannot hold (a lone
    surrogate) is printed escaped: neither is a traceback."""
    for stream, errors in ((sys.stdin, "surrogateescape"), (sys.stdout, "backslashreplace")):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors=errors)


def _dispatch(opts: Options) -> int:
    if not opts.print_mode and sys.stdin.isatty() and sys.stdout.isatty():
        from .interactive import run_interactive

        return run_interactive(opts)
    # piped use without -p behaves as -p
    if opts.input_format == "stream-json":  # stdin is a stream of messages, not the prompt
        from .streamin import run_stream_input

        return run_stream_input(opts)
    from .core import is_loop, read_prompt

    prompt = read_prompt(opts.prompt, required=not (opts.goal or opts.goal_file))
    if is_loop(prompt):
        from .loopcmd import run_loop

        return run_loop(opts, prompt)
    from .headless import run_headless

    return run_headless(opts, prompt)


if __name__ == "__main__":
    raise SystemExit(main())
