"""Fault injection: deployment packages chaos writes (a handler that throws, an idle function's code)."""

from __future__ import annotations

import base64
import builtins
import hashlib
import io
import json
import urllib.request
import zipfile
from typing import Any

from chaos.errors import ChaosError

JS_ERRORS = {"Error", "TypeError", "RangeError", "ReferenceError", "SyntaxError", "EvalError", "URIError"}


def code_sha256(package: bytes) -> str:
    return base64.b64encode(hashlib.sha256(package).digest()).decode()


def _split_error(error: str, default_type: str) -> tuple[str, str]:
    kind, sep, message = error.partition(":")
    if sep and kind.strip().isidentifier():
        return kind.strip(), message.strip()
    return default_type, error.strip()


def broken_package(runtime: str, handler: str, error: str) -> bytes:
    """A deployment package for ``runtime`` whose handler throws ``error`` ("Type: message") on every call."""
    if not runtime.startswith(("nodejs", "python")):
        raise ChaosError(f"bad_deploy writes Node.js or Python code, not code for the {runtime or 'unknown'} runtime")
    module, _, function = handler.rpartition(".")
    if not module or not function.isidentifier():
        raise ChaosError(f"handler {handler!r} does not name a module and a function")
    if runtime.startswith("nodejs"):
        error_type, message = _split_error(error, "Error")
        define = (
            ""
            if error_type in JS_ERRORS
            else f"class {error_type} extends Error {{\n  constructor(message) {{\n    super(message);\n"
            f"    this.name = {json.dumps(error_type)};\n  }}\n}}\n\n"
        )
        filename = f"{module}.mjs"
        source = (
            f"{define}export const {function} = async (event) => {{\n"
            '  const request = typeof event.body === "string" ? JSON.parse(event.body) : event;\n'
            f"  throw new {error_type}({json.dumps(message)});\n"
            "};\n"
        )
    else:
        error_type, message = _split_error(error, "Exception")
        known = getattr(builtins, error_type, None)
        defined = isinstance(known, type) and issubclass(known, BaseException)
        define = "" if defined else f"class {error_type}(Exception):\n    pass\n\n\n"
        filename = module.replace(".", "/") + ".py"
        source = (
            f"{define}def {function}(event, context):\n"
            '    request = event.get("detail", event)\n'
            f"    raise {error_type}({json.dumps(message)})\n"
        )
    return one_file_package(filename, source)


def one_file_package(filename: str, source: str) -> bytes:
    """A zip holding one file with a fixed timestamp: the same source always gives the same package (and
    CodeSha256)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        info = zipfile.ZipInfo(filename, date_time=(2026, 1, 1, 0, 0, 0))
        info.external_attr = 0o644 << 16
        archive.writestr(info, source)
    return buffer.getvalue()


def deployed_package(clients: Any, function_name: str) -> bytes:
    """The .zip of the function's $LATEST, to put back on restore: from the presigned Code.Location (AWS), else from
    moto's Lambda backend when moto runs in this process (the lab's: its location cannot be fetched)."""
    lam = clients.get("lambda")
    function = lam.get_function(FunctionName=function_name)
    location = (function.get("Code") or {}).get("Location") or ""
    sha = function["Configuration"].get("CodeSha256")
    try:
        from moto.awslambda.utils import get_backend

        backend = get_backend(clients.account_id(), clients.region)
        stored = backend.get_function(function_name, None)
        if getattr(stored, "code_sha_256", None) == sha and getattr(stored, "code_bytes", None):
            return bytes(stored.code_bytes)
    except Exception:  # noqa: BLE001, S110 - moto here is not the one serving the account: fetch the location
        pass
    if location.startswith("https://"):
        with urllib.request.urlopen(location, timeout=30) as response:  # noqa: S310 - an https URL Lambda presigned
            package = response.read()
        if code_sha256(package) == sha:
            return package
    raise ChaosError(f"{function_name}: its deployment package cannot be read, so it could not be put back")
