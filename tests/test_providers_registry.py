"""The provider table end to end: a provider of the test's own, speaking a wire of its own to a
loopback server, serves `myprefix:` names for an `Agent` (registered in-process) and for the
real CLI in a subprocess (found through an installed package's `loopwright.providers` entry
point); an unknown prefix is refused naming the name and the known prefixes; a package cannot
take over a built-in prefix; and the table costs nothing at start-up."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from loopwright.agent import Agent
from loopwright.core.errors import UsageError
from loopwright.permissions.decide import PermissionRules
from loopwright.providers import Provider, known_prefixes, register, unregister
from loopwright.providers import registry
from test_cli import cli

# The provider, as its author would ship it: one JSON request per turn, one JSON answer
# ({"say": text} or {"call": {"name", "input"}}), turned into loopwright's stream events.
PROVIDER_SOURCE = '''
"""A model provider of its own wire: POST the conversation as JSON, get one answer back."""
import json
import urllib.request

import anyio

from loopwright.core.errors import ModelError, UsageError
from loopwright.core.types import BlockDelta, BlockStart, BlockStop, StreamDelta, StreamStart, StreamStop, Usage
from loopwright.providers import Provider


class LineModel:
    def __init__(self, url):
        self.url = url

    def _post(self, body):
        request = urllib.request.Request(self.url, data=body, headers={"content-type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read())

    async def stream(self, request):
        body = json.dumps({"model": request.model.removeprefix("myprefix:"),
                           "messages": [m.to_api() for m in request.messages]}).encode()
        try:
            answer = await anyio.to_thread.run_sync(self._post, body)
        except OSError as error:
            raise ModelError("unreachable", f"{self.url}: {error}") from error
        yield StreamStart("msg-line", request.model, Usage(input_tokens=3))
        if "call" in answer:
            call = answer["call"]
            yield BlockStart(0, {"type": "tool_use", "id": "toolu_line", "name": call["name"], "input": {}})
            yield BlockDelta(0, {"type": "input_json_delta", "partial_json": json.dumps(call["input"])})
        else:
            yield BlockStart(0, {"type": "text", "text": ""})
            yield BlockDelta(0, {"type": "text_delta", "text": answer["say"]})
        yield BlockStop(0)
        yield StreamDelta("tool_use" if "call" in answer else "end_turn", {"output_tokens": 2})
        yield StreamStop()

    async def aclose(self):
        pass


def make(name, env, origins):
    url = env.get("MYWIRE_URL")
    if not url:
        raise UsageError(f"model {name}: set MYWIRE_URL to the line server")
    return LineModel(url)


PROVIDER = Provider(factory=make, system="mywire", credentials=("MYWIRE_KEY",))
'''


class LineServer:
    """The provider's server on loopback: answers from a script, keeps what it was sent."""

    def __init__(self, script):
        self.script, self.bodies = list(script), []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                server.bodies.append(json.loads(self.rfile.read(int(self.headers["content-length"]))))
                answer = json.dumps(server.script.pop(0) if server.script else {"say": "(script over)"}).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/complete"

    def __enter__(self):
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def package(tmp_path_factory):
    """The provider installed as a package would be: its module, and a dist-info naming it in
    the `loopwright.providers` entry-point group."""
    root = tmp_path_factory.mktemp("site")
    (root / "myprovider.py").write_text(PROVIDER_SOURCE)
    info = root / "myprovider-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: myprovider\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[loopwright.providers]\nmyprefix = myprovider:PROVIDER\n")
    return root


@pytest.fixture
def clean_table():
    yield
    for prefix in ("myprefix", "openai", "other"):
        unregister(prefix)


@pytest.mark.anyio
async def test_a_registered_provider_runs_an_agents_tool_loop(tmp_path, package, monkeypatch, clean_table):
    monkeypatch.syspath_prepend(str(package))
    import myprovider

    script = [{"call": {"name": "Write", "input": {"file_path": str(tmp_path / "out.txt"), "content": "hi"}}},
              {"say": "wrote it"}]
    with LineServer(script) as server:
        monkeypatch.setenv("MYWIRE_URL", server.url)
        register("myprefix", myprovider.make)  # a bare factory is a provider too
        agent = Agent(model="myprefix:some-model", cwd=tmp_path, permissions=PermissionRules(allow=("Write",)))
        result = await agent.run("write hi to out.txt")  # (the client this run made is closed as it ends)
    assert result.result == "wrote it" and result.num_turns == 2 and not result.is_error
    assert (tmp_path / "out.txt").read_text() == "hi"
    assert [b["model"] for b in server.bodies] == ["some-model", "some-model"]
    assert server.bodies[1]["messages"][-1]["content"][0]["type"] == "tool_result"
    assert "myprefix" in known_prefixes()


