"""The gate in front of every tool call: learns what the call touches, resolves those paths as
the kernel will (`~`, symlinks followed before each `..`, globs: the I/O the pure policy may not
do), asks the policy, and turns an "ask" into an `Approver` question, or a denial when nobody
can answer (headless, dontAsk). For shell lines it also asks git about the repositories their
git calls read and looks through folders they read whole. An allowed file call carries a
`CallGuard`: where the gate judged its paths (the file tools re-check it when they act) and
which search hits it may show; an allowed shell line the environment git needs to run none of
a repository's programs."""

from __future__ import annotations

import glob
import itertools
import os
import stat
from dataclasses import field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

from ..core.errors import ToolInputError
from ..core.fastclass import dataclass
from ..core.ports import Access, Approval, Approver, PathGuard, Tool
from ..permissions import automode
from ..permissions import decide as permissions
from ..permissions.bash import git_config as gitsafe
from ..permissions.decide import Call, Places, Resolved, Want
from ..permissions.read_access import deny_below, kept_private, private_patterns
from ..permissions.rules import apply_updates
from ..permissions.verdict import PermissionVerdict as Verdict
from .gitfacts import git_facts

if TYPE_CHECKING:
    from .automode import AutoClassifier

AUTO_BLOCKED = ("The auto-mode classifier blocked this {tool} call: {reason}. You may reach the goal another "
                "reasonable way, but do not work around this block; if the action is essential, stop and explain "
                "to the user why it is needed.")
AUTO_UNAVAILABLE = ("Auto mode cannot approve calls in this session (no classifier model is available); this call "
                    "needs approval. Retrying will not help: finish the work that needs no approval.")

MAX_GLOB_MATCHES = 1000
MAX_WALK = 20_000  # entries looked at below a folder a shell line reads recursively


@dataclass(frozen=True, slots=True)
class GateDecision:
    """For an allowed call: `guard`, when it reads or writes files, what the gate judged (the
    tool re-checks it when it acts); `env`, environment its process gets on top of the
    session's (the overrides under which a read-only git call runs no repository program)."""

    allowed: bool
    message: str = ""  # a denial: what the model is told
    guard: PathGuard | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    reason: str = ""  # a denial: why, and what would allow it (for the person)
    hint: str = ""
    updated_input: dict[str, Any] | None = None  # an approver's changed input: the call runs with it
    auto: str = ""  # a denial in auto mode: "blocked" (a verdict), "unevaluated", or "fallback" (a person's turn)
    source: str = "rules"  # who decided: the permission "rules", a PreToolUse "hook", the "user", the "classifier"
    calls: tuple[dict[str, Any], ...] = ()  # the classifier's model calls on it (telemetry's)


def access_of(tool: Tool, tool_input: dict[str, Any]) -> Access:
    """What the call touches, from the tool when it can say (`DescribesAccess`); otherwise from
    `read_only`. The attribute is looked up as the protocol's isinstance check does, without its
    cost on every call."""
    describe: Callable[[dict[str, Any]], Access] | None = getattr(tool, "access", None)
    if describe is not None:
        return describe(tool_input)
    return Access("read" if tool.read_only else "other")


def _invalid(tool: Tool, tool_input: dict[str, Any]) -> bool:
    """Input the tool will reject: passing it on gets the model the validation error (the tool
    cannot run with it) instead of a denial about a path that was never given."""
    try:
        tool.validate(tool_input)
    except ToolInputError:
        return True
    return False


