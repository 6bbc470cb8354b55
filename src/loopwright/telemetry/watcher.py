"""The events of a run as OpenTelemetry sees them: spans in the GenAI semantic conventions (the
run, each model call, tool call, hook, goal evaluation and compaction, a subagent's run under
the tool call that started it), `loopwright.*` metrics with Claude Code's attributes, and
Claude Code's events as log records. Content (prompts, tool input and output) only with its
opt-in. A `Watcher` is an `Observer` (core.ports): it never raises into the run."""

from __future__ import annotations

import json
import time
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from ..core.events import (
    RESENT_RESULTS_ONLY, ApiRetry, AssistantMessage, CompactBoundary, Event, GoalStatus, HookResponse, HookStarted,
    ModelCall, Notice, ResultEvent, RunResult, SystemInit, ToolFinished, ToolStarted, UserMessage,
)
from ..core.errors import UsageError
from ..providers.registry import provider_for
from .pipeline import Pipeline

# terminal reasons that are a breaker tripping (a bound the loop enforces), by kind
BREAKERS = frozenset({
    "max_turns", "budget_exhausted", "max_duration", "pause_turn_limit", "compaction_thrashing", "stop_hook_cap",
    "goal_no_progress", "goal_max_turns", "goal_max_duration", "goal_max_budget", "structured_output_retry_exhausted",
})
API_ERRORS = frozenset({"api_error", "api_unreachable", "authentication_failed"})
EDIT_TOOLS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit"})
TOKEN_TYPES = (("input", "input_tokens"), ("output", "output_tokens"),
               ("cacheRead", "cache_read_input_tokens"), ("cacheCreation", "cache_creation_input_tokens"))
EMPTY_ANSWER = "empty response;"  # how the loop's notices begin when an answer came back empty
FALLBACK = "switching to fallback model "  # the loop's notice of a switch: "... <model> (<reason>)"
CONTENT_LIMIT = 64 * 1024  # characters of a prompt or tool content put on a span or record


def provider_of(model: str) -> str:
    """Who serves a model (`gen_ai.system`), as the provider table says."""
    try:
        return provider_for(model).system
    except UsageError:  # no provider: the call never went anywhere; a watcher never raises
        return "unknown"


def model_name(model: str) -> str:
    """What the provider is asked for: `openai-compatible:URL#name` asks for `name`."""
    try:
        return provider_for(model).id_of(model)
    except UsageError:
        return model


class Instruments:
    """The process's metrics, made once (a subagent's watcher counts into the same ones)."""

    def __init__(self, meter: Any) -> None:
        c, h = meter.create_counter, meter.create_histogram
        self.session = c("loopwright.session.count", "1", "Sessions started")
        self.tokens = c("loopwright.token.usage", "tokens", "Tokens used, by type and model")
        self.cost = c("loopwright.cost.usage", "USD", "Estimated cost, by model")
        self.edit_decision = c("loopwright.code_edit_tool.decision", "1", "Permission decisions on file-editing tools")
        self.tool_decision = c("loopwright.tool.decision", "1", "Permission decisions on every tool call")
        self.active = c("loopwright.active_time.total", "s", "Time runs were active")
        self.api_error = c("loopwright.api_error.count", "1", "Runs ended by an API error")
        self.retry = c("loopwright.api_retry.count", "1", "Model requests retried, by error kind")
        self.model_call = c("loopwright.model_call.count", "1",
                            "Model answers by stop reason (refusal and empty on their own)")
        self.goal = c("loopwright.goal.verdict.count", "1", "Goal evaluations, by verdict")
        self.stop_block = c("loopwright.stop_hook.block.count", "1", "Stops a Stop hook blocked")
        self.breaker = c("loopwright.breaker.trip.count", "1", "Runs a breaker ended, by kind")
        self.runs = c("loopwright.run.count", "1", "Runs ended, by outcome and terminal reason")
        self.turns = h("loopwright.run.turns", "1", "Turns per run")


