"""The project's instructions, found as Claude Code finds them: memory files (`CLAUDE.md` and its
kin) from the user's home and from every folder between the filesystem root and the working
directory, their `@path` imports, and — later — the files of a subfolder once the agent reads a
file there. Each file is given to the model labelled with its path.

Order: `~/.claude/CLAUDE.md`, `~/.claude/rules/*.md`, loopwright's own `LOOPWRIGHT.md` in its
home; then for each folder from the root down: `CLAUDE.md`, `.claude/CLAUDE.md`,
`.claude/rules/*.md`, `LOOPWRIGHT.md`, `CLAUDE.local.md`. `AGENTS.md` stands in for them only
where no project file of the CLAUDE.md family exists on the whole walk. An import follows its
file, is read relative to it, at most four hops deep, once; one inside a code span or fence is
text. A project file's import that leads outside the project is not loaded (a cloned repository
must not pull `~/.ssh` into the conversation); the user's own files may import anything.

Every file is opened as the kernel resolves it (`core.beneath`), beneath its root: the project
for the project's files and their imports (a folder above the project for that folder's own
files), the home folder for the user's (so a dotfile manager's links keep working), and for a
user file's import the whole filesystem. A file that is a symlink leading out of its root is not
loaded, nor is anything of /proc, /sys or a device, whatever the root. What cannot be loaded is
said once, never fatal."""

from __future__ import annotations

import fnmatch
import os
import re
from pathlib import Path
from typing import Callable, Sequence

from ..core.beneath import Unsafe, read_beneath
from ..core.events import Event, Notice
from ..core.fastclass import dataclass
from ..core.types import Message, TextBlock, ToolResultBlock, ToolUseBlock

MAX_CHARS = 100_000  # one file; more is cut, with a warning
MAX_HOPS = 4
PREAMBLE = ("The instructions below come from the project's and the user's memory files. Follow them; they "
            "take precedence over default behaviour.")
LABELS = {"user": "the user's own instructions, for every project",
          "project": "project instructions, checked into the codebase",
          "local": "the user's private instructions for this project, not checked in"}
_IMPORT = re.compile(r"(?<![\w`])@((?:~|\.{1,2})?/?[\w./~-]*[\w~-])")
_FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)
_SPAN = re.compile(r"`[^`\n]*`")
_COMMENT = re.compile(r"^\s*<!--.*?-->\s*$", re.M | re.S)
_GIVEN = re.compile(r"^Contents of (/.*?)(?: \((?:" + "|".join(re.escape(v) for v in LABELS.values()) + r")\))?:$",
                    re.M)
_PROJECT_NAMES = ("CLAUDE.md", ".claude/CLAUDE.md", "CLAUDE.local.md")


@dataclass(frozen=True, slots=True)
class MemoryFile:
    path: str
    kind: str  # user, project, local
    text: str


