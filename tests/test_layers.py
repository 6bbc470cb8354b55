"""The layers of ARCHITECTURE.md, enforced: a module imports only from its own layer or lower
ones, adapters never import the engine, only adapters talk to HTTP, and no module imports a
module that imports it back (directly or through others)."""

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "loopwright"

# A module's layer comes from its folder (or root module); the longest matching prefix wins, so
# core/ports, core/storeports and core/keeping (the ports, layer 2) sit apart from the rest of
# core/ (the vocabulary, layer 0).
LAYER_OF = {
    "core": 0, "core.ports": 2, "core.storeports": 2, "core.keeping": 2,
    "policy": 1, "permissions": 1,
    "engine": 3, "capabilities": 3, "hooks": 3, "session": 3, "context": 3, "subagents": 3, "workflows": 3, "proactive": 3,
    "providers": 4, "tools": 4, "stores": 4, "sandbox": 4, "mcp": 4, "telemetry": 4,
    "agent": 3, "config": 5, "settings": 5, "compose": 5, "sdk": 5, "cli": 5, "testing": 5, "distributed": 5, "web": 5, "replay": 5,
    "__init__": 5, "__main__": 5,
}
MAY_IMPORT = {0: {0}, 1: {0, 1}, 2: {0, 2}, 3: {0, 1, 2, 3}, 4: {0, 2, 4}, 5: {0, 1, 2, 3, 4, 5}}
# Third-party packages each layer may use (the stdlib is always allowed).
THIRD_PARTY = {
    0: {"pydantic", "anyio", "re2"}, 1: {"pydantic", "croniter"}, 2: {"pydantic"},
    3: {"pydantic", "anyio", "yaml"},  # yaml: skill, command and agent frontmatter (context.frontmatter)
    4: {"pydantic", "anyio", "httpx", "aiohttp", "mcp", "httpx2", "psycopg", "opentelemetry"}, 5: None,  # None: anything
}
KNOWN_THIRD_PARTY = {"httpx", "aiohttp", "anyio", "pydantic", "click", "anthropic", "openai", "rich", "prompt_toolkit",
                     "croniter", "starlette", "uvicorn", "dbos", "psycopg", "hypothesis", "pytest", "mcp",
                     "re2", "seccomp", "pyseccomp", "httpx2", "claude_agent_sdk", "yaml", "markdown_it",
                     "jsonschema", "opentelemetry"}


def modules():
    for path in sorted(SRC.rglob("*.py")):
        yield path.relative_to(SRC), path


