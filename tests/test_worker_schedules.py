"""Schedules onto workers' queues, end to end: `loopwright schedule add … --queue Q --store URL`
makes each fire a durable goal loop on the queue; `loopwright scheduler` waits for the worker's
outcome and records it in `loopwright schedule runs` as any fire's."""

import json
import subprocess
import sys

from loopwright.testing import Simulator
from test_workers import cli, env, loop_flags, marker_lines, no_worker_left, project, script, start_worker, statuses, stop  # noqa: F401


def test_a_schedule_fire_goes_to_a_worker_and_its_outcome_is_recorded(project, env, tmp_path):
    store = f"sqlite:///{tmp_path / 'dbos.sqlite'}"
    prompt, *flags = loop_flags(0)
    with Simulator(script(1)) as sim, open(tmp_path / "worker.log", "w") as log:
        env["ANTHROPIC_BASE_URL"] = sim.base_url
        schedule_id = cli(["schedule", "add", prompt, "--every", "1h", "--now", "--id", "nightly", "--queue",
                           "loopwright", "--store", store, "--", *flags, "--no-sandbox"], env, project).strip()
        listed = json.loads(cli(["schedule", "list", "--json", "--store", store], env, project))
        assert [(s["id"], s["queue"]) for s in listed] == [("nightly", "loopwright")]
        worker = start_worker(store, env, project, log)
        try:
            fired = cli(["scheduler", "--once", "--store", store], env, project, timeout=180)
        finally:
            stop(worker)
    assert schedule_id == "nightly"
    runs = json.loads(cli(["schedule", "runs", "nightly", "--json", "--store", store], env, project))
    assert [r["status"] for r in runs] == ["success"], (fired, (tmp_path / "worker.log").read_text())
    assert runs[0]["note"] == "done L0" and runs[0]["session_id"]
    assert marker_lines(project) == {"L0": 1}  # the worker ran the loop, once
    assert list(statuses(store).values()) == ["SUCCESS"]
    assert "schedule nightly: " in (tmp_path / "worker.log").read_text()  # the worker's line for the fire
    assert not sim.unmatched


def test_a_queued_schedule_needs_a_durable_store(project, env, tmp_path):
    out = subprocess.run([sys.executable, "-m", "loopwright", "schedule", "add", "go", "--every", "1h", "--queue",
                          "q"], env=env, cwd=project, capture_output=True, text=True, timeout=60)
    assert out.returncode != 0
    assert "--queue: fires go to workers through a durable store; expected --store postgresql://… or " \
        "sqlite:///PATH, got 'the default store'" in out.stderr
    resumed = subprocess.run([sys.executable, "-m", "loopwright", "schedule", "add", "go", "--every", "1h", "--queue",
                              "q", "--store", f"sqlite:///{tmp_path / 's.db'}", "--", "--resume", "x"], env=env, cwd=project,
                             capture_output=True, text=True, timeout=60)
    assert resumed.returncode != 0 and "--queue: each fire is a new loop with its own session" in resumed.stderr
