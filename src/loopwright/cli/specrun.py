"""`loopwright --run-spec SPEC [FLAGS]` (hidden): a stored run — a `RunSpec` as JSON, inline, in a
file, or `-` for stdin — run as `loopwright -p` runs its flags, printing what `-p` prints. Schedule
fires and replays start their runs this way, so nothing re-parses a command line they stored. FLAGS
(`-p`'s) replace the spec's value of each field they set; what is piped on stdin is the prompt only
when neither gives one."""

from __future__ import annotations

import dataclasses
import json
import sys
from dataclasses import fields
from typing import Any

from ..compose.runspec import RunSpec
from ..core.errors import UsageError
from .core import MAX_STDIN
from .options import Options, parse_options

FLAG = "--run-spec"


def spec_options(args: list[str]) -> Options:
    """The `Options` of `--run-spec SPEC [FLAGS]`: the spec, then the flags over it, then the
    prompt from stdin if neither has one (stdin is read here either way: `-p` would add it to the prompt)."""
    if not args:
        raise UsageError(f"{FLAG}: expected a run spec as JSON ({{\"version\": 1, …}}), the file that holds one, "
                         "or - (read it from stdin)")
    source, flags = args[0], args[1:]
    opts = overlay(read_spec(_read(source), source), flags)
    piped = "" if source == "-" or sys.stdin is None or sys.stdin.isatty() else sys.stdin.read(MAX_STDIN)
    if opts.prompt is None and piped.strip():
        return dataclasses.replace(opts, prompt=piped.strip())
    return opts


def _read(source: str) -> str:
    if source == "-":
        return sys.stdin.read(MAX_STDIN)
    if source.lstrip().startswith("{"):
        return source
    try:
        with open(source, encoding="utf-8") as f:
            return f.read()
    except OSError as exc:
        raise UsageError(f"{FLAG} {source}: cannot read it ({exc.strerror or exc})") from None


def read_spec(text: str, source: str = "-") -> RunSpec:
    """A run spec from its JSON text. `{"argv": [...]}` is the command line a session recorded before
    sessions kept their spec (a replay of one hands it on): read here, with the flags' own parser."""
    where = "stdin" if source == "-" else "(inline)" if source.lstrip().startswith("{") else source
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"{FLAG} {where}: not JSON ({exc}); expected a run spec ({{\"version\": 1, …}})") from None
    if isinstance(data, dict) and set(data) == {"argv"}:
        argv = data["argv"]
        if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
            raise UsageError(f"{FLAG} {where}: field 'argv': expected a list of strings, got {argv!r}")
        return argv_spec(argv)
    try:
        return RunSpec.from_json(data)
    except UsageError as exc:
        raise UsageError(f"{FLAG} {where}: {exc}") from None


def argv_spec(argv: list[str]) -> RunSpec:
    """The run a command line a session recorded describes (`-p` or interactive), read with today's
    parser."""
    return parse_options(argv if argv[:1] in (["-p"], ["--print"]) else ["-p", *argv]).run_spec()


def overlay(spec: RunSpec, flags: list[str]) -> Options:
    """`spec` as the Options of `-p`, each field the flags set (to other than its default) replaced."""
    given = parse_options(["-p", *flags]) if flags else Options(print_mode=True)
    values: dict[str, Any] = {f.name: getattr(spec, f.name) for f in fields(RunSpec)}
    for f in fields(Options):
        if f.name == "argv":
            continue
        value = getattr(given, f.name)
        if f.name not in values or value != f.default:
            values[f.name] = value
    return Options(**values)
