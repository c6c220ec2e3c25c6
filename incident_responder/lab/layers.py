"""What a function's layers do to its Init phase, as the lab emulates it: an external extension that crashes
(``Extension.Crash``) or starts slowly (the Init phase's time), a Python package a layer shadows with a build for
another platform (``Runtime.ImportModuleError``), and an OS-only runtime's bootstrap found neither in the package nor
in a layer (``Runtime.InvalidEntrypoint``). Layers are read from moto's Lambda backend when moto runs in this process."""

from __future__ import annotations

import io
import re
import zipfile

from incident_responder.core.aws import AwsClients
from incident_responder.lab.runtimes import DeployedCode, NodeRuntime, RaisedError, Runtime

# The Extensions API call an external extension makes first; one that exits without it crashes the Init phase.
EXTENSION_REGISTER = "/2020-01-01/extension/register"


def _moto_layer(clients: AwsClients, layer_version_arn: str) -> bytes | None:
    """A layer version's .zip from moto's Lambda backend, when moto serves this account from this process."""
    try:
        from moto.awslambda.utils import get_backend
    except ImportError:
        return None
    parts = layer_version_arn.split(":")
    if len(parts) != 8 or parts[4] != clients.account_id():
        return None
    try:
        version = get_backend(parts[4], parts[3]).get_layer_version(parts[6], parts[7])
    except Exception:  # noqa: BLE001 - moto here is not the one serving the account
        return None
    return getattr(version, "code_bytes", None) or None


def _extension_scripts(clients: AwsClients, code: DeployedCode) -> list[str]:
    """The text of each external extension (a file under ``extensions/``) in the version's layers it can read."""
    scripts = []
    for arn in code.layers:
        package = _moto_layer(clients, arn)
        if package is None:
            continue
        with zipfile.ZipFile(io.BytesIO(package)) as archive:
            scripts += [
                archive.read(name).decode("utf-8", "replace")
                for name in archive.namelist()
                if name.startswith("extensions/") and not name.endswith("/")
            ]
    return scripts


def extension_error(clients: AwsClients, code: DeployedCode) -> RaisedError | None:
    """Extension.Crash when one of the version's layers holds an external extension that exits without registering
    with the Extensions API; None when every extension starts, or none can be read."""
    if any(EXTENSION_REGISTER not in script for script in _extension_scripts(clients, code)):
        return RaisedError("Extension.Crash", "", init=True, platform_only=True)
    return None


_SLEEP = re.compile(r"^\s*sleep\s+(\d+(?:\.\d+)?)\s*$", re.MULTILINE)


def extension_start_seconds(clients: AwsClients, code: DeployedCode) -> float:
    """How long the version's external extensions take to start: Lambda starts them all before the runtime, and
    the Init phase waits for the slowest to register. An extension's start is what its script waits for (``sleep``)
    before its register call; 0 when none waits, or none can be read."""
    return max(
        (
            sum(float(m.group(1)) for m in _SLEEP.finditer(script.split(EXTENSION_REGISTER, 1)[0]))
            for script in _extension_scripts(clients, code)
        ),
        default=0.0,
    )


# Where an OS-only runtime (provided.al2023, provided.al2) looks for the executable it starts, in this order.
BOOTSTRAP_PATHS = ("/var/task/bootstrap", "/opt/bootstrap")


def bootstrap_error(clients: AwsClients, code: DeployedCode) -> RaisedError | None:
    """Runtime.InvalidEntrypoint when the version runs on an OS-only runtime and neither its package nor one of its
    layers has an executable ``bootstrap`` at its root; None for a managed language runtime, or when one is there (or
    a layer cannot be read)."""
    if not (code.runtime or "").startswith("provided") or code.bootstrap:
        return None
    for arn in code.layers:
        package = _moto_layer(clients, arn)
        if package is None:
            return None
        with zipfile.ZipFile(io.BytesIO(package)) as archive:
            if "bootstrap" in archive.namelist():
                return None
    why = f"Couldn't find valid bootstrap(s): [{' '.join(BOOTSTRAP_PATHS)}]"
    return RaisedError("Runtime.InvalidEntrypoint", why, init=True, platform_only=True)


_PY_IMPORTS = re.compile(r"^(?:import\s+([\w.]+(?:\s*,\s*[\w.]+)*)|from\s+([\w.]+)\s+import\b)", re.MULTILINE)
# Where a Python layer's packages are found (both are on the runtime's path, before its own packages).
_PY_LAYER_DIRS = re.compile(r"^python/(?:lib/python3\.\d+/site-packages/)?")


def _imported(source: str) -> list[str]:
    names: list[str] = []
    for m in _PY_IMPORTS.finditer(source):
        for name in (m.group(1) or m.group(2)).split(","):
            top = name.strip().split(".")[0]
            if top and top not in names:
                names.append(top)
    return names


def layer_import_error(clients: AwsClients, code: DeployedCode, runtime: Runtime) -> RaisedError | None:
    """Runtime.ImportModuleError when a layer's copy of a package the handler imports (a layer comes first on the
    runtime's path) holds compiled extensions, none of them built for Linux: Python finds no module it can load.
    None for Node.js, or when every package the handler imports loads."""
    if isinstance(runtime, NodeRuntime) or not code.source or not code.handler or "." not in code.handler:
        return None
    imported = _imported(code.source)
    for arn in code.layers:
        package = _moto_layer(clients, arn)
        if package is None:
            continue
        with zipfile.ZipFile(io.BytesIO(package)) as archive:
            names = [_PY_LAYER_DIRS.sub("", n, count=1) for n in archive.namelist() if _PY_LAYER_DIRS.match(n)]
        for module in imported:
            compiled = [n for n in names if n.startswith(f"{module}/") and n.endswith(".so")]
            if compiled and not any("linux" in n for n in compiled):
                extension = compiled[0].removeprefix(f"{module}/").split(".")[0].replace("/", ".")
                message = f"Unable to import module '{code.handler.rsplit('.', 1)[0]}': No module named "
                return RaisedError("Runtime.ImportModuleError", f"{message}'{module}.{extension}'", init=True)
    return None
