"""Lambda entry points. Each is thin: parse the event, call the library, return a small result.

Loading one loads only MCP's side its function speaks. The SDK's package ``__init__`` imports its server
side (FastMCP, Starlette, the server sessions) just to offer ``from mcp import ClientSession``; the agents
are clients only and the servers import what they use by its module path. So, before any handler loads,
``mcp`` is registered without running that ``__init__``: submodules load as usual, and the first lookup of
a name only the ``__init__`` defines (``mcp.ClientSession``) runs it then, once.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
from typing import Any


def _load_mcp_by_submodule() -> None:
    if "mcp" in sys.modules:
        return  # loaded already (a process serving MCP, a test): nothing to spare
    spec = importlib.util.find_spec("mcp")
    if spec is None or spec.loader is None:
        return  # not installed here: whoever imports it gets the usual error
    loader = spec.loader  # bound here: the check above does not narrow ``spec.loader`` inside __getattr__
    package = importlib.util.module_from_spec(spec)
    lock = threading.RLock()
    state = {"initialized": False, "running": False}

    def __getattr__(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            return importlib.import_module(f"mcp.{name}")  # ``from mcp import types``: a submodule
        except ModuleNotFoundError as exc:
            if exc.name != f"mcp.{name}":
                raise
        with lock:
            if state["running"]:  # the package's own __init__ asking for a name it has not defined yet
                raise AttributeError(f"module 'mcp' has no attribute {name!r}")
            if not state["initialized"]:
                state["running"] = True
                try:
                    loader.exec_module(package)
                    state["initialized"] = True
                finally:
                    state["running"] = False
        if name in package.__dict__:
            return package.__dict__[name]
        raise AttributeError(f"module 'mcp' has no attribute {name!r}")

    # PEP 562: the module's own __getattr__ is looked up in its namespace (ModuleType declares one for typing).
    vars(package)["__getattr__"] = __getattr__
    sys.modules["mcp"] = package


_load_mcp_by_submodule()