class ToolGate:
    """`env`: the environment the session's tool processes get (default: this process's, less
    credentials); the git overrides of an allowed call are appended after its own entries."""

    def __init__(self, rules: permissions.PermissionRules, cwd: Path, approver: Approver | None = None,
                 env: Mapping[str, str] | None = None, classifier: AutoClassifier | None = None) -> None:
        self.approver, self.env, self.classifier = approver, env, classifier
        self.cwd = os.path.realpath(os.path.expanduser(str(cwd)))
        self._set_rules(rules)

    def _set_rules(self, rules: permissions.PermissionRules) -> None:
        if permissions.normalise_mode(rules.mode) == "auto":  # broad allow rules would bypass the classifier
            rules = replace(rules, allow=automode.drop_broad(rules.allow)[0])
        self.rules = rules
        home = os.path.realpath(os.path.expanduser("~"))
        extra = [os.path.realpath(os.path.join(self.cwd, os.path.expanduser(d))) for d in rules.additional_dirs]
        own = os.path.realpath(os.path.expanduser(os.environ.get("LOOPWRIGHT_HOME") or "~/.loopwright"))
        self.places = Places(self.cwd, tuple(dict.fromkeys([self.cwd, *extra])), home, own)

    async def check(self, tool: Tool, tool_input: dict[str, Any], *, hook_allowed: bool = False,
                    hook_asked: str | None = None) -> GateDecision:
        """`hook_allowed`: a PreToolUse hook said allow, which answers an ask but not a hard one
        (a deny or ask rule, a dangerous removal, a protected path, a write outside the roots:
        those only a person approves). `hook_asked`: a hook said ask (its reason),
        which turns a rule's allow into asking the user (headless: a denial)."""
        verdict, call = self._judge(tool, tool_input)
        auto = ""
        if verdict.decision == "allow" and hook_asked is not None:
            verdict = replace(verdict, decision="ask", reason=f"a PreToolUse hook asks for approval: {hook_asked}")
        if verdict.decision == "allow" or _invalid(tool, tool_input):
            return self._allowed(call)
        if verdict.decision == "ask":
            if hook_allowed and not verdict.hard:
                return replace(self._allowed(call), source="hook")
            mode = permissions.normalise_mode(self.rules.mode)
            if mode == "auto" and not verdict.hard:
                decided = await self._classified(tool, tool_input, call, verdict)
                if isinstance(decided, GateDecision):
                    return decided
                verdict, auto = decided, "fallback"  # blocks piled up: a person decides, as in other modes
            if self.approver is not None and mode != "dontAsk":
                answer = await self.approver.approve(tool.name, tool_input, verdict.reason)
                approval = answer if isinstance(answer, Approval) else Approval(bool(answer))
                if approval.allowed:
                    if approval.updates:  # checked by the approver; they hold for the rest of the run
                        self._set_rules(apply_updates(self.rules, approval.updates))
                    return replace(self._approved(tool, tool_input, call, approval.updated_input), source="user")
                return GateDecision(False, approval.message or f"The user declined this {tool.name} call "
                                    f"({verdict.reason}). Do not retry it; ask the user how to proceed or choose "
                                    "another way.", reason=f"declined by the user: {verdict.reason}", source="user")
        return GateDecision(False, self.explain(tool.name, verdict), reason=verdict.reason, hint=verdict.hint or "",
                            auto=auto)

    async def _classified(self, tool: Tool, tool_input: dict[str, Any], call: Call,
                          verdict: Verdict) -> GateDecision | Verdict:
        """Auto mode: the classifier's decision on a call the rules would ask about; after too many
        blocks, the verdict to put to a person instead (naming why)."""
        if self.classifier is None:
            return GateDecision(False, AUTO_UNAVAILABLE, reason="auto mode has no classifier", auto="unevaluated",
                                source="classifier")
        judged = await self.classifier.judge(tool.name, tool_input)
        if judged.allowed:
            return replace(self._allowed(call), source="classifier", calls=judged.calls)
        if not judged.fallback:
            return GateDecision(False, AUTO_BLOCKED.format(tool=tool.name, reason=judged.reason),
                                reason=f"blocked by the auto-mode classifier: {judged.reason}",
                                auto="blocked" if judged.evaluated else "unevaluated", source="classifier",
                                calls=judged.calls)
        return replace(verdict, reason=f"the auto-mode classifier blocked {self.classifier.in_a_row} calls in a row "
                       f"({self.classifier.total} in all), so a person decides; the latest: {judged.reason}")

    def _approved(self, tool: Tool, given: dict[str, Any], call: Call, updated: dict[str, Any] | None) -> GateDecision:
        """An approved call; with input the approver changed, judged again for what it now
        touches (a deny rule still holds; the approval answers an ask)."""
        if updated is None or updated == given:
            return self._allowed(call)
        verdict, call = self._judge(tool, updated)
        if verdict.decision == "deny":
            return GateDecision(False, self.explain(tool.name, verdict), reason=verdict.reason, hint=verdict.hint or "")
        return replace(self._allowed(call), updated_input=updated)

    def _allowed(self, call: Call) -> GateDecision:
        guard = CallGuard(call, self) if call.kind in ("read", "write") else None
        env = gitsafe.shell_env(call.command, self.env or os.environ) if call.command else {}
        return GateDecision(True, guard=guard, env=env)

    def verdict(self, tool: Tool, tool_input: dict[str, Any]) -> Verdict:
        return self._judge(tool, tool_input)[0]

    def _judge(self, tool: Tool, tool_input: dict[str, Any]) -> tuple[Verdict, Call]:
        access = access_of(tool, tool_input)
        call = Call(tool.name, access.kind, access.paths, access.command, tool_input,
                    outside=access.outside, outside_refused=access.outside_refused)
        resolved = {want.path: self.resolve(want) for want in permissions.wanted_paths(call)}
        if resolved:
            call = replace(call, resolved=resolved)
        if access.command is not None:
            call = self._shell_facts(call)
        return permissions.decide(call, self.rules, self.places), call

    def _shell_facts(self, call: Call) -> Call:
        """What git says about the repositories the line's git calls read, and which folders it
        reads recursively hold files the Read deny and ask rules keep private."""
        folders = {p: os.path.realpath(os.path.join(self.cwd, os.path.expanduser(p)))
                   for p in permissions.wanted_repos(call) if not os.path.expanduser(p).startswith("~")}
        call = replace(call, git={p: git_facts(real) for p, real in folders.items()})
        patterns = private_patterns(self.rules, self.places)
        if not patterns:
            return call
        holds = {}
        for tree in permissions.wanted_trees(call, self.places):
            locs = call.resolved.get(tree) if tree in call.resolved else self.resolve(Want(tree))
            if locs is not None and deny_below(locs, self.rules, self.places) is None:
                continue  # no Read rule reaches below it: nothing to look for (the policy asks the same)
            holds[tree] = None if locs is None else self._covered_below(locs, patterns)
        return replace(call, holds=holds)

    def _covered_below(self, locs: tuple[Resolved, ...], patterns: tuple[str, ...]) -> tuple[str, ...] | None:
        """Files and folders below `locs` that a pattern covers; None when there are more than
        MAX_WALK entries to look at. Links are not followed (nor are they by grep -r, rg, find)."""
        found: list[str] = []
        seen = 0
        for loc in locs:
            for folder, dirs, files in os.walk(loc.real):
                for name in dirs + files:
                    seen += 1
                    if seen > MAX_WALK:
                        return None
                    real = os.path.join(folder, name)
                    if kept_private(Resolved(loc.lexical + real[len(loc.real):], real), patterns):
                        found.append(real)
        return tuple(found)

    def resolve(self, want: Want) -> tuple[Resolved, ...] | None:
        """Every place a path names, as the kernel will find it: `~` expanded, joined to the
        cwd, then each symlink followed before the `..` after it is applied (`lnk/../f` with
        `lnk -> /x/sub` is `/x/f`, never `./f`); a missing tail (a file to be created) resolves
        through the part that exists. A glob names what it matches now, or itself when it
        matches nothing (as bash leaves it). None: the gate cannot tell (`~user`, too many)."""
        path = os.path.expanduser(want.path)
        if path.startswith("~"):
            return None  # ~user: another user's home
        path = os.path.join(self.cwd, path)  # never normpath first: `..` is the kernel's business
        names = [path]
        if want.glob:
            found = list(itertools.islice(glob.iglob(path), MAX_GLOB_MATCHES + 1))
            if len(found) > MAX_GLOB_MATCHES:
                return None  # too many to check one by one: treated as unknown
            names = found or [path]
        if any(through_proc(n) for n in names):
            return None  # where it lands depends on the process that opens it
        return tuple(place(n) for n in names)

    def explain(self, tool: str, verdict: Verdict) -> str:
        mode = permissions.normalise_mode(self.rules.mode) or self.rules.mode
        if verdict.decision == "deny":
            return (f"Permission denied for {tool}: {verdict.reason} (permission mode '{mode}'). "
                    "Do not retry this call; choose another way or tell the user which permission is needed.")
        nobody = ("dontAsk mode denies whatever is not allowed in advance" if mode == "dontAsk"
                  else "this run cannot ask for approval")
        hint = f" To allow it: {verdict.hint}." if verdict.hint else ""
        return (f"Permission needed for {tool}: {verdict.reason}; {nobody}, so the call was denied.{hint} "
                "Do not retry the same call; choose another way or tell the user which permission is needed.")


