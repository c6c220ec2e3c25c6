"""The house's plan: packages by capability, short modules, no import loops (lazy imports included)."""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path

import pytest

import incident_responder

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "incident_responder"
# Read in one sitting: a module past this is two subjects (data tables included).
MAX_LINES = 400
SHIPPED = ("incident_responder", "handlers", "mcp", "chaos")


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def project_modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """Every project module ``name`` imports, wherever the import is (module level or inside a function)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            targets = [f"{node.module}.{alias.name}" for alias in node.names] + [node.module]
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name and not name.startswith(target + "."):
                found.add(target)
    return found


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
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
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return cycles


def test_no_import_loops_lazy_imports_included():
    modules = project_modules()
    graph = {name: imports_of(name, path, set(modules)) for name, path in modules.items()}
    assert import_cycles(graph) == []


def test_the_loop_check_sees_a_loop_made_by_an_import_inside_a_function():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert import_cycles(graph) == [["a", "b", "c"]]


@pytest.mark.parametrize("top", SHIPPED)
def test_no_module_is_longer_than_a_sitting(top):
    long = {
        str(p.relative_to(REPO)): n
        for p in sorted((REPO / top).rglob("*.py"))
        if (n := len(p.read_text().splitlines())) > MAX_LINES
    }
    assert long == {}


def packages() -> list[str]:
    return sorted(
        info.name
        for info in pkgutil.walk_packages(incident_responder.__path__, "incident_responder.")
        if info.ispkg and ".lab" not in info.name
    )


@pytest.mark.parametrize("package", packages())
def test_each_package_names_its_public_names_and_each_resolves(package):
    module = importlib.import_module(package)
    assert module.__doc__, f"{package}: say in its docstring what the package does"
    public = getattr(module, "__all__", None)
    assert public, f"{package}: re-export its public names with __all__"
    for name in public:
        assert getattr(module, name) is not None


def test_no_package_shadows_the_mcp_sdk():
    assert not any(name.split(".")[-1] == "mcp" for name in project_modules())
