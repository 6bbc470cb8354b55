"""Goal loops that prove they are done: at every candidate stop the harness runs the checks,
compares protected files, and asks an evaluator model for met / not yet met / impossible on a
bounded window of evidence. Hard bounds (turns, time, money) are enforced here, not only told."""

from __future__ import annotations

from dataclasses import field
from typing import Any, Callable, Sequence, Union

from .accumulate import Accumulator
from ..core.clock import Clock
from ..core.errors import ModelError, UsageError
from ..core.events import Event, GoalStatus, ModelUsage, Subtype, TerminalReason
from ..core.fastclass import dataclass
from ..policy.models import resolve_model
from ..policy.pricing import cost_usd
from ..policy.bounds import BOUND_KEYS, Bounds, GoalBounds, goal_bounds
from ..policy.goal_verdict import VERDICT_SCHEMA, parse_verdict
from ..policy.goal_verdict import GoalVerdict as Verdict
from ..core.ports import CheckResult, Model, Workspace
from ..core.types import Message, ModelRequest, TextBlock, ToolResultBlock, ToolUseBlock

MAX_CONDITION = 4000
EVIDENCE_CHARS = 12_000

EVALUATOR_SYSTEM = """\
You decide whether an agent has met its goal. You are shown the goal, the results of checks that \
the harness itself ran just now, any protected files the agent changed, and the most recent part \
of the agent's work. Judge only from that evidence: an agent saying it is done proves nothing \
unless the outputs show it, and a failing check always means the goal is not met.

Answer with one JSON object and nothing else:
{"ok": true, "reason": "<the evidence that shows the goal is met>"}
{"ok": false, "reason": "<what is still missing or wrong, as an instruction the agent can act on>"}
{"ok": false, "impossible": true, "reason": "<why the goal can never be met>"}
When the evidence is unclear, answer ok false and say what evidence is missing. Use impossible \
only when no further work could ever meet the goal."""

NOT_MET = "The goal is not met yet: {reason}\n\nGoal: {condition}\nKeep working on it; do not stop until it is met."
CHECK_FAILED = ("The goal is not met: a required check failed.\n{checks}\n\nGoal: {condition}\n"
                "Fix the cause, then stop again; the checks run again at every stop.")
PROTECTED = ("The goal cannot be met while protected files are changed: {paths}. Restore them exactly as "
             "they were (they are protected by the goal: {globs}), and reach the goal another way.")
WAITING = ("Background work is still running ({tasks}); the goal is judged once it has finished. Check on it "
           "(read its output) and continue when it is done.")
SET_DIRECTIVE = ("A goal is now set for this session: \"{condition}\"\n\nStart (or continue) working on it right "
                 "away, without asking the user anything. Each time you stop, the harness checks the goal: "
                 "{proof}; if it is not met, you are told what is missing and continue.")


def validate_condition(condition: str) -> str:
    condition = condition.strip()
    if not condition:
        raise UsageError("goal: the condition is empty; say what must be true when the work is done")
    if len(condition) > MAX_CONDITION:
        raise UsageError(f"goal: the condition is limited to {MAX_CONDITION} characters (got {len(condition)})")
    return condition


