"""The import graph of every package (memory_core, sessions_app, arbor, arbor_client,
benchmarks), one node per module: no cycle anywhere, and each layer imports only what
it may (SPEC: memory_core imports no Django web code, ninja, channels, sessions_app or
the project package; arbor_client works without Django; sessions_app/storage speaks to
the database for the app and imports nothing of the app but its models).

Every import statement counts, wherever it sits: module level, inside functions and
under `if TYPE_CHECKING:`, since each is a dependency a reader has to follow. Importing
`a.b.c` from outside the package `a.b` runs `a/b/__init__.py` first, so the importer
depends on the package too."""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("memory_core", "sessions_app", "arbor", "arbor_client", "benchmarks")
WEB = ("django", "ninja", "channels", "daphne", "sessions_app", "arbor")
STORAGE = "sessions_app.storage"

def module_name(path: Path) -> str:
    """Where the file is (relative imports resolve from there)."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def as_node(name: str) -> str:
    """The module's node in the graph."""
    return name


def modules(*packages: str) -> dict[str, Path]:
    return {as_node(module_name(p)): p for package in packages or PACKAGES
            for p in sorted((ROOT / package).rglob("*.py"))}


def imported_names(name: str, path: Path, known: Iterable[str] = ()) -> set[str]:
    """Every absolute module name the file `name` imports, as graph nodes. `from pkg
    import x` names `pkg.x` when that is a module in `known` (a submodule import), else
    `pkg` itself."""
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
                sub = as_node(f"{base}.{alias.name}")
                found.add(sub if sub in known else as_node(base))
    return {as_node(m) for m in found}


def _with_packages(name: str, targets: set[str], known: set[str]) -> set[str]:
    """The targets and every package above a target that `name` is not inside."""
    out = set(targets)
    for target in targets:
        parts = target.split(".")
        for i in range(1, len(parts)):
            package = ".".join(parts[:i])
            if package in known and not (name == package or name.startswith(package + ".")):
                out.add(package)
    return out


def graph() -> dict[str, set[str]]:
    known = modules()
    names = set(known)
    edges = {}
    for name, path in known.items():
        found = imported_names(module_name(path), path, names)
        edges[name] = _with_packages(name, {m for m in found if m in names}, names) - {name}
    return edges


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
            "memory_core.llm.openai", "memory_core.providers.stored", "sessions_app.storage",
            "sessions_app.views.chat", "arbor.settings", "arbor_client.client",
            "benchmarks.cases"} <= set(edges)
    assert "memory_core.storage" in edges["memory_core.providers.stored"]  # from ..storage
    assert "memory_core.llm.base" in edges["memory_core.llm"]
    # from ..storage.rows import ...: the module, and its package (its __init__ runs first)
    assert {"sessions_app.storage.rows", STORAGE} <= edges["benchmarks.cases"]
    assert STORAGE not in edges["sessions_app.storage.paths"]  # inside its own package


def test_find_cycle_names_the_modules_of_a_cycle():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert find_cycle(edges) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_a_module_depends_on_the_packages_above_what_it_imports():
    known = {"p", "p.q", "p.q.r", "p.s", "t"}
    assert _with_packages("t", {"p.q.r"}, known) == {"p.q.r", "p.q", "p"}
    assert _with_packages("p.s", {"p.q.r"}, known) == {"p.q.r", "p.q"}
    assert _with_packages("p.q.x", {"p.q.r"}, known) == {"p.q.r"}


def test_relative_and_package_imports_resolve(tmp_path):
    package = tmp_path / "memory_core" / "pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("from . import x\nfrom .y import z\n")
    (package / "x.py").write_text("def f():\n    from ..top import thing\n")
    known = {"memory_core.pkg.x", "memory_core.pkg.y", "memory_core.top"}
    assert imported_names("memory_core.pkg", package / "__init__.py", known) == {
        "memory_core.pkg.x", "memory_core.pkg.y"}
    assert imported_names("memory_core.pkg.x", package / "x.py", known) == {"memory_core.top"}


def test_no_package_has_an_import_cycle():
    cycle = find_cycle(graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_storage_imports_nothing_of_the_app_but_its_models():
    edges = graph()
    allowed = (STORAGE, "sessions_app.models")
    outside = {name: sorted(m for m in targets if m.startswith("sessions_app.")
                            and not m.startswith(allowed))
               for name, targets in edges.items() if name.startswith(STORAGE)}
    assert not {name: found for name, found in outside.items() if found}


@pytest.mark.parametrize("name", sorted(modules("memory_core")))
def test_memory_core_imports_no_web_code(name):
    # asgiref is allowed: the engine's a-twins use sync_to_async.
    outside = {m for m in imported_names(name, modules("memory_core")[name])
               if m.split(".")[0] in WEB + ("arbor_client",)}
    assert not outside, f"{name} imports {sorted(outside)}"


@pytest.mark.parametrize("name", sorted(modules("arbor_client")))
def test_arbor_client_imports_no_django(name):
    # memory_core is allowed (engine_session.py's in-process session): it has no Django.
    outside = {m for m in imported_names(name, modules("arbor_client")[name])
               if m.split(".")[0] in WEB}
    assert not outside, f"{name} imports {sorted(outside)}"
