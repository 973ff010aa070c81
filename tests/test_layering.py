"""The layers of calipers, and a check that every import inside the package respects them.

:data:`LAYERS` is the single source of truth for the architecture: the layer table
of ``docs/architecture.md`` must list the same layers, in the same order, with the
same modules (checked here, so the page and the test cannot drift apart).

Every module under ``src/calipers`` is parsed with :mod:`ast` (nothing is
imported) and every ``import`` statement is collected: module-level ones, the
ones under ``if TYPE_CHECKING:``, and the lazy ones inside functions, relative
imports resolved. The rules:

* **layers** -- an import goes to a module of the same layer or of a lower one.
  This holds for lazy (function-level) imports and for type-only imports too: a
  lazy import defers the *cost* of an import, it does not change who depends on
  whom. The one way out is :data:`ALLOWED_UPWARD`, each entry with its reason
  (empty today); an entry that no longer matches an import fails, so exceptions
  do not outlive their cause. Lazy imports of third-party libraries (torch,
  scipy, matplotlib, pandas, pyarrow) are not calipers modules and are free.
* **no cycles** -- the runtime imports, module-level and lazy (inside a
  function) alike, form no cycle. A lazy import defers a cost; it must not hide
  two modules that need each other (that is a missing module between them).
  Only imports under ``if TYPE_CHECKING:``, which never run, are left out.
* **every module has a layer** -- a new module must be added to :data:`LAYERS`
  (and to the tables of ``docs/architecture.md``, which must name every module).

The checker itself is tested on synthetic graphs with an upward import and a
cycle, so it can fail.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "calipers"
ARCHITECTURE = ROOT / "docs" / "architecture.md"

#: The layers, bottom first: ``(name, modules)``. A module may import only from its
#: own layer and the layers listed before it. An entry that names a package covers
#: its submodules; ``calipers`` (the package namespace) covers only ``__init__.py``.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("backend", ("calipers._backend", "calipers._parallel", "calipers._docstrings")),
    ("validation", ("calipers.validation",)),
    ("files", ("calipers.io", "calipers.datasets")),
    ("pipeline", ("calipers.pipeline",)),
    ("estimators", ("calipers.estimators",)),
    ("metrics", ("calipers.metrics",)),
    ("stream", ("calipers.stream",)),
    ("inference", ("calipers.inference",)),
    ("clinical", ("calipers.clinical",)),
    ("subgroups", ("calipers.subgroups",)),
    ("regression", ("calipers.regression",)),
    ("recalibration", ("calipers.recalibration",)),
    ("diagrams", ("calipers.diagrams",)),
    ("reports", ("calipers.reports",)),
    ("namespace", ("calipers",)),
    ("cli", ("calipers.cli", "calipers.__main__")),
)

#: Imports allowed to go to a higher layer: ``(importer, imported) -> reason``.
ALLOWED_UPWARD: dict[tuple[str, str], str] = {}

ROOT_PACKAGE = "calipers"


# --------------------------------------------------------------------------- the graph


@dataclass(frozen=True)
class Import:
    """One import statement's target, and where it stands."""

    source: str  # importing module
    target: str  # imported calipers module (the deepest one that exists)
    line: int
    lazy: bool  # inside a function
    type_only: bool  # under ``if TYPE_CHECKING:``

    @property
    def runtime(self) -> bool:
        """Runs when the importing module itself is imported."""
        return not (self.lazy or self.type_only)


