"""The sandbox as an attacker meets it (issue 21, class 11): every command runs for real under
bwrap through the Bash tool, and the host is checked afterwards — the kernel is the judge, not
the command's output. A missing protected file a command creates is set aside once the sandbox
has ended (no placeholder is ever put in the work tree); `.git` cannot be renamed, replaced or
rebuilt with a hook; git's own files stay read-only; no host unix socket (on a path or abstract)
answers; the network is off; root has no capability left to unmount anything; and the few
placeholders inside git directories never outlive the commands that need them."""

from __future__ import annotations

import os
import shlex
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from loopwright.core.home import home
from loopwright.core.ports import ToolContext
from loopwright.permissions.paths import protected
from loopwright.sandbox import SandboxConfig, availability, wrap
from loopwright.sandbox.launch import MARK_NS
from loopwright.sandbox.protect import guards
from loopwright.tools.shell import BashTool

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(availability() is not None,
                                                     reason=f"sandbox cannot run here: {availability()}")]
PY = sys.executable
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_CONFIG_NOSYSTEM": "1"}


async def sandboxed(command: str, project: Path, *more_roots: Path, **config) -> str:
    tool = BashTool(sandbox=SandboxConfig(enabled=True, **config))
    context = ToolContext(cwd=project, writable_roots=(project, *more_roots))
    return (await tool.run(tool.validate({"command": command}), context)).content


