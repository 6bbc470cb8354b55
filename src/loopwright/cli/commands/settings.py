"""`loopwright settings check`: what was loaded from where — each file and its scope, each key
in effect with the file it came from, what a project file may not set (refused), what is
unknown or cannot work (warnings, errors), and whether this folder is trusted. Exit 2 on errors."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterator

from ..parsing import Parser


def parser() -> Parser:
    p = Parser(prog="loopwright settings", allow_abbrev=False,
                description="`loopwright settings check`: the settings files of this folder, checked.")
    p.add_argument("action", choices=["check"], help="check: list the files read, the ones missing, and "
                   "every key with the file it came from.")
    p.add_argument("--settings", metavar="FILE_OR_JSON", help="Check this too, read last (as for a run).")
    p.add_argument("--bare", action="store_true", help="Read no settings files (only --settings).")
    p.add_argument("--json", action="store_true", help="The report as one JSON object.")
    return p


def run_settings(args: list[str]) -> int:
    from ...settings import load_settings, settings_layers

    opts = parser().parse_args(args)
    settings = load_settings(Path.cwd(), settings=opts.settings, bare=opts.bare, strict=False)
    report = {
        "files": [{"file": source, "scope": settings.scope(i)} for i, source in enumerate(settings.sources)],
        "missing": [] if opts.bare else [str(path) for path, _ in settings_layers(Path.cwd())
                                         if not path.exists()],
        "keys": [{"key": key, "value": value, "from": sources} for key, value, sources in provenance(settings.layers)],
        "refused": [str(f) for f in settings.findings if f.level == "refused"],
        "warnings": [str(f) for f in settings.findings if f.level == "warning"],
        "errors": [str(f) for f in settings.findings if f.level == "error"],
        "trust": _trust(settings),
    }
    if opts.json:
        print(json.dumps(report, indent=1))
    else:
        _print(report)
    return 2 if report["errors"] else 0


def provenance(layers: Any) -> Iterator[tuple[str, Any, list[str]]]:
    """(key path, value in effect, the files it comes from), merging as `settings.merge` does:
    objects key by key, lists add up (each item from the file that first gave it), else the
    higher file wins. A hook event is one key: its groups add up."""
    found: dict[str, tuple[Any, list[str]]] = {}
    for source, data in layers:
        for key, value in _leaves(data):
            old = found.get(key)
            if old is not None and isinstance(old[0], list) and isinstance(value, list):
                new = [v for v in value if v not in old[0]]
                found[key] = (old[0] + new, old[1] + ([source] if new and source not in old[1] else []))
            else:
                found[key] = (value, [source])
    for key, (value, sources) in found.items():
        yield key, value, sources


def _leaves(data: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    for key, value in data.items():
        path = f"{prefix}{key}"
        if path == "hooks" and isinstance(value, dict):  # one key per hook event
            yield from ((f"hooks.{event}", groups) for event, groups in value.items())
        elif isinstance(value, dict):
            yield from _leaves(value, path + ".")  # an empty object (all refused) adds nothing
        else:
            yield path, value


def _trust(settings: Any) -> dict[str, Any]:
    from ...stores.trust import TrustStore
    from ..core import widened

    answer = TrustStore.default().answer(os.getcwd())
    state = {True: "trusted", False: "declined", None: "not asked yet"}[answer]
    return {"widens": widened(settings), "terminal": state}


def _print(report: dict[str, Any]) -> None:
    from ..core import printable

    def show(text: str) -> str:
        here = os.getcwd().rstrip("/") + "/"
        return printable(text.replace(here, "") if text.startswith(here) else text)

    print("Files read, lowest first:" if report["files"] else "No settings files read.")
    for f in report["files"]:
        print(f"  {f['scope']:<8} {show(f['file'])}")
    if report["keys"]:
        print("Keys in effect:")
    for k in report["keys"]:
        value = k["value"]
        text = f"{len(value)} group(s)" if k["key"].startswith("hooks.") and isinstance(value, list) \
            else json.dumps(value, ensure_ascii=False)
        text = text if len(text) <= 100 else text[:97] + "..."
        print(f"  {printable(k['key'])} = {printable(text)}  <- {', '.join(show(s) for s in k['from'])}")
    for title, key in (("Refused (a project file may not set these; ignored):", "refused"),
                       ("Warnings:", "warnings"), ("Errors (loopwright will not start):", "errors")):
        if report[key]:
            print(title)
            for line in report[key]:
                print(f"  {show(line)}")
    trust = report["trust"]
    if trust["widens"]:
        print(f"Project settings that run code or widen permissions: {printable(trust['widens'])}\n"
              f"  at the terminal: {trust['terminal']} (`loopwright trust .`); -p always applies them")
    if not (report["refused"] or report["warnings"] or report["errors"]):
        print("No problems found.")
