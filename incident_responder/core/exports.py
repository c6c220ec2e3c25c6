"""A package's public names, loaded when first used.

Each package's ``__init__`` re-exports its public names (``__all__``), as Powertools' capabilities do, but
through :func:`lazy_exports` rather than by importing every module up front: a Lambda that needs one module
of a package loads that module alone (cold start), and no package ``__init__`` can close an import loop
between packages. The project's own code imports each name from the module that defines it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_exports(package: str, modules: dict[str, list[str]]) -> Callable[[str], Any]:
    """A module ``__getattr__`` (PEP 562) for ``package`` that finds each name in ``{module: [names]}``."""
    where = {name: module for module, names in modules.items() for name in names}

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{module}"), name)

    return __getattr__
