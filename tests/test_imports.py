"""The package's import structure: every module imports, and no imports go round in a cycle.

The import graph is read from the source with ``ast`` (every ``import`` and
``from ... import`` of a shiftsim module, relative ones resolved; those under
``if TYPE_CHECKING:`` are annotations only and left out). Two rules:

* modules: counting every import, at the top level and inside functions
  alike (a deferred import still ties the modules together), no module leads
  back to itself;
* subpackages: counting every import, also those deferred into functions,
  no subpackage (``shiftsim.collision``, ``shiftsim.scenario``, ...; a
  top-level module is its own unit) depends on itself through another one —
  e.g. collision knows models and poses, the scenario runner calls it, and
  nothing in collision imports the scenario package.

``PENDING`` would list module-to-subpackage imports that still close a
subpackage cycle, each with the move that removes it; it is empty, so any
import that closes a cycle fails the test.
"""

from __future__ import annotations

import ast
import importlib
from collections import defaultdict
from pathlib import Path

import pytest

import shiftsim

PACKAGE = Path(shiftsim.__file__).resolve().parent


def module_files() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its ``__init__.py``)."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


MODULES = module_files()

PENDING: set[tuple[str, str]] = set()  # module-to-subpackage imports still closing a cycle (none left)


def _type_checking_only(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            return True
    return False


def _in_function(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    while node in parents:
        node = parents[node]
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return True
    return False


def imports_of(name: str, source: str) -> list[tuple[str, bool]]:
    """(imported shiftsim module, whether the import runs at import time) for every import in a module."""
    tree = ast.parse(source)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    package = name if MODULES[name].name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            # ``from package import submodule`` depends on the submodule, ``from module import name`` on the module
            targets = [f"{module}.{a.name}" if f"{module}.{a.name}" in MODULES else module for a in node.names]
        else:
            continue
        if _type_checking_only(node, parents):
            continue
        at_import = not _in_function(node, parents)
        found += [(target, at_import) for target in targets if target in MODULES]
    return found


def graph(at_import_only: bool, unit=lambda name: name, skip=frozenset()) -> dict[str, set[str]]:
    """Import edges between units (modules by default); ``skip``: (module, unit) edges left out."""
    edges: dict[str, set[str]] = defaultdict(set)
    for name, path in MODULES.items():
        for target, at_import in imports_of(name, path.read_text(encoding="utf-8")):
            if (at_import or not at_import_only) and unit(target) != unit(name) and (name, unit(target)) not in skip:
                edges[unit(name)].add(unit(target))
    return edges


def subpackage(name: str) -> str:
    """``shiftsim.formats.mfk.base`` -> ``shiftsim.formats``; a top-level module is its own unit."""
    return ".".join(name.split(".")[:2])


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in edges.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for node in sorted({*edges, *(t for targets in edges.values() for t in targets)}):
        if node not in index:
            visit(node)
    return out


def test_the_graph_reader_sees_relative_deferred_and_annotation_imports():
    source = ("from __future__ import annotations\nfrom typing import TYPE_CHECKING\n"
              "from ..kinematics import assemble\nfrom . import world\nimport shiftsim.model\n"
              "if TYPE_CHECKING:\n    from ..scenario import Scenario\n"
              "def f():\n    from ..statics import solve\n")
    assert sorted(imports_of("shiftsim.collision.queries", source)) == [
        ("shiftsim.collision.world", True), ("shiftsim.kinematics", True), ("shiftsim.model", True),
        ("shiftsim.statics", False)]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


@pytest.mark.slow
def test_no_module_imports_itself_round_a_cycle():
    assert cycles(graph(at_import_only=False)) == []


def test_deferred_imports_count_and_close_a_cycle_between_modules():
    """The module graph sees an import inside a function of a nested package, resolved from its relative form."""
    inside = imports_of("shiftsim.scenario.runner", "def f():\n    from ..plots.registry import render\n")
    assert inside == [("shiftsim.plots.registry", False)]
    assert cycles({"shiftsim.scenario.runner": {"shiftsim.plots.registry"},
                   "shiftsim.plots.registry": {"shiftsim.scenario.runner"}}) == [
        ["shiftsim.plots.registry", "shiftsim.scenario.runner"]]


@pytest.mark.slow
def test_no_subpackage_depends_on_itself_through_another():
    assert cycles(graph(at_import_only=False, unit=subpackage, skip=PENDING)) == []
    # the collision package knows models and poses, not scenarios (collisions.png is shiftsim.scenario's)
    seen = {name: {t for t, _ in imports_of(name, path.read_text(encoding="utf-8"))} for name, path in MODULES.items()
            if name.startswith("shiftsim.collision")}
    assert len(seen) >= 6 and not any(t.startswith("shiftsim.scenario") for targets in seen.values() for t in targets)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(n for n in MODULES if not n.endswith("__main__")))  # __main__ runs the CLI
def test_every_module_imports(name):
    importlib.import_module(name)


FLOW = ("shiftsim.commands", "shiftsim.view", "shiftsim.output", "shiftsim.plots", "shiftsim.analysis", "shiftsim.scenario")
"""The rooms of a run, top down (docs/layout.md): each imports only rooms below it, never one above."""


@pytest.mark.slow
def test_the_run_flows_down_commands_output_plots_analysis_scenario():
    upward = []
    for name, path in MODULES.items():
        if subpackage(name) not in FLOW:
            continue
        above = FLOW[:FLOW.index(subpackage(name))]
        upward += [(name, target) for target, _ in imports_of(name, path.read_text(encoding="utf-8"))
                   if subpackage(target) in above]
    assert upward == []
    # and the algorithms below know none of these rooms (the CLI and the package's lazy API aside)
    below = [(name, target) for name, path in MODULES.items() if subpackage(name) not in FLOW
             and name not in ("shiftsim", "shiftsim.cli", "shiftsim.__main__")
             for target, _ in imports_of(name, path.read_text(encoding="utf-8")) if subpackage(target) in FLOW]
    assert below == []
