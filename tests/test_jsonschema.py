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
    ({"type": "string", "format": "colour"}, "#/format: unsupported format 'colour'; expected one of date-time"),
    ({"type": "string", "format": ["date"]}, "#/format: unsupported format ['date']"),
])
def test_a_schema_that_cannot_be_enforced_is_refused(schema, problem):
    assert any(p.startswith(problem) for p in schema_problems(schema))


@pytest.mark.parametrize(("fmt", "good", "bad"), [
    ("date-time", ["2026-12-04T02:10:00Z", "2026-12-04t02:10:00.5+01:00"], ["2026-12-04 02:10", "2026-02-30T00:00:00Z"]),
    ("date", ["2024-02-29"], ["2023-02-29", "04/12/2026", "2026-1-4"]),
    ("time", ["23:59:60Z", "08:00:00+05:30"], ["8:00", "24:00:00Z"]),
    ("email", ["a.b+c@example.org"], ["no-at.example.org", "a@-bad-.org", "a b@x.org"]),
    ("uri", ["https://example.org/x?y=1", "urn:isbn:0451450523"], ["/relative/path", "has space:x y"]),
    ("uuid", ["123e4567-e89b-12d3-a456-426614174000"], ["123e4567e89b12d3a456426614174000"]),
    ("ipv4", ["192.168.0.1"], ["256.1.1.1", "::1"]),
    ("ipv6", ["::1", "fe80::1"], ["192.168.0.1", "fe80:::1"]),
    ("hostname", ["example.org", "localhost"], ["-x.org", "a..b", "x" * 64]),
])
def test_a_format_is_enforced_not_only_accepted(fmt, good, bad):
    schema = {"type": "string", "format": fmt}
    assert schema_problems(schema) == []
    assert [validate(v, schema) for v in good] == [[] for _ in good]
    for value in bad:
        assert validate(value, schema) == [f"$: expected a {fmt} string, got {value!r}"], value
    assert validate(7, {"format": fmt}) == []  # a format speaks of strings only


@pytest.mark.parametrize("value", [
    {"name": "Ada", "age": 36, "tags": ["x"], "role": "dev", "manager": {"id": "u7"}}, {"name": "Ada", "age": 36.0},
    {"age": 1}, {"name": "", "age": 1}, {"name": "a", "age": -1}, {"name": "a", "age": True}, {"name": "a", "age": 1.5},
    {"name": "a", "age": 1, "tags": ["x", "x"]}, {"name": "a", "age": 1, "tags": ["x", 2]},
    {"name": "a", "age": 1, "tags": ["x", "y", "z"]}, {"name": "a", "age": 1, "role": "boss"},
    {"name": "a", "age": 1, "manager": {"id": "x"}}, {"name": "a", "age": 1, "manager": {"id": "u1"}},
    {"name": "a", "age": 1, "extra": 1}, [], None, "Ada",
])
def test_the_verdict_is_the_reference_validators(value):
    # jsonschema's Draft 2020-12 validator as the oracle for shallow values; loopwright keeps its
    # own walk because the reference one recurses per level (a RecursionError at ~200 levels of an
    # answer, where 400 and 5,000 must be checked) and has no bound on anyOf/oneOf re-walks
    from jsonschema import Draft202012Validator

    assert (validate(value, PERSON) == []) == Draft202012Validator(PERSON).is_valid(value)
