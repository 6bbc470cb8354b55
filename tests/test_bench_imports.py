"""Every bench still imports what it uses: a bench is run by hand, so a renamed function it
reaches for would otherwise be found broken only by the next person who measures."""

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"


@pytest.mark.parametrize("path", sorted(BENCH.glob("*.py")), ids=lambda p: p.name)
def test_a_bench_imports(path, monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))  # benches share helpers beside them
    spec = importlib.util.spec_from_file_location(f"bench_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)
    spec.loader.exec_module(module)  # runs its imports and definitions, not its main()
    if 'if __name__ == "__main__"' in path.read_text():
        assert callable(getattr(module, "main", None)), f"{path.name} runs as a script but has no main()"
