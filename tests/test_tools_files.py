"""Read, Write and Edit."""

from __future__ import annotations

import os
import stat

import pytest

from loopwright.core.ports import ToolContext
from loopwright.tools.files import EditTool, ReadTool, WriteTool

pytestmark = pytest.mark.anyio


async def call(t, raw, cwd, **ctx):
    return await t.run(t.validate(raw), ToolContext(cwd=cwd, **ctx))


# ---------------------------------------------------------------------------------------- Read


async def test_read_numbers_lines_like_cat_n(tmp_path):
    (tmp_path / "f.txt").write_text("alpha\nbeta\r\n\ngamma")
    out = await call(ReadTool(), {"file_path": "f.txt"}, tmp_path)
    assert not out.is_error
    assert out.content == "     1\talpha\n     2\tbeta\n     3\t\n     4\tgamma"


async def test_read_offset_limit_and_remaining_note(tmp_path):
    (tmp_path / "f.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    out = await call(ReadTool(), {"file_path": str(tmp_path / "f.txt"), "offset": 3, "limit": 2}, tmp_path)
    body, note = out.content.split("\n\n")
    assert body == "     3\tline 3\n     4\tline 4"
    assert "6 more lines" in note and "offset=5" in note


async def test_read_default_limit_is_2000_lines(tmp_path):
    (tmp_path / "big.txt").write_text("x\n" * 2500)
    out = await call(ReadTool(), {"file_path": "big.txt"}, tmp_path)
    lines = out.content.split("\n")
    assert lines[1999] == "  2000\tx"
    assert "500 more lines" in out.content and "offset=2001" in out.content


async def test_read_offset_past_end(tmp_path):
    (tmp_path / "f.txt").write_text("a\nb\n")
    out = await call(ReadTool(), {"file_path": "f.txt", "offset": 9}, tmp_path)
    assert not out.is_error and "has 2 lines" in out.content


async def test_read_truncates_long_lines(tmp_path):
    (tmp_path / "f.txt").write_text("y" * 2500 + "\nshort\n")
    out = await call(ReadTool(), {"file_path": "f.txt"}, tmp_path)
    first, second = out.content.split("\n")
    assert first.startswith("     1\t" + "y" * 2000) and "y" * 2001 not in first
    assert "line truncated: 2500 characters" in first
    assert second == "     2\tshort"


async def test_read_missing_file(tmp_path):
    out = await call(ReadTool(), {"file_path": "nope.txt"}, tmp_path)
    assert out.is_error
    assert out.content.startswith(f"File does not exist: {tmp_path / 'nope.txt'} (cwd: {tmp_path})")


async def test_read_directory(tmp_path):
    out = await call(ReadTool(), {"file_path": "."}, tmp_path)
    assert out.is_error and "directory" in out.content and "Glob" in out.content and "ls" in out.content


async def test_read_binary(tmp_path):
    (tmp_path / "b.bin").write_bytes(b"\x89PNG\x00\x01\x02")
    out = await call(ReadTool(), {"file_path": "b.bin"}, tmp_path)
    assert out.is_error and "binary" in out.content


async def test_read_empty_file(tmp_path):
    (tmp_path / "e.txt").write_text("")
    out = await call(ReadTool(), {"file_path": "e.txt"}, tmp_path)
    assert not out.is_error and "empty" in out.content


async def test_read_invalid_utf8_is_replaced(tmp_path):
    (tmp_path / "l.txt").write_bytes(b"caf\xe9\n")
    out = await call(ReadTool(), {"file_path": "l.txt"}, tmp_path)
    assert out.content == "     1\tcaf\ufffd"


# --------------------------------------------------------------------------------------- Write


async def test_write_creates_with_parent_dirs(tmp_path):
    out = await call(WriteTool(), {"file_path": "a/b/c.txt", "content": "héllo\n"}, tmp_path)
    target = tmp_path / "a" / "b" / "c.txt"
    assert not out.is_error
    assert out.content == f"Wrote 7 bytes to {target} (created new file)."
    assert target.read_text() == "héllo\n"
    assert [p.name for p in target.parent.iterdir()] == ["c.txt"]  # no temp file left behind


async def test_write_overwrites_and_keeps_mode(tmp_path):
    target = tmp_path / "run.sh"
    target.write_text("old")
    target.chmod(0o751)
    out = await call(WriteTool(), {"file_path": str(target), "content": "new"}, tmp_path)
    assert "overwrote" in out.content and "Wrote 3 bytes" in out.content
    assert target.read_text() == "new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o751


async def test_write_new_file_follows_umask(tmp_path):
    old = os.umask(0o022)
    try:
        await call(WriteTool(), {"file_path": "n.txt", "content": ""}, tmp_path)
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "n.txt").stat().st_mode) == 0o644


