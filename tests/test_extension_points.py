"""The places a contributor touches to add a capability, a built-in tool or a hook event (the
list is in docs/contributing.md, "Adding a capability, a tool or a hook event") are kept in step:
a thing added in one of them and forgotten in another fails here, naming the place."""

import ast
import json
import re
from pathlib import Path
from typing import get_args

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "loopwright"


def test_every_built_in_tool_has_its_class_its_access_and_its_spec():
    from loopwright.tools.access import ACCESS
    from loopwright.tools.builtin import CLASSES, SPEC_FILE

    specs = {s["name"] for s in json.loads(SPEC_FILE.read_text())} if SPEC_FILE.suffix == ".json" else set()
    for name in CLASSES:
        assert name in ACCESS, f"tools/access.py ACCESS has no row for the built-in tool {name} (the gate cannot judge it)"
        assert name in specs, f"tools/builtin.json has no spec for {name}: run python -m loopwright.tools.builtin"
    assert set(ACCESS) == set(CLASSES), f"ACCESS rows without a tool: {set(ACCESS) - set(CLASSES)}"


def test_every_hook_event_is_documented():
    from loopwright.core.hookevents import HookEvent

    table = (ROOT / "docs" / "hooks.md").read_text()
    documented = set(re.findall(r"^\| `([A-Za-z]+)` \|", table, re.M))
    missing = set(get_args(HookEvent)) - documented
    assert not missing, f"docs/hooks.md's Events table has no row for {sorted(missing)}"


def test_every_capability_module_holds_a_capability_and_is_listed():
    listed = (ROOT / "docs" / "capabilities.md").read_text()
    for path in sorted((SRC / "capabilities").glob("*.py")):
        if path.name == "__init__.py":
            continue
        tree = ast.parse(path.read_text())
        bases = {b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for node in ast.walk(tree)
                 if isinstance(node, ast.ClassDef) for b in node.bases}
        assert "Capability" in bases, f"capabilities/{path.name} defines no Capability subclass"
        assert f"| `{path.stem}` |" in listed, f"docs/capabilities.md does not list capabilities/{path.name}"


def test_every_package_is_in_the_contributors_layout_table():
    """A new folder of the package gets its row (its layer, its modules) in docs/contributing.md."""
    text = (ROOT / "docs" / "contributing.md").read_text()
    table = [line for line in text.splitlines() if re.match(r"^\| \d ", line)]
    named = set(re.findall(r"`([a-z_]+)/`", " ".join(line.split(" | ")[1] for line in table)))
    packages = {p.parent.name for p in SRC.glob("*/__init__.py")}
    missing = packages - named
    assert not missing, f"docs/contributing.md's layout table has no row naming {sorted(missing)}"
