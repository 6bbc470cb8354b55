"""The pages: the sessions list (filters, pages), one session (streamed record by record), the
schedules with their fires and actions, and the cost per day and model."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterator, Sequence

from ..stores.sessionlist import _locked, attempt_label
from .chart import cost_chart
from .html import badge, duration, esc, foot, head, hidden, link, money, query, started, table, when
from .index import FILTERS, SessionIndex
from .sidechains import Sidechains
from .transcript import Renderer, lines

PAGE_SIZE = 50
LABELS = {"project": "project", "model": "model", "outcome": "terminal reason", "goal": "goal"}


def sessions_page(index: SessionIndex, params: dict[str, str]) -> str:
    index.refresh_soon()
    filters, text, page = _list_params(params)
    follow = query("/list/events", q=text, page=page, **filters)
    return (head("Sessions", "/") + _filter_form(index, filters, text) +
            f'<div id="list" data-src="{esc(follow)}">{sessions_list(index, params)}</div>' + foot())


def sessions_list(index: SessionIndex, params: dict[str, str]) -> str:
    """The count, the rows and the pager of one page of the list: the part of the page that the
    list's event stream sends again whenever a row changes (a session starts, goes on, ends)."""
    filters, text, page = _list_params(params)
    rows, total = index.page(filters, text, (page - 1) * PAGE_SIZE, PAGE_SIZE)
    body = [f'<p class="count">{total:,} session(s){" match" if text or any(filters.values()) else ""}</p>']
    cells = [_row(r) for r in rows]
    body.append(table(("started", "project", "model", "turns", "cost", "duration", "terminal reason", "goal",
                       "first prompt"), cells, "sessions") if rows else '<p class="empty">No sessions.</p>')
    body.append(_pager(page, total, filters, text))
    return "".join(body)


def sessions_json(index: SessionIndex, params: dict[str, str]) -> dict[str, Any]:
    """`/api/sessions`: the rows of one page of the list as data, with the same filters, search
    and pages; an attempt's row carries its mark and the label `loopwright sessions` prints."""
    filters, text, page = _list_params(params)
    rows, total = index.page(filters, text, (page - 1) * PAGE_SIZE, PAGE_SIZE)
    out = []
    for r in rows:
        row = {k: v for k, v in r.items() if k not in ("path", "costs", "damaged")}
        row.update(outcome=_outcome(r), costs=json.loads(r["costs"]), damaged_lines=r["damaged"],
                   attempt_label=attempt_label(r["attempt"]))
        out.append(row)
    return {"total": total, "page": page, "page_size": PAGE_SIZE, "sessions": out}


def _list_params(params: dict[str, str]) -> tuple[dict[str, str], str, int]:
    filters = {k: params.get(k, "") for k in FILTERS}
    page = max(1, int(params["page"])) if params.get("page", "").isdigit() else 1
    return filters, params.get("q", "").strip(), page


def _row(r: dict[str, Any]) -> list[str]:
    outcome = _outcome(r)
    prompt = r["first_prompt"] or r["id"]
    return [esc(started(r["started"])), f'<span title="{esc(r["folder"])}">{esc(_short(r["folder"]))}</span>',
            esc(r["model"] or "-"), esc(r["turns"]), money(r["cost_usd"]), duration(r["duration_ms"]),
            badge(outcome or "-", outcome), badge(r["goal"] or "-", r["goal"]),
            _attempt(r["attempt"]) + link(f"/s/{r['id']}", prompt, "open")]


def _outcome(r: dict[str, Any]) -> str:
    return "running" if _locked(Path(r["path"])) else r["outcome"]


def _attempt(mark: dict[str, Any] | None) -> str:
    """An attempt's mark before its prompt: `attempt 2/3 of run 1a2b3c4d, won`."""
    if not mark:
        return ""
    kind = "pending" if mark.get("won") is None else "won" if mark["won"] else "lost"
    run = esc(mark.get("run", ""))
    return f'<span class="badge attempt-mark {kind}" data-run="{run}">{esc(attempt_label(mark))}</span> '


def _short(folder: str) -> str:
    parts = folder.rstrip("/").split("/")
    return "/".join(parts[-2:]) if len(parts) > 2 else folder


def _filter_form(index: SessionIndex, filters: dict[str, str], text: str) -> str:
    fields = [f'<label>search <input name="q" value="{esc(text)}" placeholder="prompt, id or folder"></label>']
    for key in FILTERS:
        if key == "project" and index.only is not None:
            continue
        options = "".join(f'<option value="{esc(v)}"{" selected" if v == filters[key] else ""}>{esc(v)}</option>'
                          for v in index.choices(key))
        fields.append(f'<label>{esc(LABELS[key])} <select name="{key}"><option value="">any</option>{options}'
                      "</select></label>")
    return f'<form class="filters" method="get" action="/">{"".join(fields)}<button>Filter</button> {link("/", "clear")}</form>'


