"""code_upload_rejected: a deploy half done: the configuration the new code needs went through, the code upload was
refused for its size (catalogue entry code-upload-rejected)."""

from __future__ import annotations

import base64
import io
import zipfile
from typing import Any, Literal

from botocore.exceptions import ClientError
from pydantic import Field

from chaos.code import deployed_package
from chaos.errors import ChaosError
from chaos.kinds.base import DATA_PROCESSOR, QUEUE_CONSUMER, ChaosKind, KindParameters
from chaos.target import FaultTarget
from incident_responder.core.contracts import FaultType

# A .zip file uploaded directly travels base64-encoded in the request: this one's request is larger than the
# 70,167,211 bytes Lambda takes (about 50 MB zipped), so it has to go through Amazon S3.
BUNDLE_BYTES = 53_000_000


def oversized_package(module: str, method: str) -> bytes:
    """The new code: its handler's module and a bundled model file stored uncompressed, too large to upload directly."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        for name, data in (
            (f"{module}.py", f"def {method}(event, context):\n    return {{'processed': 0}}\n".encode()),
            ("model/weights.bin", bytes(BUNDLE_BYTES)),
        ):
            info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            archive.writestr(info, data)
    return buffer.getvalue()


class CodeUploadRejected(KindParameters):
    """UpdateFunctionConfiguration names the new code's handler module; UpdateFunctionCode with that code, sent as a
    .zip file too large for a direct upload, is refused (RequestEntityTooLargeException)."""

    kind: Literal["code_upload_rejected"]
    module: str = Field(default="service", pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")


class CodeUploadRejectedKind(ChaosKind[CodeUploadRejected]):
    """Change the handler to the new code's module, then upload the new code directly: Lambda refuses it for its
    size, and the function is left with a handler its code does not have."""

    parameters = CodeUploadRejected
    fault_type = FaultType.HANDLER_MISCONFIGURED
    # A deploy behind an alias publishes a version: an unpublished $LATEST change never reaches its callers.
    workloads = frozenset({DATA_PROCESSOR, QUEUE_CONSUMER})
    refusal = "is invoked through an alias"
    slots = ("handler", "code")
    help = "half a deploy: the handler moves to the new code's module, the code upload is refused for its size"
    defaults = {"module": "service"}
    argument_help = {"module": "the new code's handler module (default: service)"}
    example = {"module": "worker"}

    def inject(self, target: FaultTarget, params: CodeUploadRejected) -> list[str]:
        target.refuse_if_aliased(": a deploy reaches its callers only as a new version")
        config = target.config()
        handler = str(config.get("Handler") or "")
        if not str(config.get("Runtime", "")).startswith("python") or "." not in handler:
            raise ChaosError(f"{target.function_name} does not run a Python handler: the new code is Python")
        method = handler.rsplit(".", 1)[1]
        target.store.remember("handler", handler)
        target.store.remember("code", base64.b64encode(deployed_package(target.clients, target.function_name)).decode())
        target.store.record_fault({"kind": "code_upload_rejected", "module": params.module})
        target.update_config(Handler=f"{params.module}.{method}")
        done = [f"handler set to {params.module}.{method} (was {handler}) for the new code"]
        try:
            target.lambda_client.update_function_code(
                FunctionName=target.function_name, ZipFile=oversized_package(params.module, method)
            )
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code")
            if code not in ("RequestEntityTooLargeException", "CodeStorageExceededException"):
                raise
            return [*done, f"the new code's upload was refused ({code}): the function keeps its old code"]
        target.wait_updated()
        raise ChaosError(
            f"{target.function_name}: the service took a direct upload larger than Lambda allows, so the deploy did not "
            "fail (restore puts the handler and code back)"
        )

    def restore(self, target: FaultTarget, slot: str, original: Any) -> str:
        if slot == "handler":
            target.update_config(Handler=original)
            return f"handler restored to {original}"
        target.lambda_client.update_function_code(FunctionName=target.function_name, ZipFile=base64.b64decode(original))
        target.wait_updated()
        return "the function's code put back"
