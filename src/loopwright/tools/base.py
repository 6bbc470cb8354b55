"""The base for tools whose input is a pydantic model (`BaseTool`), the model-facing JSON schema
and plain-words validation errors, and the `@tool` decorator that makes a tool of a function."""

from __future__ import annotations

import inspect
import json
import typing
import weakref
from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar

import anyio
from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from ..core.errors import ToolInputError
from ..core.ports import ToolContext, ToolOutput

__all__ = ["BaseTool", "FunctionTool", "ToolInput", "in_thread", "schema_for", "tool"]

T = TypeVar("T")


class ToolInput(BaseModel):
    """Base for tool input models: unknown fields are an error, as in Claude Code."""

    model_config = ConfigDict(extra="forbid")


_strict_cache: weakref.WeakKeyDictionary[type[BaseModel], type[BaseModel]] = (
    weakref.WeakKeyDictionary()
)
_schema_cache: weakref.WeakKeyDictionary[type[BaseModel], dict[str, Any]] = (
    weakref.WeakKeyDictionary()
)


def _strict(model: type[BaseModel]) -> type[BaseModel]:
    """The model itself when it already forbids extra fields, else a subclass that does, so the
    schema's `additionalProperties: false` is also what validation enforces."""
    if model.model_config.get("extra") == "forbid":
        return model
    strict = _strict_cache.get(model)
    if strict is None:
        config = ConfigDict(extra="forbid")
        strict = type(model.__name__, (model,), {"model_config": config, "__module__": model.__module__})
        _strict_cache[model] = strict
    return strict


