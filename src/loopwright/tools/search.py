"""The search tools, with Claude Code's names and fields: Glob (files by pattern, newest first)
and Grep (a ripgrep-shaped regex search over files; how it matches is `grepengine`). Both leave
out the files the permission gate says the call may not show (Read deny rules, links that lead
outside what the call may read), and say how many. Neither follows a symlink out of the folder it
searches, whatever the gate would allow (ripgrep does not follow links either): each file found is
reached beneath that folder as the kernel resolves it (`core.beneath`), so a link planted in the
tree, or swapped in while the search runs, cannot show a file the gate never judged."""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

import anyio
from pydantic import Field

from ..core.beneath import Beneath, Unsafe
from ..core.ports import ToolContext, ToolOutput
from ..core.regex import PatternError
from .access import ACCESS
from .base import BaseTool, ToolInput, in_thread
from .fileio import Refused, landing
from .grepengine import SEARCH_TIMEOUT_S, Engine, Stopped, compile_pattern
from .ignores import Ignored
from .paths import glob_regex, newest_first, resolve_path, split_glob, walk_files

GLOB_MAX_RESULTS = 100
GREP_DEFAULT_HEAD_LIMIT = 250
GREP_MAX_LINE_CHARS = 2000

# ripgrep's --type names for the common languages (a subset; unknown names are reported).
FILE_TYPES: dict[str, tuple[str, ...]] = {
    "py": ("*.py", "*.pyi"),
    "js": ("*.js", "*.jsx", "*.mjs", "*.cjs"),
    "ts": ("*.ts", "*.tsx", "*.mts", "*.cts"),
    "go": ("*.go",),
    "rust": ("*.rs",),
    "java": ("*.java",),
    "kotlin": ("*.kt", "*.kts"),
    "c": ("*.c", "*.h"),
    "cpp": ("*.cpp", "*.cc", "*.cxx", "*.hpp", "*.hh", "*.hxx", "*.h"),
    "cs": ("*.cs",),
    "rb": ("*.rb",),
    "php": ("*.php",),
    "swift": ("*.swift",),
    "sh": ("*.sh", "*.bash", "*.zsh"),
    "md": ("*.md", "*.markdown"),
    "json": ("*.json",),
    "yaml": ("*.yaml", "*.yml"),
    "toml": ("*.toml",),
    "html": ("*.html", "*.htm"),
    "css": ("*.css", "*.scss", "*.sass", "*.less"),
    "sql": ("*.sql",),
    "txt": ("*.txt",),
}


class _Shown:
    """Whether the gate lets the call show a file met on the way, counting those left out."""

    def __init__(self, ctx: ToolContext) -> None:
        self.guard, self.left_out = ctx.guard, 0

    def __call__(self, path: Path) -> bool:
        if self.guard is None or self.guard.shows(str(path)):
            return True
        self.left_out += 1
        return False

    def beneath(self, root: Beneath, rel: str) -> bool:
        """Whether `rel` is still a regular file when reached beneath `root` (the real folder
        searched); one whose link leads out of it is left out and counted."""
        try:
            os.close(root.open(rel, read=False))
        except Unsafe:
            self.left_out += 1
            return False
        except OSError:
            return False
        return True

    def note(self) -> str:
        if not self.left_out:
            return ""
        files = "1 file" if self.left_out == 1 else f"{self.left_out} files"
        return (f"\n({files} left out: a Read deny rule covers them, or they lead outside the places this "
                "call may read.)")


def _search_root(path: str | None, ctx: ToolContext) -> tuple[Path, ToolOutput | None]:
    root = resolve_path(path or ".", ctx)
    if not root.exists():
        return root, ToolOutput(
            f"Path does not exist: {root} (cwd: {ctx.cwd}). Give an existing directory, or omit "
            "path to search the working directory.",
            is_error=True,
        )
    return root, None


# ---------------------------------------------------------------------------------------- Glob


class GlobInput(ToolInput):
    pattern: str = Field(description='Glob pattern for file paths, e.g. "**/*.py" or "src/**/*.{ts,tsx}".')
    path: str | None = Field(
        default=None, description="Directory to search in (default: the working directory)."
    )


class GlobTool(BaseTool):
    name = "Glob"
    access = staticmethod(ACCESS["Glob"])  # what a call touches, for the permission gate
    read_only = True
    Input = GlobInput
    description = (
        "Find files by glob pattern (`*` within a directory, `**` across directories, `{a,b}` "
        "alternatives). Returns absolute paths, most recently modified first, at most "
        f"{GLOB_MAX_RESULTS}. Skips what .gitignore/.ignore exclude and hidden folders unless the pattern "
        "names them. Use Grep to search file contents."
    )

    async def run(self, args: GlobInput, ctx: ToolContext) -> ToolOutput:
        base, problem = _search_root(args.path, ctx)
        if problem:
            return problem
        if not base.is_dir():
            return ToolOutput(f"{base} is not a directory; give a directory as path.", is_error=True)
        shown = _Shown(ctx)
        ignored = Ignored(str(split_glob(base, args.pattern)[0]), hidden=_names_hidden(args.pattern))
        found: list[Path] = await in_thread(_glob, base, args.pattern, shown, ignored)
        if not found:
            return ToolOutput("No files found" + shown.note() + ignored.note())
        lines = [str(p) for p in found[:GLOB_MAX_RESULTS]]
        if len(found) > GLOB_MAX_RESULTS:
            lines.append(
                f"(Showing the {GLOB_MAX_RESULTS} most recently modified of {len(found)} files. "
                "Use a more specific pattern or path to narrow the results.)"
            )
        return ToolOutput("\n".join(lines) + shown.note() + ignored.note())