MAX_LINKS = 40  # as the kernel's limit on links followed in one lookup


def through_proc(path: str) -> bool:
    """Whether the kernel, walking the absolute `path`, follows a link that lives in /proc
    (`/proc/self`, `/proc/<pid>/cwd`, `/dev/fd` -> /proc/self/fd …). Such a link names something
    of the process that opens it: where it leads for a shell command is not where it leads for
    the gate (`cd .. && cat /proc/self/cwd/proj/../.ssh/id_rsa`). Too many links: True too."""
    todo = path.split("/")[::-1]
    done, hops = "", 0
    while todo:
        name = todo.pop()
        if name in ("", "."):
            continue
        if name == "..":
            done = done.rpartition("/")[0]
            continue
        step = f"{done}/{name}"
        try:
            is_link = stat.S_ISLNK(os.lstat(step).st_mode)
        except (OSError, ValueError):
            is_link = False  # missing: the rest is only a name
        if not is_link:
            done = step
            continue
        hops += 1
        if step.startswith("/proc/") or hops > MAX_LINKS:
            return True
        try:
            target = os.readlink(step)
        except OSError:
            return True
        if target.startswith("/"):
            done = ""
        todo.extend(target.split("/")[::-1])
    return False


def place(path: str) -> Resolved:
    """What is at `path` now: its lexical form, where the kernel lands (`os.path.realpath`
    follows each symlink before applying the `..` after it, and keeps a missing tail), the kind
    of file there and its hard-link count."""
    real = os.path.realpath(path)
    try:
        st = os.lstat(real)
    except (OSError, ValueError):
        return Resolved(os.path.normpath(path), real)
    return Resolved(os.path.normpath(path), real, _kind(st.st_mode), st.st_nlink)


