"""`replay_session`: run a recorded session's prompts again, offline, with today's loop (settings,
hooks, rules, goal, tools) in a scratch copy of its project, the model played by a simulator that
answers as the record did (`script`), and report where the replay leaves the record (`compare`).

Each prompt runs through the real command line as the session's first record says it was started:
its `RunSpec` (`spec`), run by `loopwright --run-spec` as `-p` runs it — or, for a session recorded
before sessions kept their spec, the command line it kept (`argv`), which that command reads with
the flags' parser (this package imports nothing of the CLI). `flags` replace what the record says
(`--max-turns 2` tests that limit). The replay's own session is written in the scratch folder's
home, never beside the user's sessions."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Sequence

from ...core.errors import UsageError
from ...replay import compare
from ...replay.conversation import mover, text_of, turns
from ...replay.recording import Recording, load
from ...replay.scratch import Scratch, make
from .script import Asked, ReplayScript

# What a replay sets itself (or what would touch another session): the spec's fields, and the same
# as flags of a command line recorded before sessions kept their spec.
_OWN_FIELDS = {"output_format", "resume", "continue_session", "fork_session", "session_id", "store",
               "no_session_persistence", "include_partial_messages"}
_OWN_FLAGS = {"--output-format": 1, "-r": 1, "--resume": 1, "-c": 0, "--continue": 0, "--fork-session": 0,
              "--session-id": 1, "--store": 1, "--no-session-persistence": 0, "--input-format": 1,
              "--include-partial-messages": 0, "--verbose": 0, "--debug": 0}
_PLACEHOLDER_KEY = "sk-loopwright-replay"
_SIDE_CALLS = {"prompt_hook": "a prompt hook", "classifier": "the auto-mode classifier"}


@dataclass
class Report:
    session: str
    where: str
    scratch: str
    source: str
    wire: str
    commands: list[list[str]] = field(default_factory=list)
    divergences: list[compare.Divergence] = field(default_factory=list)
    unanswered: list[dict[str, Any]] = field(default_factory=list)
    results: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.divergences

    @property
    def first(self) -> compare.Divergence | None:
        return self.divergences[0] if self.divergences else None

    def to_json(self) -> dict[str, Any]:
        return {"session": self.session, "transcript": self.where, "diverged": not self.ok,
                "divergence": self.first.to_json() if self.first else None,
                "divergences": [d.to_json() for d in self.divergences], "unanswered": self.unanswered,
                "scratch": self.scratch, "projectFrom": self.source, "wire": self.wire,
                "commands": self.commands, "results": self.results, "warnings": self.warnings}

    def text(self) -> str:
        lines = [f"replay of session {self.session} ({self.where})",
                 f"  project copy: {self.scratch}", f"  made from: {self.source}", f"  wire: {self.wire}"]
        lines += [f"  warning: {w}" for w in self.warnings]
        first = self.first
        if first is None:
            lines.append("no divergence: the replay followed the record to its end")
            return "\n".join(lines)
        lines.append(f"DIVERGED ({first.kind}: {compare.KINDS[first.kind]}) in {first.chain}"
                     + (f", at {first.where}" if first.where else ""))
        lines.append(f"  {first.why}")
        if first.diff:
            lines += ["  " + line for line in first.diff.rstrip("\n").splitlines()]
        elif first.recorded is not None or first.replayed is not None:
            lines.append(f"  recorded: {_brief(first.recorded)}")
            lines.append(f"  replayed: {_brief(first.replayed)}")
        for other in self.divergences[1:]:
            lines.append(f"then, in {other.chain}: {other.kind}: {other.why}")
        return "\n".join(lines)


def replay_session(session: str, *, store: str | None = None, cwd: str | None = None, flags: Sequence[str] = (),
                   wire: str | None = None, keep: str | Path | None = None, timeout: float = 600.0) -> Report:
    """Replay `session` (an id or a transcript file); `keep`: build the scratch copy there and
    leave it (else a temporary folder, removed afterwards)."""
    here = cwd or os.getcwd()
    recording = load(session, store=store, cwd=here)
    base = Path(keep) if keep is not None else Path(tempfile.mkdtemp(prefix="loopwright-replay-"))
    if keep is not None:
        if base.exists() and any(base.iterdir()):
            raise UsageError(f"--keep {base}: not empty; expected a new or empty folder")
        base.mkdir(parents=True, exist_ok=True)
    try:
        return _replay(recording, base, store, flags, wire, timeout, here)
    finally:
        if keep is None:
            shutil.rmtree(base, ignore_errors=True)


def _replay(recording: Recording, base: Path, store: str | None, flags: Sequence[str], wire: str | None,
            timeout: float, here: str) -> Report:
    from ..simulator import Simulator

    try:
        scratch = make(recording, base, _checkpoints(recording, store), here)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    to_copy, from_copy = mover(scratch.old_root, str(scratch.root)), mover(str(scratch.root), scratch.old_root)
    moved = replace(recording, main=to_copy(recording.main))  # its prompts and command line name the copy
    chains = [("main", recording.parsed(to_copy(recording.main)))]
    chains += [(f"agent {aid}", recording.parsed(to_copy(raw))) for aid, raw in recording.sidechains.items()]
    script = ReplayScript(chains)
    cursor = script.cursor()
    script.cursor = lambda: cursor  # type: ignore[method-assign]  # the simulator takes this one
    wire = wire or _wire(recording)
    report = Report(recording.session_id, recording.where, str(scratch.root), scratch.source, wire,
                    warnings=list(recording.warnings))
    if recording.argv is None and recording.spec is None:
        report.warnings.append("the session does not record its command line (recorded before replays existed): "
                               "its prompts run with only the flags given to the replay")
    home = base / "home"
    _private_home(home)
    with Simulator(script) as sim:
        env = _environment(home, sim.base_url)
        session_id = None
        for prompt, ran in _prompts(moved):
            args, stdin = _command(moved, prompt, ran, session_id, flags, wire, sim.base_url)
            report.commands.append(args)
            out = subprocess.run([sys.executable, "-m", "loopwright", *args], cwd=scratch.cwd, env=env,
                                 input=stdin, capture_output=True, text=True, timeout=timeout)
            result = _result(out)
            report.results.append(result)
            session_id = result.get("session_id") or session_id
            if session_id is None:
                raise UsageError(f"the replay's run did not start (exit {out.returncode}): "
                                 f"{out.stderr.strip()[-400:] or 'no output'}")
    replayed_main, replayed_chains = _replayed(home, scratch, session_id)
    report.divergences = _divergences(recording, from_copy(replayed_main), [from_copy(c) for c in replayed_chains])
    report.unanswered = [_unanswered(a, script, from_copy) for a in cursor.asked if not a.answered]
    first = report.first
    side = next((a for a in report.unanswered if a["kind"] in _SIDE_CALLS), None)
    if side is not None:  # a prompt hook or the classifier the record cannot answer: the cause of what follows
        report.divergences.insert(0, compare.Divergence("request", side["agent"], side["why"], side.get("recorded"),
                                                        side.get("replayed"), side.get("diff", "")))
    elif report.unanswered and (first is None or first.kind == "missing" or (
            first.kind != "limit" and "api_error" in json.dumps(first.replayed))):
        # the replay stopped because the model was asked what the record never answered: that
        # request, beside the recorded conversation nearest to it, says why (unless the record
        # stopped there on a limit: the replay going on is what differs)
        ask = report.unanswered[0]
        report.divergences.insert(0, compare.Divergence("request", ask["agent"], ask["why"], ask.get("recorded"),
                                                        ask.get("replayed"), ask.get("diff", "")))
    return report


def _checkpoints(recording: Recording, store: str | None) -> Any:
    """The session's checkpoint store: beside its transcript file, or in its store."""
    if recording.where.endswith(".jsonl"):
        from ...stores.keptfiles import FileCheckpoints, folder_of

        return FileCheckpoints(folder_of(recording.where))
    from ...stores import open_store, store_url

    return open_store(store_url(store), recording.cwd or os.getcwd()).checkpoints(recording.session_id)