def module_files(package: Path = PACKAGE) -> dict[str, Path]:
    """Dotted module name -> file, for every ``.py`` file of the package."""
    out: dict[str, Path] = {}
    for path in sorted(package.rglob("*.py")):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports_of(module: str, path: Path, modules: Iterable[str]) -> list[Import]:
    """The calipers-internal imports of one module (module-level, type-only and lazy)."""
    known = set(modules)
    is_package = path.name == "__init__.py"
    found: list[Import] = []

    def target_of(name: str) -> str:
        # the deepest existing module named by ``name`` (``a.b.func`` -> ``a.b``)
        while name not in known and "." in name:
            name = name.rsplit(".", 1)[0]
        return name

    def add(name: str, node: ast.stmt, lazy: bool, type_only: bool) -> None:
        if name == ROOT_PACKAGE or name.startswith(ROOT_PACKAGE + "."):
            found.append(Import(module, target_of(name), node.lineno, lazy, type_only))

    def visit(node: ast.AST, lazy: bool, type_only: bool) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name, node, lazy, type_only)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = module.split(".")
                if not is_package:
                    parts = parts[:-1]
                parts = parts[: len(parts) - (node.level - 1)]
                base = ".".join(parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            for alias in node.names:
                full = f"{base}.{alias.name}"
                add(full if full in known else base, node, lazy, type_only)
        for child in ast.iter_child_nodes(node):
            if isinstance(node, ast.If) and _is_type_checking(node.test) and child in node.body:
                visit(child, lazy, True)
            else:
                inner = isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
                visit(child, lazy or inner, type_only)

    visit(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)), False, False)
    return [imp for imp in found if imp.target != module]


def import_graph(package: Path = PACKAGE) -> tuple[list[str], list[Import]]:
    """Every module of the package and every calipers-internal import between them."""
    files = module_files(package)
    edges: list[Import] = []
    for module, path in files.items():
        edges += imports_of(module, path, files)
    return sorted(files), edges


# --------------------------------------------------------------------------- the checks


def layer_of(module: str, layers: tuple[tuple[str, tuple[str, ...]], ...] = LAYERS) -> int | None:
    """Index of the layer holding ``module`` (the longest matching entry), or None."""
    best: tuple[int, int] | None = None  # (entry length, layer index)
    for index, (_, entries) in enumerate(layers):
        for entry in entries:
            covers = module == entry or (entry != ROOT_PACKAGE and module.startswith(entry + "."))
            if covers and (best is None or len(entry) > best[0]):
                best = (len(entry), index)
    return None if best is None else best[1]


def unassigned(
    modules: Iterable[str], layers: tuple[tuple[str, tuple[str, ...]], ...] = LAYERS
) -> list[str]:
    return [m for m in modules if layer_of(m, layers) is None]


def upward_imports(
    edges: Iterable[Import],
    layers: tuple[tuple[str, tuple[str, ...]], ...] = LAYERS,
    allowed: Mapping[tuple[str, str], str] = ALLOWED_UPWARD,
) -> list[str]:
    """Imports that go to a higher layer and are not in ``allowed``, as messages."""
    bad = []
    for e in edges:
        src, dst = layer_of(e.source, layers), layer_of(e.target, layers)
        if src is None or dst is None or dst <= src or (e.source, e.target) in allowed:
            continue
        how = "lazy " if e.lazy else "type-only " if e.type_only else ""
        bad.append(
            f"{e.source} (layer '{layers[src][0]}') line {e.line}: {how}import of "
            f"{e.target} (layer '{layers[dst][0]}', higher)"
        )
    return bad


def import_cycles(edges: Iterable[Import]) -> list[list[str]]:
    """The cycles among runtime imports, lazy ones included (one per strongly connected set)."""
    graph: dict[str, set[str]] = {}
    for e in edges:
        if not e.type_only:
            graph.setdefault(e.source, set()).add(e.target)
            graph.setdefault(e.target, set())
    # Tarjan's strongly connected components, iteratively
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        m = stack.pop()
                        on_stack.discard(m)
                        component.append(m)
                        if m == node:
                            break
                    if len(component) > 1:
                        cycles.append(sorted(component))
    return cycles


def documented_layers(text: str) -> list[tuple[str, tuple[str, ...]]]:
    """The layer table of docs/architecture.md: rows ``| n | name | `module`, ... |``."""
    rows = []
    for line in text.splitlines():
        m = re.match(r"^\|\s*(\d+)\s*\|\s*([^|]+?)\s*\|([^|]*)\|", line)
        if m:
            rows.append((m.group(2), tuple(re.findall(r"`([\w.]+)`", m.group(3)))))
    return rows


# --------------------------------------------------------------------------- the tests


