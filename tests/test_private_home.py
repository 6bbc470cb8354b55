"""loopwright's home is private (issue 21, class 12): another local user must not read the
prompts, answers and flags kept in transcripts and schedules. Every folder 0700 and every file
0600 whatever the umask, through the real CLI; a home an older version left open is closed on
the next start, once (later starts cost one stat, not a walk)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from loopwright.core.home import make_private_dirs, open_private, tighten_home
from loopwright.stores.jsonl import JsonlStore
from loopwright.stores.schedules import SqliteScheduleStore
from loopwright.testing import Simulator


def run(args, home: Path, cwd: Path, umask: int, sim=None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "LOOPWRIGHT_"))}
    env.update(LOOPWRIGHT_HOME=str(home), ANTHROPIC_API_KEY="sk-test")
    if sim is not None:
        env["ANTHROPIC_BASE_URL"] = sim.base_url
    return subprocess.run([sys.executable, "-m", "loopwright", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=60, preexec_fn=lambda: os.umask(umask))


def modes(home: Path) -> dict[str, int]:
    out = {".": stat.S_IMODE(os.lstat(home).st_mode)}
    for here, dirs, files in os.walk(home):
        for name in dirs + files:
            path = os.path.join(here, name)
            out[os.path.relpath(path, home)] = stat.S_IMODE(os.lstat(path).st_mode)
    return out


def assert_private(home: Path) -> None:
    found = modes(home)
    wrong = {p: oct(m) for p, m in found.items()
             if m != (0o700 if os.path.isdir(home / p) else 0o600)}
    assert not wrong, wrong


@pytest.mark.parametrize("umask", [0o022, 0o000])
def test_a_fresh_home_is_private_whatever_the_umask(tmp_path, umask):
    home, project = tmp_path / "deep" / "home", tmp_path / "project"
    project.mkdir()
    with Simulator([{"text": "ok"}]) as sim:
        answered = run(["-p", "hi"], home, project, umask, sim)
    assert answered.returncode == 0, answered.stderr
    added = run(["schedule", "add", "tidy up", "--every", "1h"], home, project, umask)
    assert added.returncode == 0, added.stderr
    found = modes(home)
    assert any(p.endswith(".jsonl") for p in found) and "schedules.db" in found
    assert_private(home)
    assert stat.S_IMODE(os.lstat(tmp_path / "deep").st_mode) == 0o700  # a parent made on the way too


def open_home(home: Path, dir_mode: int, file_mode: int) -> None:
    """A home as an older version left it: folders and files open to others."""
    old = home / "projects" / "-old-project"
    old.mkdir(parents=True)
    for path in (old / "s.jsonl", home / "schedules.db", home / "schedules.db-wal", home / "notes.log"):
        path.write_text("")
    for here, dirs, files in os.walk(home):
        os.chmod(here, dir_mode)
        for name in files:
            os.chmod(os.path.join(here, name), file_mode)


def test_an_existing_home_is_closed_on_the_next_start(tmp_path):
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    open_home(home, 0o755, 0o644)
    with Simulator([{"text": "ok"}]) as sim:
        answered = run(["-p", "hi", "--no-session-persistence"], home, project, 0o022, sim)
    assert answered.returncode == 0, answered.stderr
    assert_private(home)


@pytest.mark.parametrize("dir_mode,file_mode", [(0o750, 0o640), (0o777, 0o666)])
@pytest.mark.parametrize("store", ["sessions", "schedules"])
def test_either_store_closes_an_open_home(tmp_path, dir_mode, file_mode, store):
    home = tmp_path / "home"
    open_home(home, dir_mode, file_mode)
    if store == "sessions":
        JsonlStore(home, tmp_path)
    else:
        SqliteScheduleStore(home / "schedules.db").close()
    assert_private(home)


def test_the_schedule_store_closes_what_sqlite_made_before(tmp_path):
    home = tmp_path / "home"
    SqliteScheduleStore(home / "schedules.db").close()
    os.chmod(home, 0o700)  # only the database files were left open: no walk; the store and SQLite close them
    for name in ("schedules.db", "schedules.db-wal", "schedules.db-shm"):
        (home / name).touch()
        os.chmod(home / name, 0o644)
    store = SqliteScheduleStore(home / "schedules.db")
    try:
        assert_private(home)  # while it is open, -wal and -shm exist
    finally:
        store.close()


def test_closing_happens_once_then_costs_one_stat(tmp_path):
    home = tmp_path / "home"
    (home / "projects").mkdir(parents=True)
    os.chmod(home, 0o755)
    tighten_home(home)
    assert stat.S_IMODE(os.lstat(home).st_mode) == 0o700
    later = home / "projects" / "later.jsonl"
    later.write_text("")
    os.chmod(later, 0o644)
    tighten_home(home)  # the home is closed now: nothing below it is walked again
    assert stat.S_IMODE(os.lstat(later).st_mode) == 0o644


def test_helpers_ignore_the_umask(tmp_path):
    old = os.umask(0o000)
    try:
        made = make_private_dirs(tmp_path / "a" / "b")
        fd = open_private(made / "f", os.O_WRONLY | os.O_CREAT)
        os.close(fd)
    finally:
        os.umask(old)
    assert [stat.S_IMODE(os.lstat(p).st_mode) for p in (tmp_path / "a", made, made / "f")] == [0o700, 0o700, 0o600]


def test_a_sqlite_store_named_by_url_leaves_its_folder_as_it_was(tmp_path):
    """`--store sqlite:///DIR/x.db`: the file is private, but DIR is the user's (it may be /tmp):
    neither it nor what else is in it is closed (regression: the whole folder was tightened)."""
    shared, home, project = tmp_path / "shared", tmp_path / "home", tmp_path / "project"
    shared.mkdir()
    project.mkdir()
    os.chmod(shared, 0o1777)
    (shared / "someone-elses.txt").write_text("x")
    os.chmod(shared / "someone-elses.txt", 0o644)
    listed = run(["schedule", "list", "--store", f"sqlite:///{shared}/loops.db"], home, project, 0o022)
    assert listed.returncode == 0, listed.stderr
    assert stat.S_IMODE(os.lstat(shared).st_mode) == 0o1777
    assert stat.S_IMODE(os.lstat(shared / "someone-elses.txt").st_mode) == 0o644
    assert stat.S_IMODE(os.lstat(shared / "loops.db").st_mode) == 0o600