def _private_home(home: Path) -> None:
    """The replay's own loopwright home, with the user's settings file (today's settings hold)."""
    from ...core.home import home as user_home
    from ...core.home import make_private_dirs

    make_private_dirs(home)
    mine = user_home() / "settings.json"
    if mine.is_file():
        shutil.copyfile(mine, home / "settings.json")


def _environment(home: Path, base_url: str) -> dict[str, str]:
    drop = ("ANTHROPIC_", "OPENAI_", "LOOPWRIGHT_STORE", "CLAUDE_CODE_USE_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    env.update(LOOPWRIGHT_HOME=str(home), ANTHROPIC_BASE_URL=base_url, ANTHROPIC_API_KEY=_PLACEHOLDER_KEY,
               OPENAI_API_KEY=_PLACEHOLDER_KEY)
    return env


def _wire(recording: Recording) -> str:
    models = [str((r.get("message") or {}).get("model", "")) for r in recording.main if r.get("type") == "assistant"]
    argv = " ".join(recording.argv or []) + " " + str((recording.spec or {}).get("model") or "")
    if "openai-compatible:" in argv or "openai:" in argv or (models and not any("claude" in m for m in models)):
        return "openai"
    return "anthropic"


def _prompts(recording: Recording) -> list[tuple[str, dict[str, Any] | None]]:
    """The prompts a person gave (each starts a run), in order, each with the run it was given
    (`_ran`): the latest recorded before it (a resume's first record keeps its own; the prompts of
    one interactive process share the one that started it)."""
    out: list[tuple[str, dict[str, Any] | None]] = []
    ran = None
    for r in recording.main:
        ran = _ran(r) or ran
        if r.get("type") == "user" and not r.get("synthetic"):
            out.append((text_of((r.get("message") or {}).get("content")), ran))
    return out or [("", ran)]