class Watcher:
    """Watches one agent's runs (the main agent's, or one subagent's under `parent`)."""

    def __init__(self, pipeline: Pipeline, source: str, version: str, *, parent: Any = None,
                 agent: tuple[str, str] | None = None, instruments: Instruments | None = None,
                 links: list[Any] | None = None, attributes: dict[str, Any] | None = None) -> None:
        self.p, self.sw, self.tracer, self.log = pipeline, pipeline.switches, pipeline.tracer, pipeline.logger
        self.source, self.version, self.parent, self.agent = source, version, parent, agent
        self.links = [trace.Link(trace.get_current_span(c).get_span_context()) for c in links or ()]  # what started the runs
        # carried with the work (an attempt's number), as a job is read from a shared store: only
        # loopwright's own names with plain values, and never in place of what the run says itself
        self.attributes = {k: v for k, v in (attributes or {}).items()
                           if isinstance(k, str) and k.startswith("loopwright.") and isinstance(v, (str, int, float, bool))}
        self.metrics = instruments if instruments is not None or pipeline.meter is None else Instruments(pipeline.meter)
        self.session_id = ""
        self.counted_session = agent is not None  # a subagent's session is its parent's
        self.run: Any = None
        self.ctx: Any = None  # the run span's context: the parent of everything in the run
        self.tools: dict[str, Any] = {}  # tool_use_id -> the open span
        self.hooks: dict[str, Any] = {}
        self.retries: list[tuple[int, ApiRetry]] = []  # retries since the last answer, with when
        self.model = ""
        self.seq = 0
        self.last_at = 0  # when the run's latest event came: where a refused call began, at the latest

    # ------------------------------------------------------------ the Observer port

    def __call__(self, event: Event) -> None:
        try:
            self._on(event)
        except Exception as exc:  # telemetry never ends a run: the problem is said once
            self.p.once.say(f"could not record a {getattr(event, 'type', '?')} event ({type(exc).__name__}: {exc})")

    def child(self, agent_id: str, agent_type: str, tool_use_id: str) -> "Watcher":
        span = self.tools.get(tool_use_id) or self.run
        parent = trace.set_span_in_context(span) if span is not None else self.parent
        # a workflow's agents are told apart from the Agent tool's subagents by the call that started them
        source = "workflow" if getattr(self.tools.get(tool_use_id), "name", "") == "execute_tool Workflow" else "subagent"
        child = Watcher(self.p, source, self.version, parent=parent, agent=(agent_id, agent_type),
                        instruments=self.metrics)
        child.session_id = self.session_id
        return child

    # ------------------------------------------------------------ events

    def _on(self, event: Event) -> None:
        if self.run is None and event.type not in ("partial", "tool_progress"):
            self._open_run()
        match event:
            case SystemInit():
                self._init(event)
            case UserMessage(synthetic=False):
                self._prompt(event)
            case AssistantMessage():
                self._answer(event)
            case ApiRetry():
                self._retry(event)
            case ToolStarted():
                self._tool_started(event)
            case ToolFinished():
                self._tool_finished(event)
            case HookStarted():
                self._hook_started(event)
            case HookResponse():
                self._hook_finished(event)
            case ModelCall(purpose="prompt_hook"):  # (the classifier's come with the call it decided)
                self._prompt_hook_call(event)
            case GoalStatus():
                self._goal(event)
            case CompactBoundary():
                self._compacted(event)
            case Notice():
                self._notice(event)
            case ResultEvent():
                self._result(event.result)
            case _:
                pass  # partial stream events, progress, user messages the loop added, loop status
        self.last_at = time.time_ns()

    def _common(self) -> dict[str, Any]:
        return {"session.id": self.session_id, "app.version": self.version}

    def _open_run(self) -> None:
        name = f"invoke_agent {self.agent[1]}" if self.agent else "invoke_agent loopwright"
        attrs: dict[str, Any] = {"gen_ai.operation.name": "invoke_agent", "loopwright.prompt.source": self.source,
                                 "gen_ai.agent.name": self.agent[1] if self.agent else "loopwright"}
        if self.agent:
            attrs["gen_ai.agent.id"] = self.agent[0]
        attrs = self.attributes | attrs
        if self.session_id:
            attrs |= {"session.id": self.session_id, "gen_ai.conversation.id": self.session_id}
        if self.tracer is not None:
            self.run = self.tracer.start_span(name, context=self.parent, kind=SpanKind.INTERNAL, attributes=attrs,
                                              links=self.links)
            self.ctx = trace.set_span_in_context(self.run)
        else:
            self.run = trace.INVALID_SPAN
        self.tools, self.hooks, self.retries = {}, {}, []

    def _init(self, e: SystemInit) -> None:
        self.session_id, self.model = e.session_id, e.model
        self.run.set_attributes({"session.id": e.session_id, "gen_ai.conversation.id": e.session_id,
                                 "loopwright.permission_mode": e.permission_mode,
                                 "gen_ai.request.model": model_name(e.model)})
        if not self.counted_session and self.metrics:
            self.counted_session = True
            self.metrics.session.add(1, self._common())

    def _prompt(self, e: UserMessage) -> None:
        text = e.message.text
        attrs: dict[str, Any] = {"prompt_length": len(text)}
        if self.sw.log_prompts:
            attrs["prompt"] = text[:CONTENT_LIMIT]
        self._event("loopwright.user_prompt", attrs)

    def _answer(self, e: AssistantMessage) -> None:
        now = time.time_ns()
        began = now - e.duration_ms * 1_000_000
        if self.retries:
            began = min(began, self.retries[0][0])
        stop = e.stop_reason or "none"
        if not e.message.content:
            stop = "empty"
        u = e.usage
        provider = provider_of(e.model)
        attrs: dict[str, Any] = {"gen_ai.operation.name": "chat", "gen_ai.system": provider, "gen_ai.provider.name": provider,
                 "gen_ai.request.model": model_name(e.model), "gen_ai.response.finish_reasons": (stop,),
                 "gen_ai.usage.input_tokens": u.input_tokens, "gen_ai.usage.output_tokens": u.output_tokens,
                 "gen_ai.usage.cache_read.input_tokens": u.cache_read_input_tokens,
                 "gen_ai.usage.cache_creation.input_tokens": u.cache_creation_input_tokens,
                 "loopwright.turn": e.turn, "loopwright.retries": len(self.retries)}
        if e.id:
            attrs["gen_ai.response.id"] = e.id
        if self.tracer is not None:
            span = self.tracer.start_span(f"chat {model_name(e.model)}", context=self.ctx, kind=SpanKind.CLIENT,
                                          attributes=attrs, start_time=began)
            for at, r in self.retries:
                span.add_event("loopwright.api_retry", _retry_attrs(r), timestamp=at)
            if stop == "refusal":
                span.set_status(Status(StatusCode.ERROR, "the model refused"))
            span.end(end_time=now)
        self.retries = []
        if self.metrics:
            self.metrics.model_call.add(1, self._common() | {"model": e.model, "stop_reason": stop})
        self._event("loopwright.api_request", {"model": e.model, "duration_ms": e.duration_ms,
                                               "input_tokens": u.input_tokens, "output_tokens": u.output_tokens,
                                               "cache_read_tokens": u.cache_read_input_tokens,
                                               "cache_creation_tokens": u.cache_creation_input_tokens,
                                               "stop_reason": stop})

    def _refused(self) -> None:
        """A refused answer. The loop keeps it out of the conversation (no AssistantMessage: its
        tool calls never run), so it is drawn here, when the run ends on it or switches to its
        fallback model: a chat span from the run's previous event (or its first retry) to now, in
        error, without usage (the result's totals do not tell it apart), counted by stop reason."""
        now = time.time_ns()
        began = min([self.last_at or now, *(at for at, _ in self.retries[:1])])
        if self.tracer is not None:
            provider = provider_of(self.model)
            span = self.tracer.start_span(f"chat {model_name(self.model)}", context=self.ctx, kind=SpanKind.CLIENT,
                                          start_time=began, attributes={
                                              "gen_ai.operation.name": "chat", "gen_ai.system": provider,
                                              "gen_ai.provider.name": provider, "gen_ai.request.model": model_name(self.model),
                                              "gen_ai.response.finish_reasons": ("refusal",),
                                              "loopwright.retries": len(self.retries)})
            for at, r in self.retries:
                span.add_event("loopwright.api_retry", _retry_attrs(r), timestamp=at)
            span.set_status(Status(StatusCode.ERROR, "the model refused"))
            span.end(end_time=now)
        self.retries = []
        if self.metrics:
            self.metrics.model_call.add(1, self._common() | {"model": self.model, "stop_reason": "refusal"})

    def _retry(self, e: ApiRetry) -> None:
        self.retries.append((time.time_ns(), e))
        if self.metrics:
            self.metrics.retry.add(1, self._common() | {"error_kind": e.error_kind,
                                                         **({"status_code": e.status} if e.status else {})})
        self._event("loopwright.api_error", {"model": self.model, "error": e.message[:1000],
                                             "status_code": e.status or 0, "attempt": e.attempt,
                                             "error_kind": e.error_kind})

    def _tool_started(self, e: ToolStarted) -> None:
        if self.tracer is None:
            return
        attrs: dict[str, Any] = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": e.name,
                                 "gen_ai.tool.call.id": e.tool_use_id}
        if self.sw.log_tool_details:
            attrs["gen_ai.tool.call.arguments"] = _json(e.input)
        self.tools[e.tool_use_id] = self.tracer.start_span(f"execute_tool {e.name}", context=self.ctx,
                                                           kind=SpanKind.INTERNAL, attributes=attrs)

    def _tool_finished(self, e: ToolFinished) -> None:
        decision = {"allow": "accept", "deny": "reject"}.get(e.decision, "")
        source = e.decision_source or "none"
        span = self.tools.pop(e.tool_use_id, None)
        if span is not None:
            span.set_attributes({"loopwright.tool.decision": e.decision or "none",
                                 "loopwright.tool.decision_source": source,
                                 "loopwright.tool.is_error": e.is_error, "loopwright.tool.duration_ms": e.duration_ms})
            if e.decision_reason:
                span.set_attribute("loopwright.tool.decision_reason", e.decision_reason[:1000])
            if self.sw.log_tool_content:
                span.set_attribute("gen_ai.tool.call.result", e.output[:CONTENT_LIMIT])
            if e.is_error and e.decision != "deny":
                span.set_status(Status(StatusCode.ERROR, "the tool call failed"))
            # auto mode's classifier decided it: its model calls under the call, back to back from its start
            at = int(span.start_time) if getattr(span, "start_time", None) else time.time_ns()
            for c in e.decision_calls:
                took = int(c.get("duration_ms") or 0) * 1_000_000
                chat_span(self.tracer, span, "classifier", c, at, at + took)
                at += took
            span.end()
        if decision:
            common = self._common() | {"tool_name": e.name, "decision": decision, "source": source}
            if self.metrics:
                self.metrics.tool_decision.add(1, common)
                if e.name in EDIT_TOOLS:
                    self.metrics.edit_decision.add(1, common)
            self._event("loopwright.tool_decision", {"tool_name": e.name, "decision": decision, "source": source})
        attrs: dict[str, Any] = {"tool_name": e.name, "success": not e.is_error, "duration_ms": e.duration_ms,
                                 "decision": decision or "none", "source": source}
        if e.is_error and self.sw.log_tool_content:
            attrs["error"] = e.output[:CONTENT_LIMIT]
        self._event("loopwright.tool_result", attrs)

    def _hook_started(self, e: HookStarted) -> None:
        if self.tracer is not None:
            self.hooks[e.hook_id] = self.tracer.start_span(
                f"hook {e.hook_event}", context=self.ctx,
                attributes={"loopwright.hook.event": e.hook_event, "loopwright.hook.name": e.hook_name})

    def _hook_finished(self, e: HookResponse) -> None:
        span = self.hooks.pop(e.hook_id, None)
        if span is None:
            return
        span.set_attribute("loopwright.hook.outcome", e.outcome)
        if e.exit_code is not None:
            span.set_attribute("loopwright.hook.exit_code", e.exit_code)
        if e.outcome != "success":
            span.set_status(Status(StatusCode.ERROR, f"the hook ended: {e.outcome}"))
        span.end()

    def _prompt_hook_call(self, e: ModelCall) -> None:
        """A prompt hook's model call, as a chat span under its hook's span: the one hook running
        then (hooks of one event may run side by side; then it goes under the run). The call is
        most of the hook's time: it is drawn from the hook's start to now."""
        if self.tracer is None:
            return
        now = time.time_ns()
        hook = next(iter(self.hooks.values())) if len(self.hooks) == 1 else None
        parent = hook or self.run
        began = int(getattr(hook, "start_time", 0) or now)
        chat_span(self.tracer, parent, "prompt_hook", e.answer, began, now)

    def _goal(self, e: GoalStatus) -> None:
        if not e.verdict:  # set, not judged
            self.run.add_event("loopwright.goal_set", {"loopwright.goal.iterations": e.iterations})
            return
        now = time.time_ns()
        if self.tracer is not None:
            began = now - e.evaluation_ms * 1_000_000
            span = self.tracer.start_span("goal_evaluation", context=self.ctx, start_time=began,
                                          attributes={"loopwright.goal.verdict": e.verdict, "loopwright.goal.met": e.met,
                                                      "loopwright.goal.iteration": e.iterations,
                                                      "loopwright.goal.evidence_chars": e.evidence_chars,
                                                      "loopwright.goal.evaluator_tokens": e.tokens})
            # the evaluator's calls under it; their own times are not kept, so they share its window in turn
            calls = [c.get("answer") for c in e.evaluator_calls if isinstance(c, dict)]
            share = (now - began) // max(len(calls), 1)
            for i, answer in enumerate(calls):
                if isinstance(answer, dict):
                    chat_span(self.tracer, span, "goal_evaluator", answer, began + i * share, began + (i + 1) * share)
            span.end(end_time=now)
        if self.metrics:
            self.metrics.goal.add(1, self._common() | {"verdict": e.verdict})

    def _compacted(self, e: CompactBoundary) -> None:
        if self.tracer is not None:
            now = time.time_ns()
            call = e.summary_call or {}
            began = now - int(call.get("duration_ms") or 0) * 1_000_000
            span = self.tracer.start_span("compaction", context=self.ctx, start_time=began, attributes={
                "loopwright.compaction.trigger": e.trigger, "loopwright.compaction.pre_tokens": e.pre_tokens,
                "loopwright.compaction.post_tokens": e.post_tokens})
            if call:  # the summary's model call
                chat_span(self.tracer, span, "compaction", call, began, now)
            span.end(end_time=now)

    def _notice(self, e: Notice) -> None:
        if e.subtype == "stop_hook_block" and self.metrics:
            self.metrics.stop_block.add(1, self._common())
        if e.level == "warning" and (e.subtype == RESENT_RESULTS_ONLY or e.text.startswith(EMPTY_ANSWER)):
            if self.metrics:
                self.metrics.model_call.add(1, self._common() | {"model": self.model, "stop_reason": "empty"})
        if e.level == "warning" and e.text.startswith(FALLBACK):
            if e.text.endswith("(refusal)"):
                self._refused()
            self.model = e.text[len(FALLBACK):].rsplit(" (", 1)[0]  # the next calls' model
        self.run.add_event("loopwright.notice", {"level": e.level, "subtype": e.subtype})

    def _result(self, r: RunResult) -> None:
        if r.terminal_reason == "refusal":
            self._refused()
        span, outcome = self.run, r.subtype
        span.set_attributes({"loopwright.outcome": outcome, "loopwright.terminal_reason": r.terminal_reason,
                             "loopwright.num_turns": r.num_turns, "loopwright.cost_usd": r.total_cost_usd,
                             "loopwright.is_error": r.is_error})
        if r.is_error:
            span.set_status(Status(StatusCode.ERROR, r.terminal_reason))
        span.end()
        self.run = None
        for left in (*self.tools.values(), *self.hooks.values()):  # cut short: they end with the run
            left.end()
        if self.metrics:
            common = self._common()
            m = self.metrics
            m.runs.add(1, common | {"outcome": outcome, "terminal_reason": r.terminal_reason})
            m.turns.record(r.num_turns, common | {"terminal_reason": r.terminal_reason})
            m.active.add(r.duration_ms / 1000, common | {"type": "cli"})
            if r.terminal_reason in BREAKERS:
                m.breaker.add(1, common | {"kind": r.terminal_reason})
            if r.terminal_reason in API_ERRORS:
                m.api_error.add(1, common | {"terminal_reason": r.terminal_reason,
                                             **({"status_code": r.api_error_status} if r.api_error_status else {})})
            if self.agent is None:  # a subagent's spend is in its parent's result already
                for model, mu in r.model_usage.items():
                    for kind, field in TOKEN_TYPES:
                        if n := getattr(mu.usage, field):
                            m.tokens.add(n, common | {"type": kind, "model": model})
                    if mu.cost_usd:
                        m.cost.add(mu.cost_usd, common | {"model": model})

    def _event(self, name: str, attrs: dict[str, Any]) -> None:
        """One of Claude Code's events, as a log record named `name`."""
        if self.log is None:
            return
        self.seq += 1
        self.log.emit(event_name=name, body=name, context=self.ctx, attributes={
            "event.name": name, "event.timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "event.sequence": self.seq, **self._common(), **attrs})


def chat_span(tracer: Any, parent: Any, role: str, answer: dict[str, Any], began: int, ended: int) -> None:
    """A model call beside the main loop's (the goal's evaluator, compaction's summary, auto
    mode's classifier, a prompt hook, the attempts' judge) as a chat span under the span
    `parent`; `answer`: its model, stop reason and usage as the API gives them."""
    model = str(answer.get("model") or "")
    usage = answer.get("usage")
    u: dict[str, Any] = usage if isinstance(usage, dict) else {}
    provider = provider_of(model)
    attrs: dict[str, Any] = {
        "gen_ai.operation.name": "chat", "gen_ai.system": provider, "gen_ai.provider.name": provider,
        "gen_ai.request.model": model_name(model), "loopwright.model_call.role": role,
        "gen_ai.response.finish_reasons": (str(answer.get("stop_reason") or "none"),)}
    for key, field in (("input_tokens", "input_tokens"), ("output_tokens", "output_tokens"),
                       ("cache_read.input_tokens", "cache_read_input_tokens"),
                       ("cache_creation.input_tokens", "cache_creation_input_tokens")):
        if isinstance(u.get(field), int):
            attrs[f"gen_ai.usage.{key}"] = u[field]
    if answer.get("id"):
        attrs["gen_ai.response.id"] = str(answer["id"])
    span = tracer.start_span(f"chat {model_name(model)}", context=trace.set_span_in_context(parent),
                             kind=SpanKind.CLIENT, attributes=attrs, start_time=began)
    span.end(end_time=max(ended, began))


def side_calls(pipeline: Pipeline, parent: Any, role: str, calls: Any, began: int, common: dict[str, Any]) -> None:
    """Model calls made for work around runs rather than in one (the attempts' judge): chat spans
    under the span `parent` (None: no span), back to back from `began`, as their durations say;
    their tokens and cost counted as a run's are (`common`: session.id, app.version)."""
    at = began
    for c in calls:
        took = int(c.get("duration_ms") or 0) * 1_000_000
        if pipeline.tracer is not None and parent is not None:
            chat_span(pipeline.tracer, parent, role, c, at, at + took)
        at += took
    if pipeline.meter is None:
        return
    m = Instruments(pipeline.meter)  # the instruments the runs count into (the SDK hands the same ones back)
    for c in calls:
        usage, model = c.get("usage"), str(c.get("model") or "")
        for kind, field in TOKEN_TYPES:
            if isinstance(usage, dict) and isinstance(usage.get(field), int) and usage[field]:
                m.tokens.add(usage[field], common | {"type": kind, "model": model})
        if isinstance(c.get("cost_usd"), (int, float)) and c["cost_usd"]:
            m.cost.add(c["cost_usd"], common | {"model": model})


def remote(traceparent: Any) -> Any:
    """The context of a span in another process (a W3C traceparent, `carried.py`), as a parent
    or a link; None for a missing or unreadable one."""
    from .carried import parse

    ids = parse(traceparent)
    if ids is None:
        return None
    trace_id, span_id, flags = ids
    span = trace.NonRecordingSpan(trace.SpanContext(trace_id, span_id, is_remote=True,
                                                    trace_flags=trace.TraceFlags(flags & 0x01)))
    return trace.set_span_in_context(span)


def traceparent(span: Any) -> str:
    """A span's context as a W3C traceparent, to hand to the work it starts elsewhere."""
    c = span.get_span_context()
    return f"00-{c.trace_id:032x}-{c.span_id:016x}-{int(c.trace_flags) & 0x01:02x}"


def _retry_attrs(r: ApiRetry) -> dict[str, Any]:
    return {"attempt": r.attempt, "max_retries": r.max_retries, "delay_s": r.delay_s, "error_kind": r.error_kind,
            **({"status_code": r.status} if r.status else {})}


def _json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)[:CONTENT_LIMIT]
    except (TypeError, ValueError):
        return str(value)[:CONTENT_LIMIT]
