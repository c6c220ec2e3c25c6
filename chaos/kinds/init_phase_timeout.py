"""init_phase_timeout: a layer with an external extension that starts slowly is added to the function (catalogue
entry init-phase-timeout)."""

from __future__ import annotations

import io
import zipfile
from typing import Any, Literal

from pydantic import Field

from chaos.kinds.base import DATA_PROCESSOR, QUEUE_CONSUMER, ChaosKind, KindParameters
from chaos.target import FaultTarget
from incident_responder.core.contracts import FaultType

# The Extensions API call an external extension makes to register (lab/layers.py reads it the same way).
EXTENSION_REGISTER = "/2020-01-01/extension/register"


def slow_extension_layer(name: str, seconds: int) -> bytes:
    """A layer whose external extension waits for its collector before it registers with the Extensions API (and
    so before the runtime starts): every Init phase lasts at least that long."""
    script = (
        "#!/bin/sh\n"
        f"# {name}: waits for its collector before it registers\n"
        f"sleep {seconds}\n"
        f'curl -sS -X POST "http://${{AWS_LAMBDA_RUNTIME_API}}{EXTENSION_REGISTER}" '
        f'-H \'Lambda-Extension-Name: {name}\' -d \'{{"events": ["INVOKE", "SHUTDOWN"]}}\'\n'
    )
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        info = zipfile.ZipInfo(f"extensions/{name}")
        info.external_attr = 0o755 << 16
        archive.writestr(info, script)
    return buffer.getvalue()


class InitPhaseTimeout(KindParameters):
    """A layer version holding an extension that takes ``seconds`` to start, added after the function's own layers:
    longer than the Init phase's 10 seconds, and (by default) than the sample functions' timeouts, within which
    Lambda runs the Init phase again at the invocation."""

    kind: Literal["init_phase_timeout"]
    extension: str = Field(default="metrics-agent", pattern=r"^[A-Za-z0-9_-]{1,64}$")
    seconds: int = Field(default=45, ge=11, le=900)


class InitPhaseTimeoutKind(ChaosKind[InitPhaseTimeout]):
    """Add a layer whose extension starts too slowly for the Init phase."""

    parameters = InitPhaseTimeout
    fault_type = FaultType.LAYERS_CHANGED
    # A published version keeps the layers it was published with: callers of an alias see a layer change only with
    # a new version.
    workloads = frozenset({DATA_PROCESSOR, QUEUE_CONSUMER})
    refusal = "is invoked through an alias"
    slots = ("layers", "layer_version")
    help = "add a layer whose extension takes longer than the Init phase's 10 s to start (Phase: init Status: timeout)"
    defaults = {"extension": "metrics-agent", "seconds": 45}
    argument_help = {
        "extension": "the extension's name, and its layer's (default: metrics-agent)",
        "seconds": "how long the extension takes to start, 11-900 (default: 45)",
    }
    example = {"extension": "trace-forwarder", "seconds": 60}

    def inject(self, target: FaultTarget, params: InitPhaseTimeout) -> list[str]:
        target.refuse_if_aliased(
            " whose version keeps its layers: a layer change reaches its callers only with a new version"
        )
        arn = target.add_layer(params.extension, slow_extension_layer(params.extension, params.seconds))
        target.store.record_fault(
            {"kind": "init_phase_timeout", "extension": params.extension, "seconds": params.seconds}
        )
        return [f"layer {arn} (extension {params.extension}, {params.seconds} s to start) added to the function"]

    def restore(self, target: FaultTarget, slot: str, original: Any) -> str:
        return target.restore_layer_slot(slot, original)
