"""The structured-output validator: schemas checked once, values validated with every problem
named by its path."""

import pytest

from loopwright.policy.jsonschema import schema_problems, validate

PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "age": {"type": "integer", "minimum": 0},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2, "uniqueItems": True},
        "role": {"enum": ["dev", "ops"]},
        "manager": {"anyOf": [{"$ref": "#/$defs/ref"}, {"type": "null"}]},
    },
    "required": ["name", "age"],
    "additionalProperties": False,
    "$defs": {"ref": {"type": "object", "properties": {"id": {"type": "string", "pattern": "^u[0-9]+$"}},
                      "required": ["id"]}},
}


def test_a_fitting_value_has_no_problems():
    assert schema_problems(PERSON) == []
    assert validate({"name": "Ada", "age": 36, "tags": ["x"], "role": "dev", "manager": {"id": "u7"}}, PERSON) == []
    assert validate({"name": "Ada", "age": 36.0, "manager": None}, PERSON) == []  # 36.0 is an integer


@pytest.mark.parametrize(("value", "problem"), [
    ({"age": 1}, "$: missing required property 'name'"),
    ({"name": "", "age": 1}, "$.name: expected at least 1 characters"),
    ({"name": "a", "age": -1}, "$.age: expected >= 0, got -1"),
    ({"name": "a", "age": True}, "$.age: expected integer, got boolean"),
    ({"name": "a", "age": 1.5}, "$.age: expected integer, got number"),
    ({"name": "a", "age": 1, "tags": ["x", "x"]}, "$.tags: items must be unique"),
    ({"name": "a", "age": 1, "tags": ["x", 2]}, "$.tags[1]: expected string, got number"),
    ({"name": "a", "age": 1, "role": "boss"}, "$.role: expected one of ['dev', 'ops'], got 'boss'"),
    ({"name": "a", "age": 1, "manager": {"id": "x"}}, "$.manager: matches none of the anyOf choices"),
    ({"name": "a", "age": 1, "extra": 1}, "$: unexpected property 'extra'"),
    ([], "$: expected object, got array"),
])
def test_each_problem_is_named_by_its_path(value, problem):
    assert problem in validate(value, PERSON)


@pytest.mark.parametrize(("schema", "problem"), [
    ({"type": "object", "propertyNames": {}}, "#: unsupported keyword 'propertyNames'"),
    ({"type": "text"}, "#/type: unknown type 'text'"),
    ({"properties": {"a": {"type": "string", "pattern": "("}}}, "#/properties/a/pattern: not a regular expression"),
    ({"$ref": "https://example.com/s.json"}, "#/$ref: only references inside the schema"),
    ([1], "#: a schema must be an object or a boolean"),
])
def test_a_schema_that_cannot_be_enforced_is_refused(schema, problem):
    assert any(p.startswith(problem) for p in schema_problems(schema))
