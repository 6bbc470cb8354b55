"""The permission policy as tables: modes, rule syntax, deny -> ask -> allow, writable roots,
protected paths, Bash parts; it stays pure. Then the gate: path resolution, the approver,
hooks and dontAsk."""

from __future__ import annotations

import ast
import posixpath
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from loopwright.engine.gate import ToolGate
from loopwright.permissions import paths as pathrules
from loopwright.permissions.decide import (
    Call, GitFacts, PermissionRules, Places, Resolved, bypass_refusal, decide, parse_rule, parse_tool_list, rule_error,
    wanted_paths, wanted_repos,
)
from loopwright.core.ports import Access
from loopwright.tools import builtin_tools

CWD, HOME = "/work/p", "/home/u"
PLACES = Places(CWD, (CWD, "/data/extra"), HOME)


def resolve(path: str, links: dict[str, str] | None = None) -> tuple[Resolved, ...]:
    """What the gate would find: joined to the cwd, `..` removed, then `links` followed."""
    lexical = posixpath.normpath(posixpath.join(CWD, path.replace("~", HOME, 1) if path.startswith("~") else path))
    real = lexical
    for link, target in (links or {}).items():
        if real == link or real.startswith(link + "/"):
            real = target + real[len(link):]
    return (Resolved(lexical, real),)


def call(tool: str, kind: str, *, path: str | None = None, command: str | None = None, links=None, **input):
    """As the gate builds it: paths resolved, and git's facts for a repository at the cwd that
    configures no program."""
    c = Call(tool, kind, (path,) if path else (), command, input)
    return Call(c.tool, c.kind, c.paths, c.command, c.tool_input,
                {w.path: resolve(w.path, links) for w in wanted_paths(c)},
                {p: GitFacts(CWD) for p in wanted_repos(c)})


def verdict(c: Call, **rules) -> str:
    return decide(c, PermissionRules(**rules), PLACES).decision


READ = call("Read", "read", path="src/a.py")
WRITE = call("Write", "write", path="src/a.py")
OUTSIDE = call("Write", "write", path="../elsewhere/a.py")
PROTECTED = call("Edit", "write", path=".git/config")
OTHER = call("Mystery", "other")


@pytest.mark.parametrize("mode,read,write,outside,protected,other", [
    ("default", "allow", "ask", "ask", "ask", "ask"),
    ("acceptEdits", "allow", "allow", "ask", "ask", "ask"),
    ("plan", "allow", "deny", "deny", "deny", "deny"),
    ("dontAsk", "allow", "ask", "ask", "ask", "ask"),  # the gate turns dontAsk's asks into denials
    ("bypassPermissions", "allow", "allow", "allow", "allow", "allow"),
])
def test_modes(mode, read, write, outside, protected, other):
    got = [verdict(c, mode=mode) for c in (READ, WRITE, OUTSIDE, PROTECTED, OTHER)]
    assert got == [read, write, outside, protected, other]


@pytest.mark.parametrize("rules,expected", [
    ({"allow": ("Write",)}, "allow"),
    ({"allow": ("Edit",)}, "ask"),  # a bare rule names one tool
    ({"allow": ("Edit(./src/**)",)}, "allow"),  # path rules cover every file-editing tool
    ({"allow": ("Write(src/**)",)}, "allow"),
    ({"allow": ("Edit(./lib/**)",)}, "ask"),
    ({"allow": ("Write",), "deny": ("Write",)}, "deny"),
    ({"allow": ("Write",), "deny": ("Edit(src/**)",)}, "deny"),
    ({"allow": ("Write",), "deny": ("Edit(*.py)",)}, "deny"),  # a bare name matches at any depth
    ({"allow": ("Write",), "ask": ("Edit(**/a.py)",)}, "ask"),
    ({"allow": ("Write",), "deny": ("Read(src/**)",)}, "allow"),  # Read rules do not cover writes
    ({"allow": ("*",)}, "allow"),
    ({"mode": "bypassPermissions", "deny": ("Edit(//work/p/src/**)",)}, "deny"),
    ({"mode": "bypassPermissions", "ask": ("Write",)}, "ask"),
])
def test_rules_deny_then_ask_then_allow(rules, expected):
    assert verdict(WRITE, **rules) == expected


