"""One fire of a routine: read the items, record each new one as pending, then take as many as
the fire's limits allow (`concurrency` at once), each claimed atomically in the ledger, run as an
agent (`RunItem`, injected: this layer builds no agent), recorded and reported. An item its
process left `running` when it died is resumed from its session, not started again."""

from __future__ import annotations

import json
from typing import Any, Awaitable, Callable, Mapping

import anyio

from ..core.fastclass import dataclass
from ..core.storeports import Ledger
from .routine import Routine, fill
from .sources import Found, Item

MAX_OUTCOME = 2000


@dataclass(frozen=True, slots=True)
class ItemRun:
    """What running one item needs: the filled prompt or goal (`text`), the session to start or
    (with `resume`) to carry on, and the budget left for it."""

    routine: Routine
    item: Item
    text: str
    session_id: str
    resume: bool
    budget_usd: float | None


@dataclass(frozen=True, slots=True)
class ItemResult:
    """`status` done, failed or interrupted (stopped here: resumed by a later fire)."""

    status: str
    cost_usd: float = 0.0
    note: str = ""
    subtype: str = ""


RunItem = Callable[[ItemRun], Awaitable[ItemResult]]
Report = Callable[[Mapping[str, Any]], Awaitable["str | None"]]


@dataclass(slots=True)
class FireSummary:
    found: int = 0
    taken: int = 0
    done: int = 0
    failed: int = 0
    interrupted: int = 0
    skipped: int = 0  # malformed, or a field the template needs was missing
    already_done: int = 0  # found again, done by an earlier fire: not run again
    spend: float = 0.0
    left: int = 0  # would run, but the fire's limits stopped it (taken by a later fire)
    would_take: tuple[str, ...] = ()  # --dry-run
    notes: tuple[str, ...] = ()
    started: float = 0.0  # when the fire began: its items' runs are recorded under it

    def line(self, name: str) -> str:
        return (f"routine {name}: {self.found} found, {self.taken} taken, {self.done} done, {self.failed} failed"
                + (f", {self.already_done} already done" if self.already_done else "")
                + (f", {self.interrupted} interrupted" if self.interrupted else "")
                + (f", {self.skipped} skipped" if self.skipped else "")
                + (f", {self.left} left for a later fire" if self.left else "") + f", spend ${self.spend:.4f}")


@dataclass(frozen=True, slots=True)
class FireContext:
    """What a fire is given: the ledger and its key for this routine, who we are (`owner`,
    `host:pid`) and how to tell whether another owner still lives, the clock, new session ids,
    the item runner and the report command (None: none configured), and whether it is stopping."""

    ledger: Ledger
    key: str
    owner: str
    alive: Callable[[str], bool]
    now: Callable[[], float]
    new_session_id: Callable[[], str]
    run_item: RunItem
    report: Report | None = None
    say: Callable[[str], None] = lambda line: None
    stopping: Callable[[], bool] = lambda: False  # True once the fire is to end (Ctrl-C): take no more


async def fire(routine: Routine, found: Found, ctx: FireContext, *, dry_run: bool = False) -> FireSummary:
    summary = FireSummary(found=len(found.items), started=ctx.now())
    ledger, key = ctx.ledger, ctx.key
    if not dry_run:
        for item_id in ledger.recover(key, ctx.owner, ctx.alive):
            ctx.say(f"{item_id}: its process died mid-run; resuming its session")
    candidates: list[tuple[Item, str]] = []
    for item_id, reason in found.malformed:
        summary.skipped += 1
        ctx.say(f"skipped: {reason}")
        if not dry_run:
            ledger.skip(key, item_id, reason, ctx.now())
    for item in found.items:
        try:
            text = fill(routine.template, item.fields)
        except KeyError as exc:
            reason = (f"the {'goal' if routine.goal else 'prompt'} names {{{exc.args[0]}}}, which this item does "
                      f"not have (its fields: {', '.join(item.fields)})")
            summary.skipped += 1
            ctx.say(f"{item.id}: skipped: {reason}")
            if not dry_run:
                ledger.skip(key, item.id, reason, ctx.now())
            continue
        if not dry_run:
            ledger.note(key, item.id, ctx.now())
        candidates.append((item, text))
    seen = {item.id for item, _ in candidates}
    for row in ledger.items(key, "interrupted"):  # gone from the source: still carried on from its session
        if row.item_id not in seen:
            candidates.insert(0, _lost(routine, row))
    if dry_run:
        summary.would_take = tuple(i.id for i, _ in candidates if _takeable(ledger.get(key, i.id), routine))
        summary.would_take = summary.would_take[:routine.fire_max_items or None]
        return summary
    await _take_all(routine, candidates, ctx, summary)
    return summary