def test_the_cli_finds_an_installed_provider_by_its_entry_point(tmp_path, package):
    """...and keeps the key it declares from the model's commands, as the built-in keys are."""
    script = [{"call": {"name": "Bash", "input": {"command": "env"}}},
              {"say": "hello from my wire"}]
    with LineServer(script) as server:
        out = cli(["-p", "hello", "--model", "myprefix:some-model", "--output-format", "json",
                   "--allowedTools", "Bash"], cwd=tmp_path,
                  env={"PYTHONPATH": str(package), "MYWIRE_URL": server.url, "MYWIRE_KEY": "sk-secret"})
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["result"] == "hello from my wire" and result["subtype"] == "success"
    assert [b["model"] for b in server.bodies] == ["some-model", "some-model"]
    assert server.bodies[0]["messages"][0]["content"][0]["text"] == "hello"
    ran = json.dumps(server.bodies[1]["messages"][-1]["content"])
    assert "MYWIRE_URL=" in ran and "MYWIRE_KEY" not in ran and "sk-secret" not in ran


def test_the_cli_refuses_an_unknown_prefix_naming_the_known_ones(tmp_path, package):
    out = cli(["-p", "hello", "--model", "nosuch:thing"], cwd=tmp_path, env={"PYTHONPATH": str(package)})
    assert out.returncode != 0 and not out.stdout
    assert "'nosuch:thing'" in out.stderr and "'nosuch:'" in out.stderr
    for prefix in ("openai:", "openai-compatible:", "myprefix:"):
        assert prefix in out.stderr, out.stderr


@pytest.mark.anyio
async def test_an_agent_refuses_an_unknown_prefix_before_any_call(tmp_path):
    agent = Agent(model="nosuch:thing", cwd=tmp_path)
    with pytest.raises(UsageError, match=r"'nosuch:thing'.*openai:, openai-compatible:"):
        await agent.run("hi")


def test_an_installed_package_cannot_take_over_a_built_in_prefix(package, monkeypatch, clean_table):
    (package / "myprovider-0.1.dist-info" / "entry_points.txt").write_text(
        "[loopwright.providers]\nopenai = myprovider:PROVIDER\nother = myprovider:PROVIDER\n")
    monkeypatch.syspath_prepend(str(package))
    assert "other" in known_prefixes()  # the entry points were read
    assert registry.provider_for("openai:gpt-5").system == "openai"  # still the built-in
    assert registry.provider_for("other:x").system == "mywire"
    with pytest.raises(UsageError, match="already registered"):
        register("openai", lambda name, env, origins: None)


def test_a_bad_prefix_or_provider_is_refused_with_what_was_expected(clean_table):
    for bad in ("", "My", "a.b", "1x", "a:b"):
        with pytest.raises(UsageError, match="expected a lower-case word"):
            register(bad, lambda name, env, origins: None)
    with pytest.raises(UsageError, match="expected a loopwright.providers.Provider or a factory"):
        register("myprefix", "not a factory")  # type: ignore[arg-type]
    register("myprefix:", Provider(factory=lambda name, env, origins: None))  # the colon may be given
    assert registry.provider_for("myprefix:m").system == "myprefix"
    assert registry.provider_for("myprefix:m").id_of("myprefix:m") == "m"


def test_names_without_a_prefix_stay_the_default_providers():
    for name in ("sonnet", "claude-sonnet-5", "us.anthropic.claude-sonnet-4-5-20250929-v1:0"):
        assert registry.is_default(name), name
    assert registry.provider_for("openai-compatible:http://h:1/v1#llama3:8b").id_of(
        "openai-compatible:http://h:1/v1#llama3:8b") == "llama3:8b"


def test_the_table_loads_no_provider_and_reads_no_entry_point_until_needed():
    code = textwrap.dedent("""
        import sys
        from loopwright.providers import registry
        assert registry.is_default("sonnet") and registry.table_key("openai:gpt-5") == "openai"
        print(sorted(m for m in ("httpx", "importlib.metadata", "loopwright.providers.openai") if m in sys.modules))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


class Quiet:
    closed = False

    async def stream(self, request):
        raise AssertionError("not called")
        yield

    async def aclose(self):
        self.closed = True


@pytest.mark.anyio
async def test_the_router_makes_one_client_per_provider_or_per_its_client_key(clean_table):
    from loopwright.providers.routing import ModelRouter

    made = []
    register("myprefix", lambda name, env, origins: made.append(name) or Quiet())
    router = ModelRouter({"OPENAI_API_KEY": "sk-secret-x"})
    local = router.client_for("openai-compatible:http://127.0.0.1:1/v1#a")
    assert router.client_for("openai-compatible:http://127.0.0.1:1/v1#b") is local  # one base URL, one client
    assert router.client_for("openai-compatible:http://127.0.0.1:2/v1#a") is not local
    mine = router.client_for("myprefix:x")
    assert router.client_for("myprefix:y") is mine and made == ["myprefix:x"]
    assert "sk-secret" not in repr(router) and "myprefix:" in repr(router)
    await router.aclose()
    assert mine.closed
