"""The file tools, with Claude Code's names and fields: Read (numbered, paged lines), Write
(atomic, mode kept) and Edit (exact, unique string replacement). Each acts where the permission
gate judged its path, on regular files only (see `fileio`)."""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import Field

from ..core.ports import ToolContext, ToolOutput
from .access import ACCESS
from .base import BaseTool, ToolInput, in_thread
from .fileio import Refused, landing, open_regular, write_bytes
from .paths import BINARY_SNIFF_BYTES, is_binary, resolve_path

DEFAULT_READ_LIMIT = 2000
MAX_LINE_CHARS = 2000
SNIPPET_CONTEXT = 3
SNIPPET_MAX_LINES = 24


def number_lines(lines: list[str], first: int, max_chars: int = MAX_LINE_CHARS) -> str:
    """`cat -n` style: a 6-wide right-aligned number, a tab, the text (long lines cut)."""
    out = []
    for n, text in enumerate(lines, start=first):
        if len(text) > max_chars:
            text = f"{text[:max_chars]}... [line truncated: {len(text)} characters]"
        out.append(f"{n:>6}\t{text}")
    return "\n".join(out)


def missing_file(path: Path, ctx: ToolContext, hint: str = "use Glob to find the file") -> ToolOutput:
    return ToolOutput(
        f"File does not exist: {path} (cwd: {ctx.cwd}). Check the path, or {hint}.",
        is_error=True,
    )


def os_error(verb: str, path: Path, exc: OSError) -> ToolOutput:
    reason = exc.strerror or type(exc).__name__
    return ToolOutput(f"Cannot {verb} {path}: {reason}.", is_error=True)


def refused(verb: str, path: Path, exc: Refused) -> ToolOutput:
    return ToolOutput(f"Cannot {verb} {path}: {exc}", is_error=True)


# ---------------------------------------------------------------------------------------- Read


_PATH_HELP = "(absolute, or relative to the working directory)"


class ReadInput(ToolInput):
    file_path: str = Field(description=f"Path of the file to read {_PATH_HELP}.")
    offset: int | None = Field(
        default=None,
        ge=0,
        description="Line number to start at (1 = first line). Use it for files too long to "
        "read at once.",
    )
    limit: int | None = Field(
        default=None, ge=1, description=f"How many lines to read (default {DEFAULT_READ_LIMIT})."
    )


class ReadTool(BaseTool):
    name = "Read"
    access = staticmethod(ACCESS["Read"])  # what a call touches, for the permission gate
    read_only = True
    Input = ReadInput
    description = (
        "Read a text file from the local filesystem. Returns the lines numbered like `cat -n` "
        f"(number, tab, text). Reads up to {DEFAULT_READ_LIMIT} lines from the start by default; "
        "pass offset and limit to page through longer files. Lines longer than "
        f"{MAX_LINE_CHARS} characters are cut. Read a file before editing it. To list a "
        "directory use Glob or Bash `ls`."
    )

    async def run(self, args: ReadInput, ctx: ToolContext) -> ToolOutput:
        path = resolve_path(args.file_path, ctx)
        offset = max(args.offset or 1, 1)  # 0 is read as "from the start"
        limit = args.limit or DEFAULT_READ_LIMIT
        try:
            return await in_thread(_read_lines, landing(args.file_path, ctx), path, offset, limit)
        except Refused as exc:
            return refused("read", path, exc)
        except IsADirectoryError:
            return ToolOutput(
                f"{path} is a directory, not a file. Use Glob to find files in it, or Bash `ls`.",
                is_error=True,
            )
        except FileNotFoundError:
            return missing_file(path, ctx)
        except OSError as exc:
            return os_error("read", path, exc)


def _read_lines(real: str, path: Path, offset: int, limit: int) -> ToolOutput:
    shown: list[str] = []
    total = 0
    with open_regular(real) as f:
        if is_binary(f.read(BINARY_SNIFF_BYTES)):
            return ToolOutput(
                f"{path} is a binary file; Read shows text files only. "
                "Use Bash (e.g. `file`, `xxd | head`) to inspect it.",
                is_error=True,
            )
        f.seek(0)
        for raw in f:  # counts every line, keeps only the requested window
            total += 1
            if offset <= total < offset + limit:
                shown.append(raw.decode("utf-8", errors="replace").rstrip("\n").rstrip("\r"))
    if total == 0:
        return ToolOutput(f"(The file {path} exists but is empty.)")
    if not shown:
        return ToolOutput(
            f"(The file {path} has {total} lines; offset {offset} is past the end. "
            f"Use an offset between 1 and {total}.)"
        )
    text = number_lines(shown, offset)
    last = offset + len(shown) - 1
    if last < total:
        text += (
            f"\n\n(Showing lines {offset}-{last} of {total}; {total - last} more lines not shown. "
            f"Call Read with offset={last + 1} to continue.)"
        )
    return ToolOutput(text, response={"type": "text", "file": {
        "filePath": str(path), "content": "\n".join(shown), "numLines": len(shown), "startLine": offset,
        "totalLines": total}})


# --------------------------------------------------------------------------------------- Write


class WriteInput(ToolInput):
    file_path: str = Field(description=f"Path of the file to write {_PATH_HELP}.")
    content: str = Field(description="The complete new content of the file.")


