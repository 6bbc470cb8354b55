"""Attacks on where the gate places a path, run for real: the loop, the loopback simulator, the
real tools and a real filesystem (issue 21, classes 1, 3, 8 and 10 on the tool side). Marker
files outside the project must stay as they were or never reach the model, device nodes and
FIFOs must stay what they are, and the model must read why its call did not go through.

The race between the gate's judgement and the tool's write is driven deterministically: an
approver swaps the path while "the user" decides, which is exactly the window a real person
opens, or the test swaps it between the re-check and the write itself."""

from __future__ import annotations

import os
import socket
import stat
import threading
from pathlib import Path

import pytest

from loopwright.agent import Agent
from loopwright.core.ports import ToolContext
from loopwright.engine.gate import ToolGate
from loopwright.permissions.decide import PermissionRules
from loopwright.providers.anthropic import AnthropicModel
from loopwright.testing import Simulator
from loopwright.testing.clock import FakeClock
from loopwright.tools import builtin_tools
from loopwright.tools.fileio import Refused, landing, open_regular, write_bytes

pytestmark = pytest.mark.anyio
TOOLS = {t.name: t for t in builtin_tools()}
UNTOUCHED = "outside, untouched\n"
SECRET = "tok-3141-do-not-leak"
EDITS = PermissionRules(mode="acceptEdits")
ECHO_EDITS = PermissionRules(mode="acceptEdits", allow=("Bash(echo *)", "Bash(printf *)"))


class Attempt:
    def __init__(self, result, sim):
        self.json = result.to_json()
        self.requests = [r.body for r in sim.message_requests]

    @property
    def result(self) -> dict:
        return self.requests[1]["messages"][-1]["content"][0]

    @property
    def text(self) -> str:
        return self.result["content"] if isinstance(self.result["content"], str) else str(self.result["content"])

    def denied(self) -> bool:
        return bool(self.json["permission_denials"])

    def refused(self) -> bool:
        return self.denied() or bool(self.result.get("is_error"))


class SwapWhileAsked:
    """Says yes, after `swap` ran: the attacker changed the path while the person decided."""

    def __init__(self, swap):
        self.swap, self.asked = swap, []

    async def approve(self, tool_name, tool_input, reason):
        self.asked.append(reason)
        self.swap()
        return True


