"""A routine file (`.loopwright/routines/NAME.yaml`), checked: a trigger (`every` / `cron`), an
item source (`command` printing JSON lines, a `folder` of files, or `http: true`: items POSTed to
`loopwright serve`), what to do per item (a `prompt` or a `goal` template with `{field}`
placeholders), limits, concurrency, retries and a `report` command. Every problem is found at
once, each naming the file, the key and what was expected."""

from __future__ import annotations

import re
import string
from typing import Any, Mapping

from ..core.fastclass import dataclass
from ..policy.cadence import cadence, cron_error, parse_interval

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_DURATION = re.compile(r"\d+(\.\d+)?(ms|s|m|h|d)?")
_MODES = ("default", "acceptEdits", "plan", "dontAsk", "bypassPermissions", "auto")
_KEYS = ("every", "cron", "source", "prompt", "goal", "check", "protect", "permission_mode", "allowed_tools",
         "limits", "concurrency", "retry_failed", "report", "sandbox", "model",
         "skill", "attempts", "attempt_instructions", "workflow")
_ITEM_LIMITS = ("max_turns", "max_budget_usd", "max_duration")
_FIRE_LIMITS = ("max_items", "max_budget_usd")


class RoutineError(ValueError):
    """A routine file that cannot run; the message names the file and the key."""


@dataclass(frozen=True, slots=True)
class Routine:
    name: str
    path: str
    every_s: int = 0  # one of every_s / cron (0 and "": fired only by `routine run`)
    cron: str = ""
    source_kind: str = "command"  # command | folder | http
    source: str = ""
    prompt: str = ""  # a template; exactly one of prompt / goal
    goal: str = ""
    check: tuple[str, ...] = ()
    protect: tuple[str, ...] = ()
    permission_mode: str | None = None
    allowed_tools: tuple[str, ...] = ()
    model: str | None = None
    sandbox: bool | None = None  # None: as settings say (the sandbox is on by default)
    max_turns: int | None = None  # per item
    max_budget_usd: float | None = None
    max_duration: str | None = None
    fire_max_items: int | None = None  # per fire
    fire_max_budget_usd: float | None = None
    concurrency: int = 1
    retry_failed: int = 0
    report: str = ""
    attempts: int = 0  # >1: each item done as N judged attempts in git worktrees (as --attempts)
    skill: str = ""  # each item's turn starts as `/skill <the filled prompt or goal>`
    attempt_instructions: str = ""  # a file of one variation per line, as --attempt-instructions
    workflow: str = ""  # each item runs this workflow: its words as args, the item as `wf.item`; its
    # answer held to `check` and `protect` (every agent refused the protected paths)

    @property
    def template(self) -> str:
        return self.goal or self.prompt


class _Check:
    def __init__(self, path: str) -> None:
        self.path = path

    def fail(self, key: str, expected: str, got: Any = None, *, given: bool = True) -> RoutineError:
        said = f", got {got!r}" if given else ""
        return RoutineError(f"{self.path}: {key}: expected {expected}{said}")

    def text(self, data: Mapping[str, Any], key: str) -> str:
        value = data.get(key)
        if value is None:
            return ""
        if not isinstance(value, str) or not value.strip():
            raise self.fail(key, "a non-empty string", value)
        return value

    def texts(self, data: Mapping[str, Any], key: str) -> tuple[str, ...]:
        value = data.get(key)
        if value is None:
            return ()
        if isinstance(value, str) and value.strip():
            return (value,)
        if isinstance(value, list) and value and all(isinstance(v, str) and v.strip() for v in value):
            return tuple(value)
        raise self.fail(key, "a string or a list of non-empty strings", value)

    def whole(self, data: Mapping[str, Any], key: str, where: str, *, minimum: int = 1) -> int | None:
        value = data.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise self.fail(f"{where}{key}", f"a whole number of at least {minimum}", value)
        return value

    def amount(self, data: Mapping[str, Any], key: str, where: str) -> float | None:
        value = data.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf"):
            raise self.fail(f"{where}{key}", "an amount in dollars above 0, such as 0.50", value)
        return float(value)


