"""The pure side of reading and of where writes land: the readable places, loopwright's own home,
what a search may show, which Read rules reach below a folder, and the asks for special files
and hard links, as tables (the gate resolves; the policy only decides)."""

from __future__ import annotations

import posixpath

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopwright.permissions import paths as pathrules
from loopwright.permissions.paths import in_own_home
from loopwright.permissions.decide import (
    Call, PermissionRules, Places, Resolved, decide, read_verdict, readable, search_shows,
)
from loopwright.permissions.read_access import deny_below

CWD, HOME, OWN = "/home/u/p", "/home/u", "/home/u/.loopwright"
PLACES = Places(CWD, (CWD, "/data/extra"), HOME, OWN)


def here(path: str, real: str | None = None, kind: str = "file", links: int = 1) -> tuple[Resolved, ...]:
    return (Resolved(path, real or path, kind, links),)


@pytest.mark.parametrize("path,rules,decision", [
    ("/home/u/p/src/a.py", {}, "allow"),
    ("/data/extra/x", {}, "allow"),
    ("/home/u/.ssh/id_rsa", {}, "ask"),
    ("/etc/hostname", {}, "ask"),
    ("/home/u/.loopwright/projects/t.jsonl", {}, "ask"),
    ("/home/u/notes/a.md", {"allow": ("Read(~/notes/**)",)}, "allow"),
    ("/srv/www/index.html", {"allow": ("Edit(//srv/www/**)",)}, "allow"),
    ("/home/u/notes/a.md", {"allow": ("Read",)}, "ask"),  # a bare allow widens nothing
    ("/home/u/.loopwright/t.jsonl", {"allow": ("Read(~/**)",)}, "ask"),
    ("/home/u/.loopwright/t.jsonl", {"allow": ("Read(~/.loopwright/**)",)}, "allow"),
    ("/etc/hostname", {"mode": "bypassPermissions"}, "allow"),
    ("/home/u/p/.env", {"deny": ("Read(.env)",)}, "deny"),
    ("/etc/x", {"deny": ("Read(//etc/**)",), "mode": "bypassPermissions"}, "deny"),
    ("/home/u/p/a", {"ask": ("Read(./a)",), "mode": "bypassPermissions"}, "ask"),
])
def test_read_verdict(path, rules, decision):
    assert read_verdict(here(path), PermissionRules(**rules), PLACES).decision == decision


def test_an_outside_read_says_how_to_allow_it():
    verdict = read_verdict(here("/opt/data/set.csv"), PermissionRules(), PLACES)
    assert "outside the readable places" in verdict.reason and "/opt/data/set.csv" in verdict.reason
    assert verdict.hint == "--add-dir /opt/data or an allow rule Read(//opt/data/**)"
    own = read_verdict(here(OWN + "/x"), PermissionRules(), PLACES)
    assert "loopwright's own home" in own.reason and own.hint == f"an allow rule Read(/{OWN}/**)"


def test_an_unresolved_path_is_asked_and_a_path_deny_rule_fails_closed():
    assert read_verdict(None, PermissionRules(), PLACES).decision == "ask"
    assert read_verdict(None, PermissionRules(deny=("Read(.env)",)), PLACES).decision == "deny"


def test_a_symlink_is_judged_where_it_lands():
    assert not readable("/home/u/.ssh/id_rsa", PermissionRules(), PLACES)
    leak = (Resolved("/home/u/p/leak", "/home/u/.ssh/id_rsa", "file", 1),)
    assert read_verdict(leak, PermissionRules(), PLACES).decision == "ask"


def test_a_root_inside_the_own_home_is_an_ordinary_root():
    inner = Places(OWN + "/work", (OWN + "/work",), HOME, OWN)
    assert not in_own_home(OWN + "/work/a", inner) and in_own_home(OWN + "/t.jsonl", inner)
    assert readable(OWN + "/work/a", PermissionRules(), inner)


@pytest.mark.parametrize("found,within,rules,shown", [
    (("/home/u/p/a.py", "/home/u/p/a.py"), CWD, {}, True),
    (("/home/u/p/.env", "/home/u/p/.env"), CWD, {"deny": ("Read(.env)",)}, False),
    (("/home/u/p/alias", "/home/u/p/secrets/k"), CWD, {"deny": ("Read(./secrets/**)",)}, False),
    (("/home/u/p/alias", "/home/u/p/.env"), CWD, {"ask": ("Read(**/.env)",)}, False),
    (("/home/u/p/leak", "/etc/shadow"), CWD, {}, False),
    (("/opt/x/a", "/opt/x/a"), "/opt/x", {}, True),  # the user approved searching /opt/x
    (("/home/u/.loopwright/t.jsonl", "/home/u/.loopwright/t.jsonl"), HOME, {"allow": ("Read(~/**)",)}, False),
    (("/home/u/.loopwright/t.jsonl", "/home/u/.loopwright/t.jsonl"), OWN, {}, True),
    (("/home/u/p/leak", "/etc/shadow"), CWD, {"mode": "bypassPermissions"}, True),
])
def test_search_shows(found, within, rules, shown):
    got = search_shows(Resolved(*found), here(within, kind="dir"), PermissionRules(**rules), PLACES)
    assert got is shown


