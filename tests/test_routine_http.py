"""Routines fed over HTTP, end to end: items POSTed with httpx to a real `loopwright serve`
(a subprocess on a free port) with the routine's token, queued in the ledger, taken by a real
`loopwright routine run` against the simulator; every refusal; and a ledger made by the schema
before items had fields, opened by this one."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")

from servekit import Server  # noqa: E402
from test_routines import cli, env_for, items, project  # noqa: E402
from procs import kill_mid_tool

from loopwright.testing import Simulator  # noqa: E402

INBOX = """\
source: {http: true}
prompt: "Handle report {id}: {title}"
sandbox: false
"""


def token_of(tmp_path, name):
    shown = cli(["routine", "show", name], tmp_path)
    assert shown.returncode == 0, shown.stderr
    (line,) = [x for x in shown.stdout.splitlines() if x.startswith("token: ")]
    return line.removeprefix("token: ")


@pytest.fixture
def served(tmp_path):
    project(tmp_path, "inbox", INBOX)
    project(tmp_path, "folder", "source: {folder: inbox}\nprompt: 'Read {path}'\n")
    token = token_of(tmp_path, "inbox")
    server = Server(env_for(tmp_path), tmp_path / "project")
    try:
        yield server, token
    finally:
        server.stop()


def post(server, name, body, token=None, headers=None):
    headers = {**({"authorization": f"Bearer {token}"} if token else {}), **(headers or {})}
    data = body if isinstance(body, (bytes, str)) else json.dumps(body)
    return httpx.post(f"{server.base}/routines/{name}/items", content=data, headers=headers, timeout=30)


def test_posted_items_are_queued_with_their_fields_and_the_next_fire_takes_each_once(tmp_path, served):
    server, token = served
    first = post(server, "inbox", [{"id": "r1", "title": "crash on start", "votes": 3}, {"id": "r2", "title": "typo"}],
                 token)
    assert first.status_code == 202, first.text
    assert first.json() == {"routine": "inbox", "queued": ["r1", "r2"], "already": {}, "already_done": []}
    ledger = items(tmp_path, "inbox")
    assert {k: v["status"] for k, v in ledger.items()} == {"r1": "pending", "r2": "pending"}
    assert ledger["r1"]["fields"] == {"id": "r1", "title": "crash on start", "votes": 3}

    with Simulator([{"text": "r1 fixed"}, {"text": "r2 answered"}]) as sim:
        fired = cli(["routine", "run", "inbox", "--once"], tmp_path, sim)
        sent = json.dumps([r.body["messages"] for r in sim.message_requests])
    assert fired.returncode == 0, fired.stderr
    assert "routine inbox: 2 found, 2 taken, 2 done, 0 failed" in fired.stdout
    assert "Handle report r1: crash on start" in sent and "Handle report r2: typo" in sent

    again = post(server, "inbox", {"id": "r1", "title": "crash on start"}, token)
    assert again.status_code == 202
    assert again.json() == {"routine": "inbox", "queued": [], "already": {"r1": "done"}, "already_done": ["r1"]}
    more = post(server, "inbox", [{"id": "r2", "title": "typo"}, {"id": "r3", "title": "slow"}], token)
    assert more.json()["queued"] == ["r3"] and more.json()["already_done"] == ["r2"]
    with Simulator([{"text": "r3 done"}]) as sim:
        second = cli(["routine", "run", "inbox", "--once"], tmp_path, sim)
        assert len(sim.message_requests) == 1
    assert "routine inbox: 1 found, 1 taken, 1 done, 0 failed" in second.stdout, second.stderr
    assert {k: (v["status"], v["tries"]) for k, v in items(tmp_path, "inbox").items()} == {
        "r1": ("done", 1), "r2": ("done", 1), "r3": ("done", 1)}


@pytest.mark.parametrize("name, body, auth, status, needle", [
    ("inbox", {"id": "a", "title": "t"}, None, 401, "expected the header `Authorization: Bearer <token>`"),
    ("inbox", {"id": "a", "title": "t"}, "not-the-token", 401, "wrong token for routine 'inbox'"),
    ("nosuch", {"id": "a"}, "TOKEN", 404, "no routine 'nosuch' here: expected a file .loopwright/routines/nosuch.yaml"),
    ("folder", {"id": "a"}, "TOKEN", 404, "routine 'folder' takes its items from its `folder:` source, not over HTTP"),
    ("inbox", b"{not json", "TOKEN", 400, "the body is not JSON"),
    ("inbox", b"", "TOKEN", 400, "the body is empty"),
    ("inbox", [], "TOKEN", 400, "the list is empty"),
    ("inbox", [{"id": "a", "title": "t"}, {"title": "t"}], "TOKEN", 400, "item 2: `id`: expected a non-empty string"),
    ("inbox", [{"id": "a", "title": "t"}, {"id": 7, "title": "t"}], "TOKEN", 400, "item 2: `id`: expected a non-empty "
     "string of at most 200 printable characters, got 7"),
    ("inbox", ["a"], "TOKEN", 400, "item 1: expected a JSON object with a string `id`, got str"),
    ("inbox", [{"id": "a", "title": "t"}, {"id": "b"}], "TOKEN", 400,
     "item 2 (id 'b'): no field title: the routine's prompt fills in {title}"),
    ("inbox", [{"id": "a", "title": "t"}, {"id": "a", "title": "u"}], "TOKEN", 400,
     "item 2 (id 'a'): the id appears twice in this request"),
])
def test_a_refused_post_says_why_and_queues_nothing(tmp_path, served, name, body, auth, status, needle):
    server, token = served
    answer = post(server, name, body, token if auth == "TOKEN" else auth)
    assert answer.status_code == status, answer.text
    assert needle in answer.json()["error"], answer.json()
    if status == 401:
        assert answer.headers["www-authenticate"].startswith("Bearer")
    assert items(tmp_path, "inbox") == {}  # a request with one bad item queues none of them


def test_a_new_token_replaces_the_old_one_and_the_launch_token_is_not_a_routines(tmp_path, served):
    server, token = served
    assert post(server, "inbox", {"id": "a", "title": "t"}, server.token).status_code == 401
    new = cli(["routine", "token", "inbox", "--new"], tmp_path)
    assert new.returncode == 0 and "the old one no longer works" in new.stderr
    fresh = new.stdout.strip()
    assert fresh != token and token_of(tmp_path, "inbox") == fresh
    assert post(server, "inbox", {"id": "a", "title": "t"}, token).status_code == 401
    assert post(server, "inbox", {"id": "a", "title": "t"}, fresh).status_code == 202
    assert post(server, "inbox", {"id": "b", "title": "t"}, fresh, headers={"origin": "https://evil.example"}
                ).status_code == 403  # a browser page elsewhere cannot post, even holding the token
    project(tmp_path, "unseen", INBOX)  # no command has seen it yet: it has no token
    unseen = post(server, "unseen", {"id": "a", "title": "t"}, fresh)
    assert unseen.status_code == 401 and "`loopwright routine show unseen` makes one" in unseen.json()["error"]
    other = cli(["routine", "token", "folder"], tmp_path)
    assert other.returncode == 2 and "only a routine with `source: {http: true}` has a token" in other.stderr


def test_the_token_is_kept_in_the_store_not_in_the_routine_file(tmp_path):
    root = project(tmp_path, "inbox", INBOX)
    token = token_of(tmp_path, "inbox")
    assert token == token_of(tmp_path, "inbox") and len(token) >= 40  # made once, then kept
    assert token not in (root / ".loopwright" / "routines" / "inbox.yaml").read_text()
    assert cli(["routine", "rm", "inbox"], tmp_path).returncode == 0
    project(tmp_path, "inbox", INBOX)  # made again: a new token, the old one gone with the file
    assert token_of(tmp_path, "inbox") != token
    bad = project(tmp_path, "bad", "source: {http: yes please}\nprompt: x\n")
    out = cli(["routine", "show", "bad"], tmp_path)
    assert out.returncode == 2 and f"{bad / '.loopwright' / 'routines' / 'bad.yaml'}: source.http: expected true" \
        in out.stderr


OLD_SCHEMA = """
CREATE TABLE routine_items (
    routine TEXT NOT NULL, item_id TEXT NOT NULL, status TEXT NOT NULL, tries INTEGER NOT NULL DEFAULT 0,
    session_id TEXT NOT NULL DEFAULT '', cost_usd REAL NOT NULL DEFAULT 0, outcome TEXT NOT NULL DEFAULT '',
    created REAL NOT NULL, started REAL, ended REAL, owner TEXT NOT NULL DEFAULT '',
    resumed INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (routine, item_id)
);
CREATE TABLE routines (
    key TEXT PRIMARY KEY, name TEXT NOT NULL DEFAULT '', cwd TEXT NOT NULL DEFAULT '',
    every_s INTEGER NOT NULL DEFAULT 0, cron TEXT NOT NULL DEFAULT '', paused INTEGER NOT NULL DEFAULT 0, next_at REAL
);
"""


def old_store(path):
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path)
    db.executescript(OLD_SCHEMA)
    db.execute("INSERT INTO routine_items (routine, item_id, status, tries, outcome, created) "
               "VALUES ('k', 'x1', 'done', 1, 'fixed', 1.0)")
    db.commit()
    db.close()


def test_a_ledger_made_before_items_had_fields_is_migrated_and_keeps_its_rows(tmp_path):
    from loopwright.stores.ledger import SqliteLedger

    old_store(tmp_path / "old" / "schedules.db")
    ledger, again = SqliteLedger(tmp_path / "old" / "schedules.db"), SqliteLedger(tmp_path / "old" / "schedules.db")
    try:  # the second open finds the column already there
        (row,) = ledger.items("k")
        assert (row.item_id, row.status, row.outcome, row.fields) == ("x1", "done", "fixed", "")
        assert ledger.queue("k", [("x1", '{"id": "x1"}'), ("x2", '{"id": "x2", "a": 1}')], 2.0) == {
            "x1": "done", "x2": "queued"}
        assert json.loads(again.get("k", "x2").fields) == {"id": "x2", "a": 1}
    finally:
        ledger.close()
        again.close()


def test_an_old_ledger_takes_posted_items_through_serve_and_a_fire(tmp_path):
    old_store(tmp_path / "home" / "schedules.db")  # where the commands below keep their ledger
    project(tmp_path, "inbox", INBOX)
    token = token_of(tmp_path, "inbox")
    server = Server(env_for(tmp_path), tmp_path / "project")
    try:
        assert post(server, "inbox", {"id": "n1", "title": "t"}, token).status_code == 202
    finally:
        server.stop()
    assert items(tmp_path, "inbox")["n1"]["fields"] == {"id": "n1", "title": "t"}
    with Simulator([{"text": "n1 done"}]) as sim:
        fired = cli(["routine", "run", "inbox", "--once"], tmp_path, sim)
    assert "routine inbox: 1 found, 1 taken, 1 done, 0 failed" in fired.stdout, fired.stderr


def test_serve_all_finds_a_routine_by_name_unless_two_projects_share_it(tmp_path):
    project(tmp_path, "inbox", INBOX)
    token = token_of(tmp_path, "inbox")
    server = Server(env_for(tmp_path), tmp_path, "--all")  # started outside the project
    try:
        assert post(server, "inbox", {"id": "a1", "title": "t"}, token).status_code == 202
        second = tmp_path / "second"
        (second / ".loopwright" / "routines").mkdir(parents=True)
        (second / ".loopwright" / "routines" / "inbox.yaml").write_text(INBOX)
        shown = subprocess.run([sys.executable, "-m", "loopwright", "routine", "show", "inbox"], cwd=second,
                               env=env_for(tmp_path), capture_output=True, text=True, timeout=60)
        assert shown.returncode == 0, shown.stderr
        both = post(server, "inbox", {"id": "a2", "title": "t"}, token)
        assert both.status_code == 409 and "several projects have an `http:` routine 'inbox'" in both.json()["error"]
    finally:
        server.stop()


def test_a_posted_item_whose_fire_was_killed_is_resumed_from_its_session(tmp_path, served):
    server, token = served
    root = tmp_path / "project"
    assert post(server, "inbox", {"id": "k1", "title": "slow one"}, token).status_code == 202
    first = [{"tool_use": {"name": "Bash", "input": {"command": "echo a >> marks.txt"}}},
             {"tool_use": {"name": "Bash", "input": {"command": "echo b >> marks.txt; echo $$ > tool.pid; sleep 30"}}}]
    with open(root / ".loopwright" / "routines" / "inbox.yaml", "a") as f:
        f.write("allowed_tools: [Bash]\n")
    with Simulator(first) as sim:
        kill_mid_tool(["routine", "run", "inbox", "--once"], root, env_for(tmp_path, sim), root / "tool.pid")
    assert items(tmp_path, "inbox")["k1"]["status"] == "running"
    with Simulator([{"text": "checked: both steps ran; finished"}]) as sim:
        second = cli(["routine", "run", "inbox", "--once"], tmp_path, sim)
        sent = json.dumps(sim.message_requests[0].body["messages"])
    assert "k1: its process died mid-run; resuming its session" in second.stderr, second.stderr
    assert "1 taken, 1 done, 0 failed" in second.stdout
    assert (root / "marks.txt").read_text() == "a\nb\n"  # every Bash call ran exactly once
    assert "Handle report k1: slow one" in sent and "This run was interrupted" in sent
    assert items(tmp_path, "inbox")["k1"]["status"] == "done"
