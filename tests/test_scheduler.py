"""Persisted schedules: the store's claim (SQLite and PostgreSQL) (each fire once, even across processes), the
scheduler's decisions on a fake clock (overlap, misfire, max runs, pause, crash recovery), and
the real `loopwright schedule` / `loopwright scheduler` processes against the simulator."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import anyio
import pytest

from loopwright.core.storeports import Schedule, ScheduledRun
from loopwright.proactive.scheduler import FireOutcome, Scheduler
from loopwright.stores import open_store
from loopwright.stores.schedules import SqliteScheduleStore
from loopwright.testing import Simulator
from loopwright.testing.clock import FakeClock
from procs import gone
from storekinds import any_store  # noqa: F401  (a fixture)

T0 = 1_800_000_000.0  # on the hour


@pytest.fixture
def store(any_store, tmp_path):
    s = open_store(any_store, tmp_path).schedules()
    yield s
    s.close()


def schedule(sid="s1", every=300, next_at=T0, **kw):
    return Schedule(sid, "/work", f"prompt of {sid}", every, T0 - 1000, next_at, **kw)


# ---------------------------------------------------------------- the store


def test_schedules_round_trip_and_ids_are_unique(store):
    s = schedule(max_runs=3, grace_s=60, options={"args": ["--max-turns", "2"]})
    store.add(s)
    assert store.get("s1") == s and store.schedules() == [s]
    with pytest.raises(ValueError, match="already exists"):
        store.add(s)
    assert store.set_paused("s1", True) and store.due(T0) == []
    assert store.set_paused("s1", False) and store.due(T0) == [s] and store.due(T0 - 1) == []
    assert store.remove("s1") and not store.remove("s1") and store.get("s1") is None


def test_a_fire_is_claimed_once_even_by_two_stores(store, any_store, tmp_path):
    other = open_store(any_store, tmp_path).schedules()
    store.add(schedule())
    seen_by_both = store.due(T0)[0]
    assert other.due(T0)[0] == seen_by_both
    run = ScheduledRun(0, "s1", T0, "running", started=T0)
    first = store.claim(seen_by_both, T0 + 300, run, "a:1")
    second = other.claim(seen_by_both, T0 + 300, run, "b:2")
    other.close()
    assert first is not None and second is None
    assert [r.status for r in store.runs()] == ["running"] and store.get("s1").runs == 1
    assert store.running("s1") and store.orphans()[0][1] == "a:1"


# ---------------------------------------------------------------- the scheduler, on a fake clock


class Fires:
    """The run_fire callable: records each fire; a fire can be held open until released."""

    def __init__(self, hold=False, fail_for=()):
        self.calls, self.hold, self.fail_for = [], hold, set(fail_for)
        self.release = anyio.Event()

    async def __call__(self, s, register):
        self.calls.append(s.id)
        if s.id in self.fail_for:
            raise OSError(f"cannot start {s.id}")
        if self.hold:
            stopped = anyio.Event()
            register(stopped.set)
            async with anyio.create_task_group() as tg:
                async def either(ev):
                    await ev.wait()
                    tg.cancel_scope.cancel()
                tg.start_soon(either, self.release)
                tg.start_soon(either, stopped)
            if stopped.is_set():
                return FireOutcome("interrupted", note="stopped")
        return FireOutcome("success", "sess-1", 0.01, "done")


def scheduler(store, fires, clock, **kw):
    return Scheduler(store, fires, clock, owner="here:1", alive=kw.pop("alive", lambda owner: False), **kw)


async def tick(s):
    async with anyio.create_task_group() as tg:
        await s.tick(tg)


@pytest.mark.anyio
async def test_a_due_fire_runs_is_recorded_and_the_schedule_moves_on(store):
    store.add(schedule())
    clock, fires = FakeClock(T0 + 1), Fires()
    await tick(scheduler(store, fires, clock))
    assert fires.calls == ["s1"]
    (run,) = store.runs()
    assert (run.status, run.session_id, run.cost_usd, run.note, run.fire_at) == ("success", "sess-1", 0.01, "done", T0)
    assert store.get("s1").next_at == T0 + 300 and store.get("s1").runs == 1
    await tick(scheduler(store, fires, clock))  # not due again until the next step
    assert fires.calls == ["s1"]


@pytest.mark.anyio
async def test_no_overlap_a_fire_while_the_last_run_goes_on_is_skipped(store):
    store.add(schedule())
    clock, fires = FakeClock(T0), Fires(hold=True)
    s = scheduler(store, fires, clock)
    async with anyio.create_task_group() as tg:
        await s.tick(tg)
        await anyio.wait_all_tasks_blocked()
        clock.advance(301)
        await s.tick(tg)  # the second fire comes while the first still runs
        fires.release.set()
    assert fires.calls == ["s1"]
    assert [(r.status, r.note) for r in store.runs()] == [("success", "done"), ("skipped", "overlap")]


@pytest.mark.anyio
async def test_after_downtime_missed_fires_collapse_and_a_late_one_is_a_misfire(store):
    store.add(schedule(grace_s=60))
    store.add(schedule("s2", every=3600, grace_s=3600))
    clock, fires = FakeClock(T0 + 3 * 300 + 100), Fires()  # three 5-minute fires missed, 100 s late
    await tick(scheduler(store, fires, clock))
    runs = {r.schedule_id: r for r in store.runs()}
    assert runs["s1"].status == "skipped" and runs["s1"].note == "misfire" and runs["s1"].fire_at == T0 + 900
    assert runs["s2"].status == "success" and fires.calls == ["s2"]  # within its grace: runs once
    assert store.get("s1").next_at == T0 + 1200


@pytest.mark.anyio
async def test_max_runs_finishes_the_schedule_and_paused_ones_wait(store):
    store.add(schedule(max_runs=2))
    store.add(schedule("paused", paused=True))
    clock, fires = FakeClock(T0), Fires()
    for _ in range(3):
        await tick(scheduler(store, fires, clock))
        clock.advance(300)
    assert fires.calls == ["s1", "s1"] and store.get("s1").next_at is None and store.get("s1").runs == 2


@pytest.mark.anyio
async def test_a_broken_schedule_is_recorded_and_the_others_still_run(store):
    store.add(schedule("bad"))
    store.add(schedule("good"))
    fires = Fires(fail_for={"bad"})
    await tick(scheduler(store, fires, FakeClock(T0)))
    statuses = {r.schedule_id: (r.status, r.note) for r in store.runs()}
    assert statuses == {"bad": ("error", "OSError: cannot start bad"), "good": ("success", "done")}


@pytest.mark.anyio
async def test_a_run_left_by_a_dead_scheduler_is_interrupted_never_rerun(store):
    store.add(schedule())
    store.claim(store.get("s1"), T0 + 300, ScheduledRun(0, "s1", T0, "running", started=T0), "there:99")
    alive = {"there:99": True}
    s = scheduler(store, Fires(), FakeClock(T0 + 10), alive=lambda owner: alive[owner])
    assert s.recover() == [] and store.runs()[0].status == "running"  # its scheduler still lives
    alive["there:99"] = False
    assert s.recover() == [1]
    (run,) = store.runs()
    assert run.status == "interrupted" and "not run again" in run.note


class StillClock(FakeClock):
    """Time stands still: the scheduler's wait lasts until it is stopped."""

    async def sleep(self, seconds):
        self.sleeps.append(seconds)
        await anyio.sleep_forever()