@pytest.mark.parametrize("spec,path,hit", [
    ("//work/p/src/**", "/work/p/src/x/y.py", True),
    ("/src/**", "/work/p/src/y.py", True),  # `/x`: the settings root, the cwd here
    ("./src/*.py", "/work/p/src/y.py", True),
    ("./src/*.py", "/work/p/src/x/y.py", False),
    ("src/**/*.py", "/work/p/src/x/y.py", True),
    ("~/.ssh/**", "/home/u/.ssh/id_rsa", True),
    ("~/.ssh", "/home/u/.ssh/id_rsa", True),  # a directory covers its contents
    (".env", "/work/p/deep/down/.env", True),
    (".env", "/work/p/.envrc", False),
    ("*.key", "/work/p/a/b.key", True),
    ("secret?.txt", "/work/p/secret1.txt", True),
    ("[ab].txt", "/work/p/c.txt", False),
])
def test_path_patterns(spec, path, hit):
    pattern = pathrules.anchor(spec, PLACES, anywhere=True)
    assert pathrules.matches(pattern, path) is hit


def test_allow_rules_anchor_bare_names_at_the_cwd():
    pattern = pathrules.anchor("src/**", PLACES, anywhere=False)
    assert pathrules.matches(pattern, "/work/p/src/a.py") and not pathrules.matches(pattern, "/work/p/x/src/a.py")


@pytest.mark.parametrize("path,hit", [
    ("/work/p/.git/config", True), ("/work/p/.GIT/hooks/x", True), ("/work/p/.claude/settings.json", True),
    ("/work/p/.claude/worktrees/a/x.py", False), ("/work/p/.loopwright/settings.local.json", True),
    ("/home/u/.bashrc", True), ("/home/u/.zshrc", True), ("/home/u/.profile", True), ("/home/u/.gitconfig", True),
    ("/home/u/.ssh/authorized_keys", True), ("/home/u/.config/git/config", True), ("/work/p/.husky/pre-commit", True),
    ("/work/p/.mcp.json", True), ("/work/p/src/git.py", False), ("/work/p/bashrc", False), ("/work/p/.github/x", False),
])
def test_protected_paths(path, hit):
    assert pathrules.protected(path) is hit


def test_symlinks_and_dotdot_are_judged_where_they_land():
    linked = call("Write", "write", path="link/a.py", links={"/work/p/link": "/etc"})
    assert verdict(linked, allow=("Write",)) == "ask"
    assert "outside the writable roots" in decide(linked, PermissionRules(allow=("Write",)), PLACES).reason
    assert verdict(call("Write", "write", path="sub/../../p/ok.py"), allow=("Write",)) == "allow"
    into_git = call("Write", "write", path="notes", links={"/work/p/notes": "/work/p/.git/config"})
    assert verdict(into_git, mode="acceptEdits") == "ask"
    assert verdict(call("Write", "write", path="/data/extra/x"), mode="acceptEdits") == "allow"


def test_edit_allow_rules_reach_outside_but_never_protected_paths():
    assert verdict(OUTSIDE, allow=("Edit(//work/elsewhere/**)",)) == "allow"
    assert verdict(PROTECTED, allow=("Edit(./.git/**)",), mode="acceptEdits") == "ask"


def bash(command: str, links=None) -> Call:
    return call("Bash", "exec", command=command, links=links)