def _ran(record: dict[str, Any]) -> dict[str, Any] | None:
    """The run a record keeps, as `loopwright --run-spec` reads it, without what the replay sets
    itself: its spec, or the command line a record of an older release kept (`{"argv": […]}`)."""
    spec = record.get("spec")
    if isinstance(spec, dict):
        return {k: v for k, v in spec.items() if k not in _OWN_FIELDS}
    argv = record.get("argv")
    if isinstance(argv, list):
        return {"argv": _recorded_flags([str(a) for a in argv])}
    return None


def _command(recording: Recording, prompt: str, ran: dict[str, Any] | None, session_id: str | None,
             flags: Sequence[str], wire: str, base_url: str) -> tuple[list[str], str]:
    """One prompt's `loopwright` arguments — the recorded run, the replay's flags over it — and its
    stdin: a later prompt resumes the replay's own session with that prompt; the first runs as
    recorded, the prompt on stdin taken only when the record's run names none (it was piped)."""
    model = _model(recording)
    tail = ["--output-format", "json", *flags]
    if wire == "openai":
        tail += ["--model", f"openai-compatible:{base_url}/v1#{model or 'replayed'}"]
    run = ["--run-spec", json.dumps(ran if ran is not None else {"argv": []}, ensure_ascii=False)]
    if session_id is not None:
        return [*run, "-r", session_id, *tail, "--", prompt], ""
    return [*run, *tail], prompt


def _model(recording: Recording) -> str:
    """The recorded model's name (an OpenAI-compatible one is recorded with its server:
    `openai-compatible:URL#name`)."""
    for r in recording.main:
        if r.get("type") == "assistant":
            model = str((r.get("message") or {}).get("model", ""))
            return model.rpartition("#")[2] if "://" in model else model
    return ""


def _recorded_flags(argv: list[str]) -> list[str]:
    """A recorded command line without the flags the replay sets itself (its prompt stays: a later
    prompt's own replaces it)."""
    out, i = [], 0
    while i < len(argv):
        word = argv[i]
        name = word.split("=", 1)[0]
        if name in _OWN_FLAGS:
            i += 1 + (_OWN_FLAGS[name] if "=" not in word else 0)
            continue
        out.append(word)
        i += 1
    return out


