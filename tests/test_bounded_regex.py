"""Patterns from outside never hang: Grep and Glob match on RE2 (linear time), the few patterns
that need backtracking run in a worker process with a deadline, Grep reads regular files only,
and output schemas refuse `$ref` cycles and patterns RE2 cannot run, and check any answer with
bounded work."""

from __future__ import annotations

import os
import socket

import pytest

from loopwright.core.ports import ToolContext
from loopwright.core.regex import PatternError, compile_re2, search
from loopwright.policy.jsonschema import MAX_VALIDATION_STEPS, schema_problems, validate
from loopwright.tools.paths import glob_regex
from loopwright.tools.search import GlobTool, GrepTool
from procs import gone

pytestmark = pytest.mark.anyio
REDOS_TEXT = "a" * 30 + "!"


async def call(tool, raw, cwd):
    return await tool.run(tool.validate(raw), ToolContext(cwd=cwd))


# ------------------------------------------------------------ the engine


@pytest.mark.parametrize(("pattern", "named"), [
    ("(?=a)b", "look-ahead"), ("a(?!b)", "negative look-ahead"), ("(?<=a)b", "look-behind"),
    ("(?<!a)b", "negative look-behind"), (r"(a)\1", "backreference"), ("(?P<x>a)(?P=x)", "named backreference"),
    ("(?>a+)b", "atomic group"), ("a++", "possessive"), (r"a\Z", r"\z"),
])
def test_what_re2_cannot_run_is_named(pattern, named):
    with pytest.raises(PatternError) as caught:
        compile_re2(pattern)
    assert caught.value.unsupported and named in str(caught.value)


@pytest.mark.parametrize("pattern", ["(", "a{2,1}", "[z-a]", "*a"])
def test_what_is_no_pattern_at_all_says_so(pattern):
    with pytest.raises(PatternError, match="not a regular expression") as caught:
        compile_re2(pattern)
    assert not caught.value.unsupported


@pytest.mark.parametrize("pattern", [r"^(a+)+$", r"^(a|a)+$", r"^(a|aa)+$", r"(x+x+)+y", r"^(\w+\s?)*$"])
def test_catastrophic_patterns_match_in_linear_time(pattern):
    assert not search(compile_re2(pattern), REDOS_TEXT * 1000)  # Python's re: 2**30 steps and more


def test_text_with_lone_surrogates_is_searched_not_an_error():
    assert search(compile_re2("x"), "\ud800x\udcff") and not search(compile_re2("^y"), "\ud800")


# ------------------------------------------------------------ Grep and Glob


@pytest.mark.parametrize("pattern", [r"^(a+)+$", r"^(a|aa)+$", r"(\w+\s?)*!x"])
async def test_grep_with_a_redos_pattern_ends_with_its_answer(tmp_path, pattern):
    (tmp_path / "a.txt").write_text(REDOS_TEXT + "\n" + REDOS_TEXT * 50 + "\n")
    out = await call(GrepTool(), {"pattern": pattern}, tmp_path)
    assert out.content == "No matches found" and not out.is_error


async def test_grep_skips_fifos_sockets_and_devices(tmp_path):
    (tmp_path / "a.txt").write_text("needle\n")
    os.mkfifo(tmp_path / "pipe")  # opened for reading, it would wait for a writer for ever
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(tmp_path / "sock"))
    os.symlink("/dev/zero", tmp_path / "zero")  # reading it would never end
    os.symlink(tmp_path / "pipe", tmp_path / "link-to-pipe")
    try:
        for raw in ({"pattern": "needle"}, {"pattern": "needle", "path": "pipe"}, {"pattern": "needle", "glob": "*"},
                    {"pattern": "(?=needle)", "output_mode": "count"}):
            out = await call(GrepTool(), raw, tmp_path)
            assert out.content in (f"Found 1 files\n{tmp_path / 'a.txt'}", "No matches found", f"{tmp_path / 'a.txt'}:1")
    finally:
        server.close()