def shadowed_modules(package: Path = PACKAGE) -> list[str]:
    """Submodules hidden by a name their package's ``__init__`` binds to something else.

    ``import calipers.verdict as v`` binds ``calipers.verdict``, the attribute, so a
    module ``calipers/verdict.py`` next to an exported function ``verdict`` can only be
    reached through :mod:`importlib`. Found by parsing each package's ``__init__.py``:
    every name it binds (imports, definitions, assignments) that is not the submodule
    itself (``from . import diagrams``).
    """
    files = module_files(package)
    out = []
    for pkg, init in files.items():
        if init.name != "__init__.py":
            continue
        subs = {m.rsplit(".", 1)[1] for m in files if m.rsplit(".", 1)[0] == pkg and m != pkg}
        bound: set[str] = set()
        for node in ast.walk(ast.parse(init.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                for a in node.names:
                    name = a.asname or a.name
                    is_submodule = node.level == 1 and node.module is None and a.name == name
                    if not is_submodule:
                        bound.add(name)
            elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                bound.add(node.name)
            elif isinstance(node, ast.Assign):
                bound.update(t.id for t in node.targets if isinstance(t, ast.Name))
        out += sorted(f"{pkg}.{name}" for name in subs & bound)
    return out


@pytest.fixture(scope="module")
def graph() -> tuple[list[str], list[Import]]:
    return import_graph()


def test_the_graph_is_found(graph: tuple[list[str], list[Import]]) -> None:
    modules, edges = graph
    assert {"calipers", "calipers.validation", "calipers.io", "calipers.cli"} <= set(modules)
    assert any(
        e.source == "calipers.metrics.binned" and e.target == "calipers.metrics._calibration_error"
        for e in edges
    )
    # relative, lazy and package-relative imports are all resolved
    assert any(
        e.source == "calipers.reports._document" and e.target == "calipers.io.output" and e.lazy
        for e in edges
    )


def test_every_module_has_a_layer(graph: tuple[list[str], list[Import]]) -> None:
    modules, _ = graph
    missing = unassigned(modules)
    assert not missing, (
        f"modules without a layer: {missing}; add each to LAYERS in tests/test_layering.py "
        "and to the layer table of docs/architecture.md"
    )


def test_every_layer_entry_exists(graph: tuple[list[str], list[Import]]) -> None:
    modules = set(graph[0])
    stale = [e for _, entries in LAYERS for e in entries if e not in modules]
    assert not stale, f"LAYERS names modules that do not exist: {stale}"
    entries = [e for _, group in LAYERS for e in group]
    assert len(entries) == len(set(entries)), "a module is listed in two layers"


def test_imports_go_down_the_layers(graph: tuple[list[str], list[Import]]) -> None:
    bad = upward_imports(graph[1])
    assert not bad, (
        "imports against the layering of docs/architecture.md (a module may import only "
        "from its own layer and lower ones):\n  " + "\n  ".join(bad)
    )


def test_allowed_upward_imports_still_exist(graph: tuple[list[str], list[Import]]) -> None:
    pairs = {(e.source, e.target) for e in graph[1]}
    stale = [pair for pair in ALLOWED_UPWARD if pair not in pairs]
    assert not stale, f"ALLOWED_UPWARD lists imports that no longer exist: {stale}"


def test_no_import_cycle(graph: tuple[list[str], list[Import]]) -> None:
    cycles = import_cycles(graph[1])
    assert not cycles, f"import cycles (lazy imports included): {cycles}"


def test_architecture_page_lists_the_layers() -> None:
    text = ARCHITECTURE.read_text(encoding="utf-8")
    doc = documented_layers(text)
    assert doc == [(name, tuple(entries)) for name, entries in LAYERS], (
        "the layer table of docs/architecture.md differs from LAYERS in "
        f"tests/test_layering.py:\n  doc:   {doc}\n  tests: {list(LAYERS)}"
    )


def test_architecture_page_names_every_module(graph: tuple[list[str], list[Import]]) -> None:
    named = set(re.findall(r"`(calipers[\w.]*)`", ARCHITECTURE.read_text(encoding="utf-8")))
    missing = [m for m in graph[0] if m not in named]
    assert not missing, (
        f"docs/architecture.md does not name {missing}; add each to its tables (which "
        "module holds which concept)"
    )


# --------------------------------------------------------------------------- the checker can fail


def _edge(source: str, target: str, *, lazy: bool = False, type_only: bool = False) -> Import:
    return Import(source, target, 1, lazy, type_only)


SYNTHETIC = (
    ("low", ("pkg.a", "pkg.b")),
    ("high", ("pkg.c", "pkg.sub")),
    ("namespace", ("calipers",)),
)


def test_checker_finds_an_upward_import() -> None:
    edges = [
        _edge("pkg.a", "pkg.b"),
        _edge("pkg.c", "pkg.a"),
        _edge("pkg.a", "pkg.sub.x", lazy=True),
    ]
    bad = upward_imports(edges, SYNTHETIC, {})
    assert (
        len(bad) == 1 and "pkg.a (layer 'low')" in bad[0] and "lazy import of pkg.sub.x" in bad[0]
    )
    assert upward_imports(edges, SYNTHETIC, {("pkg.a", "pkg.sub.x"): "a reason"}) == []
    assert upward_imports([_edge("pkg.a", "calipers")], SYNTHETIC, {})  # the namespace is high


def test_checker_finds_a_cycle() -> None:
    loop = [_edge("pkg.a", "pkg.b"), _edge("pkg.b", "pkg.c"), _edge("pkg.c", "pkg.a")]
    assert import_cycles(loop) == [["pkg.a", "pkg.b", "pkg.c"]]
    lazy_loop = [_edge("pkg.a", "pkg.b"), _edge("pkg.b", "pkg.a", lazy=True)]
    assert import_cycles(lazy_loop) == [["pkg.a", "pkg.b"]]  # a lazy import hides no cycle
    assert import_cycles([_edge("pkg.a", "pkg.b"), _edge("pkg.b", "pkg.a", type_only=True)]) == []
    assert import_cycles([_edge("pkg.a", "pkg.b"), _edge("pkg.c", "pkg.b")]) == []


def test_checker_finds_a_module_without_a_layer() -> None:
    assert unassigned(
        ["pkg.a", "pkg.sub.deep", "pkg.new", "calipers", "calipers.x"], SYNTHETIC
    ) == [
        "pkg.new",
        "calipers.x",  # the namespace entry covers only the package's __init__
    ]


def test_parser_resolves_every_kind_of_import(tmp_path: Path) -> None:
    pkg = tmp_path / "calipers"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from .a import f\n")
    (pkg / "a.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "import numpy\n"
        "from . import b\n"
        "from .sub import deep\n"
        "if TYPE_CHECKING:\n"
        "    from .sub.deep import T\n"
        "def f():\n"
        "    import calipers.sub\n"
    )
    (pkg / "b.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from ..b import x\n")
    (pkg / "sub" / "deep.py").write_text("from .. import a\n")
    modules, edges = import_graph(pkg)
    assert modules == ["calipers", "calipers.a", "calipers.b", "calipers.sub", "calipers.sub.deep"]
    got = {(e.source, e.target, e.lazy, e.type_only) for e in edges}
    assert got == {
        ("calipers", "calipers.a", False, False),
        ("calipers.a", "calipers.b", False, False),
        ("calipers.a", "calipers.sub.deep", False, False),
        ("calipers.a", "calipers.sub.deep", False, True),
        ("calipers.a", "calipers.sub", True, False),
        ("calipers.sub", "calipers.b", False, False),
        ("calipers.sub.deep", "calipers.a", False, False),
    }
    assert import_cycles(edges) == [["calipers.a", "calipers.sub.deep"]]


def test_no_module_is_shadowed_by_an_exported_name() -> None:
    shadowed = shadowed_modules()
    assert not shadowed, (
        f"modules hidden by a name their package exports: {shadowed}; make the module "
        "private (a leading underscore), as scikit-learn and SciPy name theirs"
    )


def test_checker_finds_a_shadowed_module(tmp_path: Path) -> None:
    pkg = tmp_path / "calipers"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from . import sub\nfrom .verdict import verdict\n")
    (pkg / "verdict.py").write_text("def verdict(): pass\n")
    (pkg / "sub" / "__init__.py").write_text("from ._x import x\n")
    (pkg / "sub" / "_x.py").write_text("x = 1\n")
    assert shadowed_modules(pkg) == ["calipers.verdict"]