def _lost(routine: Routine, row: Any) -> tuple[Item, str]:
    """An interrupted item no longer in the source; one POSTed keeps its fields in the ledger,
    so its text can still be filled (its run may not have begun)."""
    try:
        fields = json.loads(row.fields) if row.fields else {}
        fields = {**fields, "id": row.item_id} if isinstance(fields, dict) else {"id": row.item_id}
        return Item(row.item_id, fields), fill(routine.template, fields) if row.fields else ""
    except (ValueError, KeyError):
        return Item(row.item_id, {"id": row.item_id}), ""


def _takeable(row: Any, routine: Routine) -> bool:
    return row is None or row.status in ("pending", "interrupted") or (
        row.status == "failed" and row.tries <= routine.retry_failed)


async def _take_all(routine: Routine, candidates: list[tuple[Item, str]], ctx: FireContext,
                    summary: FireSummary) -> None:
    queue = list(candidates)
    stopped: list[str] = []

    def room() -> str | None:
        if ctx.stopping():
            return "the fire was stopped"
        if routine.fire_max_items is not None and summary.taken >= routine.fire_max_items:
            return f"the fire's limit of {routine.fire_max_items} item(s) was reached"
        if routine.fire_max_budget_usd is not None and summary.spend >= routine.fire_max_budget_usd:
            return f"the fire's budget of ${routine.fire_max_budget_usd:g} was spent"
        return None

    async def worker() -> None:
        while queue:
            if (why := room()) is not None:
                summary.left += sum(1 for i, _ in queue if _takeable(ctx.ledger.get(ctx.key, i.id), routine))
                queue.clear()
                stopped.append(why)
                return
            item, text = queue.pop(0)
            await _take(routine, item, text, ctx, summary)

    async with anyio.create_task_group() as tg:
        for _ in range(routine.concurrency):
            tg.start_soon(worker)
    if stopped:
        summary.notes += (stopped[0],)
        ctx.say(f"stopped taking items: {stopped[0]}")


async def _take(routine: Routine, item: Item, text: str, ctx: FireContext, summary: FireSummary) -> None:
    claim = ctx.ledger.claim(ctx.key, item.id, owner=ctx.owner, session_id=ctx.new_session_id(), now=ctx.now(),
                             retry_failed=routine.retry_failed)
    if claim is None:  # done, given up, skipped, or another process has it
        row = ctx.ledger.get(ctx.key, item.id)
        if row is not None and row.status == "done":
            summary.already_done += 1
            ctx.say(f"{item.id}: already done (session {row.session_id}); not run again")
        return
    session_id, resume = claim
    summary.taken += 1
    budget = routine.max_budget_usd
    if routine.fire_max_budget_usd is not None:
        left = max(routine.fire_max_budget_usd - summary.spend, 0.0) or 1e-9
        budget = left if budget is None else min(budget, left)
    ctx.say(f"{item.id}: {'resuming session' if resume else 'started, session'} {session_id}")
    try:
        result = await ctx.run_item(ItemRun(routine, item, text, session_id, resume, budget))
    except Exception as exc:  # one broken item must not stop the others
        result = ItemResult("failed", note=f"{type(exc).__name__}: {exc}")
    row = ctx.ledger.get(ctx.key, item.id)
    tries = row.tries if row else 1
    note = result.note[:MAX_OUTCOME]
    if result.status == "failed" and tries > routine.retry_failed:
        note = f"{note} (given up after {tries} tr{'y' if tries == 1 else 'ies'})"
    ctx.ledger.finish(ctx.key, item.id, result.status, cost_usd=result.cost_usd, outcome=note, now=ctx.now(),
                      fire_at=summary.started)
    summary.spend += result.cost_usd
    setattr(summary, result.status, getattr(summary, result.status) + 1)
    ctx.say(f"{item.id}: {result.status} · ${result.cost_usd:.4f} · {' '.join(note.split())[:100]}")
    if ctx.report is not None:
        outcome = {"routine": routine.name, "item_id": item.id, "status": result.status, "tries": tries,
                   "session_id": session_id, "resumed": resume, "cost_usd": result.cost_usd,
                   "subtype": result.subtype, "outcome": note, "item": dict(item.fields)}
        if (problem := await ctx.report(outcome)) is not None:
            summary.notes += (f"{item.id}: {problem}",)
            ctx.say(f"warning: {item.id}: {problem}")