@pytest.fixture
def world(tmp_path, monkeypatch):
    """A project with a `.git`, and an outside folder holding a marker and a secret."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("LOOPWRIGHT_ALLOW_ROOT_BYPASS", "1")
    project, outside = tmp_path / "project", tmp_path / "outside"
    (project / ".git" / "refs").mkdir(parents=True)
    (project / ".git" / "config").write_text("[core]\n\tbare = false\n")
    (outside / "sub").mkdir(parents=True)
    (outside / "marker").write_text(UNTOUCHED)
    (outside / "secret").write_text(SECRET)
    (project / "victim").write_text("keep me\n")
    return project, outside


@pytest.fixture
def attempt(world):
    async def go(tool, tool_input, rules, approver=None):
        script = [{"tool_use": {"name": tool, "input": tool_input}}, {"text": "done"}]
        with Simulator(script) as sim:
            agent = Agent(model_client=AnthropicModel(base_url=sim.base_url, api_key="sk-test"), cwd=world[0],
                          clock=FakeClock(), permissions=rules, approver=approver)
            async with agent.open() as running:
                result = await running.prompt("try it")
            assert not sim.unmatched
            return Attempt(result, sim)

    return go


def outside_untouched(outside: Path) -> None:
    assert (outside / "marker").read_text() == UNTOUCHED
    assert sorted(p.name for p in outside.iterdir()) == ["marker", "secret", "sub"]
    assert not list((outside / "sub").iterdir())


# ------------------------------------------------------------ class 1: `..` after a symlink


def link_out(world):
    """`lnk -> outside/sub`: `lnk/..` is the outside folder for the kernel, `.` for the text."""
    (world[0] / "lnk").symlink_to(world[1] / "sub")


def link_chain(world):
    """`two -> one -> outside/sub`: a chain of links before the `..`."""
    (world[0] / "one").symlink_to(world[1] / "sub")
    (world[0] / "two").symlink_to("one")


@pytest.mark.parametrize("setup,tool,tool_input,rules", [
    (link_out, "Write", {"file_path": "lnk/../marker", "content": "pwned"}, EDITS),
    (link_out, "Write", {"file_path": "lnk//./../new", "content": "pwned"}, EDITS),
    (link_out, "Edit", {"file_path": "lnk/../marker", "old_string": "untouched", "new_string": "pwned"}, EDITS),
    (link_chain, "Write", {"file_path": "two/../new", "content": "pwned"}, EDITS),
    (link_out, "Bash", {"command": "echo pwned > lnk/../marker"}, ECHO_EDITS),
    (link_out, "Bash", {"command": "touch lnk/../new"}, EDITS),
    (link_chain, "Bash", {"command": "cp victim two/../new"}, EDITS),
    (link_out, "Bash", {"command": "echo pwned >> {p}/lnk/../marker"}, ECHO_EDITS),
], ids=["write", "write-dotslash", "edit", "write-chain", "bash-redirect", "bash-touch", "bash-cp-chain",
        "bash-absolute"])
async def test_dotdot_after_a_symlink_is_judged_where_the_kernel_lands(attempt, world, setup, tool, tool_input,
                                                                        rules):
    setup(world)
    tool_input = {k: v.replace("{p}", str(world[0])) for k, v in tool_input.items()}
    got = await attempt(tool, tool_input, rules)
    outside_untouched(world[1])
    assert got.denied() and "outside the writable roots" in got.text, got.text
    assert str(world[1]) in got.text  # the model is told where it really leads


def link_to_refs(world):
    """`s -> .git/refs`: `s/../config` is the protected `.git/config`."""
    (world[0] / "s").symlink_to(world[0] / ".git" / "refs")


def link_deeper(world):
    """`deep -> .git/refs/heads` (made here): `deep/../../config` is `.git/config` too."""
    (world[0] / ".git" / "refs" / "heads").mkdir()
    (world[0] / "deep").symlink_to(world[0] / ".git" / "refs" / "heads")


@pytest.mark.parametrize("setup,tool,tool_input", [
    (link_to_refs, "Bash", {"command": "printf '[core]\\n\\tfsmonitor = touch x\\n' >> s/../config"}),
    (link_to_refs, "Write", {"file_path": "s/../config", "content": "[core]\n\tfsmonitor = touch x\n"}),
    (link_to_refs, "Edit", {"file_path": "s/../config", "old_string": "bare = false", "new_string": "bare = true"}),
    (link_deeper, "Bash", {"command": "echo '[core] fsmonitor = x' | tee -a deep/../../config"}),
    (link_deeper, "Write", {"file_path": "deep/../../config", "content": "x"}),
], ids=["bash-append", "write", "edit", "bash-tee-deeper", "write-deeper"])
async def test_dotdot_after_a_symlink_cannot_reach_a_protected_file(attempt, world, setup, tool, tool_input):
    setup(world)
    rules = PermissionRules(mode="acceptEdits", allow=("Bash(printf *)", "Bash(echo *)", "Bash(tee *)", "Write",
                                                        "Edit"))
    got = await attempt(tool, tool_input, rules)
    assert (world[0] / ".git" / "config").read_text() == "[core]\n\tbare = false\n"
    assert got.denied() and "protected path" in got.text, got.text


@pytest.mark.parametrize("tool,tool_input,check", [
    ("Write", {"file_path": "in/../f.txt", "content": "new"}, lambda p, text: (p / "a" / "f.txt").read_text() == "new"),
    ("Edit", {"file_path": "in/../f.txt", "old_string": "in a", "new_string": "edited"},
     lambda p, text: (p / "a" / "f.txt").read_text() == "edited\n"),
    ("Read", {"file_path": "in/../f.txt"}, lambda p, text: "in a" in text),
    ("Glob", {"pattern": "in/../*.txt"}, lambda p, text: str(p / "a" / "f.txt") in text),
])
async def test_the_tools_act_where_the_kernel_lands(attempt, world, tool, tool_input, check):
    """Inside the project, `in -> a/b`: `in/../f.txt` is `a/f.txt`, for the gate and the tool
    alike, never `./f.txt` where text rules would put it."""
    project = world[0]
    (project / "a" / "b").mkdir(parents=True)
    (project / "in").symlink_to(project / "a" / "b")
    (project / "a" / "f.txt").write_text("in a\n")
    (project / "f.txt").write_text("in the root\n")
    got = await attempt(tool, tool_input, EDITS)
    assert not got.refused(), got.text
    assert check(project, got.text), got.text
    assert (project / "f.txt").read_text() == "in the root\n" and "in the root" not in got.text


async def test_read_after_a_symlink_and_dotdot_does_not_return_the_outside_file(attempt, world):
    link_out(world)
    got = await attempt("Read", {"file_path": "lnk/../secret"}, PermissionRules())
    assert SECRET not in got.text and got.denied()
    assert str(world[1] / "secret") in got.text


# ------------------------------------------------------------ the write re-checks what was judged


def swap_dir_for_link(world, name="sub"):
    def swap():
        os.rename(world[0] / name, world[0] / f"{name}.moved")
        (world[0] / name).symlink_to(world[1])
    return swap


def swap_file_for_link(world, name="victim"):
    def swap():
        os.unlink(world[0] / name)
        (world[0] / name).symlink_to(world[1] / "marker")
    return swap


@pytest.mark.parametrize("prepare,make_swap,tool,tool_input", [
    ("sub", swap_dir_for_link, "Write", {"file_path": "sub/marker", "content": "pwned"}),
    ("sub", swap_dir_for_link, "Write", {"file_path": "sub/new", "content": "pwned"}),
    ("", swap_file_for_link, "Write", {"file_path": "victim", "content": "pwned"}),
    ("", swap_file_for_link, "Edit", {"file_path": "victim", "old_string": "outside,", "new_string": "pwned"}),
    ("a/b", lambda w: swap_dir_for_link(w, "a"), "Write", {"file_path": "a/b/new", "content": "pwned"}),
], ids=["folder-existing-name", "folder-new-file", "file", "edit-file", "grandparent"])
async def test_a_link_swapped_in_while_the_user_decides_is_refused(attempt, world, prepare, make_swap, tool,
                                                                  tool_input):
    project, outside = world
    if prepare:
        (project / prepare).mkdir(parents=True)
    (outside / "marker").write_text(UNTOUCHED.replace("untouched", "outside"))  # Edit's old_string would match
    approver = SwapWhileAsked(make_swap(world))
    got = await attempt(tool, tool_input, PermissionRules(), approver=approver)
    assert approver.asked, "the default mode asks before a write"
    assert (outside / "marker").read_text() == UNTOUCHED.replace("untouched", "outside")
    assert not (outside / "new").exists() and not (outside / "b").exists()
    assert got.result.get("is_error") and "changed since" in got.text, got.text


def test_the_write_never_follows_a_link_swapped_in_after_the_recheck(world):
    """The last window: the path is re-checked (it still lands inside), then a folder on the way
    becomes a link before the write walks it. The walk opens each folder without following
    links, so it refuses instead of writing outside."""
    project, outside = world
    (project / "a" / "b").mkdir(parents=True)
    ctx = ToolContext(cwd=project)
    for swapped, path in (("a", "a/b/new"), ("a/b", "a/b/new"), ("a/b", "a/b/marker")):
        real = landing(path, ctx)
        os.rename(project / swapped, project / "moved")
        (project / swapped).symlink_to(outside if swapped == "a/b" else outside / "sub")
        with pytest.raises(Refused, match="is a symlink now"):
            write_bytes(real, b"pwned")
        os.unlink(project / swapped)
        os.rename(project / "moved", project / swapped)
    outside_untouched(outside)


def test_the_last_part_swapped_for_a_link_is_neither_read_nor_written(world):
    project, outside = world
    real = landing("victim", ToolContext(cwd=project))
    os.unlink(project / "victim")
    (project / "victim").symlink_to(outside / "secret")
    with pytest.raises(Refused):
        write_bytes(real, b"pwned")
    with pytest.raises(Refused):
        open_regular(real)
    assert (outside / "secret").read_text() == SECRET


# ------------------------------------------------------------ class 3: hard links


@pytest.fixture
def hard_links(world):
    """`gc` is a second name of `.git/config`; `hl` a second name of the outside marker."""
    project, outside = world
    os.link(project / ".git" / "config", project / "gc")
    os.link(outside / "marker", project / "hl")
    return project, outside


@pytest.mark.parametrize("tool,tool_input", [
    ("Bash", {"command": "printf '[core]\\n\\tfsmonitor = touch x\\n' >> gc"}),
    ("Bash", {"command": "cp victim gc"}),
    ("Bash", {"command": "echo pwned | tee -a gc"}),
    ("Bash", {"command": "echo pwned >> hl"}),
    ("Bash", {"command": "cp victim hl"}),
    ("Write", {"file_path": "gc", "content": "[core]\n\tfsmonitor = touch x\n"}),
    ("Edit", {"file_path": "hl", "old_string": "untouched", "new_string": "pwned"}),
], ids=["append-config", "cp-over-config", "tee-config", "append-outside", "cp-over-outside", "write-config",
        "edit-outside"])
async def test_writing_a_file_with_other_hard_links_is_asked(attempt, hard_links, tool, tool_input):
    project, outside = hard_links
    rules = PermissionRules(mode="acceptEdits", allow=("Bash(printf *)", "Bash(echo *)", "Bash(tee *)"))
    got = await attempt(tool, tool_input, rules)
    assert (project / ".git" / "config").read_text() == "[core]\n\tbare = false\n"
    outside_untouched(outside)
    assert got.denied() and "hard links" in got.text, got.text


async def test_an_approved_write_to_a_hard_link_replaces_only_that_name(attempt, hard_links):
    """When the user does approve, the atomic write gives `gc` a new file: `.git/config`, the
    other name, keeps its content."""
    project, _ = hard_links
    approver = SwapWhileAsked(lambda: None)
    got = await attempt("Write", {"file_path": "gc", "content": "mine"}, EDITS, approver=approver)
    assert approver.asked and "hard links" in approver.asked[0] and not got.refused()
    assert (project / "gc").read_text() == "mine"
    assert (project / ".git" / "config").read_text() == "[core]\n\tbare = false\n"


# ------------------------------------------------------------ class 8: devices, FIFOs, sockets


def assert_null_is_a_device():
    st = os.stat("/dev/null")
    assert stat.S_ISCHR(st.st_mode) and os.major(st.st_rdev) == 1 and os.minor(st.st_rdev) == 3


@pytest.mark.parametrize("path,rules", [
    ("/dev/null", EDITS),
    ("/dev/null", PermissionRules(mode="bypassPermissions")),
    ("/dev/null", PermissionRules(mode="acceptEdits", allow=("Write(//dev/**)",))),
    ("null-link", EDITS),
], ids=["acceptEdits", "bypass", "allow-rule", "symlink-to-it"])
async def test_write_never_replaces_dev_null(attempt, world, path, rules):
    """The machine's /dev/null is judged before anything runs: if the gate would let the Write
    through, the test stops there instead of letting the tool replace the node for everyone."""
    (world[0] / "null-link").symlink_to("/dev/null")
    tool_input = {"file_path": path, "content": "x"}
    precheck = await ToolGate(rules, world[0]).check(TOOLS["Write"], tool_input)
    assert not precheck.allowed and "not a regular file" in precheck.message
    got = await attempt("Write", tool_input, rules)
    assert_null_is_a_device()
    assert got.denied() and "is a device, not a regular file" in got.text


@pytest.fixture
def specials(world, monkeypatch):
    """A FIFO, a unix socket and (where the test may make one) a character device node, all in
    the project: what the tools must never replace or write."""
    project = world[0]
    os.mkfifo(project / "pipe")
    server = socket.socket(socket.AF_UNIX)
    monkeypatch.chdir(project)  # a socket's path is short: bind it by its relative name
    server.bind("sock")
    made = {"pipe": stat.S_ISFIFO, "sock": stat.S_ISSOCK}
    try:
        os.mknod(project / "devnode", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        made["devnode"] = stat.S_ISCHR
    except PermissionError:
        pass
    yield made
    server.close()


@pytest.mark.parametrize("name", ["pipe", "sock", "devnode"])
@pytest.mark.parametrize("tool,extra", [("Write", {"content": "x"}), ("Edit", {"old_string": "a", "new_string": "b"})])
async def test_file_tools_never_write_a_fifo_socket_or_device(attempt, world, specials, name, tool, extra):
    if name not in specials:
        pytest.skip("this process may not make device nodes")
    got = await attempt(tool, {"file_path": name, **extra}, EDITS)
    assert specials[name](os.lstat(world[0] / name).st_mode), f"{name} was replaced"
    assert got.denied() and "not a regular file" in got.text, got.text


class FifoWatch:
    """Notices whether anyone opens the FIFO for reading (and then lets the reader go, so a
    failing test fails instead of hanging): a non-blocking open for writing succeeds only while a
    reader holds it open."""

    def __init__(self, path: Path):
        self.path, self.opened, self.done = path, False, threading.Event()
        self.thread = threading.Thread(target=self._watch, daemon=True)
        self.thread.start()

    def _watch(self):
        while not self.done.wait(0.01):
            try:
                if not stat.S_ISFIFO(os.lstat(self.path).st_mode):
                    continue  # not (yet) a FIFO: a swap may be under way
                fd = os.open(self.path, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:
                continue  # ENXIO: no reader holds it open; ENOENT: being swapped
            self.opened = True
            os.close(fd)  # the reader sees the end of the file and goes on

    def stop(self):
        self.done.set()
        self.thread.join(5)


@pytest.mark.parametrize("tool,tool_input,needle", [
    ("Read", {"file_path": "pipe"}, "is a FIFO, not a regular file"),
    ("Edit", {"file_path": "pipe", "old_string": "a", "new_string": "b"}, "not a regular file"),
    ("Grep", {"pattern": "x"}, "No matches"),
    ("Grep", {"pattern": "x", "path": "pipe"}, "No matches"),
], ids=["read", "edit", "grep-tree", "grep-named"])
async def test_reading_tools_never_wait_on_a_fifo(attempt, world, specials, tool, tool_input, needle):
    """Opening a FIFO to read waits for a writer: a tool that did would hang the run. (The
    watch lets such a reader go, so the test fails instead of hanging.)"""
    watch = FifoWatch(world[0] / "pipe")
    try:
        got = await attempt(tool, tool_input, EDITS)
    finally:
        watch.stop()
    if tool == "Grep":  # Read refuses after a non-blocking open; a search never opens it at all
        assert not watch.opened, "Grep opened the FIFO"
    assert needle in got.text, got.text
    assert stat.S_ISFIFO(os.lstat(world[0] / "pipe").st_mode)


def swap_for_fifo(world):
    def swap():
        os.unlink(world[0] / "victim")
        os.mkfifo(world[0] / "victim")
    return swap


def swap_for_device(world):
    def swap():
        os.unlink(world[0] / "victim")
        os.mknod(world[0] / "victim", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    return swap


@pytest.mark.parametrize("make_swap,is_kind", [(swap_for_fifo, stat.S_ISFIFO), (swap_for_device, stat.S_ISCHR)],
                         ids=["fifo", "device"])
@pytest.mark.parametrize("tool,tool_input", [
    ("Write", {"file_path": "victim", "content": "x"}),
    ("Edit", {"file_path": "victim", "old_string": "keep", "new_string": "lose"}),
])
async def test_a_special_file_swapped_in_after_the_judgement_is_not_written(attempt, world, make_swap, is_kind,
                                                                            tool, tool_input):
    swap = make_swap(world)
    if make_swap is swap_for_device:
        try:
            os.mknod(world[0] / "probe", 0o600 | stat.S_IFCHR, os.makedev(1, 3))
        except PermissionError:
            pytest.skip("this process may not make device nodes")
    approver = SwapWhileAsked(swap)
    watch = FifoWatch(world[0] / "victim")  # an old-style Edit would wait on the FIFO
    try:
        got = await attempt(tool, tool_input, PermissionRules(), approver=approver)
    finally:
        watch.stop()
    assert approver.asked and is_kind(os.lstat(world[0] / "victim").st_mode)
    assert got.result.get("is_error") and "not a regular file" in got.text, got.text


# ------------------------------------------------------------ class 10: Read deny rules in searches


@pytest.fixture
def secrets(world):
    """Secrets where each form of rule names them, a public file with the same token, and a
    link whose own name no rule names but which leads to a secret."""
    project = world[0]
    (project / "secrets").mkdir()
    (project / "deep" / "er").mkdir(parents=True)
    for name in (".env", "deep/er/.env", "secrets/key.txt"):
        (project / name).write_text(f"{SECRET} in {name}\n")
    (project / "public.txt").write_text("tok-public is fine to show\n")
    (project / "alias.txt").symlink_to(project / "secrets" / "key.txt")
    return project


def deny_forms(project: Path) -> list[tuple[str, tuple[str, ...]]]:
    """(rule, the secrets it covers)"""
    return [
        ("Read(.env)", (".env", "deep/er/.env")),
        ("Read(**/.env)", (".env", "deep/er/.env")),
        ("Read(./secrets/**)", ("secrets/key.txt", "alias.txt")),
        ("Read(/secrets/**)", ("secrets/key.txt", "alias.txt")),
        (f"Read(/{project}/secrets/key.txt)", ("secrets/key.txt", "alias.txt")),
        ("Read(~/project/secrets/*.txt)", ("secrets/key.txt", "alias.txt")),
        ("Read(secrets)", ("secrets/key.txt", "alias.txt")),
    ]


FORM_IDS = ["bare-name", "any-depth", "dot-slash", "root-relative", "absolute", "home", "folder"]


@pytest.mark.parametrize("form", range(7), ids=FORM_IDS)
@pytest.mark.parametrize("tool,tool_input", [
    ("Grep", {"pattern": "tok-", "output_mode": "content"}),
    ("Grep", {"pattern": "tok-", "output_mode": "files_with_matches"}),
    ("Grep", {"pattern": "tok-", "output_mode": "count", "glob": "*"}),
    ("Glob", {"pattern": "**/*"}),
    ("Glob", {"pattern": "**/{.env,*.txt}"}),
], ids=["grep-content", "grep-files", "grep-count", "glob-all", "glob-named"])
async def test_searches_leave_out_what_a_read_deny_rule_covers(attempt, world, secrets, form, tool, tool_input):
    rule, covered = deny_forms(secrets)[form]
    got = await attempt(tool, tool_input, PermissionRules(deny=(rule,)))
    assert not got.refused(), got.text
    for name in covered:
        assert f"{SECRET} in {name}" not in got.text
        assert f"{secrets / name}\n" not in got.text + "\n" and f"{secrets / name}:" not in got.text, name
    assert str(secrets / "public.txt") in got.text  # the search itself ran
    assert f"({len(covered)} file" in got.text and "left out" in got.text


@pytest.mark.parametrize("form", range(7), ids=FORM_IDS)
async def test_grep_on_a_denied_file_itself_is_denied(attempt, world, secrets, form):
    rule, covered = deny_forms(secrets)[form]
    got = await attempt("Grep", {"pattern": "tok", "path": covered[-1], "output_mode": "content"},
                        PermissionRules(deny=(rule,)))
    assert SECRET not in got.text and got.denied() and rule in got.text
