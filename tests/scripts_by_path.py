"""The scripts under scripts/ as modules: scripts/ is no package, so a test loads one by its path."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


def load_script(name: str, *, module_name: str | None = None, folder: Path = SCRIPTS) -> ModuleType:
    """``folder``/<name>.py, executed as a module of its own (``module_name``: the name it gets; default ``name``)."""
    spec = importlib.util.spec_from_file_location(module_name or name, folder / f"{name}.py")
    assert spec and spec.loader, f"{folder / name}.py cannot be loaded"
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
