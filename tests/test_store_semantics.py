"""The routine ledger's and the schedule store's semantics, the same on both stores (SQLite, and
PostgreSQL with SKIP LOCKED claims): many claimants at once take each item and each fire once, an
item a dead process left is resumed in its session, a routine's fire is moved on once."""

from concurrent.futures import ThreadPoolExecutor

from storekinds import any_store  # noqa: F401  (a fixture)

from loopwright.core.storeports import RoutineEntry, Schedule, ScheduledRun
from loopwright.stores import open_store


def test_four_claimants_at_once_take_each_item_once(any_store, tmp_path):
    ledger = open_store(any_store, tmp_path).ledger()
    for n in range(40):
        ledger.note("r", f"i{n:02d}", 1.0)

    def take_all(k):  # a claimant of its own, as another process would be
        mine = open_store(any_store, tmp_path).ledger()
        try:
            return [n for n in range(40)
                    if mine.claim("r", f"i{n:02d}", owner=f"h:{k}", session_id=f"s{k}-{n}", now=2.0, retry_failed=0)]
        finally:
            mine.close()

    with ThreadPoolExecutor(4) as pool:
        taken = list(pool.map(take_all, range(4)))
    assert sorted(n for each in taken for n in each) == list(range(40))
    rows = ledger.items("r", "running")
    assert len(rows) == 40 and all(row.tries == 1 and row.session_id.endswith(f"-{int(row.item_id[1:])}")
                                   for row in rows)
    ledger.close()


def test_an_item_left_by_a_dead_process_is_resumed_in_its_session(any_store, tmp_path):
    ledger = open_store(any_store, tmp_path).ledger()
    ledger.note("r", "x", 1.0)
    assert ledger.claim("r", "x", owner="gone:1", session_id="s1", now=2.0, retry_failed=0) == ("s1", False)
    assert ledger.recover("r", "here:2", alive=lambda owner: owner == "here:2") == ["x"]
    assert ledger.get("r", "x").status == "interrupted" and "gone:1" in ledger.get("r", "x").outcome
    assert ledger.claim("r", "x", owner="here:2", session_id="s2", now=3.0, retry_failed=0) == ("s1", True)
    ledger.finish("r", "x", "failed", cost_usd=0.25, outcome="broke", now=4.0)
    assert ledger.claim("r", "x", owner="here:2", session_id="s3", now=5.0, retry_failed=0) is None  # no retries
    assert ledger.claim("r", "x", owner="here:2", session_id="s3", now=5.0, retry_failed=1) == ("s3", False)
    ledger.skip("r", "bad", "no title", 6.0)
    row = ledger.get("r", "x")
    assert (row.tries, row.cost_usd, row.owner) == (2, 0.25, "here:2")
    assert [(i.item_id, i.status, i.outcome) for i in ledger.items("r", "skipped")] == [("bad", "skipped", "no title")]
    assert ledger.known() == ["r"]
    ledger.close()


def test_a_routines_fire_is_moved_on_once_and_a_paused_one_waits(any_store, tmp_path):
    one, two = open_store(any_store, tmp_path).ledger(), open_store(any_store, tmp_path).ledger()
    one.register(RoutineEntry("/p/r.yaml", "r", "/p", every_s=60, next_at=100.0))
    assert [e.key for e in two.due_routines(100.0)] == ["/p/r.yaml"] and two.due_routines(99.0) == []
    assert [one.claim_fire("/p/r.yaml", 100.0, 160.0), two.claim_fire("/p/r.yaml", 100.0, 160.0)] == [True, False]
    assert two.entry("/p/r.yaml") == RoutineEntry("/p/r.yaml", "r", "/p", 60, "", False, 160.0)
    two.set_paused("/p/r.yaml", True)
    assert one.paused("/p/r.yaml") and one.due_routines(1000.0) == [] and one.registered()[0].paused
    assert one.unregister("/p/r.yaml") and not one.unregister("/p/r.yaml")
    one.close()
    two.close()


def test_eight_schedulers_at_once_claim_a_fire_once(any_store, tmp_path):
    stores = [open_store(any_store, tmp_path).schedules() for _ in range(3)]
    stores[0].add(Schedule("s", "/w", "p", 60, 0.0, 100.0, options={"args": ["-x"]}))
    due = stores[1].due(100.0)[0]
    run = ScheduledRun(0, "s", 100.0, "running", started=100.0)

    def claim(k):  # a scheduler of its own, as another process would be
        mine = open_store(any_store, tmp_path).schedules()
        try:
            return mine.claim(due, 160.0, run, f"h:{k}")
        finally:
            mine.close()

    with ThreadPoolExecutor(8) as pool:
        claims = list(pool.map(claim, range(8)))
    assert len([c for c in claims if c is not None]) == 1
    assert stores[2].get("s").next_at == 160.0 and stores[2].get("s").runs == 1 and stores[2].get("s").options == {
        "args": ["-x"]}
    stores[1].finish(next(c for c in claims if c), "success", 120.0, "sess", 0.5, "ok")
    assert [(r.status, r.session_id, r.cost_usd) for r in stores[2].runs("s")] == [("success", "sess", 0.5)]
    assert stores[0].run_now("s", 130.0) and stores[0].due(130.0)[0].next_at == 130.0
    for store in stores:
        store.close()


def test_posted_items_tokens_and_the_cost_of_each_fire(any_store, tmp_path):
    ledger = open_store(any_store, tmp_path).ledger()
    assert ledger.queue("r", [("a", '{"id": "a", "t": 1}'), ("b", '{"id": "b"}')], 1.0) == {"a": "queued", "b": "queued"}
    assert ledger.get("r", "a").fields == '{"id": "a", "t": 1}'
    assert ledger.claim("r", "a", owner="h:1", session_id="s1", now=2.0, retry_failed=0) == ("s1", False)
    ledger.finish("r", "a", "done", cost_usd=0.5, outcome="ok", now=3.0, fire_at=86400.0)
    ledger.claim("r", "b", owner="h:1", session_id="s2", now=2.0, retry_failed=0)
    ledger.finish("r", "b", "failed", cost_usd=0.25, outcome="no", now=4.0, fire_at=86400.0)
    assert ledger.queue("r", [("a", "{}"), ("c", "{}")], 5.0) == {"a": "done", "c": "queued"}  # done stays done
    [fire] = ledger.fires("r")
    assert (fire.fire_at, fire.items, fire.done, fire.failed, fire.cost_usd, fire.ended) == (86400.0, 2, 1, 1, 0.75, 4.0)
    assert ledger.daily_costs() == [("1970-01-02", "r", 0.75)]
    assert ledger.token("r") is None
    first = ledger.token("r", make=True)
    assert first and ledger.token("r", make=True) == first
    second = ledger.new_token("r")
    assert second != first and ledger.token("r") == second and ledger.token_keys() == ["r"]
    ledger.drop_token("r")
    assert ledger.token("r") is None and ledger.token_keys() == []
    ledger.close()
