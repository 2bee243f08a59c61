"""The package's layering, checked on its source: the core imports neither Dagster nor the
layers above it, no module-level import circle, no module far past 600 lines, and the tools
stay out of the package."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "extraction_assets"
#: Most lines of one module (the restructuring's "no module over ~600 lines").
MAX_LINES = 650
#: What each layer may import of the package (a layer always imports itself).
ALLOWED = {
    "core": set(),
    "pipeline": {"core"},
    "store": {"core", "pipeline"},
    "search": {"core", "pipeline", "store"},
    "defs": {"core", "pipeline", "store", "search"},
    "app": {"core", "pipeline", "store", "search", "defs"},
}


def _modules(root: Path = PACKAGE) -> dict[str, Path]:
    out = {}
    for path in sorted(root.rglob("*.py")):
        name = ".".join(path.relative_to(root.parent).with_suffix("").parts)
        out[name.removesuffix(".__init__")] = path
    return out


def _imports(path: Path, top_level_only: bool) -> set[str]:
    """Modules named by the imports of ``path`` (``from a import b`` names ``a`` and ``a.b``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = tree.body if top_level_only else ast.walk(tree)
    names = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names |= {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
    return names


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while not component or component[-1] != v:
                component.append(stack.pop())
                on_stack.discard(component[-1])
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return cycles


def test_no_module_level_import_circle():
    modules = _modules()
    graph = {m: {t for t in _imports(p, True) if t in modules and t != m}
             for m, p in modules.items()}
    assert import_cycles(graph) == []


def test_the_cycle_finder_finds_a_circle():
    assert import_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_each_layer_imports_only_the_layers_below_it(layer):
    wrong = []
    for name, path in _modules().items():
        if not name.startswith(f"extraction_assets.{layer}"):
            continue
        for target in _imports(path, False):
            parts = target.split(".")
            if parts[0] == "dagster" and layer in ("core", "pipeline"):
                wrong.append(f"{name} imports {target}")
            if parts[0] == "tools" or (parts[0] == "extraction_assets" and len(parts) > 1
                                       and parts[1] in ALLOWED and parts[1] != layer
                                       and parts[1] not in ALLOWED[layer]):
                wrong.append(f"{name} imports {target}")
    assert wrong == []


def test_no_module_far_past_six_hundred_lines():
    modules = {**_modules(), **_modules(PACKAGE.parent / "tools")}
    long = {name: n for name, path in modules.items()
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}
