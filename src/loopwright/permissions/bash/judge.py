"""May this shell line run? The Bash side of `permissions.decide`: deny and ask rules on each
part (Bash rules), on what it writes (Edit rules) and on what it reads (Read rules, also below
folders read whole and in repositories whose file contents git prints); then the mode: where
the line writes (write_access) and reads (read_access, the tools' own predicate), the
programs a repository configures for its git calls, and which parts only read. Pure: the gate
resolved the paths, asked git and looked through the folders first."""

from __future__ import annotations

from dataclasses import replace

from ..call import Call
from ..paths import Places
from ..read_access import deny_below, read_place, read_rule
from ..rules import PermissionRules, name_hits, parse_rule
from ..verdict import ALLOW, Decision, Resolved, PermissionVerdict, path_rule_hits
from ..write_access import critical, harmless_device, write_where
from . import nosandbox, readonly
from .command_rules import broad, part_hits, suggest
from .git_config import config_problem
from .git_options import CONTENT
from .line import Line, Touch, analysed, read_line

__all__ = ["decide_shell", "line_of", "outside_sandbox", "wanted_repos", "wanted_trees"]

_DENY: Decision = "deny"
_ASK: Decision = "ask"


def line_of(call: Call, places: Places | None = None) -> Line | None:
    """The call's line as read (None: it cannot be analysed). With `places`, globs are taken as
    the gate expanded them; without, as written (to collect what the gate must resolve)."""
    analysis = analysed(call.command or "")
    if analysis.error is not None:
        return None
    return read_line(analysis, call.resolved if places else None, places.cwd if places else "")


def wanted_repos(call: Call) -> tuple[str, ...]:
    """Folders (as written, relative to the cwd) whose git repository a git call of the line
    reads: the gate asks git about each (`Call.git`)."""
    line = line_of(call) if call.command is not None else None
    return tuple(dict.fromkeys(t.path for t in line.touches if t.kind == "repo" and t.path)) if line else ()


def wanted_trees(call: Call, places: Places) -> tuple[str, ...]:
    """Folders the line reads with everything below them (after the gate resolved the rest and
    asked git): the gate looks through those a Read rule may reach (`Call.holds`)."""
    line = line_of(call, places) if call.command is not None else None
    if line is None:
        return ()
    out = [t.path for t in line.touches if t.kind == "read" and t.tree and t.path]
    out += [top for t in line.touches if t.kind == "repo" and (top := _content_top(t, call))]
    return tuple(dict.fromkeys(out))


def _content_top(t: Touch, call: Call) -> str | None:
    """The worktree a git call prints file contents from (diff, show, log, blame), if known."""
    if not t.path or readonly.judge(t.part).git not in CONTENT:
        return None
    facts = call.git.get(t.path)
    return facts.top if facts is not None else None


def decide_shell(call: Call, rules: PermissionRules, places: Places, mode: str) -> PermissionVerdict:
    tool = call.tool
    deny = [(r, s) for r in rules.deny for n, s in [parse_rule(r)] if name_hits(n, tool)]
    ask = [(r, s) for r in rules.ask for n, s in [parse_rule(r)] if name_hits(n, tool)]
    specific = any(not broad(s) for _, s in deny + ask)
    line = line_of(call, places)
    if line is None:
        if any(broad(s) for _, s in deny):
            return PermissionVerdict("deny", f"the deny rule {deny[0][0]} matches")
        if mode == "bypassPermissions" and not specific:
            return ALLOW
        why = f"the command could not be analysed ({analysed(call.command or '').error})"
        return PermissionVerdict("deny" if mode == "plan" else "ask", why, hard=specific, hint="split it into simpler commands")
    verdict = _shell_rules(line, call, deny, ask, rules, places, specific)
    if verdict is not None:
        return verdict
    if mode == "bypassPermissions":
        return ALLOW
    verdict = _shell_mode(line, call, rules, places, mode)
    if rules.strict and verdict.decision == "allow":
        return _unsandboxed(line, call, rules, places, mode)
    return verdict


def _unsandboxed(line: Line, call: Call, rules: PermissionRules, places: Places, mode: str) -> PermissionVerdict:
    """A line the rules and the mode allow, judged again for a run without an OS sandbox: the
    short list of readers (nosandbox), and parts an allow rule names, except a rule that
    lets a program run anything, which is set aside (and named)."""
    tool = call.tool
    aside = [(r, s) for r in rules.allow for n, s in [parse_rule(r)] if name_hits(n, tool) and nosandbox.sets_aside(s)]
    kept = tuple(r for r in rules.allow if r not in {r for r, _ in aside})
    again = _shell_mode(line, call, replace(rules, allow=kept), places, mode, strict=True)
    if again.decision == "allow":
        return ALLOW
    met = [r for r, s in aside if any(part_hits(s, p, anywhere=False) for p in line.parts)]
    note = (f"; the allow rule {', '.join(met)} lets a program run anything, which needs a sandbox, so it is set "
            "aside" if met else "")
    return PermissionVerdict("ask", f"{nosandbox.ASKED}: {again.reason}{note}", hint=again.hint)


