"""`dataclass`: the standard library's, with its generated methods compiled once, not per run.

Defining a dataclass compiles a few small generated functions (`__init__`, `__repr__`, `__eq__`,
`__hash__`, `__setattr__`, `__delattr__`). Compiling is most of the cost: ~0.6 ms a class here,
~100 classes on the path to the first model request, a fifth of the start-up budget. The
generated source depends only on field names and options, never on values, so the code compiled
from one source text can be kept. While a class is defined through this `dataclass`, the
standard library compiles through a cache keyed by that exact text, kept between runs where
Python keeps the package's bytecode, one file per module. Same text, same code: the classes are
exactly what `dataclasses.dataclass` builds (fields(), replace(), asdict(), match patterns,
pickling). A missing, stale or unreadable cache costs time only.
"""

from __future__ import annotations

import dataclasses
import marshal
import os
import sys
import threading
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, TypeVar, dataclass_transform, overload

T = TypeVar("T")


def _cache_dir() -> Path:
    """Where Python keeps this package's bytecode: `__pycache__`, or under PYTHONPYCACHEPREFIX."""
    here = os.path.dirname(os.path.abspath(__file__))
    if sys.pycache_prefix:
        return Path(sys.pycache_prefix, here.lstrip(os.sep), "fastclass")
    return Path(here, "__pycache__", "fastclass")


class _CodeCache:
    """Compiled code by source text, one file per defining module: loaded on that module's first
    class, rewritten at exit with exactly what the module used when anything had to be compiled."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.codes: dict[str, dict[str, Any]] = {}  # module -> source -> code, as loaded
        self.used: dict[str, dict[str, Any]] = {}  # module -> source -> code, this process
        self.stale: set[str] = set()

    def _file(self, module: str) -> Path:
        return self.folder / f"{module}.{sys.implementation.cache_tag}.marshal"

    def _load(self, module: str) -> dict[str, Any]:
        if module not in self.codes:
            self.codes[module] = {}
            try:
                loaded = marshal.loads(self._file(module).read_bytes())
                if isinstance(loaded, dict):
                    self.codes[module] = loaded
            except (OSError, ValueError, EOFError, TypeError):
                pass  # no cache yet, or one from another build of Python: compile afresh
        return self.codes[module]

    def exec(self, module: str, source: str, globals_: dict[str, Any], locals_: dict[str, Any] | None = None) -> None:
        code = self._load(module).get(source)
        if code is None:
            code = compile(source, "<string>", "exec")
            if not self.stale:
                import atexit

                atexit.register(self.save)
            self.stale.add(module)
        self.used.setdefault(module, {})[source] = code
        exec(code, globals_, locals_)

    def save(self) -> None:
        if sys.dont_write_bytecode:  # the user asked Python not to write bytecode: neither do we
            return
        for module in sorted(self.stale):
            path = self._file(module)
            tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp.write_bytes(marshal.dumps(self.used[module]))
                os.replace(tmp, path)  # whole or not at all, even with other processes saving too
            except OSError:  # a read-only install: the cache only saves time
                try:
                    tmp.unlink()
                except OSError:
                    pass
        self.stale.clear()


_cache = _CodeCache(_cache_dir())
_defining = threading.Lock()


@overload
def dataclass(cls: type[T], /) -> type[T]: ...
@overload
def dataclass(**options: Any) -> Callable[[type[T]], type[T]]: ...


@dataclass_transform(field_specifiers=(dataclasses.field, dataclasses.Field))
def dataclass(cls: type[T] | None = None, /, **options: Any) -> Any:
    """`dataclasses.dataclass`, same options and result, its generated methods compiled once."""

    def build(cls: type[T]) -> type[T]:
        with _defining:  # dataclasses looks `exec` up in its module first: shadow it for this call only
            dataclasses.exec = partial(_cache.exec, cls.__module__)  # type: ignore[attr-defined]
            try:
                return dataclasses.dataclass(cls, **options)
            finally:
                del dataclasses.exec  # type: ignore[attr-defined]

    return build if cls is None else build(cls)