@dataclass(frozen=True, slots=True)
class GoalSpec:
    condition: str
    checks: tuple[str, ...] = ()
    protect: tuple[str, ...] = ()
    model: str = "haiku"
    max_turns: int | None = None
    max_duration_s: float | None = None
    max_budget_usd: float | None = None
    check_timeout_s: float = 300.0
    max_idle_stops: int = 4
    unbounded: tuple[str, ...] = ()  # bounds removed on purpose ("turns", "duration", "budget")

    def bounds(self, priced: bool = True) -> GoalBounds:
        """Flags and the clauses of the condition together (the tightest wins), else the defaults
        of `policy.bounds` unless removed; money only where `priced`."""
        return goal_bounds(Bounds(self.max_turns, self.max_duration_s, self.max_budget_usd), self.condition,
                           self.unbounded, priced=priced)

    def to_json(self) -> dict[str, Any]:
        return {"condition": self.condition, "checks": list(self.checks), "protect": list(self.protect),
                "model": self.model, "max_turns": self.max_turns, "max_duration_s": self.max_duration_s,
                "max_budget_usd": self.max_budget_usd, "check_timeout_s": self.check_timeout_s,
                "max_idle_stops": self.max_idle_stops, "unbounded": list(self.unbounded)}

    @staticmethod
    def from_json(data: dict[str, Any]) -> "GoalSpec":
        return GoalSpec(str(data["condition"]), tuple(data.get("checks") or ()), tuple(data.get("protect") or ()),
                        str(data.get("model") or "haiku"), data.get("max_turns"), data.get("max_duration_s"),
                        data.get("max_budget_usd"), float(data.get("check_timeout_s") or 300.0),
                        int(data.get("max_idle_stops") or 4),
                        tuple(k for k in data.get("unbounded") or () if k in BOUND_KEYS))

    def directive(self) -> str:
        proof = "its checks run (" + "; ".join(self.checks) + ") and an evaluator reviews the evidence" \
            if self.checks else "an evaluator reviews the evidence"
        return SET_DIRECTIVE.format(condition=self.condition, proof=proof)


@dataclass(frozen=True, slots=True)
class GoalContinue:
    message: str


@dataclass(frozen=True, slots=True)
class GoalFinish:
    subtype: Subtype
    terminal_reason: TerminalReason
    is_error: bool
    reason: str


GoalDecision = Union[GoalContinue, GoalFinish]


@dataclass
class GoalState:
    started: float = 0.0
    turns_at_start: int = 0
    cost_at_start: float = 0.0
    iterations: int = 0
    idle_stops: int = 0
    last_reason: str = ""
    checks: list[CheckResult] = field(default_factory=list)
    evaluator: ModelUsage = field(default_factory=ModelUsage)
    evaluator_input_tokens: list[int] = field(default_factory=list)
    baseline: dict[str, str] = field(default_factory=dict)
    met: bool = False
    failed: bool = False
    run_cost_usd: float = 0.0  # the worker's spend at the last stop
    judging_since: float = 0.0  # when the evaluation under way began (its checks, then the evaluator)
    evidence_chars: int = 0  # how much evidence the evaluator was last shown
    # the evaluator's calls since the last status: what it was shown and what it answered, kept on
    # the next goal_status record so a replay can answer the same evidence the same way
    calls: list[dict[str, Any]] = field(default_factory=list)


