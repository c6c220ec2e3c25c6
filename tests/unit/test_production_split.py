"""Production code (what the Lambda artifacts carry) never imports the lab, chaos or moto."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).parents[2]
LAB_ONLY = ("incident_responder.lab", "chaos", "moto", "samtranslator", "jsonata")


def production_files() -> list[Path]:
    files = [*(REPO / "handlers").glob("*.py"), *(REPO / "mcp").rglob("*.py")]
    files += [p for p in (REPO / "incident_responder").rglob("*.py") if "lab" not in p.relative_to(REPO).parts[1:]]
    return sorted(files)


def imported_modules(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def lab_imports(path: Path) -> list[str]:
    return sorted(m for m in imported_modules(path) if m.split(".")[0] in LAB_ONLY or m.startswith(LAB_ONLY))


# The one hand-over: ``responder demo|run|eval|lab|chaos`` runs the lab's parser, imported only then.
HAND_OVER = {"incident_responder/cli.py": ["incident_responder.lab.cli"]}


@pytest.mark.parametrize("path", production_files(), ids=lambda p: str(p.relative_to(REPO)))
def test_production_module_imports_nothing_from_the_lab(path):
    assert lab_imports(path) == HAND_OVER.get(str(path.relative_to(REPO)), [])


def test_the_check_sees_a_lab_import(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from incident_responder.lab.pipeline import LabPipeline\n    import moto\n")
    assert lab_imports(bad) == ["incident_responder.lab.pipeline", "moto"]


def test_operator_commands_load_no_lab_module():
    """``responder show`` (and its parser) run on production code alone."""
    code = (
        "import sys\n"
        "from incident_responder import cli\n"
        "parser = cli.build_parser()\n"
        "parser.parse_known_args(['show', 'some-incident'])\n"
        "loaded = [m for m in sys.modules if m.startswith(('incident_responder.lab', 'chaos', 'moto'))]\n"
        "print(loaded)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert out.stdout.strip() == "[]", out.stderr
