"""`loopwright routine list|show|run|items|pause|resume|rm`: the routines of this project
(`.loopwright/routines/NAME.yaml`), each fired by `routine run` (or by `loopwright scheduler`),
their items recorded in the ledger beside the schedules (`<LOOPWRIGHT_HOME>/schedules.db`)."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from ....core.errors import UsageError
from ...parsing import Parser
from ....compose.render import visible

FOLDER = Path(".loopwright") / "routines"


def routine_files(cwd: Path) -> list[Path]:
    folder = cwd / FOLDER
    return sorted(folder.glob("*.yaml")) if folder.is_dir() else []


def load_routine(path: Path) -> Any:
    """The routine of one file; `RoutineError` names the file, the key and what was expected."""
    import yaml  # only routines pay for it

    from ....proactive.routine import RoutineError, parse_routine

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise RoutineError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        # YAML's own report points at the spot with a caret under the line: keep its lines
        where = "\n".join(f"    {line}" for line in str(exc).splitlines())
        raise RoutineError(f"{path}: not YAML:\n{where}") from None
    return parse_routine(path.stem, str(path), data)


def find_routine(name: str, cwd: Path) -> Any:
    from ....proactive.routine import RoutineError

    path = cwd / FOLDER / f"{name}.yaml"
    if not path.is_file():
        known = ", ".join(p.stem for p in routine_files(cwd)) or "none"
        raise UsageError(f"no routine {name!r}: expected a file {FOLDER / (name + '.yaml')} (routines here: {known})")
    try:
        return load_routine(path)
    except RoutineError as exc:
        raise UsageError(str(exc)) from None


def ledger(flag: str | None = None) -> Any:
    """The routine ledger of `--store` (else LOOPWRIGHT_STORE), which the items' runs use too."""
    from ...core import run_stores

    return run_stores(flag, Path.cwd(), pass_on=True).ledger()


def _queue(name: str | None, routine: Any) -> tuple[str, str] | None:
    """(store URL, queue) for items sent to workers: the store of this run, which must be durable.
    A routine whose items run a workflow runs them here: a worker runs goal loops, not workflows."""
    if name is None:
        return None
    if routine.workflow:
        raise UsageError(f"--queue: the items of routine {routine.name!r} run the workflow {routine.workflow!r}, "
                         "and workers do not run workflows yet; fire it without --queue (with --store "
                         "postgresql://… its sessions and journals are still in the database)")
    from ....stores import store_url

    from ..worker import durable_libs, queue_name

    queue_name(name)
    url = store_url(None)  # --store was passed on to LOOPWRIGHT_STORE
    if not url.startswith(("postgresql://", "postgres://", "sqlite:///")):
        raise UsageError(f"--queue: items go to workers through a durable store; expected --store postgresql://… or "
                         f"sqlite:///PATH, got {url or 'the default store'!r}")
    return durable_libs(url), name


def ledger_key(routine: Any) -> str:
    """A routine's rows are keyed by its file's absolute path: two projects may name one alike."""
    return os.path.abspath(routine.path)


NAME_HELP = "The routine: .loopwright/routines/NAME.yaml (see `loopwright routine list`)."


