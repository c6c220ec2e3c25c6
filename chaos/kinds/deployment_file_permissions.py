"""deployment_file_permissions: the function's package is deployed again with its files readable by their owner
only (catalogue entry deployment-file-permissions)."""

from __future__ import annotations

import base64
import io
import zipfile
from typing import Any, Literal

from chaos.code import deployed_package
from chaos.kinds.base import DATA_PROCESSOR, QUEUE_CONSUMER, ChaosKind, KindParameters
from chaos.target import FaultTarget
from incident_responder.core.contracts import FaultType


def owner_only(package: bytes) -> bytes:
    """The same files, each with mode 600 (built on a machine whose umask keeps others out)."""
    source, buffer = zipfile.ZipFile(io.BytesIO(package)), io.BytesIO()
    with source, zipfile.ZipFile(buffer, "w") as archive:
        for info in source.infolist():
            copy = zipfile.ZipInfo(info.filename, date_time=info.date_time)
            copy.external_attr = (0o40700 if info.is_dir() else 0o100600) << 16
            archive.writestr(copy, source.read(info))
    return buffer.getvalue()


class DeploymentFilePermissions(KindParameters):
    """The function's own package at $LATEST, its files' modes 600."""

    kind: Literal["deployment_file_permissions"]


class DeploymentFilePermissionsKind(ChaosKind[DeploymentFilePermissions]):
    """Deploy the function's package again with files the runtime may not read."""

    parameters = DeploymentFilePermissions
    fault_type = FaultType.CODE_PACKAGE_INVALID
    # Invoked at $LATEST; behind an alias, a new package reaches callers only as a new version (bad_deploy's way).
    workloads = frozenset({DATA_PROCESSOR, QUEUE_CONSUMER})
    refusal = "is invoked through an alias"
    slots = ("code",)
    help = "deploy the function's package again with files readable by their owner only (mode 600)"

    def inject(self, target: FaultTarget, params: DeploymentFilePermissions) -> list[str]:
        target.refuse_if_aliased(": a new package reaches its callers only as a new version (use bad_deploy)")
        original = deployed_package(target.clients, target.function_name)
        target.store.remember("code", base64.b64encode(original).decode())
        target.lambda_client.update_function_code(FunctionName=target.function_name, ZipFile=owner_only(original))
        target.wait_updated()
        target.store.record_fault({"kind": "deployment_file_permissions"})
        return ["deployed the function's package again with its files' modes 600"]

    def restore(self, target: FaultTarget, slot: str, original: Any) -> str:
        target.lambda_client.update_function_code(FunctionName=target.function_name, ZipFile=base64.b64decode(original))
        target.wait_updated()
        return "the function's code put back"
