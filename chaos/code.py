"""Fault injection into the function's code: a version whose handler throws, behind the alias its callers use."""

from __future__ import annotations

import base64
import builtins
import hashlib
import io
import json
import zipfile
from typing import Any

from chaos.errors import ChaosError
from chaos.target import FaultTarget

DEFAULT_DEPLOY_ERROR = "TypeError: Cannot read properties of undefined (reading 'id')"
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
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        # A fixed timestamp: the same error always gives the same package (and CodeSha256).
        info = zipfile.ZipInfo(filename, date_time=(2026, 1, 1, 0, 0, 0))
        info.external_attr = 0o644 << 16
        archive.writestr(info, source)
    return buffer.getvalue()


class CodeFaults(FaultTarget):
    """Faults in what the function runs: its code, its versions and alias."""

    def bad_deploy(self, error: str | None = None) -> list[str]:
        """Deploy code that throws ``error``, publish it as a new version and point the function's alias at it."""
        error = error or DEFAULT_DEPLOY_ERROR
        config = self._config()
        alias = self._alias()
        name, current = alias["Name"], alias["FunctionVersion"]
        package = broken_package(config.get("Runtime", ""), config.get("Handler", ""), error)
        sha = code_sha256(package)
        current_sha = self._lambda.get_function_configuration(FunctionName=self.function_name, Qualifier=current)[
            "CodeSha256"
        ]
        self.store.remember(f"alias.{name}", {"function_version": current})
        self.store.record_fault({"kind": "bad_deploy", "error": error})
        if current_sha == sha:
            return [f"alias {name} already routes to version {current}, whose code throws {error}"]
        self._lambda.update_function_code(FunctionName=self.function_name, ZipFile=package)
        self._wait_updated()
        version = self._lambda.publish_version(FunctionName=self.function_name, CodeSha256=sha)["Version"]
        self._lambda.update_alias(FunctionName=self.function_name, Name=name, FunctionVersion=version)
        return [
            f"published version {version}, whose code throws {error}",
            f"alias {name}: version {current} -> {version}",
        ]

    def _wait_updated(self) -> None:
        self._lambda.get_waiter("function_updated").wait(
            FunctionName=self.function_name, WaiterConfig={"Delay": 2, "MaxAttempts": 60}
        )

    def _alias(self) -> dict[str, Any]:
        """The alias callers use: ``live`` if the function has it, else its only (or first) alias."""
        aliases = [
            alias
            for page in self._lambda.get_paginator("list_aliases").paginate(FunctionName=self.function_name)
            for alias in page["Aliases"]
        ]
        if not aliases:
            raise ChaosError(
                f"{self.function_name} has no alias: its callers invoke $LATEST, there is no alias to move to a new version"
            )
        return next((a for a in aliases if a["Name"] == "live"), sorted(aliases, key=lambda a: a["Name"])[0])