@pytest.mark.parametrize("rules,folder,hit", [
    ({"deny": ("Read(.env)",)}, "/anywhere", "Read(.env)"),
    ({"deny": ("Read(./secrets/**)",)}, CWD, "Read(./secrets/**)"),
    ({"deny": ("Read(./secrets/**)",)}, CWD + "/secrets/deep", "Read(./secrets/**)"),
    ({"deny": ("Read(./secrets/**)",)}, CWD + "/src", None),
    ({"ask": ("Read(~/.ssh/**)",)}, HOME, "Read(~/.ssh/**)"),
    ({"deny": ("Edit(.env)",)}, CWD, None),
])
def test_deny_below(rules, folder, hit):
    assert deny_below(here(folder, kind="dir"), PermissionRules(**rules), PLACES) == hit


def write(path: str, kind: str = "file", links: int = 1, tool: str = "Write") -> Call:
    return Call(tool, "write", (path,), None, {}, {path: here(path, kind=kind, links=links)})


def shell(command: str, target: str, kind: str = "file", links: int = 1) -> Call:
    return Call("Bash", "exec", (), command, {}, {target: here(f"{CWD}/{target}", kind=kind, links=links)})


@pytest.mark.parametrize("mode", ["default", "acceptEdits", "bypassPermissions", "dontAsk", "plan"])
def test_file_tools_never_write_a_special_file(mode):
    for kind in ("device", "fifo", "socket"):
        verdict = decide(write("/dev/null", kind), PermissionRules(mode=mode, allow=("Write",)), PLACES)
        assert verdict.decision == "deny" and "not a regular file" in verdict.reason


def test_shell_redirections_to_dev_null_stay_fine():
    call = Call("Bash", "exec", (), "echo hi > /dev/null", {}, {"/dev/null": here("/dev/null", kind="device")})
    assert decide(call, PermissionRules(mode="acceptEdits"), PLACES).decision == "allow"


@pytest.mark.parametrize("call,rules,decision", [
    (write("/home/u/p/gc", links=2), {"mode": "acceptEdits"}, "ask"),
    (write("/home/u/p/gc", links=2), {"mode": "acceptEdits", "allow": ("Edit(./**)",)}, "ask"),
    (write("/home/u/p/gc", links=2), {"mode": "bypassPermissions"}, "allow"),
    (write("/home/u/p/gc", links=1), {"mode": "acceptEdits"}, "allow"),
    (shell("cat a >> gc", "gc", links=3), {"mode": "acceptEdits"}, "ask"),
    (shell("rm gc", "gc", links=2), {"allow": ("Bash(rm *)",)}, "allow"),  # removing a name changes no content
    (write("/home/u/p/sub", kind="dir", links=3), {"mode": "acceptEdits"}, "allow"),  # folders have many links
    (write(OWN + "/settings.json"), {"mode": "acceptEdits", "allow": ("Edit(~/**)",)}, "ask"),
])
def test_hard_links_and_the_own_home_are_asked_for_writes(call, rules, decision):
    assert decide(call, PermissionRules(**rules), PLACES).decision == decision


def _matches_by_walking(pattern: str, path: str) -> bool:
    """The plain reading of gitignore's rule: the pattern matches the path or a parent."""
    regex = pathrules._regex(pattern.rstrip("/") if pattern != "/" else pattern)
    while True:
        if regex.fullmatch(path):
            return True
        if posixpath.dirname(path) == path:
            return False
        path = posixpath.dirname(path)


SEGMENTS = st.sampled_from(["a", "b", ".env", "x.py", "sec", "**", "*", "a*", "?", "[ab]"])
NAMES = st.sampled_from(["a", "b", ".env", "x.py", "sec", "ab"])


@settings(max_examples=300, deadline=None)
@given(st.lists(SEGMENTS, max_size=4), st.booleans(), st.lists(NAMES, max_size=5))
def test_one_match_is_the_same_as_walking_the_parents(segments, anywhere, names):
    pattern = ("/**/" if anywhere else "/") + "/".join(segments)
    path = "/" + "/".join(names)
    assert pathrules.matches(pattern, path) == _matches_by_walking(pattern, path)