def dotted(rel: Path) -> str:
    """`engine/loop.py` → `engine.loop`; `tools/__init__.py` → `tools`; `__init__.py` → `__init__`."""
    parts = list(rel.with_suffix("").parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts = parts[:-1]
    return ".".join(parts)


def layer_of(name: str) -> int | None:
    parts = name.split(".")
    for n in range(len(parts), 0, -1):
        layer = LAYER_OF.get(".".join(parts[:n]))
        if layer is not None:
            return layer
    return None


def _is_module(name: str) -> bool:
    path = SRC.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def imported(rel: Path, tree: ast.AST):
    """(kind, name) for each import: ("own", dotted module inside loopwright, e.g. `engine.loop`,
    `tools` for a package, `__init__` for the root) or ("ext", top-level package)."""
    package = ["loopwright", *rel.parts[:-1]]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield _classify(alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                full = ".".join(base + ([node.module] if node.module else []))
            else:
                full = node.module or ""
            if not full.startswith("loopwright"):
                yield _classify(full)
                continue
            inner = full.split(".")[1:]
            hit = False
            for alias in node.names:  # `from pkg import submodule` imports the submodule
                sub = ".".join([*inner, alias.name])
                if _is_module(sub):
                    hit = True
                    yield ("own", sub)
            if not hit:
                yield _classify(full)


def _classify(name: str):
    parts = name.split(".")
    if parts[0] == "loopwright":
        return ("own", ".".join(parts[1:]) or "__init__")
    return ("ext", parts[0])


@pytest.mark.parametrize("rel,path", list(modules()), ids=lambda v: str(v) if isinstance(v, Path) else None)
def test_module_respects_layers(rel, path):
    mine = layer_of(dotted(rel))
    assert mine is not None, f"{rel}: module not placed in a layer (add it to LAYER_OF and ARCHITECTURE.md)"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for kind, name in imported(rel, tree):
        if kind == "own":
            if name == "__init__" and mine < 5:
                continue  # the package root holds the version and names the standard outfit (lazily)
            theirs = layer_of(name)
            assert theirs is not None, f"{rel} imports unknown module loopwright.{name}"
            assert theirs in MAY_IMPORT[mine], f"{rel} (layer {mine}) imports loopwright.{name} (layer {theirs})"
        elif name in KNOWN_THIRD_PARTY and THIRD_PARTY[mine] is not None:
            assert name in THIRD_PARTY[mine], f"{rel} (layer {mine}) imports third-party {name}"


def test_layer_table_catches_a_violation():
    """The checker itself must be able to fail: an adapter importing the engine is caught."""
    tree = ast.parse("from ..engine.loop import AgentLoop\n")
    found = list(imported(Path("tools/bad.py"), tree))
    assert ("own", "engine.loop") in found
    assert layer_of("engine.loop") not in MAY_IMPORT[layer_of("tools.bad")]
    assert layer_of("core.ports") == 2 and layer_of("core.types") == 0


def import_graph() -> dict[str, set[str]]:
    """Every import of every module (lazy ones in functions too), as module → modules. A package
    name stands for its `__init__`; the root package is left out (it only holds the version)."""
    graph: dict[str, set[str]] = {}
    for rel, path in modules():
        me = dotted(rel)
        deps = graph.setdefault(me, set())
        for kind, name in imported(rel, ast.parse(path.read_text(encoding="utf-8"))):
            if kind == "own" and name not in ("__init__", me) and _is_module(name):
                deps.add(name)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_circles():
    found = circles(import_graph())
    assert not found, "modules that import each other (directly or through others): " + "; ".join(
        " ⇄ ".join(c) for c in found)


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The module graph folded into packages (a root module is a package of its own)."""
    packages: dict[str, set[str]] = {}
    for module, deps in graph.items():
        mine = packages.setdefault(module.split(".")[0], set())
        mine.update(d.split(".")[0] for d in deps if d.split(".")[0] != module.split(".")[0])
    return packages


# Packages that still import each other, with the imports inside functions counted. None since
# issue 33: jobs, schedules, routine items and sessions keep a RunSpec, so nothing outside the CLI
# re-parses a command line. Only ever shrinks.
KNOWN_PACKAGE_CIRCLES: list[list[str]] = []


def test_no_new_circles_between_packages():
    found = circles(package_graph(import_graph()))
    new = [c for c in found if not any(set(c) <= set(known) for known in KNOWN_PACKAGE_CIRCLES)]
    assert not new, "packages that import each other (counting imports inside functions): " + "; ".join(
        " ⇄ ".join(c) for c in new)
    gone = [known for known in KNOWN_PACKAGE_CIRCLES if not any(set(c) == set(known) for c in found)]
    assert not gone, f"a known circle shrank or ended: update KNOWN_PACKAGE_CIRCLES to {found}"


def test_workers_import_no_cli_module():
    """A durable job is a RunSpec composed by `compose`: the worker's package reaches no module of
    the CLI, even through imports inside functions."""
    graph = import_graph()
    reached = [f"{m} -> {d}" for m, deps in graph.items() if m.split(".")[0] == "distributed"
               for d in deps if d.split(".")[0] == "cli"]
    assert not reached, reached


def test_circle_check_can_fail():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []
    assert circles(package_graph({"x.a": {"y.b"}, "y.b": {"x.c"}, "x.c": set()})) == [["x", "y"]]


def test_default_path_never_imports_the_anthropic_sdk():
    for rel, path in modules():
        if rel.parts[0] == "testing":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        assert ("ext", "anthropic") not in set(imported(rel, tree)), f"{rel} imports the anthropic SDK"
