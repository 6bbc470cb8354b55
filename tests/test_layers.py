"""The layers of ARCHITECTURE.md, enforced: a module imports only from its own layer or lower
ones, adapters never import the engine, and only adapters talk to HTTP."""

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "loopwright"

LAYER_OF = {
    "types": 0, "events": 0, "errors": 0, "clock": 0, "fastclass": 0, "ids": 0,
    "policy": 1,
    "ports": 2,
    "loop": 3, "accumulate": 3, "compaction": 3, "hooks": 3, "goal": 3, "schedule": 3,
    "routines": 3, "scheduler": 3, "structured": 3, "hookcalls": 3, "session": 3, "dispatch": 3, "gate": 3, "tally": 3, "compactor": 3,
    "providers": 4, "tools": 4, "stores": 4, "sandbox": 4,
    "config": 5, "settings": 5, "app": 5, "cli": 5, "testing": 5, "distributed": 5, "demo": 5,
    "__init__": 5, "__main__": 5,
}
MAY_IMPORT = {0: {0}, 1: {0, 1}, 2: {0, 2}, 3: {0, 1, 2, 3}, 4: {0, 2, 4}, 5: {0, 1, 2, 3, 4, 5}}
# Third-party packages each layer may use (the stdlib is always allowed).
THIRD_PARTY = {
    0: {"pydantic", "anyio"}, 1: {"pydantic", "croniter"}, 2: {"pydantic"}, 3: {"pydantic", "anyio"},
    4: {"pydantic", "anyio", "httpx"}, 5: None,  # None: anything
}
KNOWN_THIRD_PARTY = {"httpx", "anyio", "pydantic", "click", "anthropic", "openai", "rich", "prompt_toolkit",
                     "croniter", "starlette", "uvicorn", "dbos", "psycopg", "hypothesis", "pytest"}


def modules():
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC)
        yield rel, path


def layer(rel: Path) -> int:
    top = rel.parts[0].removesuffix(".py")
    assert top in LAYER_OF, f"{rel}: module not placed in a layer (add it to LAYER_OF and ARCHITECTURE.md)"
    return LAYER_OF[top]


def imported(rel: Path, tree: ast.AST):
    """(kind, name) for each import: ("own", top-level loopwright module) or ("ext", package)."""
    package = ["loopwright", *rel.parts[:-1]]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield _classify(alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                full = ".".join(base + ([node.module] if node.module else []))
                if node.module is None:
                    for alias in node.names:
                        name = full + "." + alias.name
                        # `from .. import x`: x is a submodule, or a name defined in the package root
                        yield _classify(name if alias.name in LAYER_OF or len(base) > 1 else full)
                    continue
                yield _classify(full)
            else:
                yield _classify(node.module or "")


def _classify(dotted: str):
    parts = dotted.split(".")
    if parts[0] == "loopwright":
        return ("own", parts[1] if len(parts) > 1 else "__init__")
    return ("ext", parts[0])


@pytest.mark.parametrize("rel,path", list(modules()), ids=lambda v: str(v) if isinstance(v, Path) else None)
def test_module_respects_layers(rel, path):
    mine = layer(rel)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for kind, name in imported(rel, tree):
        if kind == "own":
            if name == "__init__" and mine < 5:
                # the package root only holds the version string
                continue
            theirs = LAYER_OF.get(name)
            assert theirs is not None, f"{rel} imports unknown module loopwright.{name}"
            assert theirs in MAY_IMPORT[mine], f"{rel} (layer {mine}) imports loopwright.{name} (layer {theirs})"
        elif name in KNOWN_THIRD_PARTY and THIRD_PARTY[mine] is not None:
            assert name in THIRD_PARTY[mine], f"{rel} (layer {mine}) imports third-party {name}"


def test_layer_table_catches_a_violation(tmp_path):
    """The checker itself must be able to fail: an adapter importing the engine is caught."""
    tree = ast.parse("from ..loop import AgentLoop\n")
    found = list(imported(Path("tools/bad.py"), tree))
    assert ("own", "loop") in found
    assert LAYER_OF["loop"] not in MAY_IMPORT[LAYER_OF["tools"]]


def test_default_path_never_imports_the_anthropic_sdk():
    for rel, path in modules():
        if rel.parts[0] == "testing":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        assert ("ext", "anthropic") not in set(imported(rel, tree)), f"{rel} imports the anthropic SDK"
