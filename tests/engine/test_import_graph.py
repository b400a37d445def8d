"""The engine's import graph: no cycles, and no web code (SPEC: memory_core imports no
Django web code, ninja, channels, sessions_app or the project package).

Every import statement counts, wherever it sits: module level, inside functions and
under `if TYPE_CHECKING:`, since each is a dependency a reader has to follow."""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "memory_core"
FORBIDDEN = ("django", "ninja", "channels", "sessions_app", "arbor", "arbor_client")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def imported_names(name: str, path: Path, known: Iterable[str] = ()) -> set[str]:
    """Every absolute module name the file imports. `from pkg import x` names `pkg.x` when
    that is a module in `known` (a submodule import), else `pkg` itself."""
    known = set(known)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                anchor = parts[: len(parts) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.add(sub if sub in known else base)
    return found


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: {m for m in imported_names(name, path, known) if m in known and m != name}
            for name, path in known.items()}


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One cycle as a list of modules (first repeated at the end), or None."""
    state: dict[str, int] = {}  # 1 = on the current path, 2 = finished
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges[node]):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for start in sorted(edges):
        if start not in state and (cycle := visit(start)):
            return cycle
    return None


def test_the_graph_sees_the_packages_and_their_imports():
    edges = graph()
    assert {"memory_core", "memory_core.session", "memory_core.llm",
            "memory_core.llm.openai", "memory_core.providers.stored"} <= set(edges)
    assert "memory_core.storage" in edges["memory_core.providers.stored"]  # from ..storage
    assert "memory_core.llm.base" in edges["memory_core.llm"]


def test_find_cycle_names_the_modules_of_a_cycle():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert find_cycle(edges) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_relative_and_package_imports_resolve(tmp_path):
    package = tmp_path / "memory_core" / "pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("from . import x\nfrom .y import z\n")
    (package / "x.py").write_text("def f():\n    from ..top import thing\n")
    known = {"memory_core.pkg.x", "memory_core.pkg.y", "memory_core.top"}
    assert imported_names("memory_core.pkg", package / "__init__.py", known) == {
        "memory_core.pkg.x", "memory_core.pkg.y"}
    assert imported_names("memory_core.pkg.x", package / "x.py", known) == {"memory_core.top"}


def test_memory_core_has_no_import_cycle():
    cycle = find_cycle(graph())
    assert cycle is None, "import cycle in memory_core: " + " -> ".join(cycle or [])


@pytest.mark.parametrize("name", sorted(modules()))
def test_memory_core_imports_no_web_code(name):
    # asgiref is allowed: the engine's a-twins use sync_to_async.
    outside = {m for m in imported_names(name, modules()[name])
               if m.split(".")[0] in FORBIDDEN}
    assert not outside, f"{name} imports {sorted(outside)}"