class GoalJudge:
    """One session's goal. `start()` arms it; `bound_hit()` runs before every model call;
    `judge()` runs at every candidate stop and says whether the run continues."""

    def __init__(self, spec: GoalSpec, evaluator: Model, workspace: Workspace, clock: Clock,
                 emit: Callable[[Event], None] = lambda e: None, *, priced: bool = True) -> None:
        """`priced`: whether the worker model's price is known (else money cannot bound it)."""
        self.spec, self.evaluator, self.workspace, self.clock, self.emit = spec, evaluator, workspace, clock, emit
        self.state = GoalState()
        self.model = resolve_model(spec.model).id
        self.limits = spec.bounds(priced)  # read once: bound_hit runs before every model call

    @property
    def active(self) -> bool:
        return not (self.state.met or self.state.failed)

    def start(self, baseline: dict[str, str] | None = None) -> None:
        """Arm the goal: fingerprint the protected files (or keep the fingerprints a resumed
        session recorded, so changes made before a crash still count) and record it as set."""
        self.state = GoalState(started=self.clock.monotonic())
        if baseline is not None:
            self.state.baseline = dict(baseline)
        elif self.spec.protect:
            self.state.baseline = self.workspace.snapshot(self.spec.protect)
        self._status(sentinel=True)

    def new_run(self) -> None:
        """A new prompt run (or a resume): turn, time and money counters start again."""
        s = self.state
        s.started, s.turns_at_start, s.cost_at_start, s.idle_stops = self.clock.monotonic(), 0, 0.0, 0

    def bound_hit(self, turns: int, cost: float) -> GoalFinish | None:
        bounds, s = self.limits.bounds, self.state
        if bounds.max_turns is not None and turns - s.turns_at_start >= bounds.max_turns:
            return GoalFinish("error_max_turns", "goal_max_turns", True,
                              f"The goal's turn limit ({bounds.max_turns}) was reached before it was met")
        elapsed = self.clock.monotonic() - s.started
        if bounds.max_duration_s is not None and elapsed >= bounds.max_duration_s:
            return GoalFinish("error_max_duration", "goal_max_duration", True,
                              f"The goal's time limit ({bounds.max_duration_s:g} s) ran out before it was met")
        spent = cost - s.cost_at_start + s.evaluator.cost_usd
        if bounds.max_budget_usd is not None and spent >= bounds.max_budget_usd:
            return GoalFinish("error_max_budget_usd", "goal_max_budget", True,
                              f"The goal's budget (${bounds.max_budget_usd:g}) was spent before it was met")
        return None

    async def judge(self, messages: Sequence[Message], background: Sequence[dict[str, Any]],
                    tools_ran: bool, spent_usd: float = 0.0) -> GoalDecision:
        """`spent_usd`: what the run has cost so far, for the live status line."""
        s = self.state
        s.run_cost_usd = spent_usd
        s.idle_stops = 0 if tools_ran else s.idle_stops + 1
        if s.idle_stops >= self.spec.max_idle_stops:
            return self._finish_unmet("goal_no_progress",
                                      f"{s.idle_stops} stops in a row without any tool use; the goal is still set")
        if background:
            names = ", ".join(str(t.get("command") or t.get("id")) for t in background)
            return GoalContinue(WAITING.format(tasks=names))
        s.iterations += 1
        s.judging_since, s.evidence_chars = self.clock.monotonic(), 0
        s.checks = [await self.workspace.run_check(c, self.spec.check_timeout_s) for c in self.spec.checks]
        failing = [c for c in s.checks if not c.passed]
        changed = self._violations()
        if failing or changed:  # no evaluator call: the harness already knows the answer
            parts, why = [], []
            if failing:
                parts.append(CHECK_FAILED.format(checks="\n".join(c.describe() for c in failing),
                                                 condition=self.spec.condition))
                why.append("a check failed")
            if changed:
                parts.append(PROTECTED.format(paths=", ".join(changed), globs=", ".join(self.spec.protect)))
                why.append("protected files changed: " + ", ".join(changed))
            found = "check_failed" if failing else "protected_changed"
            return self._not_met("\n\n".join(parts), "; ".join(why), found)
        verdict = await self._evaluate(messages)
        if verdict.status == "met":
            s.met, s.last_reason = True, verdict.reason
            self._status(met=True, verdict="met")
            return GoalFinish("success", "goal_met", False, verdict.reason)
        if verdict.status == "impossible":
            s.failed, s.last_reason = True, verdict.reason
            self._status(failed=True, verdict="impossible")
            return GoalFinish("error_during_execution", "goal_impossible", True, verdict.reason)
        return self._not_met(NOT_MET.format(reason=verdict.reason, condition=self.spec.condition), verdict.reason,
                             "not_met")

    def _not_met(self, message: str, reason: str, verdict: str) -> GoalContinue:
        self.state.last_reason = reason
        self._status(verdict=verdict)
        return GoalContinue(message)

    def _finish_unmet(self, terminal_reason: TerminalReason, why: str) -> GoalFinish:
        self.state.last_reason = why
        return GoalFinish("error_during_execution", terminal_reason, True, why)

    def _violations(self) -> list[str]:
        if not self.spec.protect:
            return []
        now = self.workspace.snapshot(self.spec.protect)
        base = self.state.baseline
        return sorted(p for p in set(base) | set(now) if base.get(p) != now.get(p))

    # ------------------------------------------------------------ the evaluator

    async def _evaluate(self, messages: Sequence[Message]) -> Verdict:
        request = ModelRequest(
            model=self.model, max_tokens=1024, system=EVALUATOR_SYSTEM,
            messages=(Message.user(evidence := self.evidence(messages)),),
            extra={"output_config": {"format": {"type": "json_schema", "schema": VERDICT_SCHEMA}}},
        )
        self.state.evidence_chars = len(evidence)
        for _ in range(2):  # an unparseable verdict is asked again once
            text = await self._call(request)
            if text is not None and (verdict := parse_verdict(text)) is not None:
                return verdict
        return Verdict("not_met", "no verdict: the evaluator's answer could not be read; show clearer evidence "
                                  "that the goal is met (for example, run the checks and show their output)")

    async def _call(self, request: ModelRequest) -> str | None:
        acc = Accumulator()
        try:
            async for event in self.evaluator.stream(request):
                acc.add(event)
        except ModelError as error:
            self.state.last_reason = f"evaluator error: {error.describe()}"
            return None
        response = acc.response(fallback_model=request.model)
        self.state.calls.append({"evidence": request.messages[0].text, "answer": response.message.to_api() | {
            "id": response.id, "model": response.model, "stop_reason": response.raw_stop_reason,
            "usage": response.usage.to_api()}})
        self.state.evaluator = self.state.evaluator.add(response.usage, cost_usd(response.usage, resolve_model(response.model)))
        self.state.evaluator_input_tokens.append(response.usage.input_tokens)
        return response.message.text

    def evidence(self, messages: Sequence[Message]) -> str:
        """The condition, the harness's own check results and a bounded window of the most recent
        work: the evaluator's input stays flat however long the session grows."""
        s = self.state
        parts = [f"GOAL: {self.spec.condition}",
                 f"PROGRESS: evaluation {s.iterations}, {self.clock.monotonic() - s.started:.0f} s since the goal was set"]
        if s.checks:
            parts.append("CHECKS RUN BY THE HARNESS JUST NOW:\n" + "\n".join(c.describe()[-1500:] for c in s.checks))
        recent = render_recent(messages, EVIDENCE_CHARS)
        parts.append("RECENT WORK (oldest first; earlier turns omitted):\n" + recent)
        parts.append("Has the goal been met? Answer with the JSON object only.")
        return "\n\n".join(parts)

    def _status(self, *, sentinel: bool = False, met: bool = False, failed: bool = False, verdict: str = "") -> None:
        """`verdict`: what an evaluation found (met, not_met, impossible, check_failed,
        protected_changed); "" when the goal was only set."""
        s, now = self.state, self.clock.monotonic()
        saved = {"spec": self.spec.to_json(), "baseline": s.baseline} if sentinel else None
        self.emit(GoalStatus(self.spec.condition, met=met, sentinel=sentinel, failed=failed, reason=s.last_reason,
                             iterations=s.iterations, duration_ms=int((now - s.started) * 1000),
                             tokens=s.evaluator.usage.total, saved=saved,
                             cost_usd=s.run_cost_usd + s.evaluator.cost_usd, verdict=verdict,
                             evidence_chars=s.evidence_chars if verdict else 0,
                             evaluation_ms=int((now - s.judging_since) * 1000) if verdict else 0,
                             evaluator_calls=tuple(s.calls)))
        s.calls = []