async def test_write_through_symlink_updates_target(tmp_path):
    (tmp_path / "real.txt").write_text("a")
    (tmp_path / "link.txt").symlink_to(tmp_path / "real.txt")
    await call(WriteTool(), {"file_path": "link.txt", "content": "b"}, tmp_path)
    assert (tmp_path / "link.txt").is_symlink() and (tmp_path / "real.txt").read_text() == "b"


async def test_write_to_directory_is_error(tmp_path):
    out = await call(WriteTool(), {"file_path": ".", "content": "x"}, tmp_path)
    assert out.is_error and "directory" in out.content


# ---------------------------------------------------------------------------------------- Edit


async def test_edit_unique_match(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("def a():\n    return 1\n\ndef b():\n    return 2\n")
    f.chmod(0o700)
    out = await call(EditTool(), {"file_path": "m.py", "old_string": "return 2", "new_string": "return 3\n    # done"}, tmp_path)
    assert not out.is_error
    assert f.read_text() == "def a():\n    return 1\n\ndef b():\n    return 3\n    # done\n"
    assert "replaced 1 occurrence" in out.content
    assert "     5\t    return 3\n     6\t    # done" in out.content
    assert "     2\t    return 1" in out.content  # context before the change
    assert stat.S_IMODE(f.stat().st_mode) == 0o700


async def test_edit_not_found(tmp_path):
    (tmp_path / "m.txt").write_text("hello world\n")
    out = await call(EditTool(), {"file_path": "m.txt", "old_string": "hello  world", "new_string": "x"}, tmp_path)
    assert out.is_error and "not found" in out.content and "Read the file first" in out.content
    assert "whitespace" in out.content


async def test_edit_multiple_matches_needs_replace_all(tmp_path):
    f = tmp_path / "m.txt"
    f.write_text("x = 1\nx = 1\nx = 1\n")
    out = await call(EditTool(), {"file_path": "m.txt", "old_string": "x = 1", "new_string": "x = 2"}, tmp_path)
    assert out.is_error and "3 times" in out.content
    assert "add more surrounding context" in out.content and "replace_all" in out.content
    assert f.read_text() == "x = 1\nx = 1\nx = 1\n"


async def test_edit_replace_all(tmp_path):
    f = tmp_path / "m.txt"
    f.write_text("x = 1\nx = 1\nx = 1\n")
    out = await call(EditTool(), {"file_path": "m.txt", "old_string": "1", "new_string": "2", "replace_all": True}, tmp_path)
    assert not out.is_error and "replaced 3 occurrences" in out.content
    assert f.read_text() == "x = 2\nx = 2\nx = 2\n"


async def test_edit_same_strings_and_empty_old(tmp_path):
    (tmp_path / "m.txt").write_text("a\n")
    same = await call(EditTool(), {"file_path": "m.txt", "old_string": "a", "new_string": "a"}, tmp_path)
    assert same.is_error and "identical" in same.content
    empty = await call(EditTool(), {"file_path": "m.txt", "old_string": "", "new_string": "b"}, tmp_path)
    assert empty.is_error and "empty" in empty.content


async def test_edit_missing_file(tmp_path):
    out = await call(EditTool(), {"file_path": "no.txt", "old_string": "a", "new_string": "b"}, tmp_path)
    assert out.is_error and out.content.startswith("File does not exist") and "Write" in out.content


async def test_edit_crlf_file_with_lf_old_string(tmp_path):
    f = tmp_path / "w.txt"
    f.write_bytes(b"one\r\ntwo\r\nthree\r\n")
    out = await call(EditTool(), {"file_path": "w.txt", "old_string": "one\ntwo", "new_string": "1\n2"}, tmp_path)
    assert not out.is_error
    assert f.read_bytes() == b"1\r\n2\r\nthree\r\n"


async def test_edit_binary_file_is_refused(tmp_path):
    (tmp_path / "b.bin").write_bytes(b"a\x00b")
    out = await call(EditTool(), {"file_path": "b.bin", "old_string": "a", "new_string": "c"}, tmp_path)
    assert out.is_error and "binary" in out.content