class Memory:
    """One session's memory: what was loaded at its start and, as the agent reads files in
    subfolders, what those folders add (each file once)."""

    def __init__(self, cwd: str | Path, home: str | Path, own_home: str | Path | None = None,
                 excludes: Sequence[str] = ()) -> None:
        """`excludes`: globs of absolute paths never loaded (settings `claudeMdExcludes`)."""
        self.cwd, self.home = Path(os.path.realpath(cwd)), Path(os.path.realpath(os.path.expanduser(home)))
        self.own_home = Path(own_home) if own_home else None
        self.excludes = tuple(excludes)
        self.loaded: set[str] = set()
        self.warnings: list[str] = []
        self._said = 0
        self._agents_md = not any((d / n).is_file() for d in _walk(self.cwd) for n in _PROJECT_NAMES)

    def fork(self) -> Memory:
        """The same memory for a subagent, which gets it as its own conversation opens (as
        Claude Code's general-purpose and custom subagents do), each file again."""
        return Memory(self.cwd, self.home, self.own_home, self.excludes)

    def at_start(self) -> list[MemoryFile]:
        files: list[MemoryFile] = []
        claude_home = self.home / ".claude"
        self._add(files, claude_home / "CLAUDE.md", "user", self.home)
        for rule in sorted((claude_home / "rules").glob("*.md")):
            self._add(files, rule, "user", self.home)
        if self.own_home is not None:
            from .skills import user_root

            self._add(files, self.own_home / "LOOPWRIGHT.md", "user", Path(user_root(self.home, self.own_home)))
        for folder in _walk(self.cwd):
            self._add_folder(files, folder)
        return files

    def opening(self, emit: Callable[[Event], None]) -> str | None:
        """The reminder that opens a new session: every memory file found at its start (each
        warning said as a notice)."""
        files = self.at_start()
        self._say(emit)
        return render(files) if files else None

    def after_reads(self, calls: Sequence[ToolUseBlock], results: Sequence[ToolResultBlock] = (),
                    emit: Callable[[Event], None] | None = None) -> list[str]:
        """Reminders to add after a batch of tool calls: the memory files of the subfolders the
        successful Read calls among them looked into, one reminder each, as Claude Code gives
        them (`Contents of PATH:`, no label)."""
        failed = {r.tool_use_id for r in results if r.is_error}
        files = [f for c in calls if c.name == "Read" and c.id not in failed and isinstance(c.input, dict)
                 and isinstance(c.input.get("file_path"), str) for f in self.after_read(c.input["file_path"])]
        if emit is not None:
            self._say(emit)
        return [f"<system-reminder>\nContents of {f.path}:\n\n{f.text}\n</system-reminder>" for f in files]

    def after_compact(self, emit: Callable[[Event], None] | None = None) -> list[str]:
        """What opens the conversation again once compaction has summarised it away: the files of
        the start, read afresh from disk. A subfolder's files come back with the next Read there."""
        self.loaded.clear()
        files = self.at_start()
        if emit is not None:
            self._say(emit)
        return [render(files)] if files else []

    def remember(self, messages: Sequence[Message]) -> None:
        """Mark as given every memory file a recorded conversation (a resumed session) holds, so
        a Read there does not give a subfolder's files twice."""
        for message in messages:
            for block in message.content if message.role == "user" else ():
                if isinstance(block, TextBlock) and block.text.startswith("<system-reminder>"):
                    self.loaded.update(os.path.realpath(p) for p in _GIVEN.findall(block.text))

    def _say(self, emit: Callable[[Event], None]) -> None:
        for text in self.warnings[self._said:]:
            emit(Notice("warning", f"memory: {text}", "memory_warning"))
        self._said = len(self.warnings)

    def after_read(self, file_path: str) -> list[MemoryFile]:
        """The memory files of the folders between the working directory and `file_path` (a
        file the agent just read), outer first, not loaded before."""
        path = Path(os.path.realpath(os.path.join(self.cwd, os.path.expanduser(file_path))))
        if not path.is_relative_to(self.cwd) or path.parent == self.cwd:
            return []
        files: list[MemoryFile] = []
        parts = path.parent.relative_to(self.cwd).parts
        for depth in range(1, len(parts) + 1):
            self._add_folder(files, self.cwd.joinpath(*parts[:depth]))
        return files

    def _add_folder(self, files: list[MemoryFile], folder: Path) -> None:
        """A folder above the project roots its own files; the project roots its own and its
        subfolders'."""
        root = self.cwd if folder.is_relative_to(self.cwd) else folder
        names = [("CLAUDE.md", "project"), (".claude/CLAUDE.md", "project")]
        names += [(str(p.relative_to(folder)), "project") for p in sorted((folder / ".claude" / "rules").glob("*.md"))]
        names += [("LOOPWRIGHT.md", "project"), ("CLAUDE.local.md", "local")]
        if self._agents_md:
            names.insert(0, ("AGENTS.md", "project"))
        for name, kind in names:
            self._add(files, folder / name, kind, root)

    def _add(self, files: list[MemoryFile], path: Path, kind: str, root: Path, hops: int = 0,
             via: Path | None = None, written: str = "") -> None:
        """`root`: what `path` must be opened beneath; `via`: the file whose import `written`
        named `path`."""
        real = os.path.realpath(path)
        if real in self.loaded and via is not None:
            self._warn(f"{via}: the import @{written} was given already (an import cycle or a repeat); given once")
        if real in self.loaded or any(fnmatch.fnmatch(p, g) for g in self.excludes for p in (str(path), real)):
            return
        if not os.path.isfile(real):
            if via is not None:
                self._warn(f"{via}: the import @{written} names no file; skipped")
            return
        if via is not None and kind != "user" and not self._inside_project(Path(real)):
            self._warn(f"{via}: the import @{written} is outside the project and was not loaded (a project file may "
                       "only import files of the project; import it from ~/.claude/CLAUDE.md instead)")
            return
        try:
            data, whole = read_beneath(root, path, MAX_CHARS * 4)
        except Unsafe as exc:
            self._warn(f"{exc}; not loaded")
            return
        except OSError as exc:
            self._warn(f"{path}: cannot be read ({exc.strerror or exc}); skipped")
            return
        self.loaded.add(real)
        text = _COMMENT.sub("", data.decode("utf-8", errors="replace"))
        if len(text) > MAX_CHARS or not whole:
            self._warn(f"{path}: more than {MAX_CHARS} characters; only the first {MAX_CHARS} are given to the model")
            text = text[:MAX_CHARS]
        files.append(MemoryFile(str(path), kind, text.strip()))
        for target in imports(text):
            if hops + 1 > MAX_HOPS:
                self._warn(f"{path}: the import @{target} is more than {MAX_HOPS} imports deep; skipped")
                continue
            # the user's files may import anything (but nothing of /proc and its kin); the
            # project's only files of the project
            self._add(files, Path(os.path.expanduser(target)) if target.startswith(("~", "/"))
                      else path.parent / target, kind, Path("/") if kind == "user" else self.cwd, hops + 1, path, target)

    def _inside_project(self, path: Path) -> bool:
        return path.is_relative_to(self.cwd)

    def _warn(self, text: str) -> None:
        if text not in self.warnings:
            self.warnings.append(text)


def imports(text: str) -> list[str]:
    """The `@path` imports of a memory file's text, code spans and fenced blocks left out."""
    plain = _SPAN.sub("", _FENCE.sub("", text))
    return list(dict.fromkeys(m.group(1) for m in _IMPORT.finditer(plain)))


def render(files: list[MemoryFile], *, preamble: bool = True) -> str:
    """One reminder block: each file as `Contents of PATH (label):` and its text."""
    parts = [PREAMBLE] if preamble else []
    parts += [f"Contents of {f.path} ({LABELS[f.kind]}):\n\n{f.text}" for f in files]
    return "<system-reminder>\n" + "\n\n".join(parts) + "\n</system-reminder>"


def _walk(cwd: Path) -> list[Path]:
    """Every folder from the filesystem root down to `cwd`."""
    return [*reversed(cwd.parents), cwd]