def git(*args: str, cwd: Path) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, env={**os.environ, **GIT_ENV})
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture
def repo(tmp_path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    git("init", "-q", ".", cwd=project)
    (project / "README").write_text("hi\n")
    git("add", "README", cwd=project)
    git("commit", "-q", "-m", "first", cwd=project)
    return project


def placeholders(folder: Path) -> list[str]:
    """Entries carrying the placeholders' marker, anywhere below `folder`."""
    found = []
    for here, dirs, files in os.walk(folder):
        for name in dirs + files:
            try:
                if os.lstat(os.path.join(here, name)).st_mtime_ns == MARK_NS:
                    found.append(os.path.relpath(os.path.join(here, name), folder))
            except FileNotFoundError:
                continue  # removed while we looked
    return found


def set_aside(path: Path) -> Path:
    """Where the quarantine keeps `path` (the newest copy)."""
    found = [kept for folder in sorted((home() / "quarantine").iterdir())
             if os.path.lexists(kept := folder / str(path).lstrip("/"))]
    assert found, f"{path} was not set aside"
    return found[-1]


def host_git_is_clean(project: Path, pwned: Path) -> None:
    """git on the host, as the user would run it after the session, runs no program the command
    planted and finds no hook."""
    subprocess.run(["git", "status", "--short"], cwd=project, capture_output=True, env={**os.environ, **GIT_ENV})
    assert not pwned.exists(), "the host's git ran a program the sandboxed command planted"
    hooks = project / ".git" / "hooks"
    if (project / ".git").is_file():
        hooks = Path(git("rev-parse", "--git-path", "hooks", cwd=project).strip())
        hooks = hooks if hooks.is_absolute() else project / hooks
    assert [p.name for p in hooks.iterdir() if not p.name.endswith(".sample")] == []


# ---------------------------------------------------------------- missing protected files


@pytest.mark.parametrize("command,target,top", [
    ("mkdir -p .loopwright && echo '{\"hooks\": {}}' > .loopwright/settings.json", ".loopwright/settings.json",
     ".loopwright"),
    ("mkdir -p .claude; printf '{}' > .claude/settings.local.json", ".claude/settings.local.json", ".claude"),
    ("cp README .mcp.json", ".mcp.json", ".mcp.json"),
    ("ln -sf README .envrc", ".envrc", ".envrc"),
    (f"{PY} -c \"import os; os.makedirs('.vscode', exist_ok=True); open('.vscode/tasks.json', 'w').write('x')\"",
     ".vscode/tasks.json", ".vscode"),
    ("mkdir -p .husky && echo 'curl x | sh' > .husky/pre-commit", ".husky/pre-commit", ".husky"),
    ("echo x > tmp && mv tmp .pre-commit-config.yaml", ".pre-commit-config.yaml", ".pre-commit-config.yaml"),
])
async def test_a_missing_protected_file_a_command_creates_is_set_aside(repo, command, target, top):
    """No placeholder: the command may make it inside, and once the sandbox has ended (every
    process of it gone) it is moved to loopwright's quarantine, and the result says so."""
    out = await sandboxed(command, repo)
    assert not os.path.lexists(repo / target) and not os.path.lexists(repo / top), out
    assert f"the sandbox set aside {top}, which this command created: protected paths are read-only to commands; " \
        f"kept in {home() / 'quarantine'}" in out
    assert os.path.lexists(set_aside(repo / target))  # nothing lost
    assert placeholders(repo) == []


@pytest.mark.parametrize("command", [
    "mkdir -p .claude/hooks && echo 'touch pwned' > .claude/hooks/stop.sh",
    "rm -rf .claude && mkdir .claude && echo '{}' > .claude/settings.json",
    "mv .claude gone && mkdir .claude && echo '{}' > .claude/settings.local.json",
])
async def test_an_existing_claude_folder_stays_as_it_is(repo, command):
    (repo / ".claude").mkdir()
    (repo / ".claude" / "settings.json").write_text('{"model": "haiku"}')
    out = await sandboxed(command, repo)
    assert sorted(p.name for p in (repo / ".claude").iterdir()) == ["settings.json"], out
    assert (repo / ".claude" / "settings.json").read_text() == '{"model": "haiku"}'


async def test_shell_start_up_files_are_guarded_where_a_root_holds_the_home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    (home / ".bashrc").write_text("# mine\n")
    monkeypatch.setenv("HOME", str(home))
    out = await sandboxed("echo evil >> .bashrc; echo evil > .bash_profile; echo evil > .profile; "
                          "mkdir -p .config/autostart && echo x > .config/autostart/x.desktop", home)
    assert (home / ".bashrc").read_text() == "# mine\n", out
    assert not any(os.path.lexists(home / n) for n in (".bash_profile", ".profile", ".config")), out
    assert "set aside .bash_profile, .profile, .config, which this command created" in out and placeholders(home) == []


async def test_a_linked_config_folder_in_a_home_root_refuses_the_command(tmp_path, monkeypatch):
    home, dotfiles = tmp_path / "home", tmp_path / "dotfiles"
    home.mkdir()
    (dotfiles / "git").mkdir(parents=True)
    (home / ".config").symlink_to(dotfiles)
    monkeypatch.setenv("HOME", str(home))
    out = await sandboxed("rm .config && mkdir -p .config/git && echo '[core]' > .config/git/config", home)
    assert "the sandbox refuses this command" in out and ".config is a symbolic link" in out
    assert (home / ".config").is_symlink()


# ---------------------------------------------------------------- .git itself


@pytest.mark.parametrize("command", [
    "mv .git .git-old && git init -q . && echo 'touch {pwned}' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit",
    "rm -rf .git; mkdir -p .git/hooks && cp -r .git-template/. .git/ 2>/dev/null; "
    "git init -q . && git config core.fsmonitor 'touch {pwned}'",
    f"{PY} -c \"import os, tempfile; d = tempfile.mkdtemp(dir='.'); os.rename('.git', 'old'); os.rename(d, '.git')\"",
    "git init -q --bare ../evil.git && git --git-dir=../evil.git config core.fsmonitor 'touch {pwned}' "
    "&& rm -rf .git; cp -r ../evil.git .git",
])
async def test_git_cannot_be_renamed_replaced_or_rebuilt(repo, tmp_path, command):
    """The commands may delete what git keeps in `.git` (the roots are writable), but the entry
    stays the same folder and nothing that makes git run a program can be put back."""
    pwned = tmp_path / "PWNED"
    inode, config = os.stat(repo / ".git").st_ino, (repo / ".git" / "config").read_bytes()
    out = await sandboxed(command.format(pwned=pwned), repo)
    assert os.stat(repo / ".git").st_ino == inode and (repo / ".git" / "config").read_bytes() == config, out
    assert not (repo / ".git-old").exists() and not (repo / "old").exists()
    host_git_is_clean(repo, pwned)


@pytest.mark.parametrize("command", [
    "echo 'touch {pwned}' > .git/hooks/post-checkout && chmod +x .git/hooks/post-checkout",
    "git config core.fsmonitor 'touch {pwned}'",
    "printf '[core]\\n\\tfsmonitor = touch {pwned}\\n' >> .git/config",
    "mkdir -p ../x && printf '[core]\\n\\tfsmonitor = touch {pwned}\\n' > ../x/config && "
    "printf '%s\\n' \"$PWD/../x\" > .git/commondir",
    "git config extensions.worktreeConfig true; printf '[core]\\n\\tfsmonitor = touch {pwned}\\n' > .git/config.worktree",
    "cp .git/hooks/pre-commit.sample x && echo 'touch {pwned}' >> x && mv x .git/hooks/pre-commit",
])
async def test_what_git_reads_stays_read_only(repo, tmp_path, command):
    pwned = tmp_path / "PWNED"
    out = await sandboxed(command.format(pwned=pwned), repo)
    assert "Read-only file system" in out or "Device or resource busy" in out or "could not lock" in out, out
    assert not (repo / ".git" / "commondir").exists() and not (repo / ".git" / "config.worktree").exists()
    host_git_is_clean(repo, pwned)
    assert placeholders(repo) == []  # the command's result came after the clean-up


async def test_git_still_works_inside(repo):
    out = await sandboxed("echo more >> README && git add README && git commit -q -m second && git log --oneline "
                          "| wc -l && git status --short | wc -l", repo)
    assert out.split() == ["2", "0"], out  # committed, and nothing of the sandbox's shows as untracked


@pytest.mark.parametrize("command", [
    "echo 'gitdir: /tmp' > .git",
    "rm -f .git && git init -q . && git config core.fsmonitor 'touch {pwned}'",
    "mv .git git-file && mkdir .git",
])
async def test_a_linked_worktrees_git_file_stays(repo, tmp_path, command):
    linked = tmp_path / "linked"
    git("worktree", "add", "-q", str(linked), cwd=repo)
    pwned = tmp_path / "PWNED"
    before = (linked / ".git").read_text()
    out = await sandboxed(command.format(pwned=pwned), linked)
    assert (linked / ".git").is_file() and (linked / ".git").read_text() == before, out
    host_git_is_clean(linked, pwned)


@pytest.mark.parametrize("command", [
    "printf '[core]\\n\\tfsmonitor = touch {pwned}\\n' >> \"$(git rev-parse --git-dir)/config\"",
    "echo 'touch {pwned}' > \"$(git rev-parse --git-dir)/hooks/post-checkout\"",
    "mkdir -p ../store/x && printf '[core]\\n\\tfsmonitor = touch {pwned}\\n' > ../store/x/config && "
    "echo ../x > \"$(git rev-parse --git-dir)/commondir\"",
])
async def test_a_git_file_is_followed_into_another_root(tmp_path, command):
    """`git init --separate-git-dir`: the git directory lives in another writable root, found
    only by reading `.git` as git does."""
    project, store = tmp_path / "project", tmp_path / "store"
    project.mkdir()
    store.mkdir()
    git("init", "-q", "--separate-git-dir", str(store / "repo.git"), str(project), cwd=tmp_path)
    pwned = tmp_path / "PWNED"
    config = (store / "repo.git" / "config").read_bytes()
    out = await sandboxed(command.format(pwned=pwned), project, store)
    assert (store / "repo.git" / "config").read_bytes() == config, out
    assert not (store / "repo.git" / "commondir").exists()
    host_git_is_clean(project, pwned)
    assert placeholders(store) == []


async def test_a_git_file_that_cannot_be_followed_refuses_the_command(repo):
    (repo / "sub").mkdir()
    (repo / "sub" / ".git").write_text("gitdir: ../nowhere\n")
    out = await sandboxed("touch made", repo / "sub")
    assert "Bash is refused: the sandbox cannot guard this project" in out and "nowhere" in out
    assert not (repo / "sub" / "made").exists()


async def test_a_submodules_and_a_linked_worktrees_git_dirs_are_guarded(repo, tmp_path):
    pwned = tmp_path / "PWNED"
    (repo / ".git" / "modules" / "lib").mkdir(parents=True)
    git("init", "-q", "--bare", str(repo / ".git" / "modules" / "lib"), cwd=repo)
    git("worktree", "add", "-q", str(tmp_path / "linked"), cwd=repo)
    line = f"printf '[core]\\n\\tfsmonitor = touch {pwned}\\n'"
    out = await sandboxed(f"{line} >> .git/modules/lib/config; echo x > .git/modules/lib/hooks/pre-push; "
                          f"echo /elsewhere > .git/worktrees/linked/commondir", repo)
    assert "fsmonitor" not in (repo / ".git" / "modules" / "lib" / "config").read_text(), out
    assert not (repo / ".git" / "modules" / "lib" / "hooks" / "pre-push").exists()
    assert (repo / ".git" / "worktrees" / "linked" / "commondir").read_text().strip() == "../.."


async def test_a_protected_entry_that_is_a_link_refuses_the_command(repo, tmp_path):
    (tmp_path / "shared-envrc").write_text("export A=1\n")
    (repo / ".envrc").symlink_to(tmp_path / "shared-envrc")
    out = await sandboxed("rm .envrc && echo evil > .envrc", repo)
    assert "the sandbox refuses this command" in out and ".envrc is a symbolic link" in out
    assert (repo / ".envrc").is_symlink() and (tmp_path / "shared-envrc").read_text() == "export A=1\n"


# ---------------------------------------------------------------- nothing of loopwright's in the tree


async def test_a_command_sees_no_placeholder_in_the_tree(repo):
    before = sorted(os.listdir(repo))
    out = await sandboxed("ls -A", repo)
    assert out.split() == before  # no .idea, .mcp.json, .loopwright … while it runs
    assert sorted(os.listdir(repo)) == before and placeholders(repo) == []


async def test_outside_a_repository_only_git_itself_is_held(tmp_path):
    """A missing `.git` gets the one placeholder (a host prompt reading a planted git directory
    while the command runs would run its programs); it is gone when the result is in."""
    plain = tmp_path / "plain"
    plain.mkdir()
    out = await sandboxed("ls -A; git init -q . 2>&1 | head -1", plain)
    assert out.split()[0] == ".git" and ".mcp.json" not in out
    assert os.listdir(plain) == [] and not (tmp_path / "PWNED").exists()


def start(command: str, project: Path) -> subprocess.Popen:
    argv = wrap(["/bin/bash", "-c", command], cwd=str(project), roots=(str(project),), network=False)
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)