def _names_hidden(pattern: str | None) -> bool:
    """A pattern that names a hidden folder (`.github/**`, `**/.config/*`) walks hidden folders."""
    if not pattern:
        return False
    return any(part.startswith(".") and part not in (".", "..") for part in pattern.split("/")[:-1])


def _glob(base: Path, pattern: str, shown: _Shown, ignored: Ignored | None = None) -> list[Path]:
    start, rest = split_glob(base, pattern)
    if not start.is_dir():
        return []
    regex = glob_regex(rest)
    # Without `**` a pattern cannot match deeper than its own number of segments.
    depth = None if "**" in rest else rest.count("/") + 1
    try:
        inside = Beneath(start)
    except OSError:  # gone since
        return []
    with inside:
        matches = [p for p, rel in walk_files(start, depth, ignored)
                   if regex.match(rel) and p.is_file() and shown.beneath(inside, rel) and shown(p)]
    return newest_first(matches)


# ---------------------------------------------------------------------------------------- Grep


OutputMode = Literal["content", "files_with_matches", "count"]


class GrepInput(ToolInput):
    pattern: str = Field(description="Regular expression to search for (RE2 syntax, as ripgrep's; look-around and "
                         "backreferences run on a slower backtracking engine with a time limit).")
    path: str | None = Field(
        default=None, description="File or directory to search (default: the working directory)."
    )
    glob: str | None = Field(
        default=None, description='Only search files matching this glob, e.g. "*.py" or "src/**/*.{ts,tsx}".'
    )
    type: str | None = Field(
        default=None, description='Only search files of this type, e.g. "py", "js", "go", "rust".'
    )
    output_mode: OutputMode = Field(
        default="files_with_matches",
        description='"content" shows matching lines, "files_with_matches" lists files (default), '
        '"count" shows the number of matching lines per file.',
    )
    # Python names for ripgrep's flags; the model sees and sends the flags themselves.
    before: int | None = Field(
        default=None, ge=0, alias="-B", description="Lines of context before each match (content mode)."
    )
    after: int | None = Field(
        default=None, ge=0, alias="-A", description="Lines of context after each match (content mode)."
    )
    context: int | None = Field(
        default=None, ge=0, alias="-C", description="Lines of context around each match (content mode)."
    )
    line_numbers: bool | None = Field(
        default=None, alias="-n", description="Show line numbers (content mode; default true)."
    )
    ignore_case: bool | None = Field(default=None, alias="-i", description="Match case-insensitively.")
    head_limit: int | None = Field(
        default=None,
        ge=0,
        description=f"Show at most this many lines or entries (default {GREP_DEFAULT_HEAD_LIMIT}; "
        "0 for no limit).",
    )
    offset: int | None = Field(
        default=None, ge=0, description="Skip this many lines or entries first (for paging)."
    )
    multiline: bool | None = Field(
        default=None, description="Let the pattern span lines (`.` matches newlines)."
    )


class GrepTool(BaseTool):
    name = "Grep"
    access = staticmethod(ACCESS["Grep"])  # what a call touches, for the permission gate
    read_only = True
    Input = GrepInput
    timeout_s = SEARCH_TIMEOUT_S  # one call's deadline; then it is the call's error
    description = (
        "Search file contents with a regular expression. output_mode: files_with_matches "
        "(default; paths, newest first), content (matching lines as path:line:text, with -A/-B/-C "
        "context), count (path:N). Filter files with glob or type. Skips what .gitignore/.ignore "
        "exclude, hidden folders (name one as path or in glob to search it), binary files, files over "
        "64 MiB, version-control directories and anything but regular files. Prefer this over running grep "
        "or rg in Bash."
    )

    async def run(self, args: GrepInput, ctx: ToolContext) -> ToolOutput:
        try:
            engine = compile_pattern(args.pattern, ignore_case=bool(args.ignore_case), multiline=bool(args.multiline))
        except PatternError as exc:
            return ToolOutput(
                f"Invalid regular expression {args.pattern!r}: {exc}. Fix the pattern (escape literal "
                "characters such as ( [ . * + ? with a backslash).",
                is_error=True,
            )
        if args.type is not None and args.type not in FILE_TYPES:
            known = ", ".join(sorted(FILE_TYPES))
            return ToolOutput(
                f"Unknown file type {args.type!r}. Known types: {known}. Or use glob.", is_error=True
            )
        root, problem = _search_root(args.path, ctx)
        if problem:
            return problem
        shown = _Shown(ctx)
        ignored = Ignored(str(root if root.is_dir() else root.parent), hidden=_names_hidden(args.glob))
        try:
            real = landing(args.path or ".", ctx)  # where the gate judged the search to start
            with anyio.fail_after(self.timeout_s):
                lines = await in_thread(_grep, root, real, engine, args, shown, ignored)
        except Refused as exc:
            return ToolOutput(f"Cannot search {root}: {exc}", is_error=True)
        except TimeoutError:
            return ToolOutput(engine.timed_out(self.timeout_s), is_error=True)
        except Stopped:
            return ToolOutput("The backtracking regex engine stopped before the search finished; simplify the "
                              "pattern (RE2 syntax runs in linear time).", is_error=True)
        finally:
            engine.close()  # an abandoned search thread sees this and ends; a worker process is killed
        return ToolOutput(_page(lines, args) + engine.note() + shown.note() + ignored.note())