def _kind(mode: int) -> str:
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    if stat.S_ISFIFO(mode):
        return "fifo"
    return "socket" if stat.S_ISSOCK(mode) else "other"


class CallGuard:
    """The gate's judgement of one allowed call, handed to the tool that carries it out: where
    each path was judged to land, and which files met on the way (search hits) may be shown."""

    def __init__(self, call: Call, gate: ToolGate) -> None:
        self._resolved = call.resolved
        # the rules and places as judged now; the search filter is built from them on the first
        # search hit (most calls show none), not for every call
        self._judged_by = (gate.rules, gate.places)
        self._filter: Callable[[Resolved], bool] | None = None
        self._dirs: dict[str, str] = {}  # real folders met during this call only: links may change later

    def _shows(self, found: Resolved) -> bool:
        if self._filter is None:
            within = tuple(loc for locs in self._resolved.values() for loc in locs or ())
            self._filter = permissions.search_filter(within, *self._judged_by)
        return self._filter(found)

    def judged(self, path: str) -> tuple[str, ...] | None:
        locs = self._resolved.get(path)
        return None if locs is None else tuple(loc.real for loc in locs)

    def shows(self, path: str) -> bool:
        """`path` as a search met it (absolute, no `..`): judged by that name and where it lands;
        one lstat unless it is a link, its folder resolved once per call."""
        try:
            link = stat.S_ISLNK(os.lstat(path).st_mode)
        except (OSError, ValueError):
            link = True  # cannot tell: judged where it lands now
        if link:
            real = os.path.realpath(path)
        else:
            head, _, name = path.rpartition("/")
            folder = self._dirs.get(head)
            if folder is None:
                folder = self._dirs[head] = os.path.realpath(head or "/")
            real = folder.rstrip("/") + "/" + name
        return self._shows(Resolved(path, real))
