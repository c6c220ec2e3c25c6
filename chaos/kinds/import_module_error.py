"""import_module_error: a layer whose copy of a package the handler imports was built for another platform is added
to the function (catalogue entry import-module-error)."""

from __future__ import annotations

import io
import zipfile
from typing import Any, Literal

from pydantic import Field

from chaos.errors import ChaosError
from chaos.kinds.base import DATA_PROCESSOR, QUEUE_CONSUMER, ChaosKind, KindParameters
from chaos.target import FaultTarget
from incident_responder.core.contracts import FaultType


def foreign_build_layer(module: str) -> bytes:
    """A dependencies layer (``python/``) whose ``module`` imports a compiled extension built on macOS: on Lambda
    (Amazon Linux) Python finds no ``_speedups`` it can load. A layer comes before the runtime's own packages."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(f"python/{module}/__init__.py", "from ._speedups import *  # noqa: F403\n")
        archive.writestr(f"python/{module}/_speedups.cpython-312-darwin.so", b"\xcf\xfa\xed\xfe")
    return buffer.getvalue()


class ImportModuleError(KindParameters):
    """A dependencies layer shadowing ``module`` with a build for another platform, added after the function's own
    layers."""

    kind: Literal["import_module_error"]
    module: str = Field(default="boto3", pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")


class ImportModuleErrorKind(ChaosKind[ImportModuleError]):
    """Add a layer whose copy of a package the handler imports cannot be loaded on Lambda."""

    parameters = ImportModuleError
    fault_type = FaultType.LAYERS_CHANGED
    # The Python workloads invoked at $LATEST: a published version keeps the layers it was published with.
    workloads = frozenset({DATA_PROCESSOR, QUEUE_CONSUMER})
    refusal = "is invoked through an alias"
    slots = ("layers", "layer_version")
    help = "add a layer whose copy of a package the code imports was built for another platform"
    defaults = {"module": "boto3"}
    argument_help = {"module": "the package the layer shadows (default: boto3, which both Python workloads import)"}
    example = {"module": "botocore"}

    def inject(self, target: FaultTarget, params: ImportModuleError) -> list[str]:
        target.refuse_if_aliased(
            " whose version keeps its layers: a layer change reaches its callers only with a new version"
        )
        if not str(target.config().get("Runtime", "")).startswith("python"):
            raise ChaosError(f"{target.function_name} does not run Python: a python/ layer is not on its path")
        arn = target.add_layer(f"{params.module}-deps", foreign_build_layer(params.module))
        target.store.record_fault({"kind": "import_module_error", "module": params.module})
        return [f"layer {arn} ({params.module} built for macOS) added to the function"]

    def restore(self, target: FaultTarget, slot: str, original: Any) -> str:
        return target.restore_layer_slot(slot, original)