def _grep(root: Path, real: str, engine: Engine, args: GrepInput, shown: _Shown,
          ignored: Ignored | None = None) -> list[str]:
    """`real`: where `root` lands, the folder every file is read beneath (a file's own folder
    when `root` is a file)."""
    hits: list[tuple[Path, list[str], list[int]]] = []
    named = os.path.basename(real) if os.path.isfile(real) else None
    try:
        inside = Beneath(os.path.dirname(real) if named else real)
    except OSError:  # gone since
        return []
    with inside:
        for path, rel in _candidate_files(root, named, args, shown, ignored):
            try:
                found = engine.search(inside, rel)
            except Unsafe:
                shown.left_out += 1
                continue
            if found is not None and found[1]:
                hits.append((path, *found))
    if not hits:
        return []
    if args.output_mode == "files_with_matches":
        return [str(p) for p in newest_first([p for p, _, _ in hits])]
    hits.sort(key=lambda h: str(h[0]))
    if args.output_mode == "count":
        return [f"{p}:{len(matched)}" for p, _, matched in hits]
    out: list[str] = []
    for path, file_lines, matched in hits:
        out.extend(_content_lines(str(path), file_lines, matched, args))
    return out


def _candidate_files(root: Path, named: str | None, args: GrepInput, keep: _Shown,
                     ignored: Ignored | None = None) -> Iterable[tuple[Path, str]]:
    """Regular files only (reading a FIFO would wait forever), and only those the call may show:
    each as (path shown, its path in the folder it is read beneath). `named`: the name of the
    file the call searches, when it names one."""
    if named is not None:
        if keep(root):  # an explicitly named file is searched whatever the filters say
            yield root, named
        return
    name_glob = glob_regex(args.glob) if args.glob else None
    types = FILE_TYPES.get(args.type or "", ())
    for path, rel in walk_files(root, ignored=ignored):
        if name_glob is not None and not name_glob.match(rel if "/" in (args.glob or "") else path.name):
            continue
        if types and not any(fnmatch.fnmatchcase(path.name, t) for t in types):
            continue
        if path.is_file() and keep(path):
            yield path, rel


def _content_lines(path: str, lines: list[str], matched: list[int], args: GrepInput) -> list[str]:
    """ripgrep's layout: `path:N:text` for matches, `path-N-text` for context, `--` between
    groups that are not adjacent."""
    before = args.before if args.before is not None else (args.context or 0)
    after = args.after if args.after is not None else (args.context or 0)
    numbers = args.line_numbers is not False
    hit = set(matched)
    shown: list[int] = []
    for i in matched:
        for j in range(max(0, i - before), min(len(lines), i + after + 1)):
            if not shown or j > shown[-1]:
                shown.append(j)
    out: list[str] = []
    for k, j in enumerate(shown):
        if k and (before or after) and j != shown[k - 1] + 1:
            out.append("--")
        sep = ":" if j in hit else "-"
        text = lines[j]
        if len(text) > GREP_MAX_LINE_CHARS:
            text = f"{text[:GREP_MAX_LINE_CHARS]}... [line truncated: {len(text)} characters]"
        out.append(f"{path}{sep}{j + 1}{sep}{text}" if numbers else f"{path}{sep}{text}")
    return out


def _page(lines: list[str], args: GrepInput) -> str:
    if not lines:
        return "No matches found"
    start = args.offset or 0
    limit = GREP_DEFAULT_HEAD_LIMIT if args.head_limit is None else args.head_limit
    end = len(lines) if limit == 0 else start + limit
    page = lines[start:end]
    unit = "lines" if args.output_mode == "content" else "files"
    header = [f"Found {len(lines)} files"] if args.output_mode == "files_with_matches" else []
    note: list[str] = []
    if start > 0 or end < len(lines):
        if not page:
            return f"No results at offset {start}: there are only {len(lines)} {unit}."
        shown_to = start + len(page)
        more = (
            f"Use offset={shown_to} to see more, or narrow the search."
            if shown_to < len(lines)
            else "End of results."
        )
        note = [f"(Showing {unit} {start + 1}-{shown_to} of {len(lines)}. {more})"]
    return "\n".join(header + page + note)