def parse_routine(name: str, path: str, data: Any) -> Routine:
    """The routine `name` from the parsed YAML `data` of the file at `path`. Every problem is
    found at once: the `RoutineError` lists each on its own line (unknown keys with the key
    that was probably meant)."""
    c = _Check(path)
    if not NAME.fullmatch(name):
        raise RoutineError(f"{path}: the file name: expected letters, digits, '.', '_' or '-' before .yaml, "
                           f"got {name!r}")
    if not isinstance(data, dict):
        raise RoutineError(f"{path}: expected a mapping of keys ({', '.join(_KEYS)}), got {type(data).__name__}")
    problems: list[str] = [str(c.fail(str(k), _unknown_hint(str(k)), given=False)) for k in data if k not in _KEYS]

    def checked(part: Any, default: Any = None) -> Any:
        try:
            return part()
        except RoutineError as exc:
            problems.append(str(exc))
            return default

    every_s, cron = checked(lambda: _trigger(c, data), (0, ""))
    kind, source = checked(lambda: _source(c, data.get("source"), name), ("command", ""))
    prompt, goal = checked(lambda: c.text(data, "prompt"), ""), checked(lambda: c.text(data, "goal"), "")
    said = any(p.startswith((f"{path}: prompt:", f"{path}: goal:")) for p in problems)
    if bool(prompt) == bool(goal) and not said:
        problems.append(str(c.fail("prompt", "exactly one of `prompt:` or `goal:` (a template such as "
                                   "\"Triage {id}\")", given=False)))
    elif prompt or goal:
        checked(lambda: template_error(prompt or goal, c, "goal" if goal else "prompt"))
    check, protect = checked(lambda: c.texts(data, "check"), ()), checked(lambda: c.texts(data, "protect"), ())
    if (check or protect) and not goal:
        problems.append(str(c.fail("check", "a `goal:` (checks and protected paths belong to a goal)", given=False)))
    mode = data.get("permission_mode")
    if mode is not None and mode not in _MODES:
        problems.append(str(c.fail("permission_mode", f"one of {', '.join(_MODES)}", mode)))
    sandbox = data.get("sandbox")
    if sandbox is not None and not isinstance(sandbox, bool):
        problems.append(str(c.fail("sandbox", "true or false", sandbox)))
    limits = checked(lambda: _limits(c, data.get("limits")), {})
    skill = checked(lambda: c.text(data, "skill"), "")
    if skill and not NAME.fullmatch(skill.removeprefix("/")):
        problems.append(str(c.fail("skill", "a skill's name such as fix-bug (its folder under .claude/skills)", skill)))
    routine = dict(
        allowed_tools=checked(lambda: c.texts(data, "allowed_tools"), ()),
        model=checked(lambda: c.text(data, "model"), "") or None,
        concurrency=checked(lambda: c.whole(data, "concurrency", ""), None) or 1,
        retry_failed=checked(lambda: c.whole(data, "retry_failed", "", minimum=0), None) or 0,
        report=checked(lambda: c.text(data, "report"), ""), attempts=checked(lambda: _attempts(c, data), 0),
        attempt_instructions=checked(lambda: _instructions(c, data), ""),
        workflow=checked(lambda: _workflow(c, data, skill), ""))
    if problems:
        raise RoutineError("\n".join(dict.fromkeys(problems)))
    return Routine(name, path, every_s, cron, kind, source, prompt, goal, check, protect, mode,
                   routine["allowed_tools"], routine["model"], sandbox, **limits,
                   concurrency=routine["concurrency"], retry_failed=routine["retry_failed"],
                   report=routine["report"], skill=skill.removeprefix("/"), attempts=routine["attempts"],
                   attempt_instructions=routine["attempt_instructions"], workflow=routine["workflow"])


def _unknown_hint(key: str) -> str:
    import difflib

    close = difflib.get_close_matches(key, _KEYS, n=1, cutoff=0.6)
    known = f"one of the keys {', '.join(_KEYS)}"
    return f"{known} (did you mean `{close[0]}:`?)" if close else known


def _workflow(c: _Check, data: Mapping[str, Any], skill: str) -> str:
    """`workflow:`: a workflow's name (`NAME` or `PLUGIN:NAME`), alone (not with skill or attempts)."""
    from ..workflows.scripts import valid

    workflow = c.text(data, "workflow").removeprefix("/")
    if workflow and not valid(workflow):
        raise c.fail("workflow", "a workflow's name such as triage (.loopwright/workflows/triage.py)", workflow)
    if workflow and (skill or data.get("attempts")):
        raise c.fail("workflow", f"one of `workflow:`, `skill:` or `attempts:`, not {'skill' if skill else 'attempts'} "
                     "too", given=False)
    return workflow


def _attempts(c: _Check, data: Mapping[str, Any]) -> int:
    n = c.whole(data, "attempts", "") or 0
    if n > 8:
        raise c.fail("attempts", "a whole number from 1 to 8", n)
    return n


def _instructions(c: _Check, data: Mapping[str, Any]) -> str:
    path = c.text(data, "attempt_instructions")
    if path and (c.whole(data, "attempts", "") or 0) < 2:
        raise c.fail("attempt_instructions", "`attempts:` of 2 or more (the variations are per attempt)",
                     given=False)
    return path


