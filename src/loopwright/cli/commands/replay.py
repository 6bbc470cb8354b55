"""`loopwright replay SESSION [-- RUN FLAGS]`: run a recorded session again offline, with today's
settings, hooks, rules, goal and tools, in a scratch copy of its project, the model answering as
the record did, and say where the replay leaves the record (`--json` for the report as JSON).
The report is kept as the session's last replay (its page in `loopwright serve` shows it).
`--check DIR`: every transcript in DIR, exit 1 on any divergence (for CI). `--export SESSION OUT`:
the session trimmed and scrubbed of secrets, to commit as a fixture. Exit 1 on a divergence."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ...core.errors import UsageError
from ..parsing import Parser
from ...compose.render import visible


def parser() -> Parser:
    p = Parser(prog="loopwright replay", description="Replay a recorded session offline against today's loop.",
               epilog="Flags after `--` replace what the record says of what they set: "
                      "`loopwright replay ID -- --max-turns 3`.")
    p.add_argument("session", nargs="?", metavar="SESSION", help="A session id (see `loopwright sessions --all`) "
                   "or a .jsonl transcript.")
    p.add_argument("out", nargs="?", metavar="OUT", help="With --export: the transcript file to write.")
    p.add_argument("--check", metavar="DIR", type=Path, help="Replay every .jsonl transcript in DIR (not its "
                   "sidechain folders); exit 1 if any diverges.")
    p.add_argument("--export", action="store_true", help="Write SESSION to OUT trimmed (only what a replay reads) "
                   "and scrubbed (API keys and tokens, Authorization values, paths under your home as ~).")
    p.add_argument("--json", action="store_true", help="The report as JSON.")
    p.add_argument("--store", metavar="URL", help="Where the session lives (default: $LOOPWRIGHT_STORE).")
    p.add_argument("--wire", choices=("anthropic", "openai"), help="The API the simulator speaks (default: as "
                   "recorded: Messages for Claude models, Chat Completions otherwise).")
    p.add_argument("--keep", metavar="DIR", type=Path, help="Build the project copy in DIR and keep it.")
    return p


def run_replay(args: list[str]) -> int:
    flags: list[str] = []
    if "--" in args:
        at = args.index("--")
        args, flags = args[:at], args[at + 1:]
    opts = parser().parse_args(args)
    if opts.export:
        if not opts.session or not opts.out:
            raise UsageError("--export needs SESSION and OUT: loopwright replay --export SESSION OUT")
        from ...replay.export import export

        written = export(opts.session, Path(opts.out), store=opts.store)
        print(visible(f"wrote {written}"))
        return 0
    if opts.out is not None:
        raise UsageError(f"unexpected argument {opts.out!r} (OUT goes with --export)")
    if opts.check is not None:
        if opts.session:
            raise UsageError("give either SESSION or --check DIR, not both")
        return _check(opts.check, flags, opts.json, opts.wire)
    if not opts.session:
        raise UsageError("give a SESSION to replay (an id or a .jsonl transcript), or --check DIR")
    from ...testing.replay.run import replay_session

    report = replay_session(opts.session, store=opts.store, flags=flags, wire=opts.wire, keep=opts.keep)
    _keep(report.to_json(), flags)
    print(json.dumps(report.to_json(), indent=2, ensure_ascii=False) if opts.json else visible(report.text()))
    return 0 if report.ok else 1


def _keep(report: dict, flags: list[str]) -> None:
    """The report kept as the session's last replay, for its page in the web view."""
    from ...core.home import home
    from ...replay.kept import save

    try:
        save(home(), report, flags)
    except OSError as exc:  # the replay itself is done: say what was not kept, and go on
        print(visible(f"loopwright: warning: the replay's report was not kept for the web view: {exc}"),
              file=sys.stderr)


def _check(folder: Path, flags: list[str], as_json: bool, wire: str | None) -> int:
    from ...testing.replay.run import replay_session

    if not folder.is_dir():
        raise UsageError(f"--check {folder}: not a folder; expected a folder of .jsonl transcripts")
    files = sorted(folder.glob("*.jsonl"))
    if not files:
        raise UsageError(f"--check {folder}: no .jsonl transcript in it")
    reports = [replay_session(str(f), flags=flags, wire=wire) for f in files]
    if as_json:
        print(json.dumps({"diverged": sum(not r.ok for r in reports),
                          "sessions": [r.to_json() for r in reports]}, indent=2, ensure_ascii=False))
    else:
        for path, report in zip(files, reports):
            first = report.first
            line = f"ok        {path.name}" if first is None else \
                f"DIVERGED  {path.name}: {first.kind} in {first.chain}: {first.why}"
            print(visible(line))
        bad = sum(not r.ok for r in reports)
        print(visible(f"{len(reports) - bad} of {len(reports)} session(s) replay without divergence"),
              file=sys.stderr)
    return 0 if all(r.ok for r in reports) else 1
