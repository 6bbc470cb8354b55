"""JSON Schema, the part structured output needs: a schema is checked once (an unknown keyword is
an error, never silently ignored; a `$ref` cycle or a pattern RE2 cannot run is refused), then
values are validated against it with every problem named by its path. Validation is bounded in
depth and in work, and patterns run on a linear-time engine, so no value can hang or crash it. Pure."""

from __future__ import annotations

from typing import Any, Callable, Generator

from ..core.regex import PatternError, compile_re2, search
from .jsonformats import FORMATS

# Schema checks for one value: bounds schemas whose anyOf/oneOf choices re-walk the same subtree.
MAX_VALIDATION_STEPS = 200_000
MAX_SCHEMA_DEPTH = 100

_TYPES = {"object", "array", "string", "integer", "number", "boolean", "null"}
_KEYWORDS = {
    "type", "properties", "required", "additionalProperties", "items", "enum", "const", "anyOf", "allOf",
    "oneOf", "minLength", "maxLength", "pattern", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
    "minItems", "maxItems", "uniqueItems", "$ref", "$defs", "definitions", "format", "title", "description",
    "default", "examples", "$schema", "$id",
}


def _count(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _number_value(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


# What each keyword's value must be, so a malformed schema is refused at start, not met by a
# TypeError while an answer is checked.
_VALUES: dict[str, tuple[Callable[[Any], bool], str]] = {
    "properties": (lambda v: isinstance(v, dict), "an object"),
    "$defs": (lambda v: isinstance(v, dict), "an object"),
    "definitions": (lambda v: isinstance(v, dict), "an object"),
    "required": (lambda v: isinstance(v, list) and all(isinstance(k, str) for k in v), "an array of strings"),
    "enum": (lambda v: isinstance(v, list), "an array"),
    "anyOf": (lambda v: isinstance(v, list) and bool(v), "a non-empty array"),
    "allOf": (lambda v: isinstance(v, list) and bool(v), "a non-empty array"),
    "oneOf": (lambda v: isinstance(v, list) and bool(v), "a non-empty array"),
    "items": (lambda v: isinstance(v, (dict, bool)), "a schema"),
    "additionalProperties": (lambda v: isinstance(v, (dict, bool)), "a schema"),
    "minLength": (_count, "a whole number >= 0"), "maxLength": (_count, "a whole number >= 0"),
    "minItems": (_count, "a whole number >= 0"), "maxItems": (_count, "a whole number >= 0"),
    "uniqueItems": (lambda v: isinstance(v, bool), "true or false"),
    "minimum": (_number_value, "a number"), "maximum": (_number_value, "a number"),
    "exclusiveMinimum": (_number_value, "a number"), "exclusiveMaximum": (_number_value, "a number"),
    "type": (lambda v: isinstance(v, (str, list)), "a type name or an array of them"),
}


def schema_problems(schema: Any, path: str = "#") -> list[str]:
    """What is wrong with a schema, or [] when it can be enforced as written."""
    problems = _node_problems(schema, path, 0)
    return problems or _ref_problems(schema)


def _node_problems(schema: Any, path: str, level: int) -> list[str]:
    if level > MAX_SCHEMA_DEPTH:
        return [f"{path}: the schema nests more than {MAX_SCHEMA_DEPTH} levels deep"]
    if not isinstance(schema, dict):
        return [] if isinstance(schema, bool) else [f"{path}: a schema must be an object or a boolean"]
    problems = [f"{path}: unsupported keyword {k!r}" for k in schema if k not in _KEYWORDS]
    problems += [f"{path}/{k}: expected {what}, got {_name(schema[k])}" for k, (ok, what) in _VALUES.items()
                 if k in schema and not ok(schema[k])]
    kinds = schema.get("type")
    for kind in kinds if isinstance(kinds, list) else [kinds] if kinds is not None else []:
        if kind not in _TYPES:
            problems.append(f"{path}/type: unknown type {kind!r}")
    for sub, where in _children(schema, path):
        problems += _node_problems(sub, where, level + 1)
    if "$ref" in schema and not (isinstance(schema["$ref"], str) and schema["$ref"].startswith("#")):
        problems.append(f"{path}/$ref: only references inside the schema (#/...) are supported")
    if "pattern" in schema:
        problems += _pattern_problems(schema["pattern"], f"{path}/pattern")
    if "format" in schema and not (isinstance(schema["format"], str) and schema["format"] in FORMATS):
        problems.append(f"{path}/format: unsupported format {_brief(schema['format'])}; expected one of "
                        f"{', '.join(FORMATS)}")
    return problems


def _children(schema: dict[str, Any], path: str) -> list[tuple[Any, str]]:
    """The subschemas written inside `schema`, with their paths."""
    found: list[tuple[Any, str]] = []
    for key in ("properties", "$defs", "definitions"):
        named = schema.get(key) or {}
        found += [(sub, f"{path}/{key}/{name}") for name, sub in named.items()] if isinstance(named, dict) else []
    for key in ("items", "additionalProperties"):
        if key in schema and not isinstance(schema[key], bool):
            found.append((schema[key], f"{path}/{key}"))
    for key in ("anyOf", "allOf", "oneOf"):
        listed = schema.get(key) or []
        found += [(sub, f"{path}/{key}/{i}") for i, sub in enumerate(listed)] if isinstance(listed, list) else []
    return found


def _pattern_problems(pattern: Any, path: str) -> list[str]:
    if not isinstance(pattern, str):
        return [f"{path}: not a regular expression (expected a string, got {_name(pattern)})"]
    try:
        compile_re2(pattern)
    except PatternError as exc:
        if exc.unsupported:
            return [f"{path}: uses {exc}, which loopwright does not support: patterns run on a linear-time "
                    "engine (RE2) so that no answer can make a match run for ever; rewrite it without that"]
        return [f"{path}: {exc}"]
    return []


def _ref_problems(root: Any) -> list[str]:
    """References that point nowhere, and cycles of `$ref`/allOf/anyOf/oneOf that never go into a
    property or an item: checking any value against those would never end."""
    if not isinstance(root, dict):
        return []
    problems: list[str] = []
    edges: dict[int, list[tuple[Any, str]]] = {}
    nodes: dict[int, str] = {}
    pending: list[tuple[Any, str]] = [(root, "#")]
    while pending:
        node, path = pending.pop()
        if not isinstance(node, dict) or id(node) in nodes:
            continue
        nodes[id(node)] = path
        pending += _children(node, path)
        same_value = [(sub, f"{path}/{key}/{i}") for key in ("anyOf", "allOf", "oneOf")
                      for i, sub in enumerate(node.get(key) or [])]
        if isinstance(node.get("$ref"), str):
            target = _pointer(node["$ref"], root)
            if target is None:
                problems.append(f"{path}/$ref: {node['$ref']} points to nothing in the schema")
            else:
                same_value.append((target, f"{path}/$ref"))
        edges[id(node)] = [(sub, where) for sub, where in same_value if isinstance(sub, dict)]
    return problems + _cycles(edges, nodes)


def _cycles(edges: dict[int, list[tuple[Any, str]]], nodes: dict[int, str]) -> list[str]:
    """One problem per cycle found by an iterative depth-first search over `edges`."""
    state: dict[int, int] = {}  # 1: on the current path, 2: done
    problems: list[str] = []
    for start in edges:
        if state.get(start):
            continue
        stack = [(start, iter(edges[start]))]
        state[start] = 1
        while stack:
            node, todo = stack[-1]
            step = next(todo, None)
            if step is None:
                state[node] = 2
                stack.pop()
                continue
            target, where = step
            key = id(target)
            if state.get(key) == 1:
                problems.append(f"{where}: leads back to {nodes.get(key, '#')} without going into a property or "
                                "an item, so checking a value against it would never end")
            elif not state.get(key) and key in edges:
                state[key] = 1
                stack.append((key, iter(edges[key])))
    return problems


def validate(value: Any, schema: Any, root: Any = None, path: str = "$") -> list[str]:
    """Every way `value` breaks `schema` (`$ref` resolved within `root`), or [] when it fits.
    Iterative: each check is a generator that yields the checks it needs (a property's value, an
    anyOf choice) and receives their problems, so no depth of value or schema recurses. A value
    too costly to check is one problem that says so."""
    walk = _Walk(schema if root is None else root)
    stack: list[_Checking] = [_check(value, schema, path, walk)]
    answer: list[str] | None = None  # a generator is started with None, then sent its answers
    try:
        while stack:
            try:
                need = next(stack[-1]) if answer is None else stack[-1].send(answer)
            except StopIteration as done:
                stack.pop()
                answer = done.value
                continue
            walk.steps += 1
            if walk.steps > MAX_VALIDATION_STEPS:
                return [f"{path}: too large or too deeply nested to check against this schema (over "
                        f"{MAX_VALIDATION_STEPS:,} checks); give a smaller answer"]
            stack.append(_check(*need, walk))
            answer = None
    except _Abandon as stop:
        return [stop.problem]
    except RecursionError:  # comparing or printing a value nested far past what JSON input can hold
        return [f"{path}: nested too deeply to check"]
    return answer or []


class _Walk:
    """One validation's root schema and the checks done so far."""

    __slots__ = ("root", "steps")

    def __init__(self, root: Any) -> None:
        self.root, self.steps = root, 0


class _Abandon(Exception):
    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem


Need = tuple[Any, Any, str]  # (value, schema, path) of a check another check waits for
_Checking = Generator[Need, list[str], list[str]]


def _check(value: Any, schema: Any, path: str, walk: _Walk) -> _Checking:
    if schema is True or schema == {}:
        return []
    if not isinstance(schema, dict):
        return [f"{path}: no value is allowed here"]
    if "$ref" in schema:
        return (yield (value, _resolve(schema["$ref"], walk.root), path))
    problems: list[str] = []
    kinds = schema.get("type")
    if kinds is not None and not any(_is(value, k) for k in (kinds if isinstance(kinds, list) else [kinds])):
        return [f"{path}: expected {' or '.join(kinds) if isinstance(kinds, list) else kinds}, got {_name(value)}"]
    if "enum" in schema and value not in schema["enum"]:
        problems.append(f"{path}: expected one of {_brief(schema['enum'])}, got {_brief(value)}")
    if "const" in schema and value != schema["const"]:
        problems.append(f"{path}: expected {_brief(schema['const'])}, got {_brief(value)}")
    if isinstance(value, dict):
        problems += yield from _object(value, schema, path)
    elif isinstance(value, list):
        problems += yield from _array(value, schema, path)
    elif isinstance(value, str):
        problems += _string(value, schema, path)
    elif _is(value, "number"):
        problems += _number(value, schema, path)
    for sub in schema.get("allOf") or []:
        problems += yield (value, sub, path)
    if "anyOf" in schema:
        for sub in schema["anyOf"]:
            if not (yield (value, sub, path)):
                break
        else:
            problems.append(f"{path}: matches none of the anyOf choices")
    if "oneOf" in schema:
        fits = 0
        for sub in schema["oneOf"]:
            fits += not (yield (value, sub, path))
        if fits != 1:
            problems.append(f"{path}: must match exactly one of the oneOf choices")
    return problems


def _brief(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 100 else f"{text[:97]}..."


_CLASSES = {"object": dict, "array": list, "string": str}


def _is(value: Any, kind: str) -> bool:
    if kind == "null":
        return value is None
    if kind == "boolean":
        return isinstance(value, bool)
    if kind in ("integer", "number"):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return False
        return kind == "number" or isinstance(value, int) or value.is_integer()
    return isinstance(value, _CLASSES[kind])


def _name(value: Any) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}.get(
        type(value), "number")


def _resolve(ref: str, root: Any) -> Any:
    found = _pointer(ref, root)  # schema_problems refused references outside the schema: nothing is fetched
    return {} if found is None else found


def _pointer(ref: str, root: Any) -> Any:
    """The subschema a `#/…` reference names, or None when there is none."""
    node = root
    for part in [p for p in str(ref)[1:].split("/") if p]:
        key = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and key in node:
            node = node[key]
        elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            return None
    return node


def _object(value: dict[str, Any], schema: dict[str, Any], path: str) -> _Checking:
    problems = [f"{path}: missing required property {k!r}" for k in schema.get("required", []) if k not in value]
    props = schema.get("properties", {})
    extra = schema.get("additionalProperties", True)
    for key, item in value.items():
        if key in props:
            problems += yield (item, props[key], f"{path}.{key}")
        elif extra is False:
            problems.append(f"{path}: unexpected property {key!r}")
        elif isinstance(extra, dict):
            problems += yield (item, extra, f"{path}.{key}")
    return problems


def _array(value: list[Any], schema: dict[str, Any], path: str) -> _Checking:
    problems = []
    if "minItems" in schema and len(value) < schema["minItems"]:
        problems.append(f"{path}: expected at least {schema['minItems']} items, got {len(value)}")
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        problems.append(f"{path}: expected at most {schema['maxItems']} items, got {len(value)}")
    if schema.get("uniqueItems") and len({repr(v) for v in value}) != len(value):
        problems.append(f"{path}: items must be unique")
    if isinstance(schema.get("items"), (dict, bool)):
        for i, item in enumerate(value):
            problems += yield (item, schema["items"], f"{path}[{i}]")
    return problems


def _string(value: str, schema: dict[str, Any], path: str) -> list[str]:
    problems = []
    if "minLength" in schema and len(value) < schema["minLength"]:
        problems.append(f"{path}: expected at least {schema['minLength']} characters")
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        problems.append(f"{path}: expected at most {schema['maxLength']} characters")
    if "pattern" in schema:
        try:
            matched = search(compile_re2(schema["pattern"]), value)
        except PatternError as exc:  # only when validate ran without schema_problems first
            raise _Abandon(f"the schema's pattern {schema['pattern']!r} cannot be checked: {exc}") from None
        if not matched:
            problems.append(f"{path}: does not match the pattern {_brief(schema['pattern'])}")
    check = FORMATS.get(schema["format"]) if isinstance(schema.get("format"), str) else None
    if check is not None and not check(value):
        problems.append(f"{path}: expected a {schema['format']} string, got {_brief(value)}")
    return problems


def _number(value: float, schema: dict[str, Any], path: str) -> list[str]:
    checks: list[tuple[str, Callable[[Any], bool], str]] = [("minimum", lambda lim: value >= lim, ">="), ("maximum", lambda lim: value <= lim, "<="),
              ("exclusiveMinimum", lambda lim: value > lim, ">"), ("exclusiveMaximum", lambda lim: value < lim, "<")]
    return [f"{path}: expected {sign} {schema[key]}, got {value}" for key, ok, sign in checks
            if key in schema and not ok(schema[key])]
