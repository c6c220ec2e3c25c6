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


# -- layering -----------------------------------------------------------------------------------------------------
# Each package imports only packages in lower layers (module-level and lazy imports alike): never one in its own
# layer, never one above. The entry points (handlers/, the MCP servers in mcp/*/server.py, chaos/) stand above the
# library; the command line and the lab are the top, where cli and lab may use each other (the loop check above still
# holds between their modules). The root package (its docstring and version) is below everything.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("incident_responder",),
    ("redaction",),
    ("core",),
    ("catalogue",),
    ("account", "state", "notify", "mcp_transport"),
    ("actions", "memory"),
    ("agent", "guardrails"),
    ("investigation", "intake", "approval", "remediation"),
    ("proposal", "review"),
    ("reporting",),
    ("handlers", "mcp servers", "chaos"),
    ("cli", "lab"),
)
LAYER_OF = {unit: level for level, units in enumerate(LAYERS) for unit in units}
TOP = len(LAYERS) - 1
# The MCP servers: files, not modules (mcp/ must never be a package: it would shadow the mcp SDK), loaded by path
# by incident_responder.mcp_transport.app.load_server. Their imports are read here like any module's.
MCP_SERVERS = sorted((REPO / "mcp").glob("*/server.py"))


def unit_of(path: Path) -> str:
    """The package a file belongs to, as the layers name it."""
    parts = path.relative_to(REPO).parts
    if parts[0] == "incident_responder":
        return parts[1] if len(parts) > 2 else "incident_responder"
    return "mcp servers" if parts[0] == "mcp" else parts[0]


def layered_files() -> list[Path]:
    files = sorted(PACKAGE.rglob("*.py")) + MCP_SERVERS
    return files + [p for top in ("handlers", "chaos") for p in sorted((REPO / top).rglob("*.py"))]


def imported_units(path: Path) -> list[tuple[int, str, str]]:
    """(line, module, package) of each project import in ``path``, wherever it is (module level or in a function)."""
    found = []
    package = path.relative_to(REPO).with_suffix("").parts[:-1]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level:
            base = package[: len(package) - node.level + 1]
            targets = [".".join([*base, *([node.module] if node.module else [])])]
        elif isinstance(node, ast.ImportFrom) and node.module:
            targets = [node.module]
        else:
            continue
        for target in targets:
            head, _, rest = target.partition(".")
            if head == "incident_responder":
                found.append((node.lineno, target, rest.partition(".")[0] or "incident_responder"))
            elif head in ("handlers", "chaos"):
                found.append((node.lineno, target, head))
    return found


def layering_violations(edges: list[tuple[str, int, str, str, str]]) -> list[str]:
    """Each (file, line, module, from package, to package) that imports sideways or upwards, said in words."""
    wrong = []
    for file, line, target, source, dest in edges:
        if source == dest or (LAYER_OF[source] == LAYER_OF[dest] == TOP):
            continue
        if LAYER_OF[dest] >= LAYER_OF[source]:
            where = "its own layer" if LAYER_OF[dest] == LAYER_OF[source] else "a higher layer"
            wrong.append(f"{file}:{line} imports {target} ({source} -> {dest}: {where})")
    return wrong


def test_every_package_has_a_layer():
    units = {unit_of(p) for p in layered_files()}
    assert units - set(LAYER_OF) == set(), "place each new package in LAYERS"


def test_the_mcp_servers_read_here_are_the_ones_the_loader_loads():
    from incident_responder.mcp_transport.app import SERVER_NAMES, SERVERS_DIR

    assert SERVERS_DIR == REPO / "mcp"
    assert [p.parent.name for p in MCP_SERVERS] == sorted(SERVER_NAMES)
    assert not (REPO / "mcp" / "__init__.py").exists()
    # No other file is loaded by path, where the imports read here would not see it.
    by_path = [
        str(p.relative_to(REPO))
        for p in layered_files()
        if any(way in p.read_text() for way in ("spec_from_file_location", "SourceFileLoader", "runpy"))
    ]
    assert by_path == ["incident_responder/mcp_transport/app.py"]


def test_a_package_imports_only_packages_below_it():
    edges = [
        (str(path.relative_to(REPO)), line, target, unit_of(path), dest)
        for path in layered_files()
        for line, target, dest in imported_units(path)
    ]
    violations = layering_violations(edges)
    assert not violations, "imports against the layers:\n" + "\n".join(violations)


def test_the_layering_check_refuses_sideways_and_upward_imports_and_allows_the_top_its_own():
    edges = [
        ("a.py", 1, "incident_responder.agent.x", "core", "agent"),  # upwards
        ("b.py", 2, "incident_responder.proposal.x", "review", "proposal"),  # sideways
        ("c.py", 3, "incident_responder.core.x", "agent", "core"),  # downwards
        ("d.py", 4, "incident_responder.cli.x", "lab", "cli"),  # the top's own
        ("e.py", 5, "incident_responder.lab.x", "handlers", "lab"),  # an entry point reaching the lab
    ]
    assert layering_violations(edges) == [
        "a.py:1 imports incident_responder.agent.x (core -> agent: a higher layer)",
        "b.py:2 imports incident_responder.proposal.x (review -> proposal: its own layer)",
        "e.py:5 imports incident_responder.lab.x (handlers -> lab: a higher layer)",
    ]


def test_no_test_module_imports_another():
    """What test files share lives in a module of tests/ itself (tests/remediation_world.py, tests/mcp_calls.py, ...):
    a test module imported by another runs its collection-time code twice and ties two subjects together."""
    tests = REPO / "tests"
    found = []
    for path in sorted(tests.rglob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            module = node.module if isinstance(node, ast.ImportFrom) and node.level == 0 else None
            if module and module.startswith("tests.") and module.split(".")[-1].startswith("test_"):
                found.append(f"{path.relative_to(REPO)}:{node.lineno} imports {module}")
    assert not found, "\n".join(found)
