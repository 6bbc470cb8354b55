"""The sandbox's network: off by default, fully on with `sandbox.network: true`, or open to the
hosts `sandbox.network.allowedDomains` lists through loopwright's proxy. Offline: every server
here is our own on the host's 127.0.0.1; a host name reaches it because the list names
`localhost` exactly (the private-address rule lets only exact entries reach loopback) or, for
the proxy on its own, through an injected resolver."""

from __future__ import annotations

import array
import http.server
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from loopwright.core.ports import ToolContext
from loopwright.sandbox import SandboxConfig, availability
from loopwright.core.domains import Allowlist, Match, address_refusal
from loopwright.sandbox.proxy import Limits, NetworkProxy, parse_request
from loopwright.testing import Simulator
from loopwright.tools.shell import BashTool

pytestmark = pytest.mark.anyio
BWRAP = availability()
needs_bwrap = pytest.mark.skipif(BWRAP is not None, reason=f"sandbox cannot run here: {BWRAP}")
CURL = shutil.which("curl")


# ------------------------------------------------------------ a server of our own on the host


class _Echo(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        body = f"served {self.path} to Host {self.headers['Host']}\n".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server():
    """An HTTP server on every host address (so the host's other addresses are tried too)."""
    httpd = http.server.ThreadingHTTPServer(("0.0.0.0", 0), _Echo)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield httpd.server_address[1]
    httpd.shutdown()
    httpd.server_close()


def fetch(url: str, *, tunnel: bool = False, proxy: bool = True) -> str:
    """A shell command that GETs `url` inside the sandbox: through the proxy the environment
    names (even for localhost, which NO_PROXY exempts), through a CONNECT tunnel, or directly."""
    if CURL:
        how = "--noproxy ''" if proxy else "--noproxy '*'"
        return f"curl -sS --max-time 20 {how} {'-p' if tunnel else ''} {url}"
    script = ("import http.client,os,sys,urllib.parse as p\n"
              "u=p.urlsplit(sys.argv[1]); mode=sys.argv[2]\n"
              "if mode=='direct': c=http.client.HTTPConnection(u.hostname,u.port,timeout=20); c.request('GET',u.path)\n"
              "else:\n pr=p.urlsplit(os.environ['http_proxy']); c=http.client.HTTPConnection(pr.hostname,pr.port,timeout=20)\n"
              " if mode=='tunnel': c.set_tunnel(u.hostname,u.port); c.request('GET',u.path)\n"
              " else: c.request('GET',sys.argv[1])\n"
              "print(c.getresponse().read().decode())\n")
    mode = "direct" if not proxy else "tunnel" if tunnel else "forward"
    return f"{sys.executable} -c {_quote(script)} {url} {mode}"


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


async def bash(command: str, cwd: Path, sandbox: SandboxConfig):
    t = BashTool(sandbox=sandbox)
    return await t.run(t.validate({"command": command}), ToolContext(cwd=cwd, writable_roots=(cwd,)))


def host_address() -> str | None:
    """An address of this machine other than loopback, when it has one."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("192.0.2.1", 9))  # no packet is sent: this only picks the outgoing address
            address = s.getsockname()[0]
    except OSError:
        return None
    return None if address.startswith("127.") else address


# ------------------------------------------------------------ the allowlist


def test_patterns_match_names_wildcards_and_addresses():
    allow = Allowlist.parse(["PyPI.org.", "*.github.com", "127.0.0.1", "[::1]"])
    assert allow.match("pypi.org") == Match("pypi.org", True)
    assert allow.match("PYPI.ORG.") == Match("pypi.org", True)  # case and the trailing dot do not matter
    assert allow.match("files.pypi.org") is None  # an exact name is that name only
    assert allow.match("codeload.github.com") == Match("codeload.github.com", False)
    assert allow.match("a.b.github.com") == Match("a.b.github.com", False)
    assert allow.match("github.com") is None and allow.match("evilgithub.com") is None
    assert allow.match("127.0.0.1") == Match("127.0.0.1", True) and allow.match("::1") == Match("::1", True)
    assert allow.match("127.0.0.2") is None and allow.match("0x7f000001") is None
    # numbers a resolver would read as addresses never pass as names
    assert Allowlist.parse(["*.github.com"]).match("2130706433") is None
    assert allow.match("pypi.org\r\nX: y") is None and allow.match("") is None


@pytest.mark.parametrize("bad", ["https://pypi.org", "pypi.org:443", "*pypi.org", "py*.org", "pypi.org/simple", "",
                                 "*.", "münchen.de"])
def test_a_bad_pattern_is_named(bad):
    with pytest.raises(ValueError, match="is not a host name|expected a host name") as err:
        Allowlist.parse(["pypi.org", bad])
    assert repr(bad) in str(err.value)


def test_a_bad_pattern_in_settings_stops_loopwright_naming_it(tmp_path):
    from loopwright.core.errors import UsageError
    from loopwright.settings import load_settings

    flag = json.dumps({"sandbox": {"network": {"allowedDomains": ["pypi.org", "https://github.com"]}}})
    with pytest.raises(UsageError) as err:
        load_settings(tmp_path, settings=flag, env={"HOME": str(tmp_path), "LOOPWRIGHT_HOME": str(tmp_path / "lw")})
    assert "sandbox.network.allowedDomains: 'https://github.com' is not a host name" in str(err.value)


def test_a_wildcard_reaches_public_addresses_only():
    wild, exact = Match("x.example.com", False), Match("intranet.corp", True)
    assert address_refusal("93.184.215.14", wild) is None and address_refusal("2606:2800:21f::1", wild) is None
    for private in ("127.0.0.1", "10.1.2.3", "192.168.0.1", "169.254.169.254", "0.0.0.0", "::1", "fe80::1",
                    "fd00::1", "::ffff:127.0.0.1", "64:ff9b::a00:1", "2002:7f00:1::1", "100.64.0.1", "224.0.0.1"):
        assert "list the name itself in sandbox.network.allowedDomains" in address_refusal(private, wild), private
        assert address_refusal(private, exact) is None  # named exactly: the user meant it


def test_requests_are_parsed_and_rewritten():
    assert parse_request(b"CONNECT pypi.org:443 HTTP/1.1\r\nHost: pypi.org:443\r\n\r\n") == \
        ("CONNECT", "pypi.org", 443, None)
    assert parse_request(b"CONNECT [::1]:8080 HTTP/1.1\r\n\r\n") == ("CONNECT", "::1", 8080, None)
    method, host, port, head = parse_request(
        b"GET http://Example.com/a?b=1#frag HTTP/1.1\r\nHost: elsewhere\r\nProxy-Authorization: secret\r\n"
        b"Connection: keep-alive, X-Hop\r\nX-Hop: 1\r\nAccept: */*\r\n\r\n")
    assert (method, host, port) == ("GET", "Example.com", 80)  # the allowlist compares without case
    assert head == b"GET /a?b=1 HTTP/1.1\r\nHost: Example.com\r\nAccept: */*\r\nConnection: close\r\n\r\n"
    for bad, why in [(b"GET / HTTP/1.1\r\n\r\n", "only absolute http:// URLs"),
                     (b"GET https://pypi.org/ HTTP/1.1\r\n\r\n", "go through CONNECT"),
                     (b"GET http://a@pypi.org/ HTTP/1.1\r\n\r\n", "user names"),
                     (b"CONNECT pypi.org HTTP/1.1\r\n\r\n", "expected host:port"),
                     (b"CONNECT pypi.org:0 HTTP/1.1\r\n\r\n", "expected host:port"),
                     (b"GET http://pypi.org/ HTTP/1.1\r\nBad Header: x\r\n\r\n", "malformed header"),
                     (b"GET http://pypi.org/ SPDY/3\r\n\r\n", "request line")]:
        assert why in parse_request(bad), bad


# ------------------------------------------------------------ the proxy over a channel, as a forwarder sees it


class Forwarder:
    """The sandbox's side of a channel, played by the test: asks for streams as the real
    forwarder does — or as a command that got hold of the channel would."""

    def __init__(self, channel) -> None:
        self.sock = socket.socket(fileno=os.dup(channel.fd))
        channel.release()
        self.sock.settimeout(20)

    def stream(self) -> socket.socket | None:
        self.sock.sendall(b"c")
        data, anc, _, _ = self.sock.recvmsg(1, socket.CMSG_SPACE(4))
        fds = [int.from_bytes(d[:4], sys.byteorder) for _, _, d in anc]
        if data != b"y":
            return None
        s = socket.socket(fileno=fds[0])
        s.settimeout(20)
        return s

    def ask(self, request: bytes) -> tuple[bytes, socket.socket]:
        s = self.stream()
        s.sendall(request)
        return _read_head(s), s


def _read_head(s: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
    return data


def _read_all(s: socket.socket) -> bytes:
    out = b""
    while chunk := s.recv(4096):
        out += chunk
    return out


def resolver(table: dict[str, str]):
    async def resolve(host: str, port: int) -> list[str]:
        if host not in table:
            raise OSError(f"{host} is not in the test's table")
        return [table[host]]
    return resolve


def test_the_channel_leads_to_the_proxy_and_nowhere_else(server):
    proxy = NetworkProxy(resolver=resolver({"api.test": "127.0.0.1", "evil.build.test": "127.0.0.1",
                                            "public.build.test": "93.184.215.14"}))
    with proxy.open(Allowlist.parse(["api.test", "*.build.test"])) as channel:
        side = Forwarder(channel)
        head, tunnel = side.ask(f"CONNECT api.test:{server} HTTP/1.1\r\n\r\n".encode())
        assert head.startswith(b"HTTP/1.1 200 ")
        tunnel.sendall(b"GET /through HTTP/1.1\r\nHost: api.test\r\nConnection: close\r\n\r\n")
        assert b"served /through to Host api.test" in _read_all(tunnel)
        head, plain = side.ask(f"GET http://api.test:{server}/plain HTTP/1.1\r\n\r\n".encode())
        assert head.startswith(b"HTTP/1.1 200 ") and b"served /plain" in head + _read_all(plain)
        # a name a wildcard admits but that points at this machine: refused, saying why
        head, s = side.ask(f"CONNECT evil.build.test:{server} HTTP/1.1\r\n\r\n".encode())
        assert head.startswith(b"HTTP/1.1 403 ") and b"127.0.0.1, a private" in head + _read_all(s)
        # not listed at all, and this machine by address: refused with the setting named
        head, s = side.ask(f"GET http://127.0.0.1:{server}/ HTTP/1.1\r\n\r\n".encode())
        body = head + _read_all(s)
        assert head.startswith(b"HTTP/1.1 403 ") and b"not in sandbox.network.allowedDomains" in body
        head, s = side.ask(b"CONNECT localhost:22 HTTP/1.1\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 403 ")
        # the stream speaks the proxy's protocol only: a plain request to "the server" is no way through
        head, s = side.ask(b"GET / HTTP/1.1\r\nHost: api.test\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 400 ")
        assert channel.refusals() == (
            "the sandbox's proxy refused evil.build.test (it resolves to 127.0.0.1, a private, loopback or link-local "
            "address, which a `*.` pattern does not reach; list the name itself in sandbox.network.allowedDomains "
            "to allow it)",
            "the sandbox's proxy refused 127.0.0.1 (not in sandbox.network.allowedDomains)",
            "the sandbox's proxy refused localhost (not in sandbox.network.allowedDomains)")
        # a descriptor sent the other way is dropped, and anything but a request ends the channel
        spare = socket.socket()
        side.sock.sendmsg([b"x"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [spare.fileno()]))])
        assert side.sock.recv(1) == b""
        spare.close()
    assert not proxy.running


def test_the_proxy_is_bounded(server):
    proxy = NetworkProxy(resolver=resolver({"api.test": "127.0.0.1"}),
                         limits=Limits(per_command=1, max_head=1024, head_timeout_s=1.0))
    with proxy.open(Allowlist.parse(["api.test"])) as channel:
        side = Forwarder(channel)
        first = side.stream()
        assert first is not None and side.stream() is None  # one connection at a time for this command
        first.sendall(b"GET http://api.test/ HTTP/1.1\r\nX-Big: " + b"a" * 2048 + b"\r\n\r\n")
        assert _read_head(first).startswith(b"HTTP/1.1 431 ")
        first.close()
        slow = None
        while slow is None:  # the first connection's end reaches the proxy in its own time
            slow = side.stream()
        slow.sendall(b"GET http://api.test/ HTTP/1.1\r\n")  # and never the rest
        assert _read_head(slow).startswith(b"HTTP/1.1 408 ")
    assert not proxy.running


def test_the_proxy_runs_only_while_a_command_needs_it():
    proxy = NetworkProxy()
    assert not proxy.running
    one, two = proxy.open(Allowlist.parse(["a.test"])), proxy.open(Allowlist.parse(["b.test"]))
    assert proxy.running
    one.close()
    assert proxy.running
    Forwarder(two).sock.close()  # the sandbox's side went away: the channel ends by itself
    two._ended.wait(20)
    assert not proxy.running
    with proxy.open(Allowlist.parse(["a.test"])):
        assert proxy.running  # started again for the next command
    assert not proxy.running


# ------------------------------------------------------------ in the sandbox


@needs_bwrap
async def test_an_allowed_host_is_reached_over_http_and_connect(tmp_path, server):
    sandbox = SandboxConfig(enabled=True, domains=("localhost",))
    plain = await bash(fetch(f"http://localhost:{server}/plain"), tmp_path, sandbox)
    assert not plain.is_error and f"served /plain to Host localhost:{server}" in plain.content, plain.content
    tunnel = await bash(fetch(f"http://localhost:{server}/tunnel", tunnel=True), tmp_path, sandbox)
    assert not tunnel.is_error and "served /tunnel" in tunnel.content, tunnel.content
    assert "refused" not in plain.content + tunnel.content


@needs_bwrap
async def test_an_unlisted_host_is_refused_and_named_in_the_result(tmp_path, server):
    sandbox = SandboxConfig(enabled=True, domains=("localhost", "*.pythonhosted.org"))
    out = await bash(f"{fetch(f'http://127.0.0.1:{server}/')}; {fetch('http://pypi.org/simple/', tunnel=True)}",
                     tmp_path, sandbox)
    assert "the sandbox's proxy refused 127.0.0.1 (not in sandbox.network.allowedDomains)" in out.content
    assert "the sandbox's proxy refused pypi.org (not in sandbox.network.allowedDomains)" in out.content
    assert "served" not in out.content


@needs_bwrap
async def test_direct_connections_fail_and_the_command_holds_no_channel(tmp_path, server):
    sandbox = SandboxConfig(enabled=True, domains=("localhost",))
    targets = ["127.0.0.1", *([a] if (a := host_address()) else [])]
    for address in targets:
        out = await bash(fetch(f"http://{address}:{server}/direct", proxy=False), tmp_path, sandbox)
        assert out.is_error and "served" not in out.content, (address, out.content)
    # the forwarder keeps its channel to itself: the command's descriptors hold no socket
    fds = await bash("for f in /proc/$$/fd/*; do readlink $f; done", tmp_path, sandbox)
    assert "socket:" not in fds.content and "pipe:" in fds.content, fds.content
    # and the proxy is named for every client that reads the usual variables
    env = await bash("env | grep -i _proxy= | sort", tmp_path, sandbox)
    names = {line.split("=", 1)[0] for line in env.content.splitlines()}
    assert names == {"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "all_proxy",
                     "no_proxy"}, env.content
    assert "NO_PROXY=localhost,127.0.0.1" in env.content


@needs_bwrap
async def test_without_domains_there_is_no_network_and_no_proxy(tmp_path, server):
    out = await bash(f"env; {fetch(f'http://127.0.0.1:{server}/', proxy=False)}", tmp_path, SandboxConfig(enabled=True))
    assert out.is_error and "served" not in out.content, out.content
    assert "_proxy=http://127.0.0.1:" not in out.content.lower()


@needs_bwrap
async def test_network_true_still_shares_the_network(tmp_path, server):
    out = await bash(f"env; {fetch(f'http://127.0.0.1:{server}/shared', proxy=False)}", tmp_path,
                     SandboxConfig(enabled=True, network=True))
    assert "served /shared" in out.content and "_proxy=http://127.0.0.1:" not in out.content.lower(), out.content
    assert SandboxConfig.from_settings({"network": {"allowAll": True, "allowedDomains": ["x.org"]}}).domains == ()


@needs_bwrap
async def test_a_background_command_keeps_its_proxy_until_it_ends(tmp_path, server):
    from loopwright.sandbox.proxy import shared_proxy

    t = BashTool(sandbox=SandboxConfig(enabled=True, domains=("localhost",)))
    ctx = ToolContext(cwd=tmp_path, writable_roots=(tmp_path,))
    started = await t.run(t.validate({"command": f"{fetch(f'http://localhost:{server}/bg')} > got.txt",
                                      "run_in_background": True}), ctx)
    assert not started.is_error, started.content
    shell = next(iter(t.shells.shells.values()))
    assert shell.proc.wait(timeout=60) == 0
    assert "served /bg" in (tmp_path / "got.txt").read_text()
    await t.shells.stop_all()


# ------------------------------------------------------------ who may open it, through the real CLI


def cli(args: list[str], sim: Simulator, cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "LOOPWRIGHT_"))}
    home.mkdir(exist_ok=True)
    env.update(ANTHROPIC_BASE_URL=sim.base_url, ANTHROPIC_API_KEY="sk-test", HOME=str(home),
               LOOPWRIGHT_HOME=str(home / "lw"))
    return subprocess.run([sys.executable, "-m", "loopwright", *args], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=120)


def tool_results(stdout: str) -> list[str]:
    out = []
    for line in stdout.splitlines():
        event = json.loads(line)
        if event.get("type") == "user":
            for block in event["message"]["content"]:
                if block.get("type") == "tool_result":
                    content = block["content"]
                    out.append(content if isinstance(content, str) else "".join(c.get("text", "") for c in content))
    return out


@needs_bwrap
def test_cli_reaches_a_listed_host_and_names_a_refused_one(tmp_path, server):
    (tmp_path / "p").mkdir()
    settings = json.dumps({"sandbox": {"enabled": True, "network": {"allowedDomains": ["localhost"]}}})
    command = f"{fetch(f'http://localhost:{server}/cli')}; {fetch('http://pypi.org/simple/', tunnel=True)}"
    script = [{"tool_use": {"name": "Bash", "input": {"command": command}}}, {"text": "done"}]
    with Simulator(script) as sim:
        out = cli(["-p", "go", "--output-format", "stream-json", "--verbose", "--allowedTools", "Bash",
                   "--settings", settings], sim, tmp_path / "p", tmp_path / "home")
    assert out.returncode == 0, out.stderr
    [result] = tool_results(out.stdout)
    assert f"served /cli to Host localhost:{server}" in result, result
    assert "the sandbox's proxy refused pypi.org (not in sandbox.network.allowedDomains)" in result


@needs_bwrap
def test_cli_a_project_file_cannot_open_the_network(tmp_path, server):
    project = tmp_path / "p"
    (project / ".claude").mkdir(parents=True)
    (project / ".claude" / "settings.json").write_text(json.dumps(
        {"sandbox": {"enabled": True, "network": {"allowedDomains": ["localhost"]}}}))
    command = f"env; {fetch(f'http://localhost:{server}/cli')}"
    script = [{"tool_use": {"name": "Bash", "input": {"command": command}}}, {"text": "done"}]
    with Simulator(script) as sim:
        out = cli(["-p", "go", "--output-format", "stream-json", "--verbose", "--allowedTools", "Bash"], sim,
                  project, tmp_path / "home")
    assert out.returncode == 0, out.stderr
    assert ".claude/settings.json: sandbox.network: ignored: a project may keep the sandbox on and tighten it, " \
        "never turn it off, open or weaken it" in out.stderr
    [result] = tool_results(out.stdout)
    assert result.startswith("Exit code") and "served" not in result, result
    assert "_proxy=http://127.0.0.1:" not in result.lower()
