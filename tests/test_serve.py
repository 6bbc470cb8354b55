"""`loopwright serve`, end to end: a store made by real `loopwright -p` runs through the
simulator, the server as a subprocess, and headless Chromium driving it — the list, each kind
of record, a session growing live, schedule actions with and without the token, and markup
from a model or a tool that stays text."""

import html
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from servekit import (INJECTED_TEXT, INJECTED_TOOL, Server, bash, browser, cli, compaction_session,  # noqa: E402
                      goal_session, make_env, request, scheduled)
from loopwright.testing import Simulator  # noqa: E402

SHOTS = os.environ.get("LOOPWRIGHT_SCREENSHOTS")  # a folder: the browser tests save screenshots there


MARKDOWN_ANSWER = ("# Findings\n\nThe **flaky** test is `test_io` — see [the log](https://ci.example/run?id=1&x=2).\n\n"
                   "- <script>window.pwnedMd=1</script>\n- <img src=x onerror=window.pwnedMd=2>\n"
                   "- [click](javascript:window.pwnedMd=3) and <javascript:window.pwnedMd=4> and "
                   "[again](JaVaScRiPt:window.pwnedMd=5) and [data](data:text/html,hi) and [here](/schedules)\n"
                   "- ![pixel](https://tracker.example/p.png)\n\nUNIQUE-ANSWER-MARK")


def markdown_session(env, project):
    with Simulator([{"text": MARKDOWN_ANSWER}]) as sim:
        out = cli(["-p", "what failed?", "--output-format", "json"], env, project, sim)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["session_id"]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    base = tmp_path_factory.mktemp("serve")
    env, project = make_env(base), base / "project"
    project.mkdir()
    ids = {"goal": goal_session(env, project), "compaction": compaction_session(env, project),
           "markdown": markdown_session(env, project)}
    scheduled(env, project)
    return {"env": env, "project": project, **ids}


@pytest.fixture(scope="module")
def server(store):
    s = Server(store["env"], store["project"])
    yield s
    s.stop()


@pytest.fixture(scope="module")
def driver(server):
    try:
        d = browser()
    except Exception as exc:  # no chromium, no driver, no display libraries
        pytest.skip(f"headless chromium cannot start here: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}")
    d.get(server.url)  # the printed address: the token becomes a cookie, the address loses it
    yield d
    d.quit()


def shot(driver, name):
    if SHOTS:
        height = driver.execute_script("return document.body.scrollHeight")
        driver.set_window_size(1280, min(max(height, 600), 2400))
        driver.save_screenshot(str(Path(SHOTS) / f"{name}.png"))
        driver.set_window_size(1280, 900)


def test_the_list_shows_the_sessions(server, driver, store):
    driver.get(server.base + "/")
    assert "token=" not in driver.current_url
    rows = row_texts(driver)
    assert len(rows) == 4  # the goal loop, the compaction, the Markdown answer, the schedule's fire
    text = " ".join(rows)  # read in one go: a live update may replace the table between a lookup and a read
    assert "goal_met" in text and "run three echoes" in text and "say hi" in text and "claude-sonnet-5" in text
    shot(driver, "serve-sessions")
    driver.get(server.base + "/?q=echoes")
    assert len(row_texts(driver)) == 1
    driver.get(server.base + "/?outcome=goal_met")
    assert row_texts(driver)[0].count("goal_met")


def row_texts(driver):
    """The list's rows, read in one go in the page: rows replaced by a live update between a lookup
    and a read would otherwise be stale."""
    return driver.execute_script("return [...document.querySelectorAll('table.sessions tbody tr')]"
                                 ".map(row => row.innerText)")