async def test_patterns_re2_cannot_run_use_the_backtracking_worker(tmp_path):
    (tmp_path / "a.txt").write_text("foobar\nfoobaz\nabab\n")
    out = await call(GrepTool(), {"pattern": "foo(?=baz)", "output_mode": "content"}, tmp_path)
    assert out.content == f"{tmp_path / 'a.txt'}:2:foobaz"
    out = await call(GrepTool(), {"pattern": r"(ab)\1", "output_mode": "count"}, tmp_path)
    assert out.content == f"{tmp_path / 'a.txt'}:1"


def grep_workers() -> list[int]:
    """Live Grep worker processes this test process started."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = open(f"/proc/{pid}/cmdline", "rb").read()
            ppid = int(open(f"/proc/{pid}/stat", "rb").read().rpartition(b")")[2].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if b"grepworker.py" in cmdline and ppid == os.getpid() and not gone(int(pid), within=0):
            found.append(int(pid))
    return found


async def test_a_backtracking_pattern_that_runs_too_long_is_the_calls_error(tmp_path):
    (tmp_path / "a.txt").write_text(REDOS_TEXT + "\n")
    grep = GrepTool()
    grep.timeout_s = 1.0
    out = await call(grep, {"pattern": r"^(a+)+(?!x)$"}, tmp_path)  # minutes on the worker's backtracking re
    assert out.is_error and "stopped after 1 s" in out.content and "negative look-ahead" in out.content
    assert grep_workers() == []  # killed with the call


async def test_a_file_too_big_to_search_is_skipped_and_counted(tmp_path):
    (tmp_path / "small.txt").write_text("needle\n")
    with open(tmp_path / "huge.txt", "wb") as f:  # sparse: no disk used
        f.truncate((64 << 20) + 1)
    out = await call(GrepTool(), {"pattern": "needle"}, tmp_path)
    assert out.content.splitlines() == ["Found 1 files", str(tmp_path / "small.txt"),
                                        "(1 file over 64 MiB not searched.)"]


async def test_names_that_are_not_utf8_are_found_and_shown_escaped(tmp_path):
    name = os.fsdecode(b"caf\xe9-\xff.txt")
    (tmp_path / name).write_text("needle\n")
    glob = await call(GlobTool(), {"pattern": "caf*.txt"}, tmp_path)
    grep = await call(GrepTool(), {"pattern": "needle", "output_mode": "content"}, tmp_path)
    assert glob.content == str(tmp_path / name) and grep.content == f"{tmp_path / name}:1:needle"
    # the loop makes them sendable (engine.dispatch), as the model sees them:
    from loopwright.core.jsonsafe import valid_text

    assert valid_text(grep.content).endswith("caf\\xe9-\\xff.txt:1:needle")


@pytest.mark.parametrize("glob", ["*a" * 12 + "*b", "*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*[b]", "**/" + "*a" * 10 + "?b"])
async def test_globs_match_in_linear_time(tmp_path, glob):
    (tmp_path / ("a" * 200 + "c")).write_text("needle\n")
    assert (await call(GlobTool(), {"pattern": glob}, tmp_path)).content == "No files found"
    out = await call(GrepTool(), {"pattern": "needle", "glob": glob}, tmp_path)
    assert out.content == "No matches found"


@pytest.mark.parametrize(("glob", "yes", "no"), [
    ("[a-c]x", ["ax", "cx"], ["dx", "/x"]), ("[!a]x", ["bx"], ["ax", "/x"]), ("[%-0]", ["%", ".", "0"], ["/"]),
    ("a b#~(x).py", ["a b#~(x).py"], ["a b#~(x)xpy"]), ("**/*.py", ["a/b/c.py", "c.py"], ["a/c.pyx"]),
])
def test_globs_keep_their_meaning_on_re2(glob, yes, no):
    assert all(glob_regex(glob).match(p) for p in yes) and not any(glob_regex(glob).match(p) for p in no)


# ------------------------------------------------------------ output schemas


TREE = {"$defs": {"node": {"type": "object", "required": ["v"], "additionalProperties": False,
                           "properties": {"v": {"type": "integer"},
                                          "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}},
                                          "next": {"anyOf": [{"$ref": "#/$defs/node"}, {"type": "null"}]}}}},
        "$ref": "#/$defs/node"}


def chain(depth, key="next", leaf=None):
    value = leaf
    for i in range(depth):
        value = {"v": i, key: value} if key == "next" else {"v": i, "kids": [value] if value else []}
    return value


@pytest.mark.parametrize("schema", [
    {"$ref": "#"},
    {"allOf": [{"$ref": "#"}]},
    {"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"anyOf": [{"type": "null"}, {"$ref": "#/$defs/a"}]}},
     "$ref": "#/$defs/a"},
    {"type": "object", "properties": {"x": {"$defs": {"l": {"oneOf": [{"$ref": "#/properties/x"}]}},
                                            "$ref": "#/properties/x/$defs/l"}}},
])
def test_ref_cycles_that_never_reach_a_value_are_refused(schema):
    assert any("without going into a property or an item" in p for p in schema_problems(schema))


def test_a_dangling_ref_is_refused_and_recursive_trees_are_fine():
    assert schema_problems({"$ref": "#/$defs/none"}) == ["#/$ref: #/$defs/none points to nothing in the schema"]
    assert schema_problems(TREE) == []


@pytest.mark.parametrize(("depth", "key"), [(400, "next"), (400, "kids"), (5_000, "next")])
def test_deep_answers_to_a_tree_schema_are_checked(depth, key):
    assert validate(chain(depth, key), TREE) == []
    wrong = chain(depth, key, leaf={"v": "not a number"})
    assert validate(wrong, TREE)  # a problem is found, however deep


def test_choices_that_rewalk_the_same_subtree_are_bounded():
    twice = {"$defs": {"n": {"oneOf": [{"type": "object", "properties": {"c": {"$ref": "#/$defs/n"}}},
                                       {"type": "object", "properties": {"c": {"$ref": "#/$defs/n"}}}]}},
             "$ref": "#/$defs/n"}
    value: dict = {}
    for _ in range(60):
        value = {"c": value}
    assert validate(value, twice) == [f"$: too large or too deeply nested to check against this schema (over "
                                      f"{MAX_VALIDATION_STEPS:,} checks); give a smaller answer"]


@pytest.mark.parametrize("pattern", [r"^(a+)+$", r"^(a|a)+$", r"^([a-z]+)*[0-9]$"])
def test_a_redos_schema_pattern_checks_an_answer_in_linear_time(pattern):
    schema = {"type": "object", "properties": {"s": {"type": "string", "pattern": pattern}}}
    assert schema_problems(schema) == []
    assert validate({"s": REDOS_TEXT * 100}, schema) == [f"$.s: does not match the pattern {pattern!r}"]


@pytest.mark.parametrize(("pattern", "named"), [("(?=x)", "look-ahead"), (r"(a)\1", "backreference"),
                                                ("(?<!x)y", "negative look-behind")])
def test_schema_patterns_re2_cannot_run_are_refused_at_start(pattern, named):
    problems = schema_problems({"type": "string", "pattern": pattern})
    assert len(problems) == 1 and named in problems[0] and "linear-time engine" in problems[0]


@pytest.mark.parametrize(("schema", "problem"), [
    ({"type": "string", "minLength": "x"}, "#/minLength: expected a whole number >= 0, got string"),
    ({"enum": 5}, "#/enum: expected an array, got number"),
    ({"type": "object", "required": [1]}, "#/required: expected an array of strings, got array"),
    ({"type": "object", "properties": []}, "#/properties: expected an object, got array"),
])
def test_malformed_keyword_values_are_refused_at_start(schema, problem):
    assert problem in schema_problems(schema)
