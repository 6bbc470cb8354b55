"""bench/many_loops.py's worker side runs end to end: two tiny loops on one `loopwright worker`
process taking from a queue in a fresh PostgreSQL database (the `pg_db` fixture: skipped, saying
why, when PostgreSQL cannot be installed or started). Nothing here times anything."""

import asyncio
import importlib.util
import sys
from pathlib import Path

import pytest

from loopwright.testing import Simulator

BENCH = Path(__file__).resolve().parents[1] / "bench"


def load_bench():
    sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location("many_loops", BENCH / "many_loops.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    return bench


@pytest.mark.timeout(240)
def test_the_bench_runs_two_loops_on_a_worker(pg_db, tmp_path):
    bench = load_bench()
    with Simulator(bench.script()) as sim:
        got = asyncio.run(bench.run_loops(2, sim.base_url, tmp_path, store=pg_db, workers=1, concurrency=2))
    assert got["split"] == [2]
    for i in range(2):  # each loop ran its five Bash ticks in its own folder
        assert (tmp_path / "loops" / f"L{i}" / "ticks").read_text() == "x\n" * bench.TURNS


def test_the_bench_refuses_workers_without_a_postgresql_store(tmp_path):
    bench = load_bench()
    with pytest.raises(ValueError, match="store: expected a postgresql:// URL with workers=2, got 'jsonl'"):
        asyncio.run(bench.run_loops(2, "http://127.0.0.1:9", tmp_path, store="jsonl", workers=2))
