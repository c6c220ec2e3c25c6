"""environment_update_rejected: a deploy whose code update succeeds and whose environment update Lambda refuses
(over 4 KB), so the new code reads a variable the function does not have (catalogue entry
environment-update-rejected)."""

from __future__ import annotations

import base64
import io
import json
import re
import zipfile
from typing import Any, Literal

from botocore.exceptions import ClientError
from pydantic import Field

from chaos.code import deployed_package
from chaos.errors import ChaosError
from chaos.kinds.base import DATA_PROCESSOR, QUEUE_CONSUMER, ChaosKind, KindParameters
from chaos.target import FaultTarget
from incident_responder.core.contracts import FaultType

_TOP_LEVEL_IMPORT = re.compile(r"^(?:import|from)\s", re.MULTILINE)


def reading_variable(source: str, variable: str) -> str:
    """``source`` whose static code also reads ``variable`` (a JSON document), after its imports."""
    lines = source.splitlines(keepends=True)
    last = max((i for i, line in enumerate(lines) if _TOP_LEVEL_IMPORT.match(line)), default=-1)
    added = f'import json, os\n{variable} = json.loads(os.environ["{variable}"])\n'
    return "".join(lines[: last + 1]) + added + "".join(lines[last + 1 :])


def with_file(package: bytes, filename: str, source: str) -> bytes:
    """``package`` with ``filename``'s content replaced (its other files and modes kept)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(package)) as original, zipfile.ZipFile(buffer, "w") as archive:
        for info in original.infolist():
            data = source.encode() if info.filename == filename else original.read(info.filename)
            archive.writestr(info, data)
    return buffer.getvalue()


def flags_document(size: int) -> str:
    """A feature-flag document of at least ``size`` bytes."""
    flags: dict[str, bool] = {}
    while len(json.dumps(flags)) < size:
        flags[f"checkout_experiment_{len(flags):04d}"] = len(flags) % 3 == 0
    return json.dumps(flags)


class EnvironmentUpdateRejected(KindParameters):
    """The function's code deployed anew, reading ``variable`` at start; the deploy's environment update, adding
    ``variable`` with a document of ``size`` bytes, refused for exceeding Lambda's 4 KB."""

    kind: Literal["environment_update_rejected"]
    variable: str = Field(default="FEATURE_FLAGS", pattern=r"^[A-Z][A-Z0-9_]{0,63}$")
    size: int = Field(default=5000, ge=4200, le=5000)


class EnvironmentUpdateRejectedKind(ChaosKind[EnvironmentUpdateRejected]):
    """Deploy code that needs a new variable whose environment update Lambda refuses (InvalidParameterValueException)."""

    parameters = EnvironmentUpdateRejected
    fault_type = FaultType.ENVIRONMENT_UPDATE_REJECTED
    # The Python workloads invoked at $LATEST; behind an alias, new code is a new version (bad_deploy).
    workloads = frozenset({DATA_PROCESSOR, QUEUE_CONSUMER})
    refusal = "is invoked through an alias"
    slots = ("code",)
    help = "deploy code reading a new variable whose environment update Lambda refuses (over 4 KB)"
    defaults = {"variable": "FEATURE_FLAGS", "size": 5000}
    argument_help = {
        "variable": "the variable the new code reads (default: FEATURE_FLAGS)",
        "size": "the size in bytes of its value, 4200-5000 (default: 5000)",
    }
    example = {"variable": "ROUTING_TABLE", "size": 4500}

    def inject(self, target: FaultTarget, params: EnvironmentUpdateRejected) -> list[str]:
        target.refuse_if_aliased(": new code reaches its callers only as a new version (use bad_deploy)")
        config = target.config()
        if not str(config.get("Runtime", "")).startswith("python"):
            raise ChaosError(f"{target.function_name} does not run Python")
        variables = target.variables()
        if params.variable in variables:
            raise ChaosError(f"{target.function_name} already has a variable {params.variable}")
        filename = config["Handler"].rpartition(".")[0].replace(".", "/") + ".py"
        original = deployed_package(target.clients, target.function_name)
        with zipfile.ZipFile(io.BytesIO(original)) as archive:
            if filename not in archive.namelist():
                raise ChaosError(f"{target.function_name}'s package has no {filename}")
            source = archive.read(filename).decode()
        target.store.remember("code", base64.b64encode(original).decode())
        package = with_file(original, filename, reading_variable(source, params.variable))
        target.lambda_client.update_function_code(FunctionName=target.function_name, ZipFile=package)
        target.wait_updated()
        try:
            target.update_config(Environment={"Variables": {**variables, params.variable: flags_document(params.size)}})
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") != "InvalidParameterValueException":
                raise
        else:
            raise ChaosError(f"{target.function_name}: Lambda took an environment of over 4 KB")
        target.store.record_fault({"kind": "environment_update_rejected", "variable": params.variable})
        return [
            f"deployed code whose static code reads {params.variable}; the environment update adding it "
            f"({params.size} bytes) was refused"
        ]

    def restore(self, target: FaultTarget, slot: str, original: Any) -> str:
        target.lambda_client.update_function_code(FunctionName=target.function_name, ZipFile=base64.b64decode(original))
        target.wait_updated()
        return "the function's code put back"
