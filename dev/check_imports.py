# SPDX-License-Identifier: GPL-3.0-or-later
"""List import circles, private cross-module imports and upward imports between ik_core's layers; exit 1 on any.

Run from anywhere: ``python dev/check_imports.py [--graph]``. Reads the source only (``ast``),
so it needs neither Blender nor numpy.

- An import circle is a set of modules that import each other, directly or through others
  (a strongly connected component of the import graph with more than one module, or a module
  importing itself). Every import counts, also one inside a function (a lazy import hides a
  circle, it does not remove it) or under ``if TYPE_CHECKING:`` (a type-only import still ties
  the two modules together). Importing a name from a
  package means importing the package's ``__init__``, which imports its own modules: so a
  module that imports from its own package's ``__init__`` closes a circle; and importing a
  module runs the ``__init__`` of each package above it (other than the importer's own).
- An upward import goes from one of ``ik_core``'s folders to a folder of the same or a higher
  layer (:data:`LAYERS`: model below limits below solvers below take; formats, contacts and
  trajectory on the model; humanoid on contacts; robots on top).
- A private import takes a ``_name`` from another module: ``from .x import _name``, or
  ``x._name`` on a module ``x`` the importer imported. Dunder names (``__version__``) are not
  private.
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("ik_core", "operators", "ui", "presets")
# ik_core's folders by layer: a module imports from its own folder or from lower layers only
# (ik_core/__init__.py, which re-exports the public API, may import any).
LAYERS = {
    "errors": 0,
    "blas_threads": 1,
    "bundled": 1,
    "model": 1,
    "limits": 2,
    "formats": 2,
    "contacts": 2,
    "humanoid": 3,
    "trajectory": 2,
    "solvers": 3,
    "take": 4,
    "robots": 5,
}


def module_name(path: Path) -> str:
    """``ik_core/solvers/dls.py`` -> ``ik_core.solvers.dls.solver``; a package's ``__init__`` -> the package."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def find_modules() -> dict[str, Path]:
    """Every module of the checked packages, by dotted name."""
    found = {}
    for package in PACKAGES:
        base = ROOT / package
        if base.is_dir():
            for path in sorted(base.rglob("*.py")):
                if "__pycache__" not in path.parts:
                    found[module_name(path)] = path
    return found


def _imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement, wherever it stands (functions and ``if TYPE_CHECKING:`` blocks too)."""
    return [node for node in ast.walk(tree) if isinstance(node, ast.Import | ast.ImportFrom)]


def _resolve(importer: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute dotted module a ``from`` import reads from (the repo root is the top level)."""
    if node.level == 0:
        return node.module or ""
    parts = importer.split(".")
    if not is_package:
        parts = parts[:-1]
    if node.level > 1:
        parts = parts[: len(parts) - (node.level - 1)]
    return ".".join(parts + ([node.module] if node.module else []))


def analyse(modules: dict[str, Path]) -> tuple[dict[str, set[str]], list[str]]:
    """The import graph between ``modules``, and every private cross-module import found."""
    graph: dict[str, set[str]] = {name: set() for name in modules}
    private: list[str] = []
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        is_package = path.name == "__init__.py"
        module_aliases: dict[str, str] = {}
        for node in _imports(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name in modules:
                        graph[name].add(alias.name)
                        module_aliases[alias.asname or alias.name] = alias.name
                continue
            source = _resolve(name, is_package, node)
            if source not in modules:
                continue  # outside the checked packages (numpy, bpy, the add-on's root)
            for alias in node.names:
                sub = f"{source}.{alias.name}"
                if sub in modules:  # ``from . import rotations``: a dependency on that module alone
                    graph[name].add(sub)
                    module_aliases[alias.asname or alias.name] = sub
                else:
                    graph[name].add(source)
                    if alias.name.startswith("_") and not alias.name.startswith("__"):
                        private.append(f"{path.relative_to(ROOT)}:{node.lineno}: imports {alias.name} from {source}")
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in module_aliases and node.attr.startswith("_")
                    and not node.attr.startswith("__")):
                private.append(f"{path.relative_to(ROOT)}:{node.lineno}: uses {node.value.id}.{node.attr} "
                               f"of {module_aliases[node.value.id]}")
    # Importing a.b.c runs the __init__ of every package above it first: a package that is not
    # one of the importer's own (already being imported) is a dependency too.
    for name in list(graph):
        own = {".".join(name.split(".")[:k]) for k in range(1, len(name.split(".")) + 1)}
        for target in list(graph[name]):
            parts = target.split(".")
            for k in range(1, len(parts)):
                package = ".".join(parts[:k])
                if package in modules and package not in own:
                    graph[name].add(package)
    return graph, private


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module, or a module importing itself (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def connect(v: str) -> None:
        # Iterative Tarjan: the graphs are small, but recursion limits are not worth the risk.
        work = [(v, iter(sorted(graph[v])))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        while work:
            node, children = work[-1]
            advanced = False
            for w in children:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    advanced = True
                    break
                if w in on_stack:
                    low[node] = min(low[node], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == node:
                        break
                if len(component) > 1 or node in graph[node]:
                    found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return found


def upward(graph: dict[str, set[str]]) -> list[str]:
    """Imports from an ik_core folder into a higher (or unranked) layer: each as a line of text."""
    out = []
    for name, targets in sorted(graph.items()):
        parts = name.split(".")
        if parts[0] != "ik_core" or len(parts) < 2:
            continue
        for target in sorted(targets):
            tparts = target.split(".")
            if tparts[0] != "ik_core" or len(tparts) < 2 or tparts[1] == parts[1]:
                continue
            mine, theirs = LAYERS.get(parts[1]), LAYERS.get(tparts[1])
            if mine is None or theirs is None or theirs >= mine:
                out.append(f"{name} ({parts[1]}, layer {mine}) imports {target} ({tparts[1]}, layer {theirs})")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graph", action="store_true", help="also print every module's imports")
    args = parser.parse_args(argv)
    modules = find_modules()
    graph, private = analyse(modules)
    if args.graph:
        for name in sorted(graph):
            print(f"{name}: {', '.join(sorted(graph[name])) or '-'}")
    found = circles(graph)
    for component in found:
        print(f"import circle: {' <-> '.join(component)}")
    for line in private:
        print(f"private import: {line}")
    layered = upward(graph)
    for line in layered:
        print(f"upward import: {line}")
    print(f"check_imports: {len(modules)} modules, {len(found)} import circle(s), {len(private)} private import(s), "
          f"{len(layered)} upward import(s) between ik_core's layers")
    return 1 if found or private or layered else 0


if __name__ == "__main__":
    sys.exit(main())