@dataclass(frozen=True, slots=True)
class SavedGoal:
    spec: GoalSpec
    baseline: dict[str, str]
    active: bool
    last: dict[str, Any]  # the newest goal_status attachment


def saved_goal(attachments: Sequence[dict[str, Any]]) -> SavedGoal | None:
    """The session's goal from its `goal_status` attachments, oldest first: the newest set
    (sentinel) record, and whether a later record met, failed or cleared it."""
    statuses = [a for a in attachments if a.get("type") == "goal_status"]
    armed = [i for i, a in enumerate(statuses) if a.get("sentinel") and "loopwright" in a]
    if not armed:
        return None
    armed_at = statuses[armed[-1]]
    later = statuses[armed[-1] + 1:]
    done = any(a.get("met") or a.get("failed") or a.get("cleared") for a in later)
    saved = armed_at["loopwright"]
    return SavedGoal(GoalSpec.from_json(saved["spec"]), dict(saved.get("baseline") or {}), not done,
                     statuses[-1])


def resumed_goal(saved: SavedGoal, checks: Sequence[str], protect: Sequence[str], *, model: str | None = None,
                 max_turns: int | None = None, max_duration_s: float | None = None,
                 max_budget_usd: float | None = None,
                 unbounded: tuple[str, ...] = ()) -> tuple[GoalSpec, dict[str, str] | None, list[str]]:
    """The goal a resumed session goes on with: (spec, fingerprints to keep or None, warnings).
    Its condition comes from the transcript (text for the evaluator, as the conversation is);
    its checks and protected paths only from this command line, because a transcript is data
    the model may have written, never a source of commands. What the transcript records and
    the user did not give again is named in a warning and not armed. The goal flags given now
    beat the recorded ones; a bound the transcript records as removed is in force again unless
    removed again now; the recorded fingerprints are kept only for the very globs given."""
    old = saved.spec
    spec = GoalSpec(old.condition, tuple(checks), tuple(protect), model=model or old.model,
                    max_turns=max_turns if max_turns is not None else old.max_turns,
                    max_duration_s=max_duration_s if max_duration_s is not None else old.max_duration_s,
                    max_budget_usd=max_budget_usd if max_budget_usd is not None else old.max_budget_usd,
                    unbounded=tuple(unbounded))
    warnings = []
    if dropped := [k for k in old.unbounded if k not in unbounded]:
        warnings.append(f"the resumed goal's transcript records bounds removed ({', '.join(dropped)}); they are in "
                        "force again (a transcript cannot lift a bound): give --goal-max-* none again to remove them")
    for kind, flag, recorded, given in (("checks", "--check", old.checks, checks),
                                        ("protected paths", "--protect", old.protect, protect)):
        missing = [item for item in recorded if item not in given]
        if missing:
            warnings.append(f"the resumed goal's transcript records {kind} that this command line does not give: "
                            f"{'; '.join(missing)}. They are not armed and not run (a transcript is never a "
                            f"source of commands); give them again with {flag} to keep them")
    same = bool(protect) and sorted(set(protect)) == sorted(set(old.protect))
    return spec, (dict(saved.baseline) if same else None), warnings