def outside_sandbox(call: Call, rules: PermissionRules, places: Places, verdict: PermissionVerdict) -> PermissionVerdict:
    """The verdict for a line that would run outside the OS sandbox (`call.outside` says why):
    refused when trusted settings forbid that; otherwise asked for, hard (neither
    bypassPermissions, auto mode's classifier nor a hook's allow answers it), unless allow rules
    that name its commands cover every part of it (`Bash(git push:*)`; a bare `Bash` was given
    for commands inside the sandbox and does not count). A deny stays a deny."""
    if verdict.decision == "deny":
        return verdict
    why = f"it runs outside the sandbox ({call.outside})"
    if call.outside_refused:
        return PermissionVerdict("deny", f"{why}, and sandbox.allowUnsandboxedCommands is false")
    line = line_of(call, places)
    allows = [s for r in rules.allow for n, s in [parse_rule(r)] if name_hits(n, call.tool) and not broad(s)]
    if line is not None and line.parts and all(any(part_hits(s, p, anywhere=False) for s in allows)
                                               for p in line.parts):
        return verdict
    example = suggest(line.parts[0]) if line is not None and line.parts else "git push *"
    return PermissionVerdict("ask", f"asked because {why}", hard=True,
                             hint=f'an allow rule that names the command, e.g. --allowedTools "{call.tool}({example})"')


def _shell_rules(line: Line, call: Call, deny: list[tuple[str, str | None]],
                 ask: list[tuple[str, str | None]], rules: PermissionRules, places: Places,
                 specific: bool) -> PermissionVerdict | None:
    """Deny rules, then ask rules (Bash rules on each part, Edit rules on what it writes, Read
    rules on what it reads), then what no mode may skip."""
    checks: tuple[tuple[list[tuple[str, str | None]], Decision], ...] = ((deny, "deny"), (ask, "ask"))
    for listed, decision in checks:
        for rule, spec in listed:
            for part in line.parts:
                if part_hits(spec, part, anywhere=True):
                    return PermissionVerdict(decision, f"the {decision} rule {rule} matches `{part.full}`",
                                             hard=decision == "ask")
    edit_rules: list[tuple[str, str, Decision]] = [
        (r, spec, decision) for listed, decision in ((rules.deny, _DENY), (rules.ask, _ASK)) for r in listed
        for name, spec in [parse_rule(r)] if name in ("Edit", "Write") and spec is not None and not broad(spec)]
    for t in line.touches:
        locs = call.resolved.get(t.path) if t.path is not None else None
        if t.kind == "write":
            for rule, spec, decision in edit_rules:
                if locs is not None and path_rule_hits(spec, locs, places, deny=True):
                    return PermissionVerdict(decision, f"the {decision} rule {rule} matches a file `{t.part.text}` writes",
                                             hard=decision == "ask")
        elif t.kind != "device" and (ruled := _read_ruled(t, locs, call, rules, places)) is not None:
            decision, rule, certain = ruled
            if decision == "deny" and certain:  # it would read what the rule keeps private: as the Read tool
                return PermissionVerdict("deny", f"`{t.part.text}` reads what the deny rule {rule} keeps private")
            return PermissionVerdict("ask", f"`{t.part.text}` may read what the {decision} rule {rule} keeps private",
                                     hard=True)
        if t.removes and t.part.name in ("rm", "rmdir") and locs and any(critical(x.real, places) for x in locs):
            return PermissionVerdict("ask", f"`{t.part.text}` removes a critical path", hard=True)
    if specific:
        for part in line.parts:
            if part.hidden:
                return PermissionVerdict("ask", f"`{part.text}` runs a command that cannot be checked against your "
                                         f"deny and ask rules ({part.opaque})", hard=True)
    return None


def _read_ruled(t: Touch, locs: tuple[Resolved, ...] | None, call: Call, rules: PermissionRules,
                places: Places) -> tuple[Decision, str, bool] | None:
    """The Read deny or ask rule a read may meet, as the tools judge it (`read_access.read_rule`: a
    file it covers, a path known only at run time); or, for a folder read whole (or a repository
    whose contents git prints), a rule that reaches below it (`read_access.deny_below`) where the
    gate found a covered file there or could not look through it all. The flag says whether the
    read surely meets it (a place the gate resolved, a covered file it found below), rather
    than may."""
    if t.kind == "repo":
        if readonly.judge(t.part).git not in CONTENT:
            return None  # status, branch …: names only
        facts = call.git.get(t.path) if t.path else None
        if facts is None or facts.error is not None:
            unknown = read_rule(None, rules, places)  # where it reads is unknown: every Read rule may meet it
            return None if unknown is None else (*unknown, False)
        if not facts.top:
            return None
        tree, locs = facts.top, _worktree(facts.top)
    else:
        named = read_rule(locs, rules, places)
        if named is not None:
            return (*named, locs is not None)
        if not t.tree or locs is None or t.path is None:
            return None
        tree = t.path
    rule = deny_below(locs, rules, places)
    found = call.holds.get(tree)
    if rule is None or found == ():
        return None
    if found and t.kind != "repo":  # it reads these (git prints only what the repository tracks)
        met = read_rule(tuple(Resolved(f, f) for f in found), rules, places)
        if met is not None:
            return (*met, True)
    return ("deny" if rule in rules.deny else "ask"), rule, False


