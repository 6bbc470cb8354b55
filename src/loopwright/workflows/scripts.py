"""Where workflows come from: `NAME.py` in the project's `.loopwright/workflows/` or
`.claude/workflows/`, then the user's `~/.loopwright/workflows/` (the project's win a name
clash), then each plugin's `workflows/` as `PLUGIN:NAME` (namespaced as its commands are). Listing reads each file without running it; loading runs it as a module and takes its
`async def main(wf, args)`. A file that cannot be used is one error naming it."""

from __future__ import annotations

import ast
import inspect
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from ..core.errors import UsageError
from ..core.fastclass import dataclass

if TYPE_CHECKING:
    from ..context.plugins import Plugin

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
RESERVED = frozenset({"goal", "loop"})  # slash commands of loopwright's own


@dataclass(frozen=True, slots=True)
class Script:
    name: str
    path: Path
    scope: str  # project | user | plugin


def folders(cwd: Path, home: Path) -> list[tuple[str, Path]]:
    return [("project", cwd / ".loopwright" / "workflows"), ("project", cwd / ".claude" / "workflows"),
            ("user", home / ".loopwright" / "workflows")]


def available(cwd: Path, home: Path, plugins: Sequence[Plugin] = ()) -> dict[str, Script]:
    """Every workflow by name; `plugins` (`context.plugins.Plugin`) add theirs as `PLUGIN:NAME`."""
    found: dict[str, Script] = {}
    for scope, folder in reversed(folders(cwd, home)):  # earlier folders win: they are written last
        found |= _scripts(folder, "", scope)
    for plugin in plugins:
        for listed in plugin.workflow_dirs:
            found = _scripts(Path(listed), f"{plugin.name}:", "plugin") | found
    return dict(sorted(found.items()))


def _scripts(folder: Path, prefix: str, scope: str) -> dict[str, Script]:
    if not folder.is_dir():
        return {}
    return {prefix + path.stem: Script(prefix + path.stem, path, scope) for path in sorted(folder.glob("*.py"))
            if NAME.fullmatch(path.stem) and path.is_file()}


def find(name: str, cwd: Path, home: Path, plugins: Sequence[Plugin] = ()) -> Script | None:
    if not valid(name):
        return None
    return available(cwd, home, plugins if ":" in name else ()).get(name)


def valid(name: str) -> bool:
    """A workflow's name: `NAME`, or `PLUGIN:NAME`."""
    plugin, colon, rest = name.rpartition(":")
    return bool(NAME.fullmatch(rest)) and (not colon or bool(NAME.fullmatch(plugin)))


def describe(script: Script) -> str:
    """The first line of the file's docstring, read without running it (or what is wrong with it)."""
    try:
        tree = ast.parse(script.path.read_text(encoding="utf-8"), str(script.path))
    except SyntaxError as exc:
        return f"(cannot be used: syntax error at line {exc.lineno})"
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return f"(cannot be read: {exc})"
    has_main = any(isinstance(n, ast.AsyncFunctionDef) and n.name == "main" for n in tree.body)
    doc = (ast.get_docstring(tree) or "").strip().splitlines()
    return (doc[0] if doc else "") if has_main else "(cannot be used: no `async def main(wf, args)`)"


def load(script: Script) -> Callable[..., Awaitable[Any]]:
    """The script's `main`, after running the file as a module of its own."""
    path = script.path
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"workflow {path}: cannot be read ({exc})") from None
    try:
        code = compile(source, str(path), "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:
        line = f" at line {exc.lineno}" if isinstance(exc, SyntaxError) and exc.lineno else ""
        msg = exc.msg if isinstance(exc, SyntaxError) else str(exc)
        raise UsageError(f"workflow {path}: syntax error{line}: {msg}") from None
    namespace: dict[str, Any] = {"__name__": f"loopwright_workflow_{script.name.replace(':', '__')}",
                                 "__file__": str(path)}
    try:
        exec(code, namespace)  # noqa: S102 - a workflow is the user's own code, run when they name it
    except Exception as exc:  # noqa: BLE001 - whatever the file raises is one error naming it
        raise UsageError(f"workflow {path}: failed while loading: {type(exc).__name__}: {exc}") from None
    main = namespace.get("main")
    if not inspect.iscoroutinefunction(main):
        what = "no `main`" if main is None else "`main` is not an async function"
        raise UsageError(f"workflow {path}: {what}; expected `async def main(wf, args)`")
    return main


def loader(cwd: Path, home: Path, plugins: Sequence[Plugin] = ()) -> Callable[[str], Callable[..., Awaitable[Any]]]:
    """For `wf.workflow(name, …)`: a workflow's `main` by name, or an error naming what exists."""

    def by_name(name: str) -> Callable[..., Awaitable[Any]]:
        script = find(name, cwd, home, plugins) if isinstance(name, str) else None
        if script is None:
            names = ", ".join(available(cwd, home, plugins)) or "none"
            raise UsageError(f"workflow {name!r} not found (workflows: {names})")
        return load(script)

    return by_name
