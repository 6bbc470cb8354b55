"""Hostile input to the store-backed commands (`--store`/LOOPWRIGHT_STORE, `worker`, `enqueue`,
`workers`, `routine run --queue`, `schedule add --queue`, `serve --store`), through the real
`loopwright` process: a database that is down or never answers, blank queue names, an SQLite URL
that names a folder or a file that is no database, typos, a missing optional dependency. Each ends
with one clear line naming the input and what was expected (exit 2 for bad usage, 1 for a store
that cannot be reached): no traceback, no "Internal error", no hang."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading

import pytest

CLI = [sys.executable, "-m", "loopwright"]
WITHOUT_DBOS = [sys.executable, "-c", "import runpy, sys; sys.modules['dbos'] = None; "
                "sys.argv[0] = 'loopwright'; runpy.run_module('loopwright', run_name='__main__')"]
ROUTINE = 'source:\n  command: "true"\nprompt: "fix {title}"\n'


@pytest.fixture
def place(tmp_path):
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    (work / ".loopwright" / "routines").mkdir(parents=True)
    (work / ".loopwright" / "routines" / "triage.yaml").write_text(ROUTINE)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "LOOPWRIGHT_", "PG"))}
    env.update(HOME=str(home), LOOPWRIGHT_HOME=str(home / ".loopwright"), ANTHROPIC_API_KEY="sk-test",
               ANTHROPIC_BASE_URL="http://127.0.0.1:9")
    return work, env


def run(args, place, cli=CLI, timeout=90):
    work, env = place
    return subprocess.run(cli + args, cwd=work, env=env, capture_output=True, text=True, timeout=timeout)


def refused(out, code, *needles):
    """One clear error: the exit code, the words, and neither a traceback nor a crash report."""
    assert out.returncode == code, (out.returncode, out.stdout, out.stderr)
    assert "Traceback" not in out.stderr and "Internal error" not in out.stderr, out.stderr
    for needle in needles:
        assert needle in out.stderr, out.stderr


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ------------------------------------------------------------------ a store that is down


@pytest.mark.parametrize("args", [
    ["workers"],
    ["enqueue", "fix the bug"],
    ["serve", "--port", "0"],
    ["sessions"],
])
def test_a_store_where_nothing_listens_is_one_clear_error(place, args):
    url = f"postgresql://127.0.0.1:{free_port()}/loops"
    out = run([*args, "--store", url], place)
    refused(out, 1, f"cannot reach the store {url}: ", "Connection refused")
    assert "(psycopg." not in out.stderr  # the driver's message, without SQLAlchemy's wrapping
    assert "http://" not in out.stderr  # serve: no address printed for a view that never opens


@pytest.fixture
def silent_server():
    """A port that takes connections and never says a word (a hung server, a black-holing proxy)."""
    listener = socket.create_server(("127.0.0.1", 0), backlog=16)
    taken: list[socket.socket] = []
    done = threading.Event()

    def accept():
        listener.settimeout(0.2)
        while not done.is_set():
            try:
                taken.append(listener.accept()[0])
            except OSError:
                pass

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield listener.getsockname()[1]
    done.set()
    thread.join()
    for conn in taken:
        conn.close()
    listener.close()


@pytest.mark.parametrize("args", [["workers"], ["sessions"]])
def test_a_store_that_never_answers_is_an_error_within_the_connect_timeout_not_a_hang(place, silent_server, args):
    url = f"postgresql://127.0.0.1:{silent_server}/loops"
    out = run([*args, "--store", url], place, timeout=60)  # without a connect timeout: held for good
    refused(out, 1, f"cannot reach the store {url}: ", "timeout")


# ------------------------------------------------------------------ URLs of the wrong shape


def test_an_sqlite_url_naming_a_folder_is_refused_by_every_command(place, tmp_path):
    url = f"sqlite://{tmp_path}"
    for args in (["schedule", "list"], ["routine", "items", "triage"], ["workers"], ["worker"],
                 ["enqueue", "fix the bug"]):
        out = run([*args, "--store", url], place)
        refused(out, 2, f"{tmp_path} is a folder; expected sqlite:///PATH naming the SQLite file")


def test_an_sqlite_file_that_is_no_database_is_named(place, tmp_path):
    junk = tmp_path / "notes.txt"
    junk.write_text("not a database\n")
    out = run(["schedule", "list", "--store", f"sqlite://{junk}"], place)
    refused(out, 1, f"cannot use the SQLite file {junk}: file is not a database")


def test_sqlite_with_three_slashes_names_the_same_absolute_file_for_workers_and_stores(place, tmp_path):
    """`sqlite:///tmp/x.db` is /tmp/x.db for `schedule` and `routine`; the queue of workers (DBOS,
    SQLAlchemy) read it as tmp/x.db under the current folder, so the two never met."""
    db = tmp_path / "shared" / "loops.db"
    db.parent.mkdir()
    url = "sqlite://" + str(db)
    assert url.startswith("sqlite:///") and not url.startswith("sqlite:////")
    out = run(["enqueue", "--store", url, "fix the bug"], place)
    assert out.returncode == 0, out.stderr
    assert db.is_file()
    work, _ = place
    assert not (work / str(db.parent).lstrip("/")).exists()
    listed = run(["workers", "--store", url], place)
    assert listed.returncode == 0 and listed.stdout.strip() == "No workers", listed.stderr


# ------------------------------------------------------------------ queues and flags


@pytest.mark.parametrize("queue", ["", " ", " q"])
@pytest.mark.parametrize("args", [
    ["worker"],
    ["enqueue", "fix the bug"],
    ["routine", "run", "triage", "--once"],
    ["schedule", "add", "--every", "1h", "fix the bug"],
])
def test_a_blank_queue_name_is_refused(place, tmp_path, args, queue):
    out = run([*args, "--queue", queue, "--store", f"sqlite://{tmp_path / 'q.db'}"], place)
    refused(out, 2, f"--queue: expected a queue name (not blank, no spaces around it), got {queue!r}")
    if args[0] in ("worker", "enqueue"):  # refused before the store was touched
        assert not (tmp_path / "q.db").exists()


@pytest.mark.parametrize("args", [["worker"], ["enqueue", "fix the bug"], ["routine", "run", "triage", "--once"]])
def test_a_queue_name_that_would_be_a_companion_is_refused(place, tmp_path, args):
    """`X.runs` is where the runs of attempts of queue X wait: a queue of that name would mix the two."""
    out = run([*args, "--queue", "fix.runs", "--store", f"sqlite://{tmp_path / 'q.db'}"], place)
    refused(out, 2, "--queue: a queue name may not end in '.runs'")


def test_a_typo_in_enqueue_flags_is_named_before_the_store_is_asked_for(place):
    out = run(["enqueue", "--sotre", "sqlite:///tmp/x.db", "fix the bug"], place)
    refused(out, 2, "--sotre", "did you mean --store?")


@pytest.mark.parametrize("args", [
    ["routine", "run", "triage", "--once", "--queue", "q"],
    ["schedule", "add", "--every", "1h", "--queue", "q", "fix the bug"],
])
def test_queueing_without_the_durable_extra_names_what_to_install(place, tmp_path, args):
    out = run([*args, "--store", f"sqlite://{tmp_path / 'q.db'}"], place, cli=WITHOUT_DBOS)
    refused(out, 2, "workers need dbos: pip install 'loopwright[durable]'")
    listed = run(["schedule", "list", "--store", f"sqlite://{tmp_path / 'q.db'}"], place)
    assert "fix the bug" not in listed.stdout  # a schedule whose every fire would fail is not kept


# ------------------------------------------------------------------ the help says what there is


def test_the_top_level_help_lists_the_worker_commands(place):
    out = run(["--help"], place)
    assert out.returncode == 0
    listed = [line.split()[0:2] for line in out.stdout.split("\n\n")[2].splitlines()[1:]]  # the commands block
    for command in (["worker"], ["enqueue", "PROMPT"], ["workers"], ["session", "export"], ["workflow", "run|list"],
                    ["serve"]):
        assert any(words[:len(command)] == command for words in listed), (command, listed)


@pytest.mark.parametrize("args,flags", [
    (["worker"], ["--store URL", "--queue NAME", "--concurrency N", "1 to 10000", "--queue-concurrency N", "--id",
                  "--dead-after SECONDS", "--drain SECONDS"]),
    (["enqueue"], ["--store URL", "--queue NAME", "--label", "PROMPT [FLAGS]", "--attempts N"]),
    (["workers"], ["--store", "--all"]),
    (["serve"], ["--store", "--port", "--host", "--all"]),
    (["routine", "run"], ["--queue", "--once", "--dry-run"]),
    (["schedule", "add"], ["--queue", "--store", "--every", "--cron"]),
])
def test_each_subcommand_help_lists_its_options(place, args, flags):
    out = run([*args, "--help"], place)
    assert out.returncode == 0, out.stderr
    for flag in flags:
        assert flag in out.stdout, (flag, out.stdout)


@pytest.mark.parametrize("flag,value,expected", [
    ("--concurrency", "abc", "a whole number from 1 to 10000"),
    ("--concurrency", "0", "a whole number from 1 to 10000"),
    ("--concurrency", "-1", "a whole number from 1 to 10000"),
    ("--concurrency", "99999999999", "a whole number from 1 to 10000"),  # no INTEGER column holds it
    ("--queue-concurrency", "1.5", "a whole number from 1 to 10000"),
    ("--dead-after", "nan", "a number of seconds above 0"),  # no worker would ever count as dead
    ("--drain", "inf", "a number of seconds above 0"),
    ("--drain", "-3", "a number of seconds above 0"),
    ("--id", "", "a name for this worker (not blank, no spaces around it)"),
])
def test_worker_numbers_and_names_out_of_range_are_refused(place, tmp_path, flag, value, expected):
    out = run(["worker", "--store", f"sqlite://{tmp_path / 'q.db'}", flag, value], place, timeout=60)
    refused(out, 2, f"{flag}: expected {expected}, got {value!r}")


# ------------------------------------------------------------------ demo routine --dir


def test_demo_dir_that_is_a_file_or_already_used_is_refused(place, tmp_path):
    a_file = tmp_path / "notes.txt"
    a_file.write_text("mine\n")
    out = run(["demo", "routine", "--dir", str(a_file)], place)
    refused(out, 2, f"--dir {a_file}: not a folder; expected a new or empty folder")
    used = tmp_path / "used"
    (used / "project").mkdir(parents=True)
    for which in ("routine", "goal"):
        out = run(["demo", which, "--dir", str(used)], place)
        refused(out, 2, f"--dir {used}: not empty; expected a new or empty folder")
    assert a_file.read_text() == "mine\n" and [p.name for p in used.iterdir()] == ["project"]


# ------------------------------------------------------------------ enqueue --attempts


@pytest.mark.parametrize("value", ["0", "-1", "9"])
def test_enqueue_attempts_out_of_range_is_refused_and_nothing_is_queued(place, tmp_path, value):
    """`--attempts 0` was queued as "attempts 0" and then run as one plain loop."""
    work, env = place
    subprocess.run(["git", "init", "-q", str(work)], check=True, env=env)
    db = tmp_path / "q.db"
    for args in (["enqueue", "--store", f"sqlite://{db}", "fix the bug", "--attempts", value],
                 ["-p", "fix the bug", "--attempts", value]):
        out = run(args, place)
        refused(out, 2, f"--attempts: expected a number from 1 to 8, got {value}")
    assert not db.exists()


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_enqueue_resume_of_an_unknown_session_is_refused(place, tmp_path, request, kind):
    """It was queued, and the worker that took it failed the loop out of sight."""
    store = f"sqlite://{tmp_path / 'q.db'}" if kind == "sqlite" else request.getfixturevalue("pg_db")
    out = run(["enqueue", "--store", store, "fix the bug", "--resume", "0f0e0d0c-0000-4000-8000-000000000000"], place)
    refused(out, 2, "--resume 0f0e0d0c-0000-4000-8000-000000000000: no such session in the store ")
    listed = run(["workers", "--store", store, "--all"], place)
    assert listed.returncode == 0 and listed.stdout.strip() == "No workers", listed.stderr


def test_a_worker_store_in_a_folder_that_does_not_exist_is_named(place, tmp_path):
    missing = tmp_path / "no" / "such"
    for args in (["workers"], ["worker"], ["enqueue", "fix the bug"]):
        out = run([*args, "--store", f"sqlite://{missing / 'q.db'}"], place)
        refused(out, 2, f"the folder {missing} does not exist; expected sqlite:///PATH in a folder that exists")
    assert not missing.exists()