def parser() -> Parser:
    from ....stores.ledger import STATUSES

    p = Parser(prog="loopwright routine", description="Routines: items found by a source, an agent run per "
               "item, each done once (.loopwright/routines/NAME.yaml).")
    sub = p.add_subparsers(dest="action", required=True)
    sub.add_parser("list", help="The routines of this folder.").add_argument("--json", action="store_true",
                                                                            help="A JSON array.")
    sub.add_parser("show", help="One routine, as read, and its ledger's counts.").add_argument("name", help=NAME_HELP)
    run = sub.add_parser("run", help="Fire it now and then on its trigger (with --once: now only).")
    run.add_argument("name", help=NAME_HELP)
    run.add_argument("--once", action="store_true", help="Fire once and exit.")
    run.add_argument("--dry-run", action="store_true", help="List the items a fire would take; run nothing.")
    run.add_argument("--queue", help="Send each item to this queue of `loopwright worker`s, which run it durably "
                     "(needs a postgresql:// or sqlite:/// --store or LOOPWRIGHT_STORE).")
    items = sub.add_parser("items", help="The ledger of its items.")
    items.add_argument("name", help=NAME_HELP)
    items.add_argument("--status", choices=STATUSES, help="Only the items in this state.")
    items.add_argument("--json", action="store_true", help="A JSON array.")
    add = sub.add_parser("add", help="Have `loopwright scheduler` fire it on its `every:` or `cron:`.")
    add.add_argument("name", help=NAME_HELP)
    add.add_argument("--now", action="store_true", help="Also fire at once, not only at the next step.")
    token = sub.add_parser("token", help="An `http:` routine's token for POSTing items (with --new: a new one).")
    token.add_argument("name", help=NAME_HELP)
    token.add_argument("--new", action="store_true", help="Replace the token; the old one stops working at once.")
    for name, what in (("pause", "The scheduler stops firing it."), ("resume", "Fire it again."),
                       ("rm", "Delete its file (its ledger stays).")):
        sub.add_parser(name, help=what).add_argument("name", help=NAME_HELP)
    for each in sub.choices.values():
        each.add_argument("--store", metavar="URL", help="Where ledgers and sessions live (default: "
                          "$LOOPWRIGHT_STORE, else the home's SQLite file).")
    return p


def run_routine(args: list[str]) -> int:
    opts = parser().parse_args(args)
    cwd = Path.cwd()
    if opts.action == "list":
        return _list(cwd, opts.json, opts.store)
    routine = find_routine(opts.name, cwd)
    store = ledger(opts.store)
    try:
        if routine.source_kind == "http":  # its token is made the first time it is seen
            store.token(ledger_key(routine), make=True)
        if opts.action == "token":
            return _token(routine, store, opts.new)
        if opts.action == "run":
            from .fire import fire_routine

            return fire_routine(routine, ledger_key(routine), store, once=opts.once, dry_run=opts.dry_run,
                                queue=_queue(opts.queue, routine))
        if opts.action == "show":
            _show(routine, store)
        elif opts.action == "items":
            _items(store.items(ledger_key(routine), opts.status), opts.json)
        elif opts.action == "add":
            _add(routine, store, opts.now)
        elif opts.action in ("pause", "resume"):
            store.set_paused(ledger_key(routine), opts.action == "pause")
        else:
            Path(routine.path).unlink()
            store.unregister(ledger_key(routine))
            store.drop_token(ledger_key(routine))  # a routine made again at that path gets a new one
            print(f"loopwright: removed {routine.path}; its ledger stays", file=sys.stderr)
    finally:
        store.close()
    return 0


def _add(routine: Any, store: Any, now: bool) -> None:
    from ....core.storeports import RoutineEntry
    from ....policy.cadence import schedule_step

    if not (routine.every_s or routine.cron):
        raise UsageError(f"routine add: {routine.path} has no `every:` or `cron:`, so the scheduler would never "
                         "fire it; add one (or fire it by hand with `loopwright routine run`)")
    at = time.time() if now else schedule_step(routine.every_s, routine.cron)(time.time())
    store.register(RoutineEntry(ledger_key(routine), routine.name, str(Path(routine.path).parents[2]),
                                routine.every_s, routine.cron, next_at=at))
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(at))
    print(visible(f"loopwright: routine {routine.name} ({trigger_of(routine)}) fires next at {when}; routines "
                  "fire only while `loopwright scheduler` runs"), file=sys.stderr)


def _token(routine: Any, store: Any, new: bool) -> int:
    if routine.source_kind != "http":
        raise UsageError(f"routine token: {routine.path} takes its items from its `{routine.source_kind}:` source; "
                         "only a routine with `source: {http: true}` has a token")
    print(store.new_token(ledger_key(routine)) if new else store.token(ledger_key(routine)))
    if new:
        print(f"loopwright: routine {routine.name} has a new token; the old one no longer works", file=sys.stderr)
    return 0


def trigger_of(routine: Any) -> str:
    from ....policy.cadence import cadence

    return routine.cron or (cadence(routine.every_s).cron if routine.every_s else "run by hand")


