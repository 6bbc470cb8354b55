"""BaseTool (schema, validation messages), the @tool decorator, resolve_path, the glob
translator and the loopwright.tools exports."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field

from loopwright.core.errors import ToolInputError
from loopwright.core.ports import Tool, ToolContext, ToolOutput, tool_spec
from loopwright.tools import BUILTIN_TOOL_NAMES, BaseTool, builtin_tools, resolve_path, tool
from loopwright.tools.paths import glob_regex


def walk_schema(node):
    yield node
    for key, value in node.items():
        if key in ("properties", "$defs"):
            for sub in value.values():
                yield from walk_schema(sub)
        elif isinstance(value, dict) and key not in ("default", "const"):
            yield from walk_schema(value)
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, dict):
                    yield from walk_schema(item)


class Point(BaseModel):
    model_config = ConfigDict(extra="forbid")
    x: int
    y: int = 0


class Loose(BaseModel):
    x: int


class DemoInput(BaseModel):  # a plain model: BaseTool must still forbid extra fields
    title: str = Field(description="a field named like the keyword")
    count: int | None = None
    where: Point | None = None
    loose: Loose | None = None
    mode: Literal["a", "b"] = "a"


class Demo(BaseTool):
    name = "Demo"
    description = "demo"
    Input = DemoInput


def test_builtin_tools_names_order_and_protocol():
    tools = builtin_tools()
    assert [t.name for t in tools] == list(BUILTIN_TOOL_NAMES) == ["Read", "Write", "Edit", "Bash", "Glob", "Grep",
                                                                   "BashOutput", "KillShell"]
    assert all(isinstance(t, Tool) for t in tools)
    assert [t.read_only for t in tools] == [True, False, False, False, True, True, True, False]
    assert builtin_tools()[0] is not tools[0]


@pytest.mark.parametrize("t", builtin_tools(), ids=lambda t: t.name)
def test_builtin_schemas_have_no_titles_and_forbid_extra(t):
    spec = tool_spec(t)
    assert spec["input_schema"]["type"] == "object"
    assert spec["input_schema"]["additionalProperties"] is False
    for node in walk_schema(spec["input_schema"]):
        assert "title" not in node
        assert "anyOf" not in node  # optional fields are plain types


def test_claude_code_field_names():
    schemas = {t.name: t.input_schema for t in builtin_tools()}
    props = {name: set(s["properties"]) for name, s in schemas.items()}
    assert props["Read"] == {"file_path", "offset", "limit"}
    assert props["Write"] == {"file_path", "content"}
    assert props["Edit"] == {"file_path", "old_string", "new_string", "replace_all"}
    assert props["Bash"] == {"command", "timeout", "description", "run_in_background", "dangerouslyDisableSandbox"}
    assert props["Glob"] == {"pattern", "path"}
    assert {"pattern", "path", "glob", "output_mode", "-i", "-n", "-A", "-B", "-C", "head_limit", "multiline"} <= props["Grep"]
    assert schemas["Bash"]["required"] == ["command"]
    assert schemas["Bash"]["properties"]["timeout"]["maximum"] == 600000


def test_schema_is_cleaned_and_cached():
    schema = Demo().input_schema
    assert schema is Demo().input_schema
    assert schema["properties"]["title"] == {"description": "a field named like the keyword", "type": "string"}
    assert schema["properties"]["count"] == {"type": "integer"}
    assert schema["additionalProperties"] is False
    assert schema["$defs"]["Point"]["additionalProperties"] is False
    assert "additionalProperties" not in schema["$defs"]["Loose"]  # nested models keep their own rule
    for node in walk_schema(schema):
        assert "title" not in node or isinstance(node["title"], dict)


def test_validate_lists_each_problem_in_plain_words():
    with pytest.raises(ToolInputError) as info:
        builtin_tools()[3].validate({"bogus_field": 1})
    assert str(info.value) == (
        "Invalid input for Bash:\n"
        "- command: required field is missing\n"
        "- bogus_field: unexpected field (not allowed)\n"
        "Fix the input and call the tool again."
    )


def test_validate_names_bad_values_and_nested_fields():
    with pytest.raises(ToolInputError) as info:
        Demo().validate({"title": "t", "mode": "c", "where": {"x": "nope", "z": 1}, "extra": 0})
    message = str(info.value)
    assert "- mode: must be 'a' or 'b' (got 'c')" in message
    assert "- where.x: must be a valid integer" in message
    assert "- where.z: unexpected field (not allowed)" in message
    assert "- extra: unexpected field (not allowed)" in message  # forbidden even on a plain model


def test_validate_rejects_non_object_input():
    with pytest.raises(ToolInputError, match="must be a JSON object"):
        Demo().validate(["not", "a", "dict"])  # type: ignore[arg-type]


def test_validate_returns_the_model():
    args = Demo().validate({"title": "t", "where": {"x": 1}})
    assert isinstance(args, DemoInput)
    assert args.where == Point(x=1)


# --------------------------------------------------------------------------------- @tool


@tool
async def add(a: int, b: int = 2) -> str:
    """Add two numbers."""
    return str(a + b)


@tool(name="shout", description="Upper-case a word.", read_only=True)
def shout_words(word: Annotated[str, Field(description="the word")], times: int = 1) -> str:
    return " ".join([word.upper()] * times)


@tool
def fails(reason: str) -> str:
    """Always fails."""
    raise ValueError(f"cannot do it: {reason}")


@tool
async def where(ctx: ToolContext, name: str) -> dict[str, str]:
    """Uses the context."""
    return {"cwd": str(ctx.cwd), "name": name}


def test_tool_decorator_builds_schema_from_signature():
    assert isinstance(add, Tool) and isinstance(add, BaseTool)
    assert add.name == "add" and add.description == "Add two numbers." and add.read_only is False
    assert add.input_schema == {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer", "default": 2}},
        "required": ["a"],
        "additionalProperties": False,
    }
    assert shout_words.name == "shout" and shout_words.read_only is True
    assert shout_words.description == "Upper-case a word."
    assert shout_words.input_schema["properties"]["word"] == {"type": "string", "description": "the word"}
    assert "ctx" not in where.input_schema["properties"]


@pytest.mark.anyio
async def test_tool_decorator_runs_async_and_sync(tmp_path):
    ctx = ToolContext(cwd=tmp_path)
    assert await add.run(add.validate({"a": 40}), ctx) == ToolOutput("42")
    assert await shout_words.run(shout_words.validate({"word": "hi", "times": 2}), ctx) == ToolOutput("HI HI")
    out = await where.run(where.validate({"name": "n"}), ctx)
    assert out.content == f'{{"cwd": "{tmp_path}", "name": "n"}}'


@pytest.mark.anyio
async def test_tool_decorator_exception_becomes_error_output(tmp_path):
    out = await fails.run(fails.validate({"reason": "why"}), ToolContext(cwd=tmp_path))
    assert out.is_error and out.content == "cannot do it: why"


def test_tool_decorator_validation_and_direct_call():
    with pytest.raises(ToolInputError, match="- a: must be a valid integer"):
        add.validate({"a": "x"})
    with pytest.raises(ToolInputError, match="- c: unexpected field"):
        add.validate({"a": 1, "c": 3})
    assert shout_words("yo") == "YO"


def test_tool_decorator_rejects_var_args():
    with pytest.raises(TypeError):
        tool(lambda *items: None)


# ------------------------------------------------------------------------------ paths


def test_resolve_path(tmp_path, monkeypatch):
    ctx = ToolContext(cwd=tmp_path)
    assert resolve_path("a/../b.txt", ctx) == tmp_path / "b.txt"
    assert resolve_path("/etc/./hosts", ctx) == Path("/etc/hosts")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert resolve_path("~/x", ctx) == tmp_path / "home" / "x"


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("*.py", "a.py", True),
        ("*.py", "d/a.py", False),
        ("**/*.py", "a.py", True),
        ("**/*.py", "d/e/a.py", True),
        ("src/**", "src/a/b.c", True),
        ("src/**/*.ts", "src/x.ts", True),
        ("*.{ts,tsx}", "a.tsx", True),
        ("*.{ts,tsx}", "a.js", False),
        ("file?.txt", "file1.txt", True),
        ("[ab].txt", "b.txt", True),
        ("[!ab].txt", "b.txt", False),
        ("a[.txt", "a[.txt", True),
        ("*.py", ".hidden.py", True),
    ],
)
def test_glob_regex(pattern, path, matches):
    assert bool(glob_regex(pattern).match(path)) is matches


def test_builtin_json_matches_the_tool_models():
    """The start-up copy of the built-in schemas must never drift from the pydantic models:
    regenerate with `python -m loopwright.tools.builtin`."""
    from loopwright.tools import builtin

    assert builtin.generate() == [builtin.specs()[name] for name in builtin.CLASSES]


def test_builtin_handles_load_the_real_tool_on_first_use():
    from loopwright.tools import builtin_tools

    read = builtin_tools()[0]
    assert read.name == "Read" and read.read_only and read._tool is None
    read.validate({"file_path": "x"})
    assert read._tool is not None and type(read._tool).__name__ == "ReadTool"


def test_first_request_path_does_not_import_pydantic():
    import subprocess
    import sys

    code = ("import sys, loopwright.cli.headless, loopwright.agent, loopwright.engine.loop;"
            "from loopwright.tools import builtin_tools; from loopwright.core.ports import tool_spec;"
            "[tool_spec(t) for t in builtin_tools()]; print('pydantic' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
