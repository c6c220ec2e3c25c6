"""The state and reporting libraries take their tables, bucket and TTL as arguments: a function validates its
settings once (core/settings.py) and passes them down, so no default can quietly stand in for a missing one."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parents[2] / "incident_responder"
LIBRARIES = ("state", "reporting")
READERS = {"environ", "environb", "getenv", "getenvb"}


def environment_reads(source: str) -> list[str]:
    """Where ``source`` reads the environment: ``os.environ``, ``os.getenv``, or those names imported."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in READERS:
            found.append(f"line {node.lineno}: .{node.attr}")
        elif isinstance(node, ast.ImportFrom) and node.module == "os":
            found += [f"line {node.lineno}: from os import {a.name}" for a in node.names if a.name in READERS]
        elif isinstance(node, ast.Name) and node.id in READERS:
            found.append(f"line {node.lineno}: {node.id}")
    return sorted(found)


def test_the_scan_finds_each_way_of_reading_the_environment():
    source = "import os\nfrom os import getenv\na = os.environ.get('X')\nb = os.getenv('Y')\nc = getenv('Z')\n"
    assert environment_reads(source) == [
        "line 2: from os import getenv",
        "line 3: .environ",
        "line 4: .getenv",
        "line 5: getenv",
    ]


@pytest.mark.parametrize(
    "module",
    sorted(str(p.relative_to(PACKAGE)) for name in LIBRARIES for p in (PACKAGE / name).rglob("*.py")),
)
def test_no_library_module_reads_the_environment(module):
    assert environment_reads((PACKAGE / module).read_text()) == [], module
