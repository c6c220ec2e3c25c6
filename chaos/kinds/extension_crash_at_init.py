"""extension_crash_at_init: a layer with an external extension that crashes is added to the function (catalogue
entry extension-crash-at-init)."""

from __future__ import annotations

import io
import zipfile
from typing import Any, Literal

from pydantic import Field

from chaos.kinds.base import DATA_PROCESSOR, QUEUE_CONSUMER, ChaosKind, KindParameters
from chaos.target import FaultTarget
from incident_responder.core.contracts import FaultType

# An external extension is an executable under extensions/ in a layer; this one exits before it registers with
# the Extensions API, so every Init phase fails.
_CRASHING_EXTENSION = "#!/bin/sh\necho 'telemetry agent: missing configuration, exiting' >&2\nexit 1\n"


def extension_layer(name: str) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        info = zipfile.ZipInfo(f"extensions/{name}")
        info.external_attr = 0o755 << 16
        archive.writestr(info, _CRASHING_EXTENSION)
    return buffer.getvalue()


class ExtensionCrashAtInit(KindParameters):
    """A layer version holding an extension that exits at start, added after the function's own layers."""

    kind: Literal["extension_crash_at_init"]
    extension: str = Field(default="telemetry-agent", pattern=r"^[A-Za-z0-9_-]{1,64}$")


class ExtensionCrashAtInitKind(ChaosKind[ExtensionCrashAtInit]):
    """Add a layer whose extension crashes in the Init phase."""

    parameters = ExtensionCrashAtInit
    fault_type = FaultType.LAYERS_CHANGED
    # A published version keeps the layers it was published with: callers of an alias see a layer change only with
    # a new version.
    workloads = frozenset({DATA_PROCESSOR, QUEUE_CONSUMER})
    refusal = "is invoked through an alias"
    slots = ("layers", "layer_version")
    help = "add a layer whose extension crashes at start (INIT_REPORT ... Error Type: Extension.Crash)"
    defaults = {"extension": "telemetry-agent"}
    argument_help = {"extension": "the extension's name, and its layer's (default: telemetry-agent)"}
    example = {"extension": "log-shipper"}

    def inject(self, target: FaultTarget, params: ExtensionCrashAtInit) -> list[str]:
        target.refuse_if_aliased(
            " whose version keeps its layers: a layer change reaches its callers only with a new version"
        )
        arn = target.add_layer(params.extension, extension_layer(params.extension))
        target.store.record_fault({"kind": "extension_crash_at_init", "extension": params.extension})
        return [f"layer {arn} (extension {params.extension}, exits at start) added to the function"]

    def restore(self, target: FaultTarget, slot: str, original: Any) -> str:
        return target.restore_layer_slot(slot, original)