@pytest.mark.anyio
async def test_stop_interrupts_running_fires_and_records_them(store):
    store.add(schedule())
    clock, fires = StillClock(T0), Fires(hold=True)
    s = scheduler(store, fires, clock)
    async with anyio.create_task_group() as tg:
        tg.start_soon(s.serve)
        await anyio.wait_all_tasks_blocked()
        s.stop()
    assert [(r.status, r.note) for r in store.runs()] == [("interrupted", "stopped")]


# ---------------------------------------------------------------- the real commands


def cli(args, tmp_path, sim=None, **kw):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "LOOPWRIGHT_"))}
    env.update(ANTHROPIC_API_KEY="sk-test", LOOPWRIGHT_HOME=str(tmp_path / "home"), HOME=str(tmp_path / "fakehome"))
    if sim is not None:
        env["ANTHROPIC_BASE_URL"] = sim.base_url
    return subprocess.run([sys.executable, "-m", "loopwright", *args], cwd=kw.pop("cwd", tmp_path), env=env,
                          capture_output=True, text=True, timeout=60, **kw)


def test_add_then_serve_once_runs_the_fire_with_its_flags_in_its_folder(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    with Simulator([{"tool_use": {"name": "Bash", "input": {"command": "true"}}, "repeat": -1}]) as sim:
        added = cli(["schedule", "add", "keep going", "--every", "1h", "--now", "--", "--max-turns", "1"],
                    tmp_path, cwd=project)
        assert added.returncode == 0, added.stderr
        sid = added.stdout.strip()
        served = cli(["scheduler", "--once"], tmp_path, sim)
        again = cli(["scheduler", "--once"], tmp_path, sim)  # the next fire is an hour away
        requests = len(sim.message_requests)
    assert served.returncode == 0 and again.returncode == 0, served.stderr
    assert requests == 1 and f"▶ {sid}" in served.stdout and f"■ {sid} · run 1 error" in served.stdout
    # what the person is told: when it runs, that a scheduler must serve it, and what a scheduler serves
    assert f"loopwright: schedule {sid} (0 * * * *) runs next at " in added.stderr
    assert "fire only while `loopwright scheduler` runs" in added.stderr
    assert f"loopwright: scheduler running what is due: 1 active schedule(s) in {tmp_path / 'home'}" in served.stderr
    assert f"; next: {sid} at " in served.stderr
    (run,) = json.loads(cli(["schedule", "runs", "--json"], tmp_path).stdout)
    assert run["status"] == "error" and "Reached maximum number of turns (1)" in run["note"]
    listed = json.loads(cli(["schedule", "list", "--json"], tmp_path).stdout)
    assert listed[0]["cwd"] == str(project) and listed[0]["runs"] == 1 and listed[0]["spec"]["max_turns"] == 1
    assert listed[0]["spec"]["prompt"] == "keep going" and listed[0]["spec"]["output_format"] == "json"


def test_four_schedulers_at_once_run_a_fire_once(tmp_path):
    with Simulator([{"text": "done", "delay": 0.3, "repeat": -1}]) as sim:
        assert cli(["schedule", "add", "once only", "--every", "1d", "--now"], tmp_path).returncode == 0
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "LOOPWRIGHT_"))}
        env.update(ANTHROPIC_API_KEY="sk-test", LOOPWRIGHT_HOME=str(tmp_path / "home"), ANTHROPIC_BASE_URL=sim.base_url)
        procs = [subprocess.Popen([sys.executable, "-m", "loopwright", "scheduler", "--once"], cwd=tmp_path, env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(4)]
        codes = [p.wait(timeout=60) for p in procs]
        requests = len(sim.message_requests)
    assert codes == [0, 0, 0, 0] and requests == 1
    runs = json.loads(cli(["schedule", "runs", "--json"], tmp_path).stdout)
    assert [r["status"] for r in runs] == ["success"]


def test_a_killed_scheduler_leaves_its_run_interrupted_and_it_is_not_run_again(tmp_path):
    with Simulator([{"text": "slow", "delay": 30, "repeat": -1}]) as sim:
        assert cli(["schedule", "add", "slow job", "--every", "1d", "--now"], tmp_path).returncode == 0
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "LOOPWRIGHT_"))}
        env.update(ANTHROPIC_API_KEY="sk-test", LOOPWRIGHT_HOME=str(tmp_path / "home"), ANTHROPIC_BASE_URL=sim.base_url)
        proc = subprocess.Popen([sys.executable, "-m", "loopwright", "scheduler"], cwd=tmp_path, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert "▶" in proc.stdout.readline()  # the fire started
            fire = _child_of(proc.pid)
            deadline = time.monotonic() + 30
            while not sim.message_requests and time.monotonic() < deadline:
                time.sleep(0.05)
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=10)
        finally:
            proc.kill()
        served = cli(["scheduler", "--once"], tmp_path, sim)
        requests = len(sim.message_requests)
    assert gone(fire)  # the fire's own process ended with its scheduler
    assert served.returncode == 0 and "interrupted" in served.stdout and requests == 1
    (run,) = json.loads(cli(["schedule", "runs", "--json"], tmp_path).stdout)
    assert run["status"] == "interrupted" and "not run again" in run["note"]


