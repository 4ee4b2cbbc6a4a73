"""The import graph of statectl's modules: no circle, and the format below everything else.

Every ``import`` and ``from ... import`` of every module is read with ``ast``,
including those inside functions (a deferred import is still a dependency).
An import of a package's submodule counts as an edge to that submodule only,
as Python's own loading does not make the parent depend on its child. The
root package ``statectl`` is the public facade (lazy re-exports of the
layers), so imports of it (``__version__``) are not edges.
"""

from __future__ import annotations

import ast
from pathlib import Path

from support import REPO

PACKAGES = ("statefmt", "backends", "readers", "writers", "cli")


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            parts = list(path.relative_to(REPO).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(["statectl", *parts])] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    is_package = path.name == "__init__.py"
    here = name.split(".") if is_package else name.split(".")[:-1]
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[:len(here) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module
            for alias in node.names:  # `from pkg import submodule` depends on the submodule
                child = f"{module}.{alias.name}"
                targets.add(child if child in modules else module)
    return {t for t in targets if t in modules and t != name}


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []

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
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_graph_is_read():
    graph = _graph()
    assert "statectl.statefmt.rocksdb.codec" in graph["statectl.backends.heap"]
    assert "statectl.backends.base" in graph["statectl.backends.rocks"]
    # a deferred import inside a function is an edge too
    assert "statectl.statefmt.rocksdb.database" in graph["statectl.backends.base"]


def test_cycles_are_found():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_circle():
    assert _cycles(_graph()) == []


def test_the_format_imports_no_other_layer():
    above = ("statectl.backends", "statectl.readers", "statectl.writers", "statectl.cli")
    wrong = sorted((name, target) for name, targets in _graph().items()
                   if name.startswith("statectl.statefmt")
                   for target in targets if target.startswith(above))
    assert wrong == []


def test_readers_and_writers_do_not_import_the_backends():
    wrong = sorted((name, target) for name, targets in _graph().items()
                   if name.startswith(("statectl.readers", "statectl.writers"))
                   for target in targets if target.startswith("statectl.backends"))
    assert wrong == []


# --- the layering inside statefmt --------------------------------------------------------
# Base modules: what every format builds on; they import only each other.
STATEFMT = "statectl.statefmt"
BASE = {f"{STATEFMT}.{m}" for m in (
    "errors", "refs", "fs", "resolve", "ids", "types", "vocabulary", "keygroups", "scratch", "jit",
    "model", "integrity", "locations", "metadata", "canonical", "seam",
    "varint", "bytecolumns", "slicekernel",  # the byte toolkit both families share
    "expiry")}  # Flink's TTL rule, which pruning in a format's bytes applies too
# What a format family's subpackage may import from its parent package, beyond its own modules.
SUBPACKAGE_MAY_IMPORT = {
    f"{STATEFMT}.rocksdb": BASE,
    # statectl's own family at the seam: its savepoint module loads and commits the document
    f"{STATEFMT}.own": BASE | {f"{STATEFMT}.savepoint"},
    # Flink's native snapshots are read with statectl's SST reader and written with its SST writer
    f"{STATEFMT}.flink": BASE | {f"{STATEFMT}.rocksdb.sstread", f"{STATEFMT}.rocksdb.sstwalk",
                                 f"{STATEFMT}.rocksdb.sst"},
}
# The only module that knows both families: the seam (`validate` and `deep` ask it).
BOTH_FAMILIES = {f"{STATEFMT}.formats"}


def _statefmt_edges():
    return [(name, target) for name, targets in _graph().items() if name.startswith(STATEFMT)
            for target in sorted(targets)]


def _subpackage(name: str) -> str | None:
    return next((p for p in SUBPACKAGE_MAY_IMPORT if name.startswith(p + ".")), None)


def test_statefmt_base_modules_import_only_base_modules():
    wrong = sorted((name, target) for name, target in _statefmt_edges()
                   if name in BASE and target not in BASE)
    assert wrong == []


def test_statefmt_subpackages_import_only_the_base_of_their_parent():
    wrong = []
    for name, target in _statefmt_edges():
        package = _subpackage(name)
        if package is None or target.startswith(package + "."):
            continue
        if target not in SUBPACKAGE_MAY_IMPORT[package]:
            wrong.append((name, target))
    assert sorted(wrong) == []


def test_the_own_format_imports_nothing_of_flink():
    flink = f"{STATEFMT}.flink"
    wrong = sorted((name, target) for name, target in _statefmt_edges()
                   if not name.startswith(flink) and name not in BOTH_FAMILIES
                   and (target == flink or target.startswith(flink + ".")))
    assert wrong == []


def test_no_import_circle_in_statefmt():
    graph = {name: {t for t in targets if t.startswith(STATEFMT)}
             for name, targets in _graph().items() if name.startswith(STATEFMT)}
    assert _cycles(graph) == []
