"""Helpers of the web view's tests and bench: a store made by real `loopwright -p` runs through
the simulator, `loopwright serve` as a subprocess, and headless Chromium through Selenium."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from loopwright.testing import Simulator

JUDGE = {"system_contains": "You decide whether an agent has met its goal"}
INJECTED_TEXT = "<script>window.pwnedText=1</script> I looked."
INJECTED_TOOL = "<img src=x onerror=window.pwnedTool=1>"
SUMMARY_ASK = {"last_user_contains": "conversation above is about to be replaced"}


def make_env(base: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env.update(LOOPWRIGHT_HOME=str(base / "home" / ".loopwright"), HOME=str(base / "home"), ANTHROPIC_API_KEY="sk-test")
    src = str(Path(__file__).resolve().parents[1] / "src")
    env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    return env


def cli(args, env, cwd, sim=None, timeout=60, **kw):
    e = dict(env, **({"ANTHROPIC_BASE_URL": sim.base_url} if sim else {}))
    return subprocess.run([sys.executable, "-m", "loopwright", *args], env=e, cwd=cwd, capture_output=True,
                          text=True, timeout=timeout, **kw)


def bash(command: str, **extra) -> dict:
    return {"tool_use": {"name": "Bash", "input": {"command": command}}, **extra}


def goal_session(env, project) -> str:
    """A goal loop with a 529 retry, markup in model text and tool output, a denial and two verdicts."""
    script = {"rules": [
        {"match": JUDGE, "responses": [{"text": '{"ok": false, "reason": "not yet"}'}, {"text": '{"ok": true, "reason": "yes"}'}]},
        {"responses": [{"fault": {"status": 529}}, {"text": INJECTED_TEXT, **bash(f"echo '{INJECTED_TOOL}'")},
                       {"text": "done?"}, {"tool_use": {"name": "Write", "input": {"file_path": "/etc/lw-x", "content": "y"}}},
                       {"text": "done"}]}]}
    with Simulator(script) as sim:
        out = cli(["-p", "/goal it is done", "--allowedTools", "Bash", "--output-format", "json"], env, project, sim)
    return json.loads(out.stdout)["session_id"]


def compaction_session(env, project) -> str:
    script = {"rules": [{"match": SUMMARY_ASK, "responses": [{"text": "<summary>ran a, b, c</summary>"}]},
                        {"responses": [bash("echo a"), bash("echo b"), bash("echo c"),
                                       {"fault": {"status": 400, "error_type": "invalid_request_error",
                                                  "message": "prompt is too long: 1000 tokens > 900 maximum"}},
                                       {"text": "finished after compaction"}]}]}
    with Simulator(script) as sim:
        out = cli(["-p", "run three echoes", "--allowedTools", "Bash", "--output-format", "json"], env, project, sim)
    return json.loads(out.stdout)["session_id"]


def scheduled(env, project, schedule_id="nightly") -> None:
    """A schedule and one past fire of it (a real `loopwright scheduler --once`)."""
    out = cli(["schedule", "add", "say hi", "--every", "1h", "--id", schedule_id, "--now", "--", "--no-sandbox"],
              env, project)
    assert out.returncode == 0, out.stderr
    with Simulator([{"text": "hi from the schedule", "repeat": -1}]) as sim:
        out = cli(["scheduler", "--once"], env, project, sim, timeout=120)
    assert out.returncode == 0, out.stderr


class Server:
    """`loopwright serve --port 0` in a subprocess; `url` is the address it printed (the port it
    took, the token), `base` the same without the token, `auth` the header that carries it."""

    def __init__(self, env, cwd, *args: str) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "loopwright", "serve", "--port", "0", *args],
                                     env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.url = ""
        deadline = time.monotonic() + 30
        while not self.url:
            line = self.proc.stderr.readline()
            if not line:
                raise RuntimeError(f"loopwright serve exited: {self.proc.wait()}")
            if "?token=" in line:
                self.url = line.strip()
        self.base = self.url.split("/?token=")[0]
        self.port = int(self.base.rpartition(":")[2])
        self.token = self.url.split("?token=")[1]
        self.auth = {"X-Loopwright-Token": self.token}
        self.said = self.proc.stderr.readline()  # the line after the address: who may read
        while time.monotonic() < deadline:
            try:
                probe = urllib.request.Request(self.base + "/static/style.css", headers=self.auth)
                urllib.request.urlopen(probe, timeout=2).read()
                return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("loopwright serve did not answer")

    def stop(self) -> None:
        os.kill(self.proc.pid, 15)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.kill(self.proc.pid, 9)
            self.proc.wait()


def request(url, data=None, headers=None, method=None):
    """(status, headers, body) without raising on 4xx; redirects are not followed."""
    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *a, **k):
            return None

    req = urllib.request.Request(url, data=data, headers=headers or {}, method=method)
    try:
        with urllib.request.build_opener(NoRedirect).open(req, timeout=30) as r:
            return r.status, dict(r.headers), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read().decode()


def browser():
    """Headless Chromium (Debian's package) through chromedriver; raises when it cannot start."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1280,900"):
        options.add_argument(arg)
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