def test_a_session_page_shows_each_kind_of_record(server, driver, store):
    driver.get(f"{server.base}/s/{store['goal']}")
    count = lambda css: len(driver.find_elements("css selector", css))  # noqa: E731
    assert count(".rec.user") >= 1 and count(".rec.assistant") == 4 and count(".rec.harness") >= 1
    assert count(".call") == 2 and count(".tool-result.ok") == 1 and count(".tool-result.denied") == 1
    assert count(".rec.retry") == 1 and count(".rec.result") == 1
    goal = driver.find_element("id", "records").text
    assert "goal set" in goal and "not met" in goal and "met" in goal and "Overloaded: status 529" in goal
    assert "Permission needed for Write" in goal
    shot(driver, "serve-session")
    driver.get(f"{server.base}/s/{store['compaction']}")
    compaction = driver.find_element("css selector", ".rec.compaction").text
    assert "reactive compaction" in compaction and "tokens" in compaction
    assert "finished after compaction" in driver.find_element("id", "records").text


def test_markup_from_a_model_or_a_tool_never_runs(server, driver, store):
    driver.get(f"{server.base}/s/{store['goal']}")
    assert driver.execute_script("return [typeof window.pwnedText, typeof window.pwnedTool]") == ["undefined"] * 2
    text = driver.find_element("id", "records").text
    assert INJECTED_TEXT in text and INJECTED_TOOL in text  # shown as text
    assert driver.find_elements("css selector", "#records img, #records script") == []
    status, headers, body = request(f"{server.base}/s/{store['goal']}", headers=server.auth)
    assert status == 200 and "script-src 'self'" in headers["content-security-policy"]
    assert "<script>window" not in body and "&lt;img src=x onerror=" in body