@pytest.mark.parametrize("command,rules,expected", [
    ("npm run test", {"allow": ("Bash(npm run test *)",)}, "allow"),
    ("npm run test -- -x", {"allow": ("Bash(npm run test *)",)}, "allow"),
    ("npm run testx", {"allow": ("Bash(npm run test *)",)}, "ask"),
    ("npm run test", {"allow": ("Bash(npm run test:*)",)}, "allow"),
    ("npm run testx", {"allow": ("Bash(npm run test:*)",)}, "ask"),
    ("lsof -i", {"allow": ("Bash(ls*)",)}, "allow"),
    ("npm run build", {"allow": ("Bash(npm run build)",)}, "allow"),
    ("npm run build --prod", {"allow": ("Bash(npm run build)",)}, "ask"),
    ("git commit -m 'x y'", {"allow": ("Bash(git * -m *)",)}, "allow"),
    ("npm test && npm run lint", {"allow": ("Bash(npm test)",)}, "ask"),
    ("npm test && ls", {"allow": ("Bash(npm test)",)}, "allow"),  # ls is read-only
    ("timeout 60 npm test", {"allow": ("Bash(npm test)",)}, "allow"),
    ("PATH=/tmp npm test", {"allow": ("Bash(npm test)",)}, "ask"),
    ("env PATH=/tmp npm test", {"allow": ("Bash(npm test)",)}, "ask"),
    ("env LD_PRELOAD=/tmp/x.so ls", {}, "ask"),
    ("env A=1 npm test", {"allow": ("Bash(npm test)",)}, "allow"),
    ("npm test", {"allow": ("Bash",), "deny": ("Bash(npm *)",)}, "deny"),
    ("sudo npm test", {"allow": ("Bash",), "deny": ("Bash(npm *)",)}, "deny"),
    ("eval $X", {"allow": ("Bash",), "deny": ("Bash(rm *)",)}, "ask"),
    ("eval $X", {"allow": ("Bash",)}, "allow"),
    ("case x in *) rm;; esac", {"allow": ("Bash",)}, "ask"),
    ("case x in *) rm;; esac", {"mode": "bypassPermissions"}, "allow"),
    ("case x in *) rm;; esac", {"mode": "bypassPermissions", "deny": ("Bash(rm *)",)}, "ask"),
    ("rm -rf /", {"mode": "bypassPermissions"}, "ask"),
    ("rm -rf ~", {"mode": "bypassPermissions"}, "ask"),
    ("rm -rf ..", {"mode": "bypassPermissions"}, "ask"),
    ("rm -rf /usr", {"mode": "bypassPermissions"}, "ask"),
    ("rm -rf build", {"mode": "bypassPermissions"}, "allow"),
    ("ls; cat x; git log", {"mode": "plan"}, "allow"),
    ("ls > out", {"mode": "plan"}, "deny"),
    ("ls > out", {"mode": "acceptEdits"}, "allow"),
    ("ls > ~/.bashrc", {"mode": "acceptEdits"}, "ask"),
    ("mkdir a && touch a/b && cp c a/", {"mode": "acceptEdits"}, "allow"),
    ("mv b a/ && cp c a/", {"mode": "acceptEdits"}, "ask"),  # after a move, later paths are unknown
    ("rm a", {"mode": "acceptEdits"}, "ask"),
    ("touch /etc/x", {"mode": "acceptEdits"}, "ask"),
    ("touch /data/extra/x", {"mode": "acceptEdits"}, "allow"),
    ("cd sub && touch x", {"mode": "acceptEdits"}, "allow"),  # x and sub/x are both inside
    ("cd .. && touch x", {"mode": "acceptEdits"}, "ask"),
    ("cd $D && touch x", {"mode": "acceptEdits"}, "ask"),
    ("cd sub && touch x", {"allow": ("Bash",)}, "allow"),
    ("touch ../x", {"allow": ("Bash",)}, "ask"),
    ("echo x > $F", {"allow": ("Bash(echo *)",)}, "ask"),
    ("echo x > $F", {"allow": ("Bash",)}, "allow"),
    ("npm test", {"mode": "dontAsk"}, "ask"),
    ("echo\u00a0hi", {"allow": ("Bash(echo *)",)}, "ask"),  # bash keeps a no-break space inside the word
])
def test_bash_rules(command, rules, expected):
    assert verdict(bash(command), **rules) == expected


def test_a_hint_names_a_rule_that_would_allow_the_part():
    got = decide(bash("echo ok; npm run build --prod"), PermissionRules(), PLACES)
    assert got.decision == "ask" and "npm run build --prod" in got.reason and "Bash(npm run *)" in got.hint


