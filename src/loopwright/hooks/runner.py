"""`HookRunner`: the registered handlers of each event, matched, run in parallel and merged into
one `HookResult` (the `ports.HookRunner` the loop calls). Emits hook events and warnings."""

from __future__ import annotations

import copy
import dataclasses
import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Literal, Mapping, Protocol, Sequence, runtime_checkable

import anyio

from ..core.environ import child_env
from ..core.events import Event, HookResponse, HookStarted, ModelCall, ModelUsage, Notice
from ..core.hookevents import HookEvent
from ..core.ids import uuid4
from ..policy.models import resolve_model
from ..policy.pricing import cost_usd
from ..core.ports import NO_HOOK_RESULT, Approval, Approver, HookResult, Model
from ..core.types import ModelRequest, Response
from . import command, http, prompt, python
from .output import Answer, from_process, merge, no_answer
from .spec import (
    DEFAULT_TIMEOUT, EVENTS, PROMPT_SUBMIT_TIMEOUT, SESSION_END_MAX, SESSION_END_TIMEOUT, CommandSpec, HttpSpec,
    Matcher, PromptSpec, PythonSpec, Registration, UnsupportedSpec, handler_key, kind_of, parse_handler,
)

PythonHook = Callable[[Any], Any]
FAILURE_POLICIES = ("closed", "open")


class _Ran:
    """What one handler did: its answer and what to report in `HookResponse`."""

    def __init__(self, answer: Answer, stdout: str = "", stderr: str = "", code: int | None = None,
                 timed_out: bool = False) -> None:
        self.answer, self.stdout, self.stderr, self.code, self.timed_out = answer, stdout, stderr, code, timed_out


@runtime_checkable
class LayeredSettings(Protocol):
    """Settings merged from several files (`loopwright.settings.Settings`): the merged `data`, and
    the hook failure policy the layers allow (a project's file may close it, never open it)."""

    @property
    def data(self) -> Mapping[str, Any]: ...

    @property
    def hook_failure_policy(self) -> str: ...