def test_a_running_session_updates_without_a_reload(server, driver, store):
    sid = "7f1c2b8e-0000-4000-8000-000000000001"
    script = [bash("echo first"), {**bash("echo second"), "delay": 2.5}, {"text": "all finished now", "delay": 2.5}]
    with Simulator(script) as sim:
        env = dict(store["env"], ANTHROPIC_BASE_URL=sim.base_url)
        run = subprocess.Popen([sys.executable, "-m", "loopwright", "-p", "two echoes", "--session-id", sid,
                                "--allowedTools", "Bash"], env=env, cwd=store["project"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            _wait(lambda: "echo first" in request(f"{server.base}/s/{sid}", headers=server.auth)[2], 20)
            driver.get(f"{server.base}/s/{sid}")
            assert driver.find_element("id", "live")  # the page knows the session is running
            driver.execute_script("window.notReloaded = true")
            before = len(driver.find_elements("css selector", "#records .rec"))
            _wait(lambda: "all finished now" in driver.find_element("id", "records").text, 30)
            assert driver.execute_script("return window.notReloaded") is True
            assert len(driver.find_elements("css selector", "#records .rec")) > before
            assert "echo second" in driver.find_element("id", "records").text
            _wait(lambda: "ended" in driver.find_element("id", "live").get_attribute("class"), 15)
        finally:
            run.wait(timeout=60)


def test_the_sessions_list_updates_without_a_reload(server, driver, store):
    """A session started while the list is open appears in it as running, then shows its end."""
    script = [{**bash("echo one"), "delay": 2}, {"text": "the list follows me", "delay": 2}]
    driver.get(server.base + "/")
    driver.execute_script("window.notReloaded = true")
    rows = lambda: row_texts(driver)  # noqa: E731
    ours = lambda: [r for r in rows() if "watch the list" in r]  # noqa: E731
    before = len(rows())
    with Simulator(script) as sim:
        env = dict(store["env"], ANTHROPIC_BASE_URL=sim.base_url)
        run = subprocess.Popen([sys.executable, "-m", "loopwright", "-p", "watch the list", "--allowedTools", "Bash"],
                               env=env, cwd=store["project"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            _wait(lambda: ours() and "running" in ours()[0], 30)
            _wait(lambda: ours() and "completed" in ours()[0], 30)
        finally:
            run.wait(timeout=60)
    assert driver.execute_script("return window.notReloaded") is True
    assert len(rows()) == before + 1 and "token=" not in driver.current_url


def test_pause_and_resume_need_the_token(server, driver, store):
    driver.get(server.base + "/schedules")
    section = lambda: driver.find_element("id", "schedule-nightly")  # noqa: E731
    assert "say hi" in section().text and "success" in section().text  # the past fire and its status
    section().find_element("css selector", "button.pause").click()
    _wait(lambda: "paused" in section().text, 10)
    assert _schedule(store)["paused"] is True
    shot(driver, "serve-schedules")
    section().find_element("css selector", "button.resume").click()
    _wait(lambda: "active" in section().text, 10)
    assert _schedule(store)["paused"] is False
    url = f"{server.base}/schedules/nightly/pause"
    assert request(url, b"", method="POST")[0] == 403  # no token
    assert request(url, b"token=wrong", method="POST")[0] == 403
    evil = {"Origin": "http://evil.example", "Content-Type": "application/x-www-form-urlencoded"}
    assert request(url, f"token={server.token}".encode(), evil, "POST")[0] == 403  # another site
    assert request(url.replace("127.0.0.1", "localhost"), b"", {"Host": "evil.example"}, "POST")[0] == 403
    assert _schedule(store)["paused"] is False
    status, _, _ = request(f"{server.base}/schedules/nightly/run", b"", {"X-Loopwright-Token": server.token}, "POST")
    assert status == 303 and abs(_schedule(store)["next_at"] - time.time()) < 30


def test_cost_is_drawn_as_svg(server, driver):
    driver.get(server.base + "/cost")
    assert len(driver.find_elements("css selector", "svg.chart rect")) >= 2
    assert "claude-sonnet-5" in driver.find_element("css selector", "ul.legend").text
    shot(driver, "serve-cost")


def test_nothing_outside_the_stores_is_served(server, store):
    for path in ("/static/..%2F..%2Fcli%2Fmain.py", "/static/app.py", "/s/..%2F..%2Fetc%2Fpasswd", "/s/..",
                 f"/s/{store['goal']}%2F..%2F..%2Fschedules.db"):
        assert request(server.base + path, headers=server.auth)[0] == 404, path
    rebound = request(server.base + "/", headers={"Host": "attacker.example:80", **server.auth})  # DNS rebinding
    assert rebound[0] == 403 and "unknown Host" in rebound[2]


def test_port_0_takes_a_free_port_and_prints_the_address_with_it(tmp_path):
    env, project = make_env(tmp_path), tmp_path / "project"
    project.mkdir()
    s = Server(env, project)  # started with --port 0
    try:
        assert s.port > 0 and s.url.startswith(f"http://127.0.0.1:{s.port}/?token=")
        status, _, body = request(s.base + "/", headers=s.auth)
        assert status == 200 and "<html" in body.lower()
        taken = cli(["serve", "--port", str(s.port)], env, project, timeout=30)  # that port is now in use
        assert taken.returncode == 2 and f"--port {s.port}: cannot listen there (in use)" in taken.stderr
        assert "Traceback" not in taken.stderr
    finally:
        s.stop()
    for bad in ("-1", "65536"):
        out = cli(["serve", "--port", bad], env, project, timeout=30)
        assert out.returncode == 2 and f"--port: expected 0 (a free port) to 65535, got {bad}" in out.stderr


def test_a_server_beyond_loopback_needs_the_token_for_everything(tmp_path):
    from starlette.testclient import TestClient

    from loopwright.web.app import Config, build

    app = build(Config(tmp_path, None, "sekrit", local=False, port=80))
    with TestClient(app, base_url="http://box.example") as client:
        assert client.get("/").status_code == 403
        assert client.get("/static/style.css").status_code == 403
        assert client.get("/", headers={"X-Loopwright-Token": "sekrit"}).status_code == 200
        response = client.get("/?token=sekrit", follow_redirects=False)
        assert response.status_code == 303 and response.headers["location"] == "/"
        assert client.get("/").status_code == 200  # the cookie now


def _schedule(store):
    out = cli(["schedule", "list", "--json"], store["env"], store["project"])
    return next(s for s in json.loads(out.stdout) if s["id"] == "nightly")


def _wait(condition, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if condition():
                return
        except Exception:  # the page is between states
            pass
        time.sleep(0.2)
    assert condition()


def test_a_subagents_work_shows_nested_under_the_call_that_started_it(tmp_path, driver):
    """Two subagents started at once: each sidechain appears, collapsed, after its own call."""
    env, project = make_env(tmp_path), tmp_path / "project"
    project.mkdir()
    calls = [{"name": "Agent", "input": {"description": d, "prompt": f"{d.upper()}-TASK look"}} for d in ("red", "blue")]
    script = {"rules": [
        {"match": {"last_user_contains": "RED-TASK"}, "responses": [{"text": "red says hi"}]},
        {"match": {"last_user_contains": "BLUE-TASK"}, "responses": [{"text": "blue says hi"}]},
        {"responses": [{"tool_use": calls}, {"text": "both answered"}]}]}
    with Simulator(script) as sim:
        out = cli(["-p", "ask two helpers", "--output-format", "json"], env, project, sim)
    sid = json.loads(out.stdout)["session_id"]
    other = Server(env, project)
    try:
        driver.get(other.url)
        driver.get(f"{other.base}/s/{sid}")
        nested = driver.execute_script(
            "return [...document.querySelectorAll('details.sidechain')].map(d => [d.open, d.textContent])")
    finally:
        other.stop()
    assert len(nested) == 2 and not any(opened for opened, _ in nested)  # collapsed until opened
    # each under its own call, in the order the calls finished (they ran at once)
    texts = sorted((text for _, text in nested), key=lambda t: "BLUE-TASK" in t)
    assert "RED-TASK" in texts[0] and "red says hi" in texts[0] and "blue says" not in texts[0]
    assert "BLUE-TASK" in texts[1] and "blue says hi" in texts[1] and "red says" not in texts[1]


def test_a_routines_ledger_shows_with_links_and_pauses_with_the_token(tmp_path, driver):
    env, project = make_env(tmp_path), tmp_path / "project"
    (project / ".loopwright" / "routines").mkdir(parents=True)
    (project / ".loopwright" / "routines" / "triage.yaml").write_text(
        'source: {command: cat items.jsonl}\nprompt: "Handle report {id}"\nevery: 1h\nsandbox: false\n')
    (project / "items.jsonl").write_text('{"id": "r1"}\n{"id": "r2"}\n')
    with Simulator([{"text": "handled", "repeat": 2}]) as sim:
        assert cli(["routine", "add", "triage"], env, project).returncode == 0
        ran = cli(["routine", "run", "triage", "--once"], env, project, sim)
    assert ran.returncode == 0, ran.stderr
    other = Server(env, project)
    try:
        driver.get(other.url)
        driver.get(other.base + "/schedules")
        section = lambda: driver.find_element("css selector", "section.routine")  # noqa: E731
        assert "triage" in section().text and "2 done" in section().text and "every 3600 s" in section().text
        links = section().find_elements("css selector", "table.items a")
        assert len(links) == 2 and all("/s/" in a.get_attribute("href") for a in links)
        section().find_element("css selector", "button.pause").click()
        _wait(lambda: "paused" in section().text, 10)
        refused = request(other.base + "/routines/" + section().get_attribute("id")[len("routine-"):] + "/resume",
                          data=b"", method="POST")
        assert refused[0] == 403  # without the token
    finally:
        other.stop()
    listed = cli(["routine", "list"], env, project)
    assert "paused" in listed.stdout


@pytest.fixture(scope="module")
def attempts_run(tmp_path_factory):
    """A real `-p --attempts 2` run on the simulator, judged: attempt 1 wins; the home, the
    repository, the run's JSON result and the attempts' sessions by number."""
    from test_attempts import CHECK, RIGHT, WRONG, git, instructions, script, verdict, write

    tmp_path = tmp_path_factory.mktemp("attempts")
    env, repo = make_env(tmp_path), tmp_path / "repo"
    (tmp_path / "tmp").mkdir()
    env["TMPDIR"] = str(tmp_path / "tmp")  # the worktrees
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "app.py").write_text("def add(a, b):\n    return 0\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "start")
    flags = ["--permission-mode", "acceptEdits", "--output-format", "json", "--check", CHECK]
    with Simulator(script([verdict("A")], {1: write("app.py", RIGHT), 2: write("app.py", WRONG)})) as sim:
        out = cli(["-p", "make add() add", "--attempts", "2", *instructions(tmp_path, 2), *flags], env, repo, sim,
                  timeout=120)
    result = json.loads(out.stdout)
    assert result["attempts"]["winner"] == 1, out.stderr
    sessions = {row["attempt"]: row["session_id"] for row in result["attempts"]["attempts"]}
    return {"env": env, "repo": repo, "result": result, "sessions": sessions, "run": result["attempts"]["run"]}


def test_the_list_marks_each_attempt_with_its_place_in_the_run_and_the_ruling(attempts_run):
    """The web list's data (`/api/sessions`) carries the mark `loopwright sessions` prints."""
    env, repo, sessions, run = (attempts_run[k] for k in ("env", "repo", "sessions", "run"))
    listed = json.loads(cli(["sessions", "--json"], env, repo).stdout)
    other = Server(env, repo)
    try:
        status, headers, body = request(other.base + "/api/sessions", headers=other.auth)
    finally:
        other.stop()
    assert status == 200 and headers["content-type"].startswith("application/json")
    rows = {r["id"]: r for r in json.loads(body)["sessions"]}
    assert set(sessions.values()) <= set(rows)
    for number, sid in sessions.items():
        mark = rows[sid]["attempt"]
        assert (mark["run"], mark["number"], mark["of"], mark["won"], mark["winner"]) == (run, number, 2, number == 1, 1)
        assert mark["branch"] == f"loopwright/{run[:8]}/{number}"
        cli_row = next(r for r in listed if r["id"] == sid)
        assert mark == cli_row["attempt"]  # the same summary as `loopwright sessions`
    assert rows[sessions[1]]["attempt_label"] == f"attempt 1/2 of run {run[:8]}, won"
    assert rows[sessions[2]]["attempt_label"] == f"attempt 2/2 of run {run[:8]}, attempt 1 won"


def test_attempts_show_side_by_side_with_the_judges_verdict_and_the_winner(attempts_run, driver):
    env, repo, sessions, run = (attempts_run[k] for k in ("env", "repo", "sessions", "run"))
    other = Server(env, repo)  # the attempts' sessions are this folder's, though each ran in a worktree
    try:
        driver.get(other.url)
        listed = driver.execute_script("return [...document.querySelectorAll('main a')].map(a => a.href)")
        assert all(any(sid in href for href in listed) for sid in sessions.values()), listed
        marks = driver.execute_script("return [...document.querySelectorAll('table.sessions tbody tr')]"
                                      ".map(row => row.innerText)")
        assert any(f"attempt 1/2 of run {run[:8]}, won" in m and "make add() add" in m for m in marks), marks
        assert any(f"attempt 2/2 of run {run[:8]}, attempt 1 won" in m for m in marks), marks
        shot(driver, "serve-attempt-marks")
        driver.get(f"{other.base}/s/{sessions[2]}")
        columns = lambda: driver.find_elements("css selector", ".attempt-grid .attempt")  # noqa: E731
        _wait(lambda: len(columns()) == 2, 10)
        first, second = (c.text for c in columns())
        assert "winner" in first and "acceptable" in first and "pass" in first
        assert "(this session)" in second and "cannot win: its checks failed" in second and "FAIL" in second
        box = driver.find_element("css selector", ".rec.attempts").text
        assert "winner: attempt 1" in box and "judge" in box and "reviewed" in box
        driver.execute_script("document.querySelectorAll('.attempt-grid details').forEach(d => d.open = true)")
        assert "return a + b" in columns()[0].text and "return a - b" in columns()[1].text
        shot(driver, "serve-attempts")
        columns()[0].find_element("css selector", "a").click()  # to the winner's own session
        _wait(lambda: sessions[1] in driver.current_url, 10)
        assert "(this session)" in columns()[0].text
    finally:
        other.stop()


def test_each_routine_shows_its_cost_per_fire_and_in_all(tmp_path, driver):
    env, project = make_env(tmp_path), tmp_path / "project"
    (project / ".loopwright" / "routines").mkdir(parents=True)
    (project / ".loopwright" / "routines" / "triage.yaml").write_text(
        'source: {command: cat items.jsonl}\nprompt: "Handle report {id}"\nsandbox: false\n')
    (project / "items.jsonl").write_text('{"id": "r1"}\n{"id": "r2"}\n')
    with Simulator([{"text": "handled", "repeat": -1}]) as sim:
        assert cli(["routine", "run", "triage", "--once"], env, project, sim).returncode == 0
        (project / "items.jsonl").write_text('{"id": "r1"}\n{"id": "r2"}\n{"id": "r3"}\n')
        assert cli(["routine", "run", "triage", "--once"], env, project, sim).returncode == 0
    other = Server(env, project)
    try:
        driver.get(other.url)
        driver.get(other.base + "/schedules")
        fires = driver.execute_script("return [...document.querySelectorAll('section.routine table.fires tbody tr')]"
                                      ".map(tr => [...tr.cells].map(td => td.textContent))")
        total = driver.execute_script("return [...document.querySelectorAll('table.routine-costs td')]"
                                      ".map(td => td.textContent)")
        items = driver.execute_script("return [...document.querySelectorAll('table.items tbody tr')]"
                                      ".map(tr => tr.cells[3].textContent)")
        shot(driver, "serve-routines")
        driver.get(other.base + "/cost")
        by_routine = driver.execute_script("return [...document.querySelectorAll('table.routine-totals td')]"
                                           ".map(td => td.textContent)")
        bars = driver.find_elements("css selector", ".routine-chart svg.chart rect")
    finally:
        other.stop()
    assert [row[1] for row in fires] == ["1", "2"]  # the newest fire first: it ran only the new item
    costs = [float(row[5].lstrip("$")) for row in fires]
    assert all(c > 0 for c in costs) and total[0] == "triage"
    in_all = float(total[1].lstrip("$"))
    assert abs(in_all - sum(costs)) < 0.0002 and abs(in_all - sum(float(c.lstrip("$")) for c in items)) < 0.0002
    assert total[2].startswith(fires[0][5])  # the last fire's cost
    assert by_routine == ["triage", total[1]] and bars  # the cost page: per routine, as a chart too


def test_a_record_of_megabytes_shows_cut_with_a_link_to_its_whole_line(tmp_path):
    """A 5 MB answer (one transcript line): the page and its event stream end, each block cut
    to a bounded size with a link to the raw line, which gives the whole record back."""
    env, project = make_env(tmp_path), tmp_path / "project"
    project.mkdir()
    big = "".join(f"word{i} " for i in range(700_000))  # ~5 MB, one line
    with Simulator([{"text": big}]) as sim:
        out = cli(["-p", "say a lot", "--output-format", "json"], env, project, sim, timeout=120)
    sid = json.loads(out.stdout)["session_id"]
    s = Server(env, project)
    try:
        status, _, page = request(f"{s.base}/s/{sid}", headers=s.auth)
        _, _, events = request(f"{s.base}/s/{sid}/events", headers=s.auth)
        links = sorted(set(re.findall(rf'href="(/s/{sid}/raw[^"]*)"', page)))
        whole = [request(s.base + html.unescape(href), headers=s.auth) for href in links]
        bad = request(f"{s.base}/s/{sid}/raw?at=1", headers=s.auth)[0]
    finally:
        s.stop()
    assert status == 200 and page.rstrip().endswith("</html>") and len(page) < 1_000_000  # 5 MB twice, cut
    assert "more characters" in page and links and "word699999" not in page
    assert "event: done" in events and len(events) < 1_000_000 and "more characters" in events
    records = [json.loads(body) for code, _, body in whole if code == 200]
    assert len(records) == len(links)
    answer = next(r for r in records if r.get("type") == "assistant")
    assert answer["message"]["content"][0]["text"] == big  # the whole line, as recorded
    assert bad == 404  # no line starts in the middle of one


@pytest.mark.parametrize("host", ["127.0.0.2", "::1", "localhost"])
def test_every_loopback_address_it_prints_answers(tmp_path, host):
    env, project = make_env(tmp_path), tmp_path / "project"
    project.mkdir()
    try:
        s = Server(env, project, "--host", host)
    except RuntimeError as exc:
        if "exited" not in str(exc):  # it started but did not answer its own address
            raise
        pytest.skip(f"cannot bind {host} here (no IPv6 loopback?): {exc}")
    try:
        first = request(s.url)  # the address it printed, as a browser opens it
        cookie = first[1].get("set-cookie", "").split(";")[0]
        page = request(s.base + "/", headers={"Cookie": cookie})
        rebound = request(s.base + "/", headers={"Host": f"attacker.example:{s.port}", **s.auth})
    finally:
        s.stop()
    assert first[0] == 303 and cookie.startswith("loopwright_token="), first
    assert page[0] == 200 and "Sessions" in page[2]
    assert rebound[0] == 403


def test_reading_needs_the_token_unless_no_token_is_asked_for(store):
    s = Server(store["env"], store["project"])
    try:
        pages = ["/", f"/s/{store['goal']}", f"/s/{store['goal']}/raw", "/api/sessions", "/schedules", "/cost",
                 "/static/style.css", "/list/events"]
        without = {path: request(s.base + path)[0] for path in pages}
        wrong = request(s.base + "/?token=not-it")[0]
        first = request(s.url)
        cookie = first[1]["set-cookie"]
        with_cookie = request(s.base + f"/s/{store['goal']}", headers={"Cookie": cookie.split(";")[0]})
    finally:
        s.stop()
    assert set(without.values()) == {403} and wrong == 403, without
    assert "every page needs the token" in s.said
    assert first[0] == 303 and first[1]["location"] == "/"
    assert "httponly" in cookie.lower() and "samesite=strict" in cookie.lower()
    assert with_cookie[0] == 200 and "goal set" in with_cookie[2]

    opened = Server(store["env"], store["project"], "--no-token")
    try:
        read = request(opened.base + f"/s/{store['goal']}")[0]
        change = request(f"{opened.base}/schedules/nightly/pause", b"", method="POST")[0]
    finally:
        opened.stop()
    assert "--no-token: anyone on this machine can read every transcript" in opened.said
    assert read == 200 and change == 403  # changes still need the token
    refused = cli(["serve", "--no-token", "--host", "0.0.0.0", "--port", "0"], store["env"], store["project"])
    assert refused.returncode == 2 and "--no-token: only on a loopback address" in refused.stderr


def test_the_models_markdown_is_drawn_once_and_stays_harmless(server, store):
    status, _, body = request(f"{server.base}/s/{store['markdown']}", headers=server.auth)
    assert status == 200
    records = body[body.index('id="records"'):]
    assert "<h1>Findings</h1>" in records and "<strong>flaky</strong>" in records and "<code>test_io</code>" in records
    assert ('<a href="https://ci.example/run?id=1&amp;x=2" rel="noopener noreferrer nofollow">the log</a>'
            in records)
    assert records.count("UNIQUE-ANSWER-MARK") == 1  # the assistant message; the result box does not repeat it
    assert "the answer above" in records
    # raw HTML stays text; no unsafe scheme, relative link or image becomes an element
    assert "&lt;script&gt;window.pwnedMd=1&lt;/script&gt;" in records and "<script>window" not in records
    assert "&lt;img src=x onerror=window.pwnedMd=2&gt;" in records and "<img" not in records
    assert not re.search(r"href=\"\s*(javascript|data|/)", records, re.I)
    assert "[click](javascript:window.pwnedMd=3)" in records and "[here](/schedules)" in records
    assert records.count("<a ") == 2  # the log and the pixel, which is a link now, never fetched


def test_the_markdown_view_runs_nothing_in_a_browser(server, driver, store):
    driver.get(server.url)  # the token again, as a cookie: an earlier test may have dropped it
    driver.get(f"{server.base}/s/{store['markdown']}")
    records = driver.find_element("id", "records")
    assert "Findings" in records.text and driver.find_elements("css selector", "#records .md h1")
    hrefs = driver.execute_script("return [...document.querySelectorAll('#records .md a')].map(a => a.href)")
    assert hrefs == ["https://ci.example/run?id=1&x=2", "https://tracker.example/p.png"]
    assert driver.execute_script("return typeof window.pwnedMd") == "undefined"
    assert driver.find_elements("css selector", "#records .md img, #records .md script") == []
