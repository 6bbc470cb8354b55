"""JSON Schema, the part structured output needs: a schema is checked once (an unknown keyword is
an error, never silently ignored), then values are validated against it with every problem
named by its path. Pure."""

from __future__ import annotations

import re
from typing import Any

_TYPES = {"object", "array", "string", "integer", "number", "boolean", "null"}
_KEYWORDS = {
    "type", "properties", "required", "additionalProperties", "items", "enum", "const", "anyOf", "allOf",
    "oneOf", "minLength", "maxLength", "pattern", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
    "minItems", "maxItems", "uniqueItems", "$ref", "$defs", "definitions", "format", "title", "description",
    "default", "examples", "$schema", "$id",
}


def schema_problems(schema: Any, path: str = "#") -> list[str]:
    """What is wrong with a schema, or [] when it can be enforced as written."""
    if not isinstance(schema, dict):
        return [] if isinstance(schema, bool) else [f"{path}: a schema must be an object or a boolean"]
    problems = [f"{path}: unsupported keyword {k!r}" for k in schema if k not in _KEYWORDS]
    kinds = schema.get("type")
    for kind in kinds if isinstance(kinds, list) else [kinds] if kinds is not None else []:
        if kind not in _TYPES:
            problems.append(f"{path}/type: unknown type {kind!r}")
    for key in ("properties", "$defs", "definitions"):
        for name, sub in (schema.get(key) or {}).items():
            problems += schema_problems(sub, f"{path}/{key}/{name}")
    for key in ("items", "additionalProperties"):
        if key in schema and not isinstance(schema[key], bool):
            problems += schema_problems(schema[key], f"{path}/{key}")
    for key in ("anyOf", "allOf", "oneOf"):
        for i, sub in enumerate(schema.get(key) or []):
            problems += schema_problems(sub, f"{path}/{key}/{i}")
    if "$ref" in schema and not str(schema["$ref"]).startswith("#/"):
        problems.append(f"{path}/$ref: only references inside the schema (#/...) are supported")
    if "pattern" in schema:
        try:
            re.compile(schema["pattern"])
        except (re.error, TypeError) as exc:
            problems.append(f"{path}/pattern: not a regular expression ({exc})")
    return problems


def validate(value: Any, schema: Any, root: Any = None, path: str = "$") -> list[str]:
    """Every way `value` breaks `schema` (`$ref` resolved within `root`), or [] when it fits."""
    root = schema if root is None else root
    if schema is True or schema == {}:
        return []
    if schema is False:
        return [f"{path}: no value is allowed here"]
    if "$ref" in schema:
        return validate(value, _resolve(schema["$ref"], root), root, path)
    problems: list[str] = []
    kinds = schema.get("type")
    if kinds is not None and not any(_is(value, k) for k in (kinds if isinstance(kinds, list) else [kinds])):
        return [f"{path}: expected {' or '.join(kinds) if isinstance(kinds, list) else kinds}, got {_name(value)}"]
    if "enum" in schema and value not in schema["enum"]:
        problems.append(f"{path}: expected one of {schema['enum']!r}, got {value!r}")
    if "const" in schema and value != schema["const"]:
        problems.append(f"{path}: expected {schema['const']!r}, got {value!r}")
    if isinstance(value, dict):
        problems += _object(value, schema, root, path)
    elif isinstance(value, list):
        problems += _array(value, schema, root, path)
    elif isinstance(value, str):
        problems += _string(value, schema, path)
    elif _is(value, "number"):
        problems += _number(value, schema, path)
    for i, sub in enumerate(schema.get("allOf") or []):
        problems += validate(value, sub, root, path)
    if "anyOf" in schema and all(validate(value, sub, root, path) for sub in schema["anyOf"]):
        problems.append(f"{path}: matches none of the anyOf choices")
    if "oneOf" in schema and sum(not validate(value, sub, root, path) for sub in schema["oneOf"]) != 1:
        problems.append(f"{path}: must match exactly one of the oneOf choices")
    return problems


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
    node = root  # schema_problems refused every reference outside the schema: nothing is fetched
    for part in [p for p in ref[1:].split("/") if p]:
        node = node.get(part.replace("~1", "/").replace("~0", "~"), {}) if isinstance(node, dict) else {}
    return node


def _object(value: dict[str, Any], schema: dict[str, Any], root: Any, path: str) -> list[str]:
    problems = [f"{path}: missing required property {k!r}" for k in schema.get("required", []) if k not in value]
    props = schema.get("properties", {})
    extra = schema.get("additionalProperties", True)
    for key, item in value.items():
        if key in props:
            problems += validate(item, props[key], root, f"{path}.{key}")
        elif extra is False:
            problems.append(f"{path}: unexpected property {key!r}")
        elif isinstance(extra, dict):
            problems += validate(item, extra, root, f"{path}.{key}")
    return problems


def _array(value: list[Any], schema: dict[str, Any], root: Any, path: str) -> list[str]:
    problems = []
    if "minItems" in schema and len(value) < schema["minItems"]:
        problems.append(f"{path}: expected at least {schema['minItems']} items, got {len(value)}")
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        problems.append(f"{path}: expected at most {schema['maxItems']} items, got {len(value)}")
    if schema.get("uniqueItems") and len({repr(v) for v in value}) != len(value):
        problems.append(f"{path}: items must be unique")
    if isinstance(schema.get("items"), (dict, bool)):
        for i, item in enumerate(value):
            problems += validate(item, schema["items"], root, f"{path}[{i}]")
    return problems


def _string(value: str, schema: dict[str, Any], path: str) -> list[str]:
    problems = []
    if "minLength" in schema and len(value) < schema["minLength"]:
        problems.append(f"{path}: expected at least {schema['minLength']} characters")
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        problems.append(f"{path}: expected at most {schema['maxLength']} characters")
    if "pattern" in schema and not re.search(schema["pattern"], value):
        problems.append(f"{path}: does not match the pattern {schema['pattern']!r}")
    return problems


def _number(value: float, schema: dict[str, Any], path: str) -> list[str]:
    checks = [("minimum", lambda lim: value >= lim, ">="), ("maximum", lambda lim: value <= lim, "<="),
              ("exclusiveMinimum", lambda lim: value > lim, ">"), ("exclusiveMaximum", lambda lim: value < lim, "<")]
    return [f"{path}: expected {sign} {schema[key]}, got {value}" for key, ok, sign in checks
            if key in schema and not ok(schema[key])]