def _result(out: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    for line in reversed(out.stdout.strip().splitlines()):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return {"exit_code": out.returncode, "stderr": out.stderr.strip()[-2000:]}


def _replayed(home: Path, scratch: Scratch, session_id: str | None) -> tuple[list[dict[str, Any]], list[list[dict[str, Any]]]]:
    from ...stores.jsonl import JsonlStore

    if session_id is None:
        return [], []
    store = JsonlStore(home, scratch.cwd)
    loaded = store.load(session_id)
    main = loaded[0] if loaded else []
    chains = []
    for agent in store.agents(session_id):
        data = store.export(session_id, agent) or b""
        chains.append([json.loads(line) for line in data.splitlines() if line.strip()])
    return main, chains


def _first_prompt(records: list[dict[str, Any]]) -> str:
    for r in records:
        if r.get("type") == "user":
            return text_of((r.get("message") or {}).get("content"))
    return ""


def _divergences(recording: Recording, main: list[dict[str, Any]],
                 chains: list[list[dict[str, Any]]]) -> list[compare.Divergence]:
    """Each subagent's transcript against the recorded one with the same task (in order for
    equal tasks), then the session's own: a subagent's divergence happens inside the call that
    runs it, so before the main transcript shows it."""
    found: list[compare.Divergence] = []
    left = sorted(chains, key=lambda c: c[0].get("timestamp", "") if c else "")
    recorded = sorted(recording.sidechains.values(), key=lambda c: c[0].get("timestamp", "") if c else "")
    for mine in recorded:
        task = _first_prompt(mine)
        name = f"subagent ({task[:60]!r})"
        theirs = next((c for c in left if _first_prompt(c) == task), None)
        if theirs is None:
            found.append(compare.Divergence("missing", name, "the subagent the record ran did not run in the replay"))
            continue
        left.remove(theirs)
        diverged = compare.compare(compare.steps(mine, name), compare.steps(theirs, name), name)
        if diverged is not None:
            found.append(diverged)
    for theirs in left:
        task = _first_prompt(theirs)
        found.append(compare.Divergence("outcome", f"subagent ({task[:60]!r})",
                                        "the replay ran a subagent the record did not"))
    diverged = compare.compare(compare.steps(recording.main, "main"), compare.steps(main, "main"), "main")
    if diverged is None:
        return found
    if _record_number(diverged.where) < _first_agent_call(recording.main):
        return [diverged, *found]  # the session left its record before any subagent ran
    return [*found, diverged]


def _record_number(where: str) -> int:
    tail = where.rpartition(" ")[2]
    return int(tail) if tail.isdigit() else 1 << 30


def _first_agent_call(records: list[dict[str, Any]]) -> int:
    for n, r in enumerate(records, 1):
        if r.get("type") == "tool_finished" and r.get("name") == "Agent":
            return n
    return 1 << 30


def _unanswered(asked: Asked, script: ReplayScript, from_copy: Any) -> dict[str, Any]:
    """A request the record never answered, beside the recorded conversation nearest to it."""
    mine = turns(from_copy(asked.messages))
    best, shared = None, -1
    for turn in script.turns.values():
        if (turn.kind in _SIDE_CALLS or asked.kind in _SIDE_CALLS) and turn.kind != asked.kind:
            continue  # a side call is compared with the record's calls of its kind only
        theirs = turns(from_copy(turn.conversation))
        n = 0
        while n < min(len(mine), len(theirs)) and mine[n] == theirs[n]:
            n += 1
        if n > shared:
            best, shared = theirs, n
    agent = "the goal's evaluator" if asked.kind == "evaluator" else "a compaction" if asked.kind == "summary" \
        else _SIDE_CALLS.get(asked.kind, "main or a subagent")
    out: dict[str, Any] = {"agent": agent, "kind": asked.kind, "turns": len(mine),
                           "why": f"a request with {len(mine)} turn(s) that no recorded answer fits"}
    if asked.kind in _SIDE_CALLS:  # one message each: its text, beside the record's first call of that kind
        out["why"] = f"{agent} asked the model what the record never asked it (its prompt or event data differ)"
        if best is not None:
            out["recorded"], out["replayed"] = best[0]["text"], mine[0]["text"] if mine else ""
            out["diff"] = compare._diff(out["recorded"], out["replayed"])
    elif best is not None:
        out["why"] += f" (it agrees with the record for {shared} turn(s))"
        out["recorded"] = best[shared] if shared < len(best) else None
        out["replayed"] = mine[shared] if shared < len(mine) else None
        out["diff"] = compare._diff(compare._show(out["recorded"]), compare._show(out["replayed"]))
    return out


def _brief(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 300 else text[:297] + "..."


__all__ = ["Report", "replay_session"]