class HookRunner:
    """Hooks from settings (`from_settings`) and Python callables (`on`). `project_dir` is
    `CLAUDE_PROJECT_DIR` for command hooks (default: the event's `cwd`); `env` is added to their
    environment; `model` answers prompt hooks; `post_json` carries http hooks. `Agent` fills in
    `emit`, `model` and `post_json` when it runs (see `bind`). `failure_policy` "closed" turns
    a PreToolUse hook that gave no usable answer into an ask (a person approves, headless
    denies); "open" lets the call go on with a warning, as Claude Code does."""

    def __init__(self, handlers: Mapping[HookEvent, PythonHook | Sequence[PythonHook]] | None = None, *,
                 project_dir: str | Path | None = None, env: Mapping[str, str] | None = None,
                 model: Model | None = None, post_json: http.PostJson | None = None, disabled: bool = False,
                 emit: Callable[[Event], None] | None = None, failure_policy: str = "closed") -> None:
        if failure_policy not in FAILURE_POLICIES:
            raise ValueError(f"hook failure policy: expected one of {', '.join(FAILURE_POLICIES)}, got {failure_policy!r}")
        self.failure_policy = failure_policy
        self.registrations: list[Registration] = []
        self.project_dir = str(project_dir) if project_dir is not None else None
        self.env = dict(env or {})
        self.base_env: dict[str, str] | None = None  # what `bind` was given; None: child_env()
        self.model, self.post_json, self.disabled = model, post_json, disabled
        self.emit = emit or (lambda event: None)
        self.env_file: str | None = None  # CLAUDE_ENV_FILE for SessionStart's command hooks (agent.envfile)
        self.prompt_usage: dict[str, ModelUsage] = {}  # model -> what prompt hooks spent on it
        for event, fns in (handlers or {}).items():
            for fn in ([fns] if callable(fns) else fns):
                self.on(event, fn)

    @classmethod
    def from_settings(cls, settings: LayeredSettings | Mapping[str, Any] | None, **kwargs: Any) -> "HookRunner":
        """From a `loopwright.settings.Settings` or a dict shaped like settings.json: its `hooks`,
        `env`, `disableAllHooks` and `hookFailurePolicy`."""
        data: Mapping[str, Any]
        if isinstance(settings, LayeredSettings):
            data, policy = settings.data or {}, settings.hook_failure_policy
        else:
            data, policy = settings or {}, None
        kwargs.setdefault("env", data.get("env") or {})
        kwargs.setdefault("disabled", data.get("disableAllHooks") is True)
        kwargs.setdefault("failure_policy", policy or data.get("hookFailurePolicy") or "closed")
        runner = cls(**kwargs)
        for event, groups in (data.get("hooks") or {}).items():
            for group in groups:
                for handler in group.get("hooks") or ():
                    runner.add(event, handler, matcher=group.get("matcher"))
        return runner

    def add(self, event: str, handler: Mapping[str, Any], *, matcher: str | None = None,
            env: Mapping[str, str] | None = None) -> "HookRunner":
        """Register a settings-shaped handler, e.g. `{"type": "command", "command": "./check.sh"}`;
        `env`: more environment for a command handler's process."""
        condition, spec = handler.get("if"), parse_handler(handler)
        if env and isinstance(spec, CommandSpec):
            spec = replace(spec, env=tuple(env.items()))
        self.registrations.append(Registration(event, Matcher(matcher), spec,
                                               f"{event}\0{handler_key(handler)}", condition))
        return self

    def on(self, event: HookEvent, fn: PythonHook | None = None, *, matcher: str | None = None,
           timeout: float | None = None) -> Any:
        """Register a Python hook (async or plain): `runner.on("Stop", check)`, or as a decorator
        `@runner.on("PreToolUse", matcher="Bash")`. It gets the event's typed input
        (`PreToolUseInput`, …) and returns `HookOutput`, a dict, or None."""
        if event not in EVENTS:
            raise ValueError(f"unknown hook event {event!r}; expected one of {', '.join(EVENTS)}")
        if fn is None:
            def register(f: PythonHook) -> PythonHook:
                self.on(event, f, matcher=matcher, timeout=timeout)
                return f

            return register
        self.registrations.append(Registration(event, Matcher(matcher), PythonSpec(fn, timeout),
                                               f"{event}\0python\0{id(fn)}\0{matcher}"))
        return self

    def bind(self, *, emit: Callable[[Event], None] | None = None, model: Model | None = None,
             post_json: http.PostJson | None = None, base_env: Mapping[str, str] | None = None) -> "HookRunner":
        """A copy that reports to `emit`, with `model`, `post_json` and `base_env` (the session's
        environment for child processes) filled in where unset."""
        bound = copy.copy(self)
        bound.prompt_usage = {}  # each bound copy (one run) keeps its own accounts
        bound.emit = emit or self.emit
        bound.model = self.model or model
        bound.post_json = self.post_json or post_json
        bound.base_env = self.base_env if self.base_env is not None else dict(base_env) if base_env is not None else None
        return bound

    # ------------------------------------------------------------ running

    def wants(self, event: HookEvent) -> bool:
        """Whether any handler is registered for `event` (its matcher is not looked at)."""
        return not self.disabled and any(reg.event == event for reg in self.registrations)

    async def run(self, event: HookEvent, payload: dict[str, Any], *, match: str | None = None) -> HookResult:
        if self.disabled:
            return NO_HOOK_RESULT
        chosen: dict[str, Registration] = {}
        for reg in self.registrations:
            if reg.event == event and reg.key not in chosen and reg.applies(match, payload):
                chosen[reg.key] = reg
        if not chosen:
            return NO_HOOK_RESULT
        # compact, as Claude Code writes it: scripts grep the input for `"key":value`
        body = json.dumps(payload, ensure_ascii=False, separators=(",", ":"), default=str)
        regs = list(chosen.values())
        answers: list[Answer] = [Answer()] * len(regs)
        finished: list[int] = []

        async def one(index: int) -> None:
            answers[index] = await self._one(regs[index], event, match, body)
            finished.append(index)

        async with anyio.create_task_group() as tg:
            for index in range(len(regs)):
                tg.start_soon(one, index)
        return merge(answers, finished, event)

    async def _one(self, reg: Registration, event: str, match: str | None, body: str) -> Answer:
        hook_id, name = uuid4(), f"{event}:{match}" if match else event
        self.emit(HookStarted(hook_id, name, event))
        timeout = self._timeout(reg, event)
        try:
            ran = await self._dispatch(reg, event, body, timeout, hook_id)
        except Exception as exc:  # a broken hook is reported, never fatal to the run
            ran = _Ran(no_answer(f"{type(exc).__name__}: {exc}"))
        answer = ran.answer
        if ran.timed_out:
            answer = no_answer(f"timed out after {timeout:g}s; its output was discarded")
        label = f"{name} hook ({reg.handler.label})"
        if answer.unanswered and event == "PreToolUse" and self.failure_policy == "closed" and answer.decision is None:
            # It may be the only thing between the call and its effect: fail closed, to a person.
            answer = replace(answer, decision="ask", reason=f"the {label} gave no usable answer ({answer.error}), "
                             "and hooks fail closed (hookFailurePolicy)")
        failed = answer.error is not None or ran.code not in (None, 0)  # exit 2 blocks, but as a failure
        outcome: Literal["success", "error", "cancelled"] = "cancelled" if ran.timed_out else "error" if failed else "success"
        self.emit(HookResponse(hook_id, name, event, outcome, ran.stdout + ran.stderr, ran.stdout, ran.stderr,
                               ran.code))
        if answer.error:
            self.emit(Notice("warning", f"{label} error: {answer.error}"))
        if answer.notice:
            self.emit(Notice("warning", f"{label}: {answer.notice}"))
        if answer.system_message:
            self.emit(Notice("info", answer.system_message))
        return answer

    def _spent(self, request: ModelRequest, response: Response) -> None:
        self.emit(ModelCall.of("prompt_hook", request, response))  # kept for `loopwright replay`
        cost = cost_usd(response.usage, resolve_model(response.model))
        self.prompt_usage[response.model] = self.prompt_usage.get(response.model, ModelUsage()).add(response.usage, cost)

    async def _dispatch(self, reg: Registration, event: str, body: str, timeout: float, hook_id: str) -> _Ran:
        handler = reg.handler
        if isinstance(handler, CommandSpec):
            return await self._command(handler, event, body, timeout, hook_id)
        with anyio.move_on_after(timeout) as scope:
            match handler:
                case PromptSpec():
                    if self.model is None:
                        return _Ran(no_answer("no model client to answer prompt hooks"))
                    answer, text = await prompt.ask(self.model, handler, event, body, self._spent)
                    return _Ran(answer, text)
                case HttpSpec():
                    if self.post_json is None:
                        return _Ran(no_answer("no HTTP client to call http hooks"))
                    answer, text = await http.post(self.post_json, handler, event, _utf8(body), self._env(), timeout)
                    return _Ran(answer, text)
                case PythonSpec():
                    answer, returned = await python.call(handler.fn, event, json.loads(body))
                    return _Ran(answer, "" if returned is None else _show(returned)[:command.MAX_OUTPUT_BYTES])
                case UnsupportedSpec(kind=kind):
                    return _Ran(no_answer(f"'{kind}' hooks are not supported by loopwright yet; skipped"))
        assert scope.cancelled_caught
        return _Ran(Answer(), timed_out=True)

    async def _command(self, spec: CommandSpec, event: str, body: str, timeout: float, hook_id: str) -> _Ran:
        payload = json.loads(body)
        cwd = payload.get("cwd") or self.project_dir or os.getcwd()
        project = self.project_dir or cwd
        env = self._env() | dict(spec.env) | {"CLAUDE_PROJECT_DIR": project, "LOOPWRIGHT_PROJECT_DIR": project,
                             "CLAUDE_CODE_SESSION_ID": str(payload.get("session_id", ""))}
        if event == "SessionStart" and self.env_file:
            env["CLAUDE_ENV_FILE"] = self.env_file
        out = await command.run_process(command.argv(spec), _utf8(body), cwd=cwd, env=env, timeout=timeout,
                                        mark=hook_id)
        if out.overflow is not None:
            why = (f"its {out.overflow} went past {command.MAX_OUTPUT_BYTES} bytes, so it was stopped and its "
                   "answer discarded")
            return _Ran(no_answer(why), out.stdout, out.stderr, out.code)
        if out.code is None:
            return _Ran(Answer(), out.stdout, out.stderr, None, timed_out=True)
        answer = from_process(event, out.code, out.stdout, out.stderr)
        if spec.reports_only:  # an async hook: its decisions have no effect, what it says is delivered
            answer = Answer(context=answer.context, system_message=answer.system_message, error=answer.error,
                            notice=answer.notice or (answer.reason if answer.decision else None))
        return _Ran(answer, out.stdout, out.stderr, out.code)

    def _env(self) -> dict[str, str]:
        # the harness's credentials stay with it (core.environ); OTEL_* would make every hook a
        # telemetry exporter of its own
        env = self.base_env if self.base_env is not None else child_env()
        base = {k: v for k, v in env.items() if not k.startswith("OTEL_")}
        return base | {k: str(v) for k, v in self.env.items()}

    def _timeout(self, reg: Registration, event: str) -> float:
        given = reg.handler.timeout
        if event == "SessionEnd":
            return min(given or SESSION_END_TIMEOUT, SESSION_END_MAX)
        if given is not None:
            return given
        kind = kind_of(reg.handler)
        if event == "UserPromptSubmit" and kind in ("command", "http"):
            return PROMPT_SUBMIT_TIMEOUT
        return DEFAULT_TIMEOUT.get(kind, DEFAULT_TIMEOUT["command"])

    # ------------------------------------------------------------ helpers for composition

    async def notify(self, payload: dict[str, Any], message: str, notification_type: str, title: str = "") -> None:
        """Fire Notification (`notification_type` is also what matchers see)."""
        await self.run("Notification", payload | {"hook_event_name": "Notification", "message": message,
                                                  "title": title, "notification_type": notification_type},
                       match=notification_type)


