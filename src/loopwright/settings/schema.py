"""The shape of the settings keys loopwright reads, checked by pydantic (imported only when a
file exists); an error names the file, the key path, what was expected and, for a misspelt
name, the nearest valid one. Every other key passes through unchecked here (see `check`)."""

from __future__ import annotations

import functools
import json
from typing import Any, Mapping

from ..core import jsonsafe
from ..core.errors import UsageError

HANDLER_TYPES = ("command", "prompt", "http", "agent", "mcp_tool")



def parse(text: str, source: str) -> dict[str, Any]:
    if not text.strip():
        return {}
    try:
        data = jsonsafe.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{source}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    if not isinstance(data, dict):
        raise UsageError(f"{source}: expected a JSON object at the top level, got {type(data).__name__}")
    from pydantic import ValidationError

    try:
        _schema().validate_python(data)
    except ValidationError as exc:
        # Of a union's members, the one that got furthest into the value says what is wrong:
        # `network: {"allowedDomains": [...]}` is about a domain, not about `network` being no bool.
        errors = exc.errors()
        raise UsageError(f"{source}: {describe(max(errors, key=lambda e: len(e['loc'])))}") from None
    return data


def describe(error: Mapping[str, Any]) -> str:
    """One pydantic error as `key.path[0]: expected …, got …`."""
    loc = list(error["loc"])
    # a tagged union puts the tag into the path; a person wrote `hooks[0].command`, not `.command.command`
    loc = [p for i, p in enumerate(loc) if not (p in HANDLER_TYPES and i >= 2 and isinstance(loc[i - 1], int)
                                                 and loc[i - 2] == "hooks")]
    loc = [p for p in loc if p not in _UNION_MEMBERS]  # pydantic names the member it tried: not a key
    kind, ctx, given = error["type"], error.get("ctx") or {}, error.get("input")
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        loc.append("type")
        if kind == "union_tag_not_found":
            return f"{_path(loc)}: required key missing (one of {', '.join(HANDLER_TYPES)})"
        from ..policy.names import suggest

        tag = str(ctx["tag"])
        return f"{_path(loc)}: expected one of {', '.join(HANDLER_TYPES)}, got {tag!r}{suggest(tag, HANDLER_TYPES)}"
    if kind == "missing":
        return f"{_path(loc)}: required key missing"
    expected = _EXPECTED.get(kind)
    if expected is None:
        expected = str(error["msg"]).removeprefix("Value error, ")
        expected = expected[0].lower() + expected[1:] if expected else kind
        return f"{_path(loc)}: {expected}"
    return f"{_path(loc)}: expected {expected.format(**ctx)}, got {_show(given)}"


_UNION_MEMBERS = frozenset({"bool", "SandboxNetwork"})
_EXPECTED = {
    "string_type": "a string", "bool_type": "true or false", "int_type": "a number", "float_type": "a number",
    "list_type": "a list", "dict_type": "an object", "model_type": "an object", "model_attributes_type": "an object",
    "literal_error": "{expected}", "greater_than": "a number above {gt:g}",
}


def _path(loc: list[Any]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def _show(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:57] + "…"


@functools.cache
def _schema() -> Any:
    """The shape of the keys loopwright reads; every other key passes through unchecked."""
    from typing import Annotated, Literal, Union

    from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, field_validator

    from ..permissions.rules import MODES, normalise_mode
    from .known import CLAUDE_CODE_ONLY_MODES

    class Open(BaseModel):
        model_config = ConfigDict(extra="allow", strict=True, populate_by_name=True)

    class Common(Open):
        timeout: float | None = Field(None, gt=0)
        statusMessage: str | None = None
        if_: str | None = Field(None, alias="if")

    class Command(Common):
        type: Literal["command"]
        command: str
        args: list[str] | None = None

    class Prompt(Common):
        type: Literal["prompt"]
        prompt: str
        model: str | None = None

    class Http(Common):
        type: Literal["http"]
        url: str
        headers: dict[str, str] | None = None
        allowedEnvVars: list[str] | None = None

    class Other(Common):  # Claude Code kinds loopwright accepts but does not run yet
        type: Literal["agent", "mcp_tool"]

    class Group(Open):
        matcher: str | None = None
        hooks: list[Annotated[Union[Command, Prompt, Http, Other], Field(discriminator="type")]]

        @field_validator("matcher")
        @classmethod
        def _regex(cls, value: str | None) -> str | None:
            from ..hooks.spec import Matcher

            try:
                Matcher(value)
            except UsageError as exc:
                raise ValueError(str(exc).removeprefix(f"hook matcher {value!r}: ")) from None
            return value

    class Permissions(Open):
        allow: list[str] | None = None
        ask: list[str] | None = None
        deny: list[str] | None = None
        defaultMode: str | None = None
        additionalDirectories: list[str] | None = None

        @field_validator("defaultMode")
        @classmethod
        def _mode(cls, value: str | None) -> str | None:
            if value is not None and normalise_mode(value) is None and value not in CLAUDE_CODE_ONLY_MODES:
                from ..policy.names import suggest

                raise ValueError(f"expected one of {', '.join(MODES)} (or manual), got {value!r}"
                                 + suggest(value, MODES))
            return value

    class SandboxNetwork(Open):
        allowAll: bool | None = None
        allowedDomains: list[str] | None = None
        allowUnixSockets: list[str] | None = None
        allowAllUnixSockets: bool | None = None

        @field_validator("allowedDomains")
        @classmethod
        def _domains(cls, value: list[str] | None) -> list[str] | None:
            from ..core.domains import Allowlist

            if value is not None:
                Allowlist.parse(d for d in value if d != "*")  # "*": the whole network
            return value

    class SandboxFilesystem(Open):
        denyRead: list[str] | None = None
        allowWrite: list[str] | None = None
        denyWrite: list[str] | None = None

    class Sandbox(Open):
        enabled: bool | None = None
        network: bool | SandboxNetwork | None = None
        failIfUnavailable: bool | None = None
        filesystem: SandboxFilesystem | None = None
        excludedCommands: list[str] | None = None
        allowUnsandboxedCommands: bool | None = None

    class Root(Open):
        hooks: dict[str, list[Group]] | None = None
        permissions: Permissions | None = None
        model: str | None = None
        fallbackModel: str | None = None
        env: dict[str, str] | None = None
        disableAllHooks: bool | None = None
        hookFailurePolicy: Literal["closed", "open"] | None = None
        sandbox: Sandbox | None = None
        enabledPlugins: dict[str, bool | list[str]] | None = None

    return TypeAdapter(Root)
