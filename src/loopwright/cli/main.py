"""The `loopwright` command: Claude Code's headless interface (`-p`, output formats, limits,
tools and permission flags) plus our subcommands (`demo`). Errors are one line, never a traceback."""

from __future__ import annotations

import sys
from typing import Any

from .. import __version__

SUBCOMMANDS = ("demo",)


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args in (["--version"], ["-v"]):  # fast path: no imports beyond the package root
        print(f"{__version__} (loopwright)")
        return 0
    if args and args[0] in SUBCOMMANDS:
        from . import subcommands

        return subcommands.run(args[0], args[1:])
    return _run_click(args)


def _run_click(args: list[str]) -> int:
    import click

    from ..errors import LoopwrightError

    try:
        outcome = _command().main(args=args, prog_name="loopwright", standalone_mode=False)
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except click.ClickException as exc:
        print(f"loopwright: error: {exc.format_message()}", file=sys.stderr)
        return 2
    except click.Abort:
        return 130
    except LoopwrightError as exc:
        print(f"loopwright: error: {exc}", file=sys.stderr)
        return exc.exit_code
    return int(outcome or 0)


def _command() -> Any:
    import click

    multi = {"multiple": True, "default": ()}

    @click.command(context_settings={"help_option_names": ["-h", "--help"]})
    @click.argument("prompt", required=False)
    @click.option("-p", "--print", "print_mode", is_flag=True, help="Run headless: answer the prompt and exit.")
    @click.option("--output-format", type=click.Choice(["text", "json", "stream-json"]), default="text")
    @click.option("--verbose", is_flag=True, help="Show turns and tool calls on stderr as they happen.")
    @click.option("--model", default=None, help="Model id or alias (opus, sonnet, haiku).")
    @click.option("--fallback-model", default=None, help="Comma-separated fallback models (at most 3).")
    @click.option("--max-turns", type=int, default=None)
    @click.option("--final-turn", is_flag=True, help="After --max-turns, one wrap-up call without tools.")
    @click.option("--max-budget-usd", type=float, default=None)
    @click.option("--max-tokens-total", type=int, default=None)
    @click.option("--max-duration", default=None, help="Wall-time limit such as 30m or 2h.")
    @click.option("--allowedTools", "--allowed-tools", "allowed", **multi)
    @click.option("--disallowedTools", "--disallowed-tools", "disallowed", **multi)
    @click.option("--tools", "tools_flag", default=None, help='Built-in tools to offer: "" none, "default" all, or "Bash,Read".')
    @click.option("--permission-mode", default="default")
    @click.option("--system-prompt", default=None)
    @click.option("--system-prompt-file", default=None)
    @click.option("--append-system-prompt", default=None)
    @click.option("--append-system-prompt-file", default=None)
    @click.option("--include-partial-messages", is_flag=True)
    @click.option("--session-id", default=None)
    @click.option("--version", is_flag=True)
    def command(**opts: Any) -> int:
        if opts.pop("version"):
            print(f"{__version__} (loopwright)")
            return 0
        from .headless import run_headless

        return run_headless(opts)

    return command


if __name__ == "__main__":
    raise SystemExit(main())