def wait_for(path: Path) -> None:
    for _ in range(1500):
        if path.exists():
            return
        time.sleep(0.02)
    raise AssertionError(f"{path} never appeared")


@pytest.mark.parametrize("maker", ["the-one-still-running", "the-one-that-ends"])
async def test_a_placeholder_outlives_the_first_of_two_commands(repo, maker):
    """Unlinking a placeholder on the host would dissolve the mount of a sandbox still using
    it: the last command out removes them, whichever of the two made them."""
    ready, go, commondir = repo / "ready", repo / "go", repo / ".git" / "commondir"
    quick_waits = f"while [ ! -e {ready} ]; do sleep 0.02; done" if maker == "the-one-that-ends" else "true"
    quick = start(quick_waits, repo) if maker == "the-one-that-ends" else None
    if quick is not None:
        wait_for(commondir)  # the placeholders are the quick one's
    waiting = start(f"touch {ready}; while [ ! -e {go} ]; do sleep 0.02; done; echo /evil > .git/commondir; "
                    "echo evil > .git/config.worktree", repo)
    wait_for(ready)
    quick = quick or start(quick_waits, repo)
    quick.communicate(timeout=30)  # to the end of its output: its clean-up is done too
    assert quick.returncode == 0
    assert os.lstat(commondir).st_mtime_ns == MARK_NS  # still there for the one running
    go.touch()
    out, _ = waiting.communicate(timeout=30)
    assert "Read-only file system" in out or "Device or resource busy" in out, out
    assert not commondir.exists() and not (repo / ".git" / "config.worktree").exists(), out
    assert placeholders(repo) == []


