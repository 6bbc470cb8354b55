"""What a hook registration says: the events, matchers, `if` conditions and the handler kinds
(command, prompt, http, Python callable), parsed from settings-shaped dicts. No I/O but
resolving the path an `if` condition is matched against."""

from __future__ import annotations

import fnmatch
import json
import os
import re
from typing import Any, Callable, Mapping, Union

from ..core.errors import UsageError
from ..core.fastclass import dataclass
from ..core.hookevents import EVENT_NAMES, TOOL_EVENTS

EVENTS = EVENT_NAMES  # the events a hook can be registered for, in Claude Code's order
HANDLER_TYPES = ("command", "prompt", "http", "agent", "mcp_tool")
DEFAULT_TIMEOUT = {"command": 600.0, "http": 600.0, "prompt": 30.0, "python": 600.0}
PROMPT_SUBMIT_TIMEOUT = 30.0  # command and http hooks on UserPromptSubmit: a person is waiting
SESSION_END_TIMEOUT, SESSION_END_MAX = 1.5, 60.0  # the process is exiting; keep it short
_NAMES = re.compile(r"[A-Za-z0-9_ \-,|]+")


class Matcher:
    """`*`, empty or absent: everything; names joined by `|` (or `,`): exactly those; anything
    else: a regular expression that must match the whole value."""

    def __init__(self, pattern: str | None = None) -> None:
        self.pattern = (pattern or "").strip()
        self.names: frozenset[str] | None = None
        self.regex: re.Pattern[str] | None = None
        if self.pattern in ("", "*"):
            return
        if _NAMES.fullmatch(self.pattern):
            self.names = frozenset(n.strip() for n in re.split(r"[|,]", self.pattern) if n.strip())
        else:
            try:
                self.regex = re.compile(self.pattern)
            except re.error as exc:
                raise UsageError(f"hook matcher {self.pattern!r}: expected a valid regular expression "
                                 f"({exc})") from None

    def __call__(self, value: str | None) -> bool:
        if value is None:  # the event has no matcher field: matchers do not apply
            return True
        if self.names is not None:
            return value in self.names
        if self.regex is not None:
            return self.regex.fullmatch(value) is not None
        return True

    def __repr__(self) -> str:
        return f"Matcher({self.pattern!r})"


@dataclass(frozen=True, slots=True)
class CommandSpec:
    command: str
    args: tuple[str, ...] | None = None
    timeout: float | None = None
    env: tuple[tuple[str, str], ...] = ()  # for this handler's process (a plugin's CLAUDE_PLUGIN_ROOT)
    # `"async": true` (without `asyncRewake`): it only reports, so what it decides does not count
    # and its context and message are delivered. Claude Code runs it in the background and delivers
    # those on the next turn; here it runs to its end first, as every hook does.
    reports_only: bool = False

    @property
    def label(self) -> str:
        return " ".join((self.command, *(self.args or ())))


@dataclass(frozen=True, slots=True)
class PromptSpec:
    prompt: str
    model: str | None = None
    timeout: float | None = None

    @property
    def label(self) -> str:
        return "prompt: " + " ".join(self.prompt.split())[:60]


@dataclass(frozen=True, slots=True)
class HttpSpec:
    url: str
    headers: tuple[tuple[str, str], ...] = ()
    allowed_env: tuple[str, ...] = ()
    timeout: float | None = None

    @property
    def label(self) -> str:
        return self.url


@dataclass(frozen=True, slots=True)
class PythonSpec:
    fn: Callable[..., Any]
    timeout: float | None = None

    @property
    def label(self) -> str:
        return getattr(self.fn, "__qualname__", repr(self.fn))


@dataclass(frozen=True, slots=True)
class UnsupportedSpec:
    """Claude Code handler kinds loopwright does not run yet (`agent`, `mcp_tool`)."""

    kind: str
    timeout: float | None = None

    @property
    def label(self) -> str:
        return f"{self.kind} hook"


Handler = Union[CommandSpec, PromptSpec, HttpSpec, PythonSpec, UnsupportedSpec]


