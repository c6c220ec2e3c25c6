"""Errors the runtime raises while it imports the handler's module, from what the package and environment hold: a
file it may not read, a variable the module reads at load time that the function does not have."""

from __future__ import annotations

import re

from incident_responder.lab.runtimes import _NODE_LOAD_FRAMES, DeployedCode, Frame, NodeRuntime, RaisedError, Runtime


def permission_error(code: DeployedCode, runtime: Runtime) -> RaisedError | None:
    """The error the runtime raises when the handler's file is not readable by it (the package's files need 644):
    Python's PermissionError, Node.js's EACCES, in their own words; None when it is readable."""
    if code.readable or not code.filename:
        return None
    path = f"{runtime.task_root}/{code.filename}"
    if isinstance(runtime, NodeRuntime):
        return RaisedError("Error", f"EACCES: permission denied, open '{path}'", [*_NODE_LOAD_FRAMES], init=True)
    return RaisedError("PermissionError", f"[Errno 13] Permission denied: '{path}'", init=True)


_PY_MODULE_ENVIRON = re.compile(r"""^[A-Za-z_].*?\bos\.environ\[["'](?P<name>\w+)["']\]""")


def environment_error(code: DeployedCode, environment: dict[str, str], runtime: Runtime) -> RaisedError | None:
    """Python's KeyError while the runtime imports the handler's module: its static code reads a variable
    (``os.environ["NAME"]``, not indented) that the function's environment does not hold. None for Node.js."""
    if isinstance(runtime, NodeRuntime) or not code.source or not code.filename:
        return None
    for number, text in enumerate(code.source.splitlines(), start=1):
        if (m := _PY_MODULE_ENVIRON.match(text)) and m.group("name") not in environment:
            frame = Frame(f"{runtime.task_root}/{code.filename}", number, "<module>", code=text.strip())
            return RaisedError("KeyError", f"'{m.group('name')}'", [frame], init=True)
    return None