def killed(command: str, project: Path, ready: Path) -> None:
    """Start `command` sandboxed, wait until it made `ready`, then kill its launcher's whole
    process group — bwrap and the watcher — with SIGKILL: nothing of it cleans up. Returns once
    every writer of its output is gone (the watcher held it)."""
    hung = start(command, project)
    wait_for(ready)
    os.killpg(hung.pid, 9)
    hung.communicate(timeout=30)


async def test_placeholders_of_a_killed_command_are_removed_by_the_next(repo):
    killed(f"touch {repo}/ready; sleep 60", repo, repo / "ready")
    assert placeholders(repo) != []  # .git/commondir, config.worktree: a killed watcher left them
    await sandboxed("true", repo)
    assert placeholders(repo) == []


async def test_what_a_killed_command_made_is_set_aside_by_the_next(repo):
    killed(f"echo x > .mcp.json; touch {repo}/ready; sleep 60", repo, repo / "ready")
    assert (repo / ".mcp.json").exists()  # its watcher was killed before it could look
    assert list((home() / "sandbox").glob("pending-*"))  # what it was to check, recorded before the start
    out = await sandboxed("ls -A", repo)
    assert "the sandbox set aside .mcp.json, which an earlier command created (its clean-up was cut short)" in out
    assert ".mcp.json" not in out.split() and not (repo / ".mcp.json").exists()
    assert set_aside(repo / ".mcp.json").read_text() == "x\n"
    assert not list((home() / "sandbox").glob("pending-*"))