@dataclass(frozen=True, slots=True)
class Registration:
    event: str
    matcher: Matcher
    handler: Handler
    key: str  # identical handlers registered twice run once
    condition: str | None = None  # the `if` field: a permission-rule pattern, tool events only

    def applies(self, match: str | None, payload: Mapping[str, Any]) -> bool:
        if not self.matcher(match):
            return False
        return self.condition is None or rule_applies(self.condition, self.event, payload)


def kind_of(handler: Handler) -> str:
    match handler:
        case CommandSpec():
            return "command"
        case PromptSpec():
            return "prompt"
        case HttpSpec():
            return "http"
        case PythonSpec():
            return "python"
        case UnsupportedSpec(kind=kind):
            return kind


def parse_handler(raw: Mapping[str, Any]) -> Handler:
    """A settings-shaped handler (`{"type": "command", "command": ...}`) as a spec. Settings files
    are validated before this; this check is for dicts handed straight to the library."""
    kind = raw.get("type")
    if kind not in HANDLER_TYPES:
        raise UsageError(f"hook handler type: expected one of {', '.join(HANDLER_TYPES)}, got {kind!r}")
    timeout = raw.get("timeout")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0):
        raise UsageError(f"hook handler timeout: expected a number of seconds above 0, got {timeout!r}")
    timeout = float(timeout) if timeout is not None else None
    if kind == "command":
        args = raw.get("args")
        return CommandSpec(_text(raw, "command"), tuple(str(a) for a in args) if args is not None else None, timeout,
                           reports_only=raw.get("async") is True and raw.get("asyncRewake") is not True)
    if kind == "prompt":
        return PromptSpec(_text(raw, "prompt"), raw.get("model"), timeout)
    if kind == "http":
        headers = tuple((str(k), str(v)) for k, v in (raw.get("headers") or {}).items())
        return HttpSpec(_text(raw, "url"), headers, tuple(raw.get("allowedEnvVars") or ()), timeout)
    return UnsupportedSpec(kind, timeout)


def _text(raw: Mapping[str, Any], key: str) -> str:
    value = raw.get(key)
    if not isinstance(value, str) or not value.strip():
        raise UsageError(f"{raw.get('type')} hook: `{key}` must be a non-empty string, got {value!r}")
    return value


def handler_key(raw: Mapping[str, Any]) -> str:
    return json.dumps(raw, sort_keys=True, default=str)


# The primary input field a rule specifier is matched against, per tool.
_SUBJECT = {"Bash": "command", "Read": "file_path", "Write": "file_path", "Edit": "file_path",
            "NotebookEdit": "notebook_path", "Glob": "pattern", "Grep": "pattern", "WebFetch": "url"}
_PATH_TOOLS = frozenset({"Read", "Write", "Edit", "NotebookEdit"})


def rule_applies(rule: str, event: str, payload: Mapping[str, Any]) -> bool:
    """The `if` field: `Tool` or `Tool(specifier)` against the call, matched as the permission
    rules match it: `Bash(rm *)` meets every command the line runs (`true && rm f`, `sudo rm f`),
    a path (`Edit(src/**)`) is anchored and resolved as the gate does. Only tool events have
    calls, so on any other event a handler with `if` never runs."""
    from ..permissions.decide import command_hits
    from ..permissions.rules import parse_rule

    if event not in TOOL_EVENTS:
        return False
    name, spec = parse_rule(rule)
    tool = payload.get("tool_name")
    if name != tool:
        return False
    if spec is None or spec == "*":
        return True
    subject = (payload.get("tool_input") or {}).get(_SUBJECT.get(name, ""), "")
    if not isinstance(subject, str):
        return False
    if name == "Bash":
        return command_hits(spec, subject)
    if name in _PATH_TOOLS and subject:
        return _path_applies(spec, subject, str(payload.get("cwd") or os.getcwd()))
    return fnmatch.fnmatchcase(subject, spec)


def _path_applies(spec: str, path: str, cwd: str) -> bool:
    from ..permissions.decide import Places, Resolved, path_hits

    home = os.path.realpath(os.path.expanduser("~"))
    joined = os.path.join(cwd, os.path.expanduser(path))
    places = Places(os.path.realpath(cwd), (os.path.realpath(cwd),), home)
    # where it lands from the path as given: `lnk/../x` is not `x` when lnk is a symlink
    return path_hits(spec, (Resolved(os.path.normpath(joined), os.path.realpath(joined)),), places)