def _list(cwd: Path, as_json: bool, flag: str | None = None) -> int:
    from ....proactive.routine import RoutineError

    rows: list[dict[str, Any]] = []
    store = ledger(flag)
    try:
        for path in routine_files(cwd):
            try:
                r = load_routine(path)
            except RoutineError as exc:
                rows.append({"name": path.stem, "error": str(exc)})
                continue
            counts: dict[str, int] = {}
            for item in store.items(ledger_key(r)):
                counts[item.status] = counts.get(item.status, 0) + 1
            rows.append({"name": r.name, "trigger": trigger_of(r), "source": f"{r.source_kind}: {r.source}",
                         "paused": store.paused(ledger_key(r)), "items": counts})
    finally:
        store.close()
    if as_json:
        print(json.dumps(rows))
    for row in [] if as_json else rows:
        if "error" in row:
            print(visible(f"{row['name']}  invalid: {row['error']}"))
            continue
        tally = " ".join(f"{k} {v}" for k, v in sorted(row["items"].items())) or "no items yet"
        state = "  paused" if row["paused"] else ""
        print(visible(f"{row['name']}  {row['trigger']:<14} {row['source'][:50]}  {tally}{state}"))
    return 0


def _show(routine: Any, store: Any) -> None:
    r = routine
    lines = [f"routine {r.name} ({r.path})", f"trigger: {trigger_of(r)}", f"source: {r.source_kind}: {r.source}",
             f"{'goal' if r.goal else 'prompt'}: {r.template}"]
    lines += [f"check: {c}" for c in r.check] + [f"protect: {p}" for p in r.protect]
    limits = [f"{k} {getattr(r, k)}" for k in ("max_turns", "max_budget_usd", "max_duration")
              if getattr(r, k) is not None]
    fire = [f"{k} {getattr(r, 'fire_' + k)}" for k in ("max_items", "max_budget_usd")
            if getattr(r, "fire_" + k) is not None]
    lines.append(f"limits: per item {', '.join(limits) or 'none'}; per fire {', '.join(fire) or 'none'}; "
                 f"concurrency {r.concurrency}; retry_failed {r.retry_failed}")
    if r.report:
        lines.append(f"report: {r.report}")
    if r.source_kind == "http":
        from ....proactive.routine import placeholders

        example = json.dumps({f: "…" for f in ["id", *placeholders(r.template)]}, ensure_ascii=False)
        lines += [f"token: {store.token(ledger_key(r))}",
                  f"post items: curl -H 'Authorization: Bearer <token>' -H 'Content-Type: application/json' "
                  f"-d '{example}' http://127.0.0.1:PORT/routines/{r.name}/items  "
                  "(to `loopwright serve` run in this folder)"]
    counts: dict[str, int] = {}
    for item in store.items(ledger_key(r)):
        counts[item.status] = counts.get(item.status, 0) + 1
    lines.append("items: " + (", ".join(f"{v} {k}" for k, v in sorted(counts.items())) or "none yet"))
    entry = store.entry(ledger_key(r))
    if entry is not None and entry.next_at is not None:
        lines.append("scheduler: next fire at " + time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(entry.next_at)))
    else:
        lines.append("scheduler: not added (`loopwright routine add NAME`); fired by `routine run` only")
    if store.paused(ledger_key(r)):
        lines.append("paused: the scheduler does not fire it")
    print(visible("\n".join(lines)))


def _fields(item: Any) -> dict[str, Any]:
    """A POSTed item's fields, as they were POSTed."""
    try:
        return {"fields": json.loads(item.fields)} if item.fields else {}
    except ValueError:
        return {}


def _items(items: list[Any], as_json: bool) -> None:
    if as_json:
        print(json.dumps([{"id": i.item_id, "status": i.status, "tries": i.tries, "session_id": i.session_id,
                           "cost_usd": i.cost_usd, "outcome": i.outcome, "created": i.created,
                           "started": i.started, "ended": i.ended, **_fields(i)} for i in items]))
        return
    for i in items:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(i.ended or i.started or i.created))
        print(visible(f"{i.item_id}  {i.status:<11} tries {i.tries}  ${i.cost_usd:.4f}  {when}  "
                      f"{' '.join(i.outcome.split())[:70]}"))
