"""Glob and Grep."""

from __future__ import annotations

import os

import pytest

from loopwright.core.ports import ToolContext
from loopwright.tools.search import GlobTool, GrepTool

pytestmark = pytest.mark.anyio


async def call(t, raw, cwd):
    return await t.run(t.validate(raw), ToolContext(cwd=cwd))


def make(root, files: dict[str, str], base_mtime: int = 1_000_000) -> None:
    """Create files; later entries get later modification times."""
    for i, (rel, text) in enumerate(files.items()):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        os.utime(path, (base_mtime + i, base_mtime + i))


# ---------------------------------------------------------------------------------------- Glob


async def test_glob_recursive_newest_first(tmp_path):
    make(tmp_path, {"old.py": "", "pkg/mid.py": "", "pkg/deep/new.py": "", "notes.txt": ""})
    out = await call(GlobTool(), {"pattern": "**/*.py"}, tmp_path)
    assert out.content.split("\n") == [
        str(tmp_path / "pkg/deep/new.py"),
        str(tmp_path / "pkg/mid.py"),
        str(tmp_path / "old.py"),
    ]


async def test_glob_single_level_and_path(tmp_path):
    make(tmp_path, {"a.py": "", "sub/b.py": "", "sub/c.txt": ""})
    top = await call(GlobTool(), {"pattern": "*.py"}, tmp_path)
    assert top.content == str(tmp_path / "a.py")
    sub = await call(GlobTool(), {"pattern": "*.py", "path": "sub"}, tmp_path)
    assert sub.content == str(tmp_path / "sub/b.py")
    prefixed = await call(GlobTool(), {"pattern": "sub/*.{py,txt}"}, tmp_path)
    assert set(prefixed.content.split("\n")) == {str(tmp_path / "sub/b.py"), str(tmp_path / "sub/c.txt")}


async def test_glob_absolute_pattern(tmp_path):
    make(tmp_path, {"x/a.md": ""})
    out = await call(GlobTool(), {"pattern": f"{tmp_path}/**/*.md"}, tmp_path / "x")
    assert out.content == str(tmp_path / "x/a.md")


async def test_glob_caps_at_100_newest(tmp_path):
    make(tmp_path, {f"f{i:03}.txt": "" for i in range(120)})
    out = await call(GlobTool(), {"pattern": "*.txt"}, tmp_path)
    lines = out.content.split("\n")
    assert len(lines) == 101
    assert lines[0] == str(tmp_path / "f119.txt") and lines[99] == str(tmp_path / "f020.txt")
    assert "100" in lines[100] and "120" in lines[100]


async def test_glob_no_match_and_skips_vcs(tmp_path):
    make(tmp_path, {".git/config.py": ""})
    out = await call(GlobTool(), {"pattern": "**/*.py"}, tmp_path)
    assert out.content == "No files found" and not out.is_error


async def test_glob_missing_path(tmp_path):
    out = await call(GlobTool(), {"pattern": "*", "path": "nowhere"}, tmp_path)
    assert out.is_error and "does not exist" in out.content


# ---------------------------------------------------------------------------------------- Grep


@pytest.fixture
def tree(tmp_path):
    make(
        tmp_path,
        {
            "a.py": "import os\nx = 1\nprint(x)\n",
            "b.py": "def f():\n    return 'Hello'\n",
            "docs/readme.md": "hello world\nsecond line\nthird\nhello again\n",
            ".git/objects": "hello from git\n",
        },
    )
    (tmp_path / "bin.dat").write_bytes(b"hello\x00binary")
    return tmp_path


async def test_grep_files_with_matches_default_newest_first(tree):
    out = await call(GrepTool(), {"pattern": "hello", "-i": True}, tree)
    assert out.content.split("\n") == ["Found 2 files", str(tree / "docs/readme.md"), str(tree / "b.py")]


async def test_grep_is_case_sensitive_by_default(tree):
    out = await call(GrepTool(), {"pattern": "Hello"}, tree)
    assert out.content.split("\n") == ["Found 1 files", str(tree / "b.py")]


async def test_grep_content_mode(tree):
    out = await call(GrepTool(), {"pattern": "hello", "output_mode": "content"}, tree)
    md = tree / "docs/readme.md"
    assert out.content.split("\n") == [f"{md}:1:hello world", f"{md}:4:hello again"]
    plain = await call(GrepTool(), {"pattern": "hello", "output_mode": "content", "-n": False}, tree)
    assert plain.content.split("\n") == [f"{md}:hello world", f"{md}:hello again"]