def _trigger(c: _Check, data: Mapping[str, Any]) -> tuple[int, str]:
    every, cron = data.get("every"), data.get("cron")
    if every is not None and cron is not None:
        raise c.fail("every", "either `every:` or `cron:`, not both", given=False)
    if cron is not None:
        problem = cron_error(cron) if isinstance(cron, str) else "a string of five cron fields"
        if problem is not None:
            raise RoutineError(f"{c.path}: cron: {problem}")
        return 0, cron
    if every is None:
        return 0, ""
    try:
        seconds = parse_interval(every) if isinstance(every, str) else None
    except ValueError as exc:
        raise RoutineError(f"{c.path}: every: {exc}") from None
    if seconds is None:
        raise c.fail("every", "an interval such as 5m, 2h or 1d", every)
    return cadence(seconds).every_s, ""


def _source(c: _Check, source: Any, name: str) -> tuple[str, str]:
    expected = ("a mapping with one key, `command:` (prints items as JSON lines), `folder:` (each file an item) "
                "or `http: true` (items POSTed to `loopwright serve`)")
    if not isinstance(source, dict) or len(source) != 1:
        raise c.fail("source", expected, source, given=source is not None)
    (kind, value), = source.items()
    if kind not in ("command", "folder", "http"):
        raise c.fail("source", expected, source)
    if kind == "http":
        if value is not True:
            raise c.fail("source.http", "true (items are POSTed to `loopwright serve` at /routines/NAME/items "
                         "with the routine's token)", value)
        return kind, f"POST /routines/{name}/items"
    if not isinstance(value, str) or not value.strip():
        raise c.fail(f"source.{kind}", "a non-empty string", value)
    return kind, value


def _limits(c: _Check, limits: Any) -> dict[str, Any]:
    """`limits: {item: {max_turns, max_budget_usd, max_duration}, fire: {max_items, max_budget_usd}}`."""
    if limits is None:
        return {}
    if not isinstance(limits, dict) or not set(limits) <= {"item", "fire"}:
        raise c.fail("limits", "a mapping with `item:` (max_turns, max_budget_usd, max_duration) and/or "
                     "`fire:` (max_items, max_budget_usd)", limits)
    item, fire = limits.get("item") or {}, limits.get("fire") or {}
    for where, given, keys in (("item", item, _ITEM_LIMITS), ("fire", fire, _FIRE_LIMITS)):
        if not isinstance(given, dict):
            raise c.fail(f"limits.{where}", f"a mapping with keys from {', '.join(keys)}", given)
        for key in given:
            if key not in keys:
                raise c.fail(f"limits.{where}.{key}", f"one of the keys {', '.join(keys)}", given=False)
    duration = item.get("max_duration")
    if duration is not None and not (isinstance(duration, str) and _DURATION.fullmatch(duration.strip())):
        raise c.fail("limits.item.max_duration", "a duration such as 90s, 30m or 2h", duration)
    return {"max_turns": c.whole(item, "max_turns", "limits.item."),
            "max_budget_usd": c.amount(item, "max_budget_usd", "limits.item."),
            "max_duration": duration,
            "fire_max_items": c.whole(fire, "max_items", "limits.fire."),
            "fire_max_budget_usd": c.amount(fire, "max_budget_usd", "limits.fire.")}


def template_error(template: str, c: _Check, key: str) -> None:
    """Placeholders are plain field names (`{id}`, `{title}`); `{{` and `}}` are braces."""
    try:
        parts = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise c.fail(key, f"a template with balanced braces ({exc}; write {{{{ and }}}} for a brace)",
                     given=False) from None
    for _, field, spec, conversion in parts:
        if field is not None and (not field.isidentifier() or spec or conversion):
            raise c.fail(key, "placeholders that are plain field names such as {id} or {title}",
                         "{" + field + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}")


def placeholders(template: str) -> list[str]:
    """The field names a (checked) template fills in, in order, each once."""
    names = [field for _, field, _, _ in string.Formatter().parse(template) if field is not None]
    return list(dict.fromkeys(names))


def fill(template: str, item: Mapping[str, Any]) -> str:
    """The template with each `{field}` replaced by the item's value (JSON text for a non-string);
    KeyError names a field the item lacks."""
    import json

    out = []
    for literal, field, _, _ in string.Formatter().parse(template):
        out.append(literal)
        if field is not None:
            if field not in item:
                raise KeyError(field)
            value = item[field]
            out.append(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))
    return "".join(out)