async def test_a_name_created_inside_a_folder_that_became_a_link_is_not_followed(tmp_path, monkeypatch):
    """~/.config/git is watched inside ~/.config; a command that swaps ~/.config for a link to
    another folder must not make the clean-up move what that folder holds."""
    home_dir, elsewhere = tmp_path / "home", tmp_path / "elsewhere"
    (home_dir / ".config").mkdir(parents=True)
    (elsewhere / "git").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home_dir))
    out = await sandboxed(f"mv .config .config-old && ln -s {elsewhere} .config", home_dir)
    assert (elsewhere / "git").is_dir(), out  # still where it was
    assert "could not set aside" in out and "changed" in out


# ---------------------------------------------------------------- host unix sockets


class Daemon:
    """A host daemon on a unix socket that would run whatever a client sends it."""

    def __init__(self, address, kind=socket.SOCK_STREAM):
        self.address, self.kind, self.heard = address, kind, []
        self.sock = socket.socket(socket.AF_UNIX, kind)
        self.sock.bind(address)
        self.sock.settimeout(0.1)
        if kind == socket.SOCK_STREAM:
            self.sock.listen()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self):
        while not self._stop.is_set():
            try:
                if self.kind == socket.SOCK_STREAM:
                    conn, _ = self.sock.accept()
                    self.heard.append(conn.recv(100))
                    conn.close()
                else:
                    self.heard.append(self.sock.recv(100))
            except (TimeoutError, OSError):
                continue

    def close(self):
        self._stop.set()
        self._thread.join()
        self.sock.close()


def client(address, kind="stream") -> str:
    code = textwrap.dedent(f"""
        import socket
        address = {address!r}
        if {kind!r} == "stream":
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.connect(address); s.sendall(b"rm -rf ~")
        elif {kind!r} == "dgram":
            socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(b"rm -rf ~", address)
        else:  # a datagram pair, pointed at the host socket
            a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM); a.connect(address); a.send(b"rm -rf ~")
        print("CONNECTED")
    """)
    return f"{PY} -c {shlex.quote(code)}"


@pytest.fixture
def socket_dir():
    """Outside /tmp (the sandbox's /tmp is private, which would hide a socket there anyway)."""
    folder = Path("/var/tmp") / f"lw-sockets-{os.getpid()}"
    folder.mkdir(exist_ok=True)
    yield folder
    subprocess.run(["rm", "-rf", str(folder)], check=False)


@pytest.mark.parametrize("where,kind,network", [
    ("outside", "stream", False), ("project", "stream", False), ("outside", "dgram", False), ("outside", "pair", False),
    ("outside", "stream", True), ("outside", "pair", True),
])
async def test_a_host_daemons_unix_socket_does_not_answer(repo, socket_dir, where, kind, network):
    address = str((socket_dir if where == "outside" else repo) / "daemon.sock")
    daemon = Daemon(address, socket.SOCK_STREAM if kind == "stream" else socket.SOCK_DGRAM)
    try:
        out = await sandboxed(client(address, kind), repo, network=network)
    finally:
        daemon.close()
    assert "CONNECTED" not in out and "Operation not permitted" in out, out
    assert daemon.heard == []


