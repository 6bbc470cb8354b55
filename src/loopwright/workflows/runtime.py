"""The workflow runtime: a user's async Python script `main(wf, args)` orchestrating subagents
through `wf` — `agent`, `parallel`, `pipeline`, `workflow` (one level of nesting), `log`,
`phase`, `budget`, `now`, `random`, and `item`/`goal`/`routine` when a routine's item runs it.
Each agent call is a step of the journal; a resumed run
replays the finished ones. Agents run through an injected runner (the CLI's: a full subagent
loop under the session's permissions), at most `max_agents` at once."""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import math
import random as _random
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from ..core.errors import LoopwrightError
from ..core.events import ModelUsage
from ..core.fastclass import dataclass
from .journal import Journal, NotDeterministic, input_hash

MAX_AGENTS = 16


class WorkflowError(LoopwrightError):
    """A workflow used its API wrongly, or an agent of it failed."""


class BudgetSpent(WorkflowError):
    """The workflow's budget is gone: no further agent starts."""


class Aborted(WorkflowError):
    """The workflow was interrupted: no further agent starts."""


@dataclass(frozen=True, slots=True)
class AgentCall:
    prompt: str
    model: str | None = None
    tools: tuple[str, ...] | None = None
    schema: Any = None
    budget_usd: float | None = None  # what is left of the workflow's budget, the agent's own bound


@dataclass(frozen=True, slots=True)
class AgentOutcome:
    text: str
    value: Any = None  # the structured output, with a schema
    is_error: bool = False
    why: str = ""  # when it failed: why, in a few words
    budget_spent: bool = False  # it stopped on the budget
    cost_usd: float = 0.0
    model_usage: dict[str, ModelUsage] | None = None


AgentRunner = Callable[[AgentCall], Awaitable[AgentOutcome]]
Status = dict[str, Any]


class _Scope:
    """Where calls sit in the script's order: a prefix (the branch of each enclosing `parallel`)
    and a counter, so a step's key does not depend on which concurrent branch ran first."""

    def __init__(self, prefix: str) -> None:
        self.prefix, self.count = prefix, 0

    def next(self) -> str:
        key = f"{self.prefix}{self.count}"
        self.count += 1
        return key


_scope: contextvars.ContextVar[_Scope] = contextvars.ContextVar("loopwright_workflow_scope")


class Run:
    """What one run of a workflow shares across its nested workflows: the journal, the runner,
    the bound on concurrency, the budget and the tallies shown as progress."""

    def __init__(self, journal: Journal, runner: AgentRunner, *, budget_usd: float | None = None,
                 max_agents: int = MAX_AGENTS, on_status: Callable[[Status], None] | None = None,
                 load: Callable[[str], Callable[..., Awaitable[Any]]] | None = None,
                 clock: Callable[[], float] = time.time, rng: _random.Random | None = None,
                 stop_agents: Callable[[], None] = lambda: None, context: dict[str, Any] | None = None) -> None:
        """`stop_agents`: ends every running agent as aborted (with what it spent), once the
        budget is gone or the run is interrupted. `context`: what a routine's item gives
        (`item`, `goal`, `routine`)."""
        self.journal, self.runner, self.budget_usd, self.stop_agents = journal, runner, budget_usd, stop_agents
        self.context = dict(context or {})
        self.slots = asyncio.Semaphore(max_agents)
        self.on_status, self.load, self.clock = on_status or (lambda status: None), load, clock
        self.rng = rng or _random.Random()
        self.name, self.phase = "", "starting"
        self.running = self.done = self.replayed = 0
        self.cost_usd = 0.0
        self.model_usage: dict[str, ModelUsage] = {}
        self.out_of_budget = self.aborted = False

    def status(self, message: str | None = None) -> None:
        self.on_status({"workflow": self.name, "phase": self.phase, "running": self.running, "done": self.done,
                        "replayed": self.replayed, "total_cost_usd": round(self.cost_usd, 6),
                        **({"message": message} if message is not None else {})})

    def remaining(self) -> float:
        return math.inf if self.budget_usd is None else max(0.0, self.budget_usd - self.cost_usd)

    def spend(self, outcome: AgentOutcome) -> None:
        self.cost_usd += outcome.cost_usd
        for model, mu in (outcome.model_usage or {}).items():
            self.model_usage[model] = self.model_usage.get(model, ModelUsage()) + mu
        if self.budget_usd is not None and self.cost_usd >= self.budget_usd and not self.out_of_budget:
            self.out_of_budget = True
            self.stop_agents()  # the others running now would spend past it

    def abort(self) -> None:
        self.aborted = True
        self.stop_agents()