@given(st.sampled_from(["touch m", "rm -rf m", "curl x | sh", "python -c 1"]),
       st.sampled_from([";", "&&", "||", "|", "\n", "&"]),
       st.sampled_from(["{}", "$({})", "`{}`", "bash -c '{}'", "env A=1 {}", "({})", "eval '{}'"]))
def test_an_echo_rule_never_allows_more_than_echo(inner, sep, wrap):
    assert verdict(bash(f"echo hi {sep} {wrap.format(inner)}"), allow=("Bash(echo *)",)) != "allow"


def test_rule_syntax():
    assert parse_rule("Bash(npm run *)") == ("Bash", "npm run *")
    assert parse_rule("Read") == ("Read", None)
    assert parse_rule("Bash()") == ("Bash", None)
    assert rule_error("Bash(npm") is not None and rule_error("Bash(x)") is None and rule_error("(x)") is not None
    assert parse_tool_list(["Bash(git diff *),Read", "Edit"]) == ("Bash(git diff *)", "Read", "Edit")
    assert PermissionRules(deny=("Bash", "Read(./x)")).removed_tools() == {"Bash"}


def test_rules_from_settings_keep_their_root():
    rules = PermissionRules.from_settings({"allow": ["Edit(/src/**)", "Bash(ls /tmp)"], "deny": ["Read(//etc/**)"],
                                           "ask": ["Bash(git push *)"], "defaultMode": "acceptEdits",
                                           "additionalDirectories": ["../lib"]}, root="/repo")
    assert rules.allow == ("Edit(//repo/src/**)", "Bash(ls /tmp)") and rules.deny == ("Read(//etc/**)",)
    assert rules.ask == ("Bash(git push *)",) and rules.mode == "acceptEdits" and rules.additional_dirs == ("../lib",)
    merged = PermissionRules(mode="plan", allow=("Read",)).merged(rules)
    assert merged.mode == "acceptEdits" and merged.allow[0] == "Read"
    with pytest.raises(ValueError, match="permissions.allow"):
        PermissionRules.from_settings({"allow": "Bash"})
    with pytest.raises(ValueError, match="defaultMode"):
        PermissionRules.from_settings({"defaultMode": "yolo"})


def test_bypass_refusal():
    assert bypass_refusal("bypassPermissions", is_root=True, sandboxed=False, override=False)
    assert bypass_refusal("bypassPermissions", is_root=True, sandboxed=True, override=False) is None
    assert bypass_refusal("bypassPermissions", is_root=True, sandboxed=False, override=True) is None
    assert bypass_refusal("bypassPermissions", is_root=False, sandboxed=False, override=False) is None
    assert bypass_refusal("acceptEdits", is_root=True, sandboxed=False, override=False) is None


PERMISSIONS = Path(__file__).resolve().parents[1] / "src" / "loopwright" / "permissions"
IMPURE_MODULES = {"os", "subprocess", "socket", "shutil", "pathlib", "glob", "io", "tempfile", "time", "random"}
IMPURE_CALLS = {"open", "realpath", "abspath", "expanduser", "exists", "isdir", "islink", "getcwd", "input"}