def test_a_cron_schedule_fires_on_its_expression(tmp_path):
    out = cli(["schedule", "add", "morning report", "--cron", "0 9 * * 1-5", "--id", "morning"], tmp_path)
    assert out.returncode == 0 and out.stdout.strip() == "morning", out.stderr
    (listed,) = json.loads(cli(["schedule", "list", "--json"], tmp_path).stdout)
    assert listed["cron"] == "0 9 * * 1-5" and listed["every_seconds"] is None
    at = time.localtime(listed["next_at"])
    assert (at.tm_hour, at.tm_min) == (9, 0) and at.tm_wday < 5 and listed["next_at"] > time.time()


@pytest.mark.anyio
async def test_the_scheduler_keeps_a_cron_schedules_times(store):
    store.add(schedule("hourly", every=0, next_at=T0, cron="0 * * * *"))
    clock, fires = FakeClock(T0 + 5), Fires()
    await tick(scheduler(store, fires, clock))
    assert fires.calls == ["hourly"] and store.get("hourly").next_at == T0 + 3600


def test_a_store_from_before_cron_gains_the_column(tmp_path):
    import sqlite3

    db = sqlite3.connect(tmp_path / "old.db")
    db.execute("CREATE TABLE schedules (id TEXT PRIMARY KEY, cwd TEXT NOT NULL, prompt TEXT NOT NULL, every_s INTEGER "
               "NOT NULL, created REAL NOT NULL, next_at REAL, paused INTEGER NOT NULL DEFAULT 0, max_runs INTEGER, "
               "runs INTEGER NOT NULL DEFAULT 0, grace_s INTEGER NOT NULL, options TEXT NOT NULL DEFAULT '{}')")
    db.execute("INSERT INTO schedules VALUES ('old', '/w', 'p', 300, 1, 2, 0, NULL, 0, 300, '{}')")
    db.commit()
    db.close()
    store = SqliteScheduleStore(tmp_path / "old.db")
    assert store.get("old").cron == "" and store.get("old").every_s == 300
    store.close()