@pytest.mark.parametrize("network", [False, True])
async def test_an_abstract_socket_does_not_answer(repo, network):
    """Abstract sockets belong to a network namespace: off, the private one has none; on, the
    filter refuses the socket before any address is looked at."""
    address = f"\0lw-abstract-{os.getpid()}-{network}"
    daemon = Daemon(address)
    try:
        out = await sandboxed(client(address), repo, network=network)
    finally:
        daemon.close()
    assert "CONNECTED" not in out and daemon.heard == [], out


async def test_a_named_socket_opens_unix_sockets(repo, socket_dir):
    """The trusted opening (settings' allowUnixSockets) works — so the refusals above are the
    filter's doing, not a broken client."""
    address = str(socket_dir / "docker.sock")
    daemon = Daemon(address)
    try:
        out = await sandboxed(client(address), repo, unix_sockets=(address,))
    finally:
        daemon.close()
    assert "CONNECTED" in out and daemon.heard == [b"rm -rf ~"], out


async def test_io_uring_and_stream_pairs(repo):
    code = ("import ctypes, socket, asyncio; a, b = socket.socketpair(); asyncio.run(asyncio.sleep(0)); "
            "libc = ctypes.CDLL(None, use_errno=True); print(libc.syscall(425, 1, 0), ctypes.get_errno())")
    out = await sandboxed(f"{PY} -c '{code}'", repo)
    assert out == "-1 38", out  # io_uring_setup: ENOSYS; stream pairs and asyncio still work


# ---------------------------------------------------------------- the network


@pytest.fixture
def listeners():
    """A TCP and a UDP listener on the host's loopback, counting what reaches them."""
    tcp = socket.create_server(("127.0.0.1", 0))
    tcp.settimeout(0.05)  # the command has ended: what reached us is queued already
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    udp.settimeout(0.05)
    yield tcp, udp
    tcp.close()
    udp.close()


def heard(tcp, udp) -> list:
    got = []
    for receive in (lambda: tcp.accept(), lambda: udp.recv(100)):
        try:
            got.append(receive())
        except (TimeoutError, OSError):
            pass
    return got


@pytest.mark.parametrize("how", [
    "import socket; socket.create_connection(('127.0.0.1', {tcp}), timeout=3); print('CONNECTED')",
    "import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('127.0.0.1', {udp})); "
    "print('SENT')",
    "import socket; socket.create_connection(('1.1.1.1', 443), timeout=3); print('CONNECTED')",
])
async def test_the_network_is_off(repo, listeners, how):
    tcp, udp = listeners
    code = how.format(tcp=tcp.getsockname()[1], udp=udp.getsockname()[1])
    out = await sandboxed(f'{PY} -c "{code}"', repo)
    assert "CONNECTED" not in out and heard(tcp, udp) == [], out


async def test_the_network_when_allowed(repo, listeners):
    tcp, udp = listeners
    out = await sandboxed(f"{PY} -c \"import socket; socket.create_connection(('127.0.0.1', "
                          f"{tcp.getsockname()[1]}), timeout=3); print('CONNECTED')\"", repo, network=True)
    assert "CONNECTED" in out and len(heard(tcp, udp)) == 1


# ---------------------------------------------------------------- no capabilities


@pytest.mark.parametrize("command", [
    "umount .git/hooks; touch .git/hooks/x",
    "mount -o remount,rw,bind .git/hooks; touch .git/hooks/x",
    "unshare -Urm sh -c 'umount .git/hooks; touch .git/hooks/x'",
    "mount -t tmpfs none .git; mkdir .git/hooks && touch .git/hooks/x",
])
async def test_no_capability_is_left_to_undo_the_mounts(repo, command):
    out = await sandboxed(f"{command}; grep CapEff /proc/self/status", repo)
    assert "CapEff:\t0000000000000000" in out, out
    assert not (repo / ".git" / "hooks" / "x").exists(), out


# ---------------------------------------------------------------- one list for the gate and the sandbox


def test_every_guarded_name_is_protected_for_the_gate_too(tmp_path):
    (tmp_path / ".git").mkdir()
    for g in guards([str(tmp_path)], home=str(tmp_path), own_home=None):
        rel = os.path.relpath(g.path, tmp_path)
        if g.mode != "open" and rel != ".config":  # a missing ~/.config is masked whole while a command runs
            assert protected("/x/" + rel), rel
