"""`loopwright.core.fastclass.dataclass` builds exactly the standard library's classes, and its
compiled-code cache is kept between processes, per module, where Python keeps bytecode."""

from __future__ import annotations

import dataclasses
import os
import pickle
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from loopwright.core import fastclass
from loopwright.core.ids import uuid4
from loopwright.core.types import TextBlock, ToolUseBlock


def _define(deco):
    @deco(frozen=True, slots=True)
    class Point:
        """A point."""

        x: int
        y: int = 0
        tags: tuple[str, ...] = ()

    @deco(frozen=True, kw_only=True)
    class Named:
        name: str
        extra: dict = dataclasses.field(default_factory=dict)

    @deco
    class Mutable:
        count: int = 0

    return Point, Named, Mutable


def _codes(cls) -> dict[str, bytes]:
    return {name: getattr(cls, name).__code__.co_code for name in ("__init__", "__repr__", "__eq__")}


def test_the_classes_are_the_standard_librarys():
    std, fast = _define(dataclasses.dataclass), _define(fastclass.dataclass)
    for a, b in zip(std, fast):
        assert _codes(a) == _codes(b)
        assert [(f.name, f.type, f.kw_only) for f in dataclasses.fields(a)] == \
               [(f.name, f.type, f.kw_only) for f in dataclasses.fields(b)]
        assert a.__match_args__ == b.__match_args__
        assert a.__dataclass_params__.__repr__() == b.__dataclass_params__.__repr__()
    point = fast[0](1, 2)
    assert repr(point) == repr(std[0](1, 2)) and repr(point).endswith("Point(x=1, y=2, tags=())")
    assert point == fast[0](1, 2) and hash(point) == hash(fast[0](1, 2)) and point != fast[0](2, 1)
    assert dataclasses.replace(point, y=5) == fast[0](1, 5)
    assert dataclasses.asdict(point) == {"x": 1, "y": 2, "tags": ()}
    assert not hasattr(point, "__dict__")  # slots
    with pytest.raises(dataclasses.FrozenInstanceError):
        point.x = 3  # type: ignore[misc]
    with pytest.raises(TypeError):
        fast[1]("positional")  # kw_only
    Point = fast[0]
    match point:
        case Point(x, y):
            assert (x, y) == (1, 2)
        case _:
            pytest.fail("positional match pattern did not match")


def test_package_records_pickle_and_compare():
    block = ToolUseBlock(id="toolu_1", name="Read", input={"file_path": "a"})
    assert pickle.loads(pickle.dumps(block)) == block
    assert dataclasses.replace(TextBlock("a"), text="b") == TextBlock("b")


def test_cache_round_trip_per_module(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    source = "def __create_fn__():\n def f(self):\n  return 42\n return f"
    first = fastclass._CodeCache(tmp_path)
    ns: dict = {}
    first.exec("pkg.mod", source, {}, ns)
    assert ns["__create_fn__"]()(None) == 42
    first.save()
    assert [p.name for p in tmp_path.iterdir()] == [f"pkg.mod.{sys.implementation.cache_tag}.marshal"]

    second = fastclass._CodeCache(tmp_path)
    assert source in second._load("pkg.mod")  # compiled code found, nothing to compile
    second.exec("pkg.mod", source, {}, ns := {})
    assert not second.stale and ns["__create_fn__"]()(None) == 42


def test_damaged_cache_is_compiled_afresh_and_replaced(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    (tmp_path / f"m.{sys.implementation.cache_tag}.marshal").write_bytes(b"\x00not marshal")
    cache = fastclass._CodeCache(tmp_path)
    cache.exec("m", "x = 1", {}, ns := {})
    assert ns["x"] == 1 and cache.stale == {"m"}
    cache.save()
    assert "x = 1" in fastclass._CodeCache(tmp_path)._load("m")


def test_nothing_written_when_python_is_told_not_to_write_bytecode(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    cache = fastclass._CodeCache(tmp_path / "c")
    cache.exec("m", "x = 1", {}, {})
    cache.save()
    assert not (tmp_path / "c").exists()


def test_read_only_cache_folder_costs_time_only(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    blocker = tmp_path / "file"
    blocker.write_text("")  # a file where the folder should be: mkdir fails
    cache = fastclass._CodeCache(blocker / "sub")
    cache.exec("m", "x = 1", {}, ns := {})
    cache.save()
    assert ns["x"] == 1 and not list(tmp_path.glob("**/*.tmp"))


def test_a_second_process_reuses_what_the_first_compiled(tmp_path):
    """Real processes, Python's own PYTHONPYCACHEPREFIX: the first writes the cache for the
    package's modules, the second finds everything (no module's file is rewritten)."""
    env = dict(os.environ, PYTHONPYCACHEPREFIX=str(tmp_path))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    code = "import loopwright.core.events, loopwright.core.fastclass as f; print(len(f._cache.stale))"
    first = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    files = sorted(tmp_path.rglob("*.marshal"))
    names = {p.name.split(f".{sys.implementation.cache_tag}")[0] for p in files}
    assert {"loopwright.core.types", "loopwright.core.events"} <= names, names
    assert int(first.stdout) >= 2
    stamps = {p: p.stat().st_mtime_ns for p in files}
    second = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert second.stdout.strip() == "0"
    assert {p: p.stat().st_mtime_ns for p in files} == stamps


def test_uuid4_is_a_version_4_uuid():
    values = {uuid4() for _ in range(200)}
    assert len(values) == 200
    for value in values:
        parsed = uuid.UUID(value)
        assert str(parsed) == value and parsed.version == 4 and parsed.variant == uuid.RFC_4122


def test_cache_folder_follows_pycache_prefix(monkeypatch, tmp_path):
    monkeypatch.setattr(sys, "pycache_prefix", str(tmp_path))
    here = Path(os.path.abspath(fastclass.__file__)).parent
    assert fastclass._cache_dir() == Path(str(tmp_path), str(here).lstrip(os.sep), "fastclass")
    monkeypatch.setattr(sys, "pycache_prefix", None)
    assert fastclass._cache_dir() == here / "__pycache__" / "fastclass"