def _pager(page: int, total: int, filters: dict[str, str], text: str) -> str:
    last = max(1, -(-total // PAGE_SIZE))
    out = []
    if page > 1:
        out.append(link(query("/", q=text, page=page - 1, **filters), "← newer"))
    out.append(f"page {page} of {last}")
    if page < last:
        out.append(link(query("/", q=text, page=page + 1, **filters), "older →", "next"))
    return f'<p class="pager">{" · ".join(out)}</p>'


def session_page(index: SessionIndex, path: Path, session_id: str, replay: str = "") -> Iterator[str]:
    """The page in pieces: the head at once, then the records in batches, then the live marker.
    `replay`: the section about its replay (web/replayed.py), after the facts."""
    row = next((r for r in index.page({}, session_id, 0, 5)[0] if r["id"] == session_id), None)
    yield head(f"Session {session_id}")
    if row is not None:
        facts = [("project", row["folder"]), ("started", started(row["started"])), ("model", row["model"] or "-"),
                 ("turns", row["turns"]), ("cost", money(row["cost_usd"])), ("duration", duration(row["duration_ms"])),
                 ("terminal reason", row["outcome"] or "-"), ("goal", row["goal"] or "-")]
        if row["attempt"]:
            facts.append(("attempt", attempt_label(row["attempt"])))
        yield '<dl class="facts">' + "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in facts) + "</dl>"
    yield replay
    yield '<div id="records">'
    renderer, offset, batch = Renderer(raw=raw_link(session_id)), 0, []
    subagents = Sidechains(path)
    for at, offset, record in lines(path):
        batch.append(renderer.record(record, at) + subagents.after(record) if record is not None else
                     '<div class="rec damaged">a damaged line (not JSON) was skipped</div>')
        if len(batch) >= 100:
            yield "".join(batch)
            batch = []
    yield "".join(batch) + subagents.rest() + "</div>"
    if _locked(path):
        src = query(f"/s/{session_id}/events", offset=offset, turn=renderer.turn)
        yield f'<p id="live" class="live" data-src="{esc(src)}">running: follows the session as it goes</p>'
    yield foot()


def raw_link(session_id: str) -> Any:
    """The address of one whole line of a session's transcript, by where it starts."""
    return lambda at: query(f"/s/{session_id}/raw", at=at)


def schedules_page(store: Any, token: str | None, ledger: Any = None) -> str:
    schedules = store.schedules()
    body = [head("Schedules", "/schedules"),
            '<p class="note">Schedules fire while <code>loopwright scheduler</code> runs; “run now” makes one due at '
            "once.</p>"]
    if token is None:
        body.append('<p class="warn">Actions need the token: open the address with <code>?token=…</code> that '
                    "<code>loopwright serve</code> printed.</p>")
    if not schedules:
        body.append('<p class="empty">No schedules (add one with <code>loopwright schedule add</code>).</p>')
    for s in schedules:
        body.append(_schedule(store, s, token))
    return "".join(body) + routines_section(ledger, token) + foot()


def routines_section(ledger: Any, token: str | None) -> str:
    """Each routine: its trigger and next fire, pause and resume, what it spent, and its ledger —
    every item's state, tries, cost and session."""
    keys = ledger.known() if ledger is not None else []
    if not keys:
        return '<h2>Routines</h2><p class="empty">No routines (see <code>loopwright routine</code>).</p>'
    return "<h2>Routines</h2>" + _costs(ledger, keys) + "".join(_routine(ledger, key, token) for key in keys)


def _costs(ledger: Any, keys: list[str]) -> str:
    """Cost per routine: what all its items cost, and its last fire."""
    rows = []
    for key in keys:
        entry, fires = ledger.entry(key), ledger.fires(key, 1) if hasattr(ledger, "fires") else []
        name = entry.name if entry is not None and entry.name else os.path.basename(key).rsplit(".", 1)[0]
        rows.append([esc(name), money(sum(i.cost_usd for i in ledger.items(key))),
                     f"{money(fires[0].cost_usd)} at {esc(when(fires[0].fire_at))}" if fires else "-"])
    return table(("routine", "cost in all", "last fire"), rows, "routine-costs")


def _routine(ledger: Any, key: str, token: str | None) -> str:
    entry, items = ledger.entry(key), ledger.items(key)
    paused = ledger.paused(key)
    name = entry.name if entry is not None and entry.name else os.path.basename(key).rsplit(".", 1)[0]
    trigger = (entry.cron or f"every {entry.every_s} s") if entry is not None and (entry.cron or entry.every_s) else \
        "run by hand"
    counts = ", ".join(f"{sum(1 for i in items if i.status == st)} {st}" for st in
                       ("done", "running", "failed", "interrupted", "pending", "skipped")
                       if any(i.status == st for i in items)) or "no items yet"
    facts = (f"{badge('paused' if paused else 'active')} {esc(trigger)} · next fire "
             f"{esc(when(entry.next_at if entry is not None else None))} · {esc(counts)} · spent "
             f"{money(sum(i.cost_usd for i in items))} · <code>{esc(key)}</code>")
    ident = _anchor(key)
    actions = "".join(_action(ident, act, token, "routines") for act, show in (("pause", not paused),
                                                                             ("resume", paused)) if show)
    rows = table(("item", "status", "tries", "cost", "session", "outcome"), [
        [esc(i.item_id[:60]), badge(i.status), esc(i.tries), money(i.cost_usd),
         link(f"/s/{i.session_id}", i.session_id[:8]) if i.session_id else "-", esc(" ".join(i.outcome.split())[:120])]
        for i in items], "items") if items else ""
    return (f'<section class="routine" id="routine-{esc(ident)}"><h3>{esc(name)}</h3><p>{facts}</p>'
            f'<div class="actions">{actions}</div>{_fires(ledger, key)}{rows}</section>')


def _fires(ledger: Any, key: str) -> str:
    """Cost per fire: the sum of the costs of the items each fire ran (latest fires first)."""
    fires = ledger.fires(key) if hasattr(ledger, "fires") else []
    if not fires:
        return ""
    rows = [[esc(when(f.fire_at)), esc(f.items), esc(f.done), esc(f.failed),
             duration((f.ended - f.fire_at) * 1000), money(f.cost_usd)] for f in fires]
    return "<h4>Fires</h4>" + table(("fire", "items run", "done", "failed", "took", "cost"), rows, "fires")


def _anchor(key: str) -> str:
    import hashlib

    return hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:12]


def _schedule(store: Any, s: Any, token: str | None) -> str:
    from ..policy.cadence import cadence

    state = "paused" if s.paused else "finished" if s.next_at is None else "active"
    runs = store.runs(s.id, 10)
    spent = sum(r.cost_usd for r in store.runs(s.id, 1_000_000))
    facts = (f"{badge(state)} <code>{esc(s.cron or cadence(s.every_s).cron)}</code> · next fire {esc(when(s.next_at))}"
             f" · {esc(s.runs)} run(s){f' of {esc(s.max_runs)}' if s.max_runs else ''} · spent {money(spent)} · "
             f"in {esc(s.cwd)}")
    actions = "".join(_action(s.id, name, token) for name, show in (("pause", not s.paused), ("resume", s.paused),
                                                                     ("run", s.next_at is not None)) if show)
    fires = table(("fire", "status", "started", "took", "cost", "session", "note"), [
        [esc(when(r.fire_at)), badge(r.status), esc(when(r.started)),
         duration((r.ended - r.started) * 1000 if r.ended and r.started else None), money(r.cost_usd),
         link(f"/s/{r.session_id}", r.session_id[:8]) if r.session_id else "-", esc(" ".join(r.note.split())[:120])]
        for r in reversed(runs)], "fires") if runs else '<p class="empty">No fires yet.</p>'
    return (f'<section class="schedule" id="schedule-{esc(s.id)}"><h2>{esc(s.id)}</h2><p>{facts}</p>'
            f'<p class="prompt">{esc(s.prompt)}</p><div class="actions">{actions}</div>{fires}</section>')


def _action(schedule_id: str, name: str, token: str | None, kind: str = "schedules") -> str:
    label = {"pause": "Pause", "resume": "Resume", "run": "Run now"}[name]
    field = hidden("token", token) if token else ""
    return (f'<form method="post" action="/{kind}/{esc(schedule_id)}/{name}">{field}'
            f'<button name="do" value="{name}" class="{name}">{label}</button></form>')


def cost_page(index: SessionIndex, routines: Sequence[tuple[str, str, float]] = ()) -> str:
    index.refresh_soon()
    points = index.costs()
    by_model: dict[str, float] = {}
    for _, model, cost in points:
        by_model[model] = by_model.get(model, 0.0) + cost
    rows = [[esc(day), esc(model), money(cost)] for day, model, cost in reversed(points)][:200]
    totals = [[esc(m), money(c)] for m, c in sorted(by_model.items(), key=lambda kv: -kv[1])]
    return (head("Cost", "/cost") + '<p class="note">Per day (UTC) and model, from the transcripts; “other” is what '
            "a run's result counts beyond its own messages (the goal evaluator, subagents).</p>" + cost_chart(points)
            + "<h2>By model</h2>" + table(("model", "cost"), totals) + "<h2>By day</h2>"
            + table(("day", "model", "cost"), rows) + _routine_costs(list(routines)) + foot())


def _routine_costs(points: list[tuple[str, str, float]]) -> str:
    """Per day (UTC) and routine, what the routines' item runs cost (the ledger's fires)."""
    if not points:
        return '<h2>By routine</h2><p class="empty">No routine has run yet.</p>'
    points = [(day, os.path.basename(name).rsplit(".", 1)[0] if "/" in name else name, cost)
              for day, name, cost in points]  # a routine run by hand is known by its file
    totals: dict[str, float] = {}
    for _, name, cost in points:
        totals[name] = totals.get(name, 0.0) + cost
    rows = [[esc(name), money(cost)] for name, cost in sorted(totals.items(), key=lambda kv: -kv[1])]
    return ('<h2 id="by-routine">By routine</h2><div class="routine-chart">' + cost_chart(points) + "</div>"
            + table(("routine", "cost"), rows, "routine-totals"))