def _child_of(pid):
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    stat = open(f"/proc/{entry}/stat").read()
                except OSError:
                    continue
                if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                    return int(entry)
        time.sleep(0.05)
    raise AssertionError("the fire's process never started")


@pytest.mark.parametrize(("args", "needle"), [
    (["schedule", "add", "x", "--cron", "61 * * * *"], "--cron: the minute field '61'"),
    (["schedule", "add", "x", "--cron", "0 9 * * *", "--every", "1h"], "not allowed with"),
    (["schedule", "add", "x", "--every", "0m"], "loop interval '0m'"),
    (["schedule", "add", "x", "--every", "5"], "--every: expected an interval"),
    (["schedule", "add", "/loop 5m x", "--every", "1h"], "not a /loop"),
    (["schedule", "add", "x", "--every", "1h", "--", "--max-turns", "zero"], "--max-turns"),
    (["schedule", "add", "x", "--every", "1h", "--id", "../x"], "--id: expected letters"),
    (["schedule", "rm", "nope"], "no schedule with id 'nope'"),
    (["scheduler", "--max-concurrent", "0"], "--max-concurrent: expected a number above 0"),
])
def test_bad_schedule_input_is_one_clear_line(tmp_path, args, needle):
    out = cli(args, tmp_path)
    assert out.returncode == 2 and needle in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr


def test_a_scheduler_with_nothing_to_serve_says_so(tmp_path):
    out = cli(["scheduler", "--once"], tmp_path)
    assert out.returncode == 0 and "no active schedules in" in out.stderr and "loopwright schedule add" in out.stderr