class NotifyingApprover:
    """An `Approver` that fires Notification (`permission_prompt`) before it asks a person, as
    Claude Code does when a permission dialog opens."""

    def __init__(self, inner: Approver, hooks: HookRunner, payload: Callable[[], dict[str, Any]]) -> None:
        self.inner, self.hooks, self.payload = inner, hooks, payload

    async def approve(self, tool_name: str, tool_input: dict[str, Any], reason: str) -> bool | Approval:
        await self.hooks.notify(self.payload(), f"Claude needs your permission to use {tool_name}",
                                "permission_prompt", "Permission needed")
        return await self.inner.approve(tool_name, tool_input, reason)


def base_payload(event: str, *, session_id: str, cwd: str | Path, transcript_path: str = "",
                 permission_mode: str = "default") -> dict[str, Any]:
    """The fields every hook input has (the loop builds the same for its own events)."""
    return {"session_id": session_id, "transcript_path": transcript_path, "cwd": str(cwd),
            "permission_mode": permission_mode, "hook_event_name": event}


def _show(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, python.HookOutput):
        value = {k: v for k, v in dataclasses.asdict(value).items() if v not in (None, False)}
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False, default=str)
    return repr(value)


def _utf8(body: str) -> bytes:
    """A payload for a hook process or endpoint. A lone surrogate in it (a model's `\\ud800`, an
    undecodable file name) becomes its JSON escape, so the payload is valid UTF-8 and says the same."""
    return body.encode("utf-8", "backslashreplace")