class WriteTool(BaseTool):
    name = "Write"
    access = staticmethod(ACCESS["Write"])  # what a call touches, for the permission gate
    read_only = False
    Input = WriteInput
    description = (
        "Write a file, replacing it entirely if it exists; missing parent directories are "
        "created. Prefer Edit for changing part of an existing file, and Read an existing file "
        "before overwriting it."
    )

    async def run(self, args: WriteInput, ctx: ToolContext) -> ToolOutput:
        path = resolve_path(args.file_path, ctx)
        data = args.content.encode("utf-8", errors="replace")
        try:
            real = landing(args.file_path, ctx)
            if ctx.before_write is not None:
                await in_thread(ctx.before_write, real)
            existed = await in_thread(write_bytes, real, data)
        except Refused as exc:
            return refused("write", path, exc)
        except IsADirectoryError:
            return ToolOutput(f"{path} is a directory; give the path of a file.", is_error=True)
        except OSError as exc:
            return os_error("write", path, exc)
        how = "overwrote existing file" if existed else "created new file"
        return ToolOutput(f"Wrote {len(data)} bytes to {path} ({how}).", response={
            "type": "update" if existed else "create", "filePath": str(path), "content": args.content,
            "structuredPatch": [], "originalFile": None})


# ---------------------------------------------------------------------------------------- Edit


class EditInput(ToolInput):
    file_path: str = Field(description=f"Path of the file to change {_PATH_HELP}.")
    old_string: str = Field(
        description="The exact text to replace, including whitespace and indentation."
    )
    new_string: str = Field(
        description="The text to put in its place (must differ from old_string)."
    )
    replace_all: bool = Field(
        default=False, description="Replace every occurrence of old_string (default false)."
    )


class EditTool(BaseTool):
    name = "Edit"
    access = staticmethod(ACCESS["Edit"])  # what a call touches, for the permission gate
    read_only = False
    Input = EditInput
    description = (
        "Replace exact text in a file. old_string must match the file exactly (copy it from Read "
        "output without the line-number prefix) and must occur once, unless replace_all is true. "
        "Give enough surrounding lines to make it unique. Use Write to create new files."
    )

    async def run(self, args: EditInput, ctx: ToolContext) -> ToolOutput:
        path = resolve_path(args.file_path, ctx)
        if args.old_string == "":
            return ToolOutput(
                "old_string is empty. Give the exact text to replace; to create a file use Write.",
                is_error=True,
            )
        if args.old_string == args.new_string:
            return ToolOutput(
                "old_string and new_string are identical, so there is nothing to change.",
                is_error=True,
            )
        try:
            real = landing(args.file_path, ctx)
            if ctx.before_write is not None and os.path.isfile(real):
                await in_thread(ctx.before_write, real)
            return await in_thread(_edit, real, path, args)
        except Refused as exc:
            return refused("edit", path, exc)
        except IsADirectoryError:
            return ToolOutput(f"{path} is a directory; Edit changes files.", is_error=True)
        except FileNotFoundError:
            return missing_file(path, ctx, hint="use Write to create a new file")
        except OSError as exc:
            return os_error("edit", path, exc)


def _edit(real: str, shown: Path, args: EditInput) -> ToolOutput:
    with open_regular(real) as f:
        raw = f.read()
    if is_binary(raw):
        return ToolOutput(f"{shown} is a binary file; Edit changes text files only.", is_error=True)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return ToolOutput(
            f"{shown} is not valid UTF-8, so Edit cannot change it safely. Use Bash instead.",
            is_error=True,
        )
    old, new = _match_line_endings(text, args.old_string, args.new_string)
    count = text.count(old)
    if count == 0:
        return ToolOutput(
            f"old_string was not found in {shown}. Read the file first and copy the exact text, "
            "including whitespace and indentation (without the line-number prefix).",
            is_error=True,
        )
    if count > 1 and not args.replace_all:
        return ToolOutput(
            f"old_string occurs {count} times in {shown}, but replace_all is false. To change one "
            "occurrence, add more surrounding context to old_string so it matches exactly once, "
            f"or set replace_all to true to change all {count}.",
            is_error=True,
        )
    first = text.find(old)
    updated = text.replace(old, new) if args.replace_all else text.replace(old, new, 1)
    write_bytes(real, updated.encode("utf-8"))
    noun = "occurrence" if count == 1 else "occurrences"
    return ToolOutput(
        f"Edited {shown}: replaced {count} {noun} of old_string.\n"
        f"The file around the first change now reads:\n{_snippet(updated, first, new)}",
        response={"filePath": str(shown), "oldString": args.old_string, "newString": args.new_string,
                  "originalFile": text, "structuredPatch": [], "userModified": False,
                  "replaceAll": args.replace_all},
    )


def _match_line_endings(text: str, old: str, new: str) -> tuple[str, str]:
    """Models write `\\n`; a CRLF file would never match, so use the file's line endings."""
    if "\r\n" in text and "\n" in old and "\r\n" not in old and old not in text:
        return old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
    return old, new


def _snippet(text: str, start: int, new: str) -> str:
    lines = text.split("\n")
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()  # the final newline ends the last line; it does not start a new one
    first = text.count("\n", 0, start)
    last = first + new.count("\n")
    lo = max(0, first - SNIPPET_CONTEXT)
    hi = min(len(lines), last + SNIPPET_CONTEXT + 1, lo + SNIPPET_MAX_LINES)
    shown = [line.rstrip("\r") for line in lines[lo:hi]]
    return number_lines(shown, lo + 1, max_chars=500)