def _worktree(top: str) -> tuple[Resolved, ...]:
    return (Resolved(top, top, "dir"),)  # git names it as it found it: real


def _shell_mode(line: Line, call: Call, rules: PermissionRules, places: Places, mode: str, *,
                strict: bool = False) -> PermissionVerdict:
    """`strict`: no sandbox bounds the line; only the short list of readers runs unnamed by a rule."""
    tool = call.tool
    allows = [s for r in rules.allow for n, s in [parse_rule(r)] if name_hits(n, tool)]
    anything = any(broad(s) for s in allows)
    ruled = {id(p) for p in line.parts if anything or any(part_hits(s, p, anywhere=False) for s in allows)}
    if mode == "plan":
        for part, reading in zip(line.parts, line.readings):
            if not (reading.ok and readonly.is_read_only(part)):
                why = f" ({reading.why})" if reading.why else ""
                return PermissionVerdict("deny", f"plan mode runs read-only commands only, and `{part.text}` is not one{why}")
    for t in line.touches:  # where the line writes and reads, first: those asks are hard, whatever else is asked
        problem = _touch_problem(t, call, rules, places, anything, ruled=id(t.part) in ruled, plan=mode == "plan")
        if problem is not None:
            return replace(problem, reason=f"`{t.part.text}`: {problem.reason}")
    for part, reading in zip(line.parts, line.readings):
        if strict:
            if not (id(part) in ruled or nosandbox.runs_unasked(part, reading)):
                why = f"`{part.text}` is not one of the read-only commands that run without one"
                return PermissionVerdict("ask", why, hint=f'--allowedTools "{tool}({suggest(part)})"')
            continue
        edits = mode == "acceptEdits" and (readonly.is_safe_edit(part) or reading.ok)
        if not ((reading.ok and readonly.is_read_only(part)) or id(part) in ruled or edits):
            why = f"`{part.text}` is not allowed by a rule" + (f" ({reading.why})" if reading.why else "")
            return PermissionVerdict("ask", why, hint=f'--allowedTools "{tool}({suggest(part)})"')
    return ALLOW


def _touch_problem(t: Touch, call: Call, rules: PermissionRules, places: Places, anything: bool,
                   ruled: bool, plan: bool) -> PermissionVerdict | None:
    """`anything`: `Bash` is allowed outright, so paths known only at run time are accepted (the
    sandbox bounds them); `ruled`: an allow rule names this part (it may run what its
    repository configures)."""
    if t.path is None:
        if anything:
            return None
        if t.kind == "write":
            return write_where(None, rules, places)
        return PermissionVerdict("ask", "it reads a path known only when it runs", hard=True, hint="allow it explicitly")
    if t.kind == "device":
        return PermissionVerdict("ask", f"it would change or replace the device {t.path} (only a redirection may write to "
                                 "a device)", hard=True, hint="approve it yourself")
    locs = call.resolved.get(t.path)
    if t.kind == "write":
        return write_where(locs, rules, places, into=t.into, removes=t.removes)
    if t.kind == "repo":
        facts = call.git.get(t.path)
        if facts is None:
            return None if anything else PermissionVerdict("ask", "its repository could not be checked", hard=True)
        if not ruled and (why := config_problem(facts)) is not None:  # plan mode runs none of it
            return PermissionVerdict("deny" if plan else "ask", f"it would run a program the repository configures: {why}",
                                     hard=True, hint=f'--allowedTools "Bash({suggest(t.part)})" if you trust it')
        return _read_where(_worktree(facts.top) if facts.top else (), rules, places, tree=True)
    if locs is None:
        return None if anything else PermissionVerdict("ask", f"{t.path} could not be resolved", hard=True)
    return _read_where(locs, rules, places, tree=t.tree)


def _read_where(locs: tuple[Resolved, ...], rules: PermissionRules, places: Places, *, tree: bool) -> PermissionVerdict | None:
    """A read goes where the tools may read (`read_access.read_place`: the readable places, never
    loopwright's own home unless a rule names it), devices aside (`cat /dev/urandom`). Hard, as
    for writes: a hook's allow does not answer it, only a person."""
    verdict = read_place(tuple(loc for loc in locs if not harmless_device(loc)), rules, places, tree=tree)
    return None if verdict.decision == "allow" else replace(verdict, hard=True)