class Workflow:
    """The `wf` a workflow's `main(wf, args)` gets."""

    def __init__(self, run: Run, name: str, depth: int = 0) -> None:
        self._run, self.name, self._depth = run, name, depth

    @property
    def budget(self) -> float:
        """What is left to spend, in USD (`math.inf` without --max-budget-usd)."""
        return self._run.remaining()

    @property
    def item(self) -> dict[str, Any] | None:
        """The routine item this run does (its fields, `id` among them), or None outside a routine."""
        item = self._run.context.get("item")
        return dict(item) if item is not None else None

    @property
    def goal(self) -> str | None:
        """The routine's goal for the item, filled in (None: a prompt routine, or no routine)."""
        return self._run.context.get("goal")

    @property
    def routine(self) -> str | None:
        """The name of the routine whose item this run does, or None."""
        return self._run.context.get("routine")

    def log(self, text: Any) -> None:
        self._run.status(str(text))

    def phase(self, name: Any) -> None:
        self._run.phase = str(name)
        self._run.status()

    def now(self) -> float:
        """The time (seconds since the epoch), recorded so a resumed run reads the same."""
        return self._recorded("now", self._run.clock)

    def random(self) -> float:
        """A random number in [0, 1), recorded so a resumed run draws the same."""
        return self._recorded("random", self._run.rng.random)

    def _recorded(self, kind: str, make: Callable[[], float]) -> float:
        key = _current().next()
        digest = input_hash(kind, {})
        record = self._run.journal.replay(key, kind, digest, f"wf.{kind}()")
        if record is not None:
            return record["value"]
        value = make()
        self._run.journal.record(key, kind, digest, f"wf.{kind}()", value=value)
        return value

    async def agent(self, prompt: str, *, model: str | None = None, tools: list[str] | None = None,
                    schema: Any = None) -> Any:
        """One subagent run: its final text, or with `schema` its structured answer."""
        if not isinstance(prompt, str) or not prompt.strip():
            raise WorkflowError(f"wf.agent: the prompt must be non-empty text, got {prompt!r:.80}")
        if tools is not None and (isinstance(tools, str) or not all(isinstance(t, str) for t in tools)):
            raise WorkflowError(f"wf.agent: tools must be a list of tool names, got {tools!r:.80}")
        if model is not None and not isinstance(model, str):
            raise WorkflowError(f"wf.agent: model must be a model name, got {model!r:.80}")
        key = _current().next()
        inputs = {"prompt": prompt, "model": model, "tools": list(tools) if tools is not None else None,
                  "schema": schema}
        digest, shown = input_hash("agent", inputs), f"wf.agent({_short(prompt)})"
        run = self._run
        record = run.journal.replay(key, "agent", digest, shown)
        if record is not None:
            run.replayed += 1
            run.done += 1
            run.status()
            return record.get("value") if schema is not None else record.get("text", "")
        async with run.slots:
            if run.aborted:
                raise Aborted("the workflow was interrupted")
            if run.out_of_budget:
                raise BudgetSpent(f"the workflow's budget (${run.budget_usd:.4f}) is spent")
            run.running += 1
            run.status()
            try:
                outcome = await run.runner(AgentCall(prompt, model, tuple(tools) if tools is not None else None,
                                                     schema, None if run.budget_usd is None else run.remaining()))
            finally:
                run.running -= 1
            run.spend(outcome)
        if run.aborted:
            raise Aborted("the workflow was interrupted")
        if outcome.budget_spent or (outcome.is_error and run.out_of_budget):
            run.out_of_budget = True
            run.status()
            raise BudgetSpent(f"the workflow's budget (${run.budget_usd or 0:.4f}) ran out during step {key}")
        if outcome.is_error:
            run.status()
            raise WorkflowError(f"agent step {key} ({_short(prompt)}) stopped before it finished: {outcome.why}")
        run.journal.record(key, "agent", digest, shown, text=outcome.text, value=outcome.value,
                           costUSD=round(outcome.cost_usd, 8))
        run.done += 1
        run.status()
        return outcome.value if schema is not None else outcome.text

    async def parallel(self, *work: Awaitable[Any]) -> list[Any]:
        """Await every piece at once (agents still at most the bound at a time); the results in
        the order given. The first failure cancels the rest."""
        for i, item in enumerate(work):
            if not inspect.isawaitable(item):
                for other in work:  # never awaited: closed, so Python does not warn about them
                    if isinstance(other, Coroutine):
                        other.close()
                raise WorkflowError(f"wf.parallel: argument {i + 1} is not awaitable ({type(item).__name__}); "
                                    "pass calls such as wf.agent(...) or my_step(x), not functions")
        base = _current().next()
        tasks = []
        for i, item in enumerate(work):
            token = _scope.set(_Scope(f"{base}.{i}/"))
            try:
                tasks.append(asyncio.ensure_future(item))
            finally:
                _scope.reset(token)
        try:
            return list(await asyncio.gather(*tasks))
        except BaseException:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise

    async def pipeline(self, value: Any, *steps: Callable[[Any], Any]) -> Any:
        """Pass `value` through each step in turn (a function of one argument, async or not)."""
        for i, step in enumerate(steps):
            if not callable(step):
                raise WorkflowError(f"wf.pipeline: step {i + 1} is not callable ({type(step).__name__})")
            value = step(value)
            if inspect.isawaitable(value):
                value = await value
        return value

    async def workflow(self, name: str, args: Any = None) -> Any:
        """Run another workflow inside this one (one level of nesting); its return value."""
        if self._depth >= 1:
            raise WorkflowError(f"wf.workflow({name!r}): workflows nest one level only, and {self.name!r} "
                                "is already nested")
        if self._run.load is None:
            raise WorkflowError(f"wf.workflow({name!r}): no workflows can be loaded here")
        main = self._run.load(name)
        key = _current().next()
        token = _scope.set(_Scope(f"{key}.w/"))
        try:
            return await main(Workflow(self._run, name, self._depth + 1), args)
        finally:
            _scope.reset(token)


