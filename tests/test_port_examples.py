"""Every port (a `Protocol` of core/ports.py and core/storeports.py) shows a minimal working
implementation in its docstring, and each one is run here, so none can rot: the example must run
to its end (its own asserts included), and one class it defines must have every member the port
names (its methods and properties; its plain attributes may be set per instance)."""

from __future__ import annotations

import inspect
import re
from typing import Protocol

import pytest

from loopwright.core import ports, storeports

EXAMPLE = re.compile(r"^```python\n(.*?)^```$", re.M | re.S)


def port_classes():
    for module in (ports, storeports):
        for name, value in vars(module).items():
            if (inspect.isclass(value) and value.__module__ == module.__name__ and Protocol in value.__mro__[1:]
                    and getattr(value, "_is_protocol", False)):
                yield pytest.param(value, id=name)


def methods(port: type) -> set[str]:
    """The methods and properties the port asks of an implementation's class (its plain
    attributes, `name: str`, may be set per instance)."""
    plain = set(vars(port).get("__annotations__", {}))
    return {n for n in vars(port) if (not n.startswith("_") or n == "__call__") and n not in plain}


def test_the_ports_are_all_found():
    found = {p.id for p in port_classes()}
    assert {"Model", "Tool", "HookRunner", "Approver", "Workspace", "Observer", "SessionStore", "Ledger"} <= found


@pytest.mark.parametrize("port", list(port_classes()))
def test_the_port_shows_a_minimal_implementation_that_runs(port, tmp_path, monkeypatch):
    examples = EXAMPLE.findall(inspect.getdoc(port) or "")
    assert len(examples) == 1, f"{port.__name__}: its docstring shows no ```python example of an implementation"
    monkeypatch.chdir(tmp_path)  # an example that writes, writes here
    namespace: dict[str, object] = {"__name__": "example"}
    exec(compile(examples[0], f"<{port.__name__} docstring>", "exec"), namespace)
    made = [v for v in namespace.values() if inspect.isclass(v) and v.__module__ == "example"]
    wanted = methods(port)
    assert any(wanted <= set(dir(cls)) for cls in made), (
        f"{port.__name__}: no class of its example has all of {sorted(wanted)}")