def schema_for(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema the model is shown, computed once per class. Shared: do not mutate."""
    schema = _schema_cache.get(model)
    if schema is None:
        schema = _clean_schema(_strict(model).model_json_schema())
        schema["additionalProperties"] = False
        _schema_cache[model] = schema
    return schema


# Keys whose values are data (not sub-schemas) and keys whose values map names to sub-schemas.
_VERBATIM = frozenset({"default", "examples", "const", "enum"})
_NAMED = frozenset({"properties", "$defs", "definitions", "patternProperties"})


def _clean_schema(node: dict[str, Any]) -> dict[str, Any]:
    """Drop pydantic's `title`s (noise to a model) and collapse `X | None = None` to plain `X`.
    Nested models keep their own `extra` setting (pydantic writes `additionalProperties`)."""
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title" and isinstance(value, str):
            continue
        if key in _VERBATIM:
            out[key] = value
        elif key in _NAMED and isinstance(value, dict):
            out[key] = {name: _clean_schema(sub) for name, sub in value.items()}
        elif isinstance(value, dict):
            out[key] = _clean_schema(value)
        elif isinstance(value, list):
            out[key] = [_clean_schema(v) if isinstance(v, dict) else v for v in value]
        else:
            out[key] = value
    _collapse_optional(out)
    return out


def _collapse_optional(schema: dict[str, Any]) -> None:
    options = schema.get("anyOf")
    if not (isinstance(options, list) and len(options) == 2 and "default" in schema):
        return
    if schema["default"] is not None or {"type": "null"} not in options:
        return
    other = options[0] if options[1] == {"type": "null"} else options[1]
    del schema["anyOf"], schema["default"]
    for key, value in other.items():
        schema.setdefault(key, value)


def describe_errors(tool_name: str, error: ValidationError) -> str:
    """One line per problem, in plain words, ending with what to do."""
    lines = [f"Invalid input for {tool_name}:"]
    for item in error.errors(include_url=False):
        where = ".".join(str(part) for part in item["loc"]) or "input"
        lines.append(f"- {where}: {_problem(item)}")
    lines.append("Fix the input and call the tool again.")
    return "\n".join(lines)


def _problem(item: Any) -> str:
    kind = item["type"]
    if kind == "missing":
        return "required field is missing"
    if kind == "extra_forbidden":
        return "unexpected field (not allowed)"
    if kind in ("model_type", "model_attributes_type", "dict_type") and not item["loc"]:
        return "the input must be a JSON object of the tool's fields"
    msg: str = item["msg"]
    if msg.startswith("Input should be "):
        msg = "must be " + msg[len("Input should be ") :]
    else:
        msg = msg[:1].lower() + msg[1:]
    given = repr(item.get("input"))
    if len(given) > 60:
        given = given[:57] + "..."
    return f"{msg} (got {given})"


async def in_thread(fn: Callable[..., T], *args: Any) -> T:
    """Run blocking file-system work off the event loop. On cancellation the caller moves on at
    once; the thread finishes its (short) work unobserved."""
    return await anyio.to_thread.run_sync(fn, *args, abandon_on_cancel=True)


class BaseTool:
    """A tool with a pydantic input model. Subclasses set `name`, `description`, `read_only`
    and `Input`, and implement `run`; expected failures return `ToolOutput(..., is_error=True)`."""

    name: str = ""
    description: str = ""
    read_only: bool = False
    Input: type[BaseModel] = ToolInput

    @property
    def input_schema(self) -> dict[str, Any]:
        return schema_for(self.Input)

    def validate(self, raw: dict[str, Any]) -> Any:
        try:
            return _strict(self.Input).model_validate(raw)
        except ValidationError as exc:
            raise ToolInputError(describe_errors(self.name, exc)) from None

    async def run(self, args: Any, ctx: ToolContext) -> ToolOutput:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


class FunctionTool(BaseTool):
    """A tool made by `@tool` from a plain function; calling it calls the function."""

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str,
        description: str,
        read_only: bool,
        input_model: type[BaseModel],
        context_params: tuple[str, ...],
        positional: tuple[str, ...],
    ) -> None:
        self.fn = fn
        self.name = name
        self.description = description
        self.read_only = read_only
        self.Input = input_model
        self._context_params = context_params
        self._positional = positional

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    async def run(self, args: Any, ctx: ToolContext) -> ToolOutput:
        values = {field: getattr(args, field) for field in type(args).model_fields}
        values.update({param: ctx for param in self._context_params})
        positional = [values.pop(p) for p in self._positional]
        try:
            if inspect.iscoroutinefunction(self.fn):
                result = await self.fn(*positional, **values)
            else:
                # A plain function may block; a worker thread keeps the event loop responsive.
                result = await in_thread(partial(self.fn, *positional, **values))
                if inspect.isawaitable(result):
                    result = await result
        except Exception as exc:  # the model gets the failure; cancellation is not an Exception
            return ToolOutput(str(exc) or type(exc).__name__, is_error=True)
        return _to_output(result)


def _to_output(result: Any) -> ToolOutput:
    if isinstance(result, ToolOutput):
        return result
    if result is None:
        return ToolOutput("(no output)")
    if isinstance(result, str):
        return ToolOutput(result)
    if isinstance(result, BaseModel):
        return ToolOutput(result.model_dump_json())
    try:
        return ToolOutput(json.dumps(result, ensure_ascii=False, default=str))
    except (TypeError, ValueError):
        return ToolOutput(str(result))


def _model_from_signature(
    fn: Callable[..., Any], name: str
) -> tuple[type[BaseModel], tuple[str, ...], tuple[str, ...]]:
    """The input model built from `fn`'s parameters, the parameters that receive the
    `ToolContext`, and the positional-only ones (passed by position)."""
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception:  # unresolvable forward references: fall back to Any for those
        hints = {}
    fields: dict[str, Any] = {}
    context_params: list[str] = []
    positional: list[str] = []
    for param in inspect.signature(fn).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"@tool cannot build a schema for *{param.name} in {fn.__qualname__}")
        annotation = hints.get(param.name, Any)
        if annotation is ToolContext:
            context_params.append(param.name)
            continue
        if param.kind is param.POSITIONAL_ONLY:
            positional.append(param.name)
        default = ... if param.default is param.empty else param.default
        fields[param.name] = (annotation, default)
    model = create_model(f"{name}Input", __base__=ToolInput, **fields)
    return model, tuple(context_params), tuple(positional)


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    read_only: bool = False,
) -> Any:
    """Make a tool of a typed function (sync or async). The input schema comes from the
    signature, the description from the docstring; a parameter annotated `ToolContext` receives
    the context. Use as `@tool` or `@tool(name=..., description=..., read_only=...)`."""

    def build(f: Callable[..., Any]) -> FunctionTool:
        tool_name = name or f.__name__
        model, context_params, positional = _model_from_signature(f, tool_name)
        return FunctionTool(
            f,
            name=tool_name,
            description=description or inspect.getdoc(f) or f"Run {tool_name}.",
            read_only=read_only,
            input_model=model,
            context_params=context_params,
            positional=positional,
        )

    return build(fn) if fn is not None else build
