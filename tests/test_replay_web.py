"""A session's replay on its page in the web view (`loopwright serve`): the last `loopwright
replay` of it (kept in the home's `replays/`), its first divergence with its kind and diff, and a
button that replays it again offline (a POST with the token, from our own pages only). Everything
real: the CLI records through the simulator, the server runs as a subprocess, headless Chromium
clicks the button."""

import json
import os
import shutil
import time

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from servekit import Server, bash, browser, cli, make_env, request  # noqa: E402
from loopwright.testing import Simulator  # noqa: E402


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    base = tmp_path_factory.mktemp("replayweb")
    env, project = make_env(base), base / "project"
    project.mkdir()
    with Simulator([bash("echo '<b>one</b>'"), {"text": "said one"}]) as sim:
        out = cli(["-p", "say one", "--allowedTools", "Bash", "--output-format", "json"], env, project, sim)
    assert out.returncode == 0, out.stderr
    sid = json.loads(out.stdout)["session_id"]
    server = Server(env, project)
    yield {"env": env, "project": project, "sid": sid, "server": server}
    server.stop()


def page(served, cookie=True):
    server = served["server"]
    headers = {"Cookie": f"loopwright_token={server.token}"} if cookie else server.auth
    status, _, body = request(f"{server.base}/s/{served['sid']}", headers=headers)
    assert status == 200, body
    return body


def deny_echo(project):
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir(exist_ok=True)
    settings.write_text(json.dumps({"permissions": {"deny": ["Bash(echo:*)"]}}))


def test_the_page_shows_the_last_replay_of_the_session(served):
    assert "Not replayed yet." in page(served)
    out = cli(["replay", served["sid"]], served["env"], served["project"], timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    body = page(served)
    assert "no divergence" in body and "Replay again" in body and 'id="replay"' in body
    # without the cookie the page says how to get the button, and offers none
    body = page(served, cookie=False)
    assert "no divergence" in body and "<button" not in body.split('id="replay"')[1].split("</section>")[0]


def test_replaying_from_the_page_needs_the_token_and_our_own_origin(served):
    server, sid = served["server"], served["sid"]
    url = f"{server.base}/s/{sid}/replay"
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    assert request(url, b"", {}, "POST")[0] == 403
    assert request(url, b"token=wrong", form, "POST")[0] == 403
    # the launch token, but sent from another site's page: refused before anything runs
    status, _, body = request(url, f"token={server.token}".encode(), {**form, **server.auth,
                                                                      "Origin": "http://evil.example"}, "POST")
    assert status == 403 and "cross-site" in body
    assert request(f"{server.base}/s/no-such/replay", b"", server.auth, "POST")[0] == 404
    assert request(f"{server.base}/s/{sid}/replay", method="GET", headers=server.auth)[0] == 405


def test_the_button_replays_and_the_page_shows_the_first_divergence(served):
    try:
        driver = browser()
    except Exception as exc:  # no chromium, no driver, no display libraries
        pytest.skip(f"headless chromium cannot start here: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}")
    server, project = served["server"], served["project"]
    deny_echo(project)  # the one change: a rule now denies the recorded call
    try:
        driver.get(server.url)
        driver.get(f"{server.base}/s/{served['sid']}")
        assert "no divergence" in driver.find_element("id", "replay").text
        driver.find_element("css selector", "#replay button").click()
        _wait(lambda: driver.find_elements("css selector", "#replay .divergence"), 300)
        shown = driver.find_element("id", "replay").text
        assert "blocked" in shown and "permission gate" in shown, shown
        removed = driver.find_element("css selector", "#replay pre.diff .del").text
        added = driver.find_element("css selector", "#replay pre.diff .add").text
        assert "<b>one</b>" in removed and "Permission denied for Bash" in added  # tool output stays text
        assert driver.find_elements("css selector", "#replay pre b") == []
        if os.environ.get("LOOPWRIGHT_SCREENSHOTS"):
            driver.save_screenshot(os.path.join(os.environ["LOOPWRIGHT_SCREENSHOTS"], "replay.png"))
        assert driver.execute_script("return document.querySelectorAll('#records').length") == 1
    finally:
        driver.quit()
        shutil.rmtree(project / ".claude")
    kept = json.loads(_home(served).joinpath("replays", f"{served['sid']}.json").read_text())
    assert kept["diverged"] and kept["divergence"]["kind"] == "blocked"


def _home(served):
    from pathlib import Path

    return Path(served["env"]["LOOPWRIGHT_HOME"])


def _wait(condition, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.2)
    assert condition()


def test_a_session_in_postgresql_is_replayed_from_its_page(pg_db, tmp_path):
    env, project = make_env(tmp_path), tmp_path / "project"
    project.mkdir()
    with Simulator([bash("echo from postgres"), {"text": "done"}]) as sim:
        out = cli(["-p", "echo", "--allowedTools", "Bash", "--output-format", "json", "--store", pg_db], env, project, sim)
    assert out.returncode == 0, out.stderr
    sid = json.loads(out.stdout)["session_id"]
    server = Server(env, project, "--store", pg_db)
    try:
        _wait(lambda: request(f"{server.base}/s/{sid}", headers=server.auth)[0] == 200, 30)  # mirrored
        status, headers, body = request(f"{server.base}/s/{sid}/replay", b"", server.auth, "POST")
        assert status == 303 and headers["location"].endswith(f"/s/{sid}#replay"), body
        cookie = {"Cookie": f"loopwright_token={server.token}"}
        shown = request(f"{server.base}/s/{sid}", headers=cookie)[2].split('id="replay"')[1].split("</section>")[0]
        assert "no divergence" in shown and "Replay again" in shown, shown
        assert pg_db not in shown  # the store's address (it may hold a password) is not on the page
    finally:
        server.stop()
    kept = json.loads((tmp_path / "home" / ".loopwright" / "replays" / f"{sid}.json").read_text())
    assert kept["transcript"].endswith(f"#session={sid}") and not kept["diverged"]