@pytest.mark.parametrize("name", sorted(str(p.relative_to(PERMISSIONS)) for p in PERMISSIONS.rglob("*.py")))
def test_permission_modules_stay_pure(name):
    tree = ast.parse((PERMISSIONS / name).read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            mods = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            assert not {m.split(".")[0] for m in mods} & IMPURE_MODULES, f"{name} imports {mods}"
        if isinstance(node, ast.Call):
            fn = node.func
            called = fn.attr if isinstance(fn, ast.Attribute) else getattr(fn, "id", "")
            assert called not in IMPURE_CALLS, f"{name} calls {called}()"


# ------------------------------------------------------------ the gate

TOOLS = {t.name: t for t in builtin_tools()}


class Approver:
    def __init__(self, answer: bool) -> None:
        self.answer, self.asked = answer, []

    async def approve(self, tool_name, tool_input, reason):
        self.asked.append((tool_name, reason))
        return self.answer


@pytest.fixture
def project(tmp_path):
    (tmp_path / "p").mkdir()
    (tmp_path / "out").mkdir()
    (tmp_path / "p" / "link").symlink_to(tmp_path / "out")
    return tmp_path / "p"


@pytest.mark.anyio
async def test_gate_resolves_symlinks_and_globs(project):
    gate = ToolGate(PermissionRules(allow=("Write", "Bash(rm *)")), project)
    assert not (await gate.check(TOOLS["Write"], {"file_path": "link/x", "content": ""})).allowed
    assert (await gate.check(TOOLS["Write"], {"file_path": "ok", "content": ""})).allowed
    (project / "a.o").touch()
    assert (await gate.check(TOOLS["Bash"], {"command": "rm *.o"})).allowed
    (project / "link" / "b.o").touch()
    assert not (await gate.check(TOOLS["Bash"], {"command": "rm link/*.o"})).allowed


@pytest.mark.anyio
async def test_gate_asks_the_approver_except_in_dont_ask(project):
    yes, no = Approver(True), Approver(False)
    write = (TOOLS["Write"], {"file_path": "a", "content": ""})
    assert (await ToolGate(PermissionRules(), project, yes).check(*write)).allowed and yes.asked
    denied = await ToolGate(PermissionRules(), project, no).check(*write)
    assert not denied.allowed and "declined" in denied.message
    silent = Approver(True)
    got = await ToolGate(PermissionRules(mode="dontAsk"), project, silent).check(*write)
    assert not got.allowed and not silent.asked and "dontAsk" in got.message


@pytest.mark.anyio
async def test_a_hook_allow_answers_an_ask_but_not_an_ask_rule_or_a_deny(project):
    write = (TOOLS["Write"], {"file_path": "a", "content": ""})
    assert (await ToolGate(PermissionRules(), project).check(*write, hook_allowed=True)).allowed
    asked = ToolGate(PermissionRules(ask=("Write",)), project)
    assert not (await asked.check(*write, hook_allowed=True)).allowed
    denied = ToolGate(PermissionRules(deny=("Edit(./a)",)), project)
    assert not (await denied.check(*write, hook_allowed=True)).allowed


@pytest.mark.anyio
async def test_headless_denial_says_what_permission_is_needed(project):
    got = await ToolGate(PermissionRules(), project).check(TOOLS["Bash"], {"command": "npm test"})
    assert not got.allowed
    assert "cannot ask" in got.message and '--allowedTools "Bash(npm test *)"' in got.message


@pytest.mark.anyio
async def test_invalid_input_reaches_validation_instead_of_a_denial(project):
    assert (await ToolGate(PermissionRules(), project).check(TOOLS["Write"], {"content": "x"})).allowed


@pytest.mark.anyio
async def test_tools_without_access_fall_back_to_read_only(project):
    class Plain:
        name, description, read_only, input_schema = "Plain", "", False, {}

        def validate(self, raw):
            return raw

    assert not (await ToolGate(PermissionRules(), project).check(Plain(), {})).allowed
    assert (await ToolGate(PermissionRules(allow=("Plain",)), project).check(Plain(), {})).allowed
    Plain.read_only = True
    assert (await ToolGate(PermissionRules(), project).check(Plain(), {})).allowed


def test_builtin_tools_describe_what_they_touch():
    assert TOOLS["Read"].access({"file_path": "a"}) == Access("read", ("a",))
    assert TOOLS["Edit"].access({"file_path": "a"}) == Access("write", ("a",))
    assert TOOLS["Bash"].access({"command": "ls"}) == Access("exec", (), "ls")
    assert TOOLS["Grep"].access({"pattern": "x"}) == Access("read", (".",))
    assert TOOLS["Glob"].access({"pattern": "/etc/*.conf"}) == Access("read", (".", "/etc"))
    assert TOOLS["Glob"].access({"pattern": "../../**", "path": "src"}) == Access("read", ("src", "src/../.."))
    assert TOOLS["KillShell"].access({"shell_id": "x"}).kind == "session"
    assert TOOLS["Read"]._tool is None  # answered without loading the tool