async def test_grep_context_lines(tree):
    md = tree / "docs/readme.md"
    after = await call(GrepTool(), {"pattern": "world", "output_mode": "content", "-A": 1}, tree)
    assert after.content.split("\n") == [f"{md}:1:hello world", f"{md}-2-second line"]
    around = await call(GrepTool(), {"pattern": "^hello", "output_mode": "content", "-C": 1, "path": "docs"}, tree)
    assert around.content.split("\n") == [
        f"{md}:1:hello world",
        f"{md}-2-second line",
        f"{md}-3-third",
        f"{md}:4:hello again",
    ]
    before = await call(GrepTool(), {"pattern": "second|again", "output_mode": "content", "-B": 0, "-C": 5, "path": str(md)}, tree)
    assert before.content.split("\n") == [f"{md}:2:second line", f"{md}-3-third", f"{md}:4:hello again"]


async def test_grep_group_separator(tmp_path):
    make(tmp_path, {"f.txt": "m\n1\n2\n3\n4\nm\n"})
    out = await call(GrepTool(), {"pattern": "m", "output_mode": "content", "-A": 1}, tmp_path)
    f = tmp_path / "f.txt"
    assert out.content.split("\n") == [f"{f}:1:m", f"{f}-2-1", "--", f"{f}:6:m"]


async def test_grep_count_mode(tree):
    out = await call(GrepTool(), {"pattern": "hello|x", "output_mode": "count"}, tree)
    assert out.content.split("\n") == [f"{tree / 'a.py'}:2", f"{tree / 'docs/readme.md'}:2"]


async def test_grep_glob_and_type_filters(tree):
    by_name = await call(GrepTool(), {"pattern": ".", "glob": "*.md"}, tree)
    assert by_name.content.split("\n")[1:] == [str(tree / "docs/readme.md")]
    by_path = await call(GrepTool(), {"pattern": ".", "glob": "docs/**"}, tree)
    assert by_path.content.split("\n")[1:] == [str(tree / "docs/readme.md")]
    braces = await call(GrepTool(), {"pattern": "x", "glob": "*.{py,md}"}, tree)
    assert braces.content.split("\n")[1:] == [str(tree / "a.py")]
    by_type = await call(GrepTool(), {"pattern": ".", "type": "py"}, tree)
    assert set(by_type.content.split("\n")[1:]) == {str(tree / "a.py"), str(tree / "b.py")}
    unknown = await call(GrepTool(), {"pattern": ".", "type": "cobol"}, tree)
    assert unknown.is_error and "Known types" in unknown.content


async def test_grep_skips_binary_and_vcs(tree):
    out = await call(GrepTool(), {"pattern": "hello", "output_mode": "count"}, tree)
    assert "bin.dat" not in out.content and ".git" not in out.content


async def test_grep_invalid_regex(tree):
    out = await call(GrepTool(), {"pattern": "foo(bar"}, tree)
    assert out.is_error and "'foo(bar'" in out.content and "missing )" in out.content


async def test_grep_no_matches(tree):
    out = await call(GrepTool(), {"pattern": "zzz"}, tree)
    assert out.content == "No matches found" and not out.is_error


async def test_grep_head_limit_default_and_explicit(tmp_path):
    make(tmp_path, {"many.txt": "hit\n" * 300})
    out = await call(GrepTool(), {"pattern": "hit", "output_mode": "content"}, tmp_path)
    lines = out.content.split("\n")
    assert len(lines) == 251 and "1-250 of 300" in lines[-1] and "offset=250" in lines[-1]
    small = await call(GrepTool(), {"pattern": "hit", "output_mode": "content", "head_limit": 2, "offset": 5}, tmp_path)
    assert small.content.split("\n")[:2] == [f"{tmp_path / 'many.txt'}:6:hit", f"{tmp_path / 'many.txt'}:7:hit"]
    unlimited = await call(GrepTool(), {"pattern": "hit", "output_mode": "content", "head_limit": 0}, tmp_path)
    assert len(unlimited.content.split("\n")) == 300


async def test_grep_multiline(tmp_path):
    make(tmp_path, {"f.py": "def f(\n    a,\n):\n    pass\n"})
    out = await call(GrepTool(), {"pattern": r"def f\(.*?\):", "multiline": True, "output_mode": "content"}, tmp_path)
    f = tmp_path / "f.py"
    assert out.content.split("\n") == [f"{f}:1:def f(", f"{f}:2:    a,", f"{f}:3:):"]
    single = await call(GrepTool(), {"pattern": r"def f\(.*?\):"}, tmp_path)
    assert single.content == "No matches found"


async def test_grep_missing_path(tmp_path):
    out = await call(GrepTool(), {"pattern": "x", "path": "nowhere"}, tmp_path)
    assert out.is_error and "does not exist" in out.content