def cleared_status(condition: str) -> dict[str, Any]:
    return {"type": "goal_status", "met": False, "cleared": True, "condition": condition}


def render_recent(messages: Sequence[Message], budget: int) -> str:
    """The newest messages that fit in `budget` characters, rendered for a reader: texts,
    tool calls as one line each, tool outputs trimmed to their head and tail."""
    lines: list[str] = []
    used = 0
    for message in reversed(messages):
        block = _render(message)
        if used + len(block) > budget and lines:
            break
        lines.append(block[-budget:])
        used += len(block)
    return "\n".join(reversed(lines))


def _render(message: Message) -> str:
    out = []
    for b in message.content:
        if isinstance(b, TextBlock) and b.text.strip():
            out.append(f"[{message.role}] {_trim(b.text, 3000)}")
        elif isinstance(b, ToolUseBlock):
            args = b.input.get("command") or b.input.get("file_path") or b.input.get("pattern") or ""
            out.append(f"[tool call] {b.name}({_trim(str(args), 300)})")
        elif isinstance(b, ToolResultBlock):
            mark = "error" if b.is_error else "ok"
            out.append(f"[tool result, {mark}] {_trim(b.text, 1500)}")
    return "\n".join(out)


def _trim(text: str, limit: int) -> str:
    text = text.strip()
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n… [{len(text) - limit} characters omitted] …\n{text[-half:]}"