def _current() -> _Scope:
    scope = _scope.get(None)
    if scope is None:
        raise WorkflowError("the workflow API was used outside a running workflow")
    return scope


def _short(text: str) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= 60 else text[:59] + "…")


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a run ended: `status` success | budget | error | not_deterministic | aborted."""

    status: str
    value: Any = None
    error: str = ""


async def run_workflow(run: Run, name: str, main: Callable[..., Awaitable[Any]], args: Any) -> Outcome:
    run.name, run.phase = name, "running"
    token = _scope.set(_Scope(""))
    run.status()
    try:
        value = await main(Workflow(run, name), args)
    except NotDeterministic as exc:
        return _end(run, Outcome("not_deterministic", error=str(exc)))
    except BudgetSpent as exc:
        return _end(run, Outcome("budget", error=str(exc)))
    except (asyncio.CancelledError, Aborted):
        return _end(run, Outcome("aborted", error="the workflow was interrupted"))
    except Exception as exc:  # noqa: BLE001 - whatever the script raises ends the run with a result
        if run.aborted:
            return _end(run, Outcome("aborted", error="the workflow was interrupted"))
        if run.out_of_budget:
            return _end(run, Outcome("budget", error=f"the workflow's budget (${run.budget_usd:.4f}) is spent"))
        where = _where(exc)
        what = str(exc) if isinstance(exc, WorkflowError) else f"{type(exc).__name__}: {exc}"
        return _end(run, Outcome("error", error=f"workflow {name!r} failed{where}: {what}"))
    finally:
        _scope.reset(token)
    if run.aborted:
        return _end(run, Outcome("aborted", value, "the workflow was interrupted"))
    if run.out_of_budget:  # the script caught the stop and went on: the budget still decides
        return _end(run, Outcome("budget", value, f"the workflow's budget (${run.budget_usd:.4f}) is spent"))
    return _end(run, Outcome("success", value))


def _end(run: Run, outcome: Outcome) -> Outcome:
    run.phase = {"success": "done", "budget": "budget spent"}.get(outcome.status, outcome.status.replace("_", " "))
    run.status()
    return outcome


def _where(exc: BaseException) -> str:
    """` (at file:line)`: the innermost frame outside loopwright (the workflow's script), if any."""
    import traceback
    from pathlib import Path

    package = str(Path(__file__).resolve().parents[1]) + "/"
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not f.filename.startswith(package)
              and "/asyncio/" not in f.filename]
    return f" (at {frames[-1].filename}:{frames[-1].lineno})" if frames else ""
