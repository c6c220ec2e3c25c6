"""invalid_entrypoint: the function's runtime setting moved to an OS-only runtime while its package has no bootstrap
(catalogue entry invalid-entrypoint)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from chaos.errors import ChaosError
from chaos.kinds.base import DATA_PROCESSOR, QUEUE_CONSUMER, ChaosKind, KindParameters
from chaos.target import FaultTarget
from incident_responder.core.contracts import FaultType


class InvalidEntrypoint(KindParameters):
    """The runtime setting changed to an OS-only runtime (a Go or Rust function's, say); the code stays as it is."""

    kind: Literal["invalid_entrypoint"]
    runtime: Literal["provided.al2023", "provided.al2"] = Field(default="provided.al2023")


class InvalidEntrypointKind(ChaosKind[InvalidEntrypoint]):
    """Set the function's runtime to an OS-only runtime its package has no bootstrap for."""

    parameters = InvalidEntrypoint
    fault_type = FaultType.RUNTIME_MISCONFIGURED
    # A published version keeps the runtime it was published with: callers of an alias see a runtime change only
    # with a new version.
    workloads = frozenset({DATA_PROCESSOR, QUEUE_CONSUMER})
    refusal = "is invoked through an alias"
    slots = ("runtime",)
    help = "set the runtime to an OS-only runtime the package has no bootstrap for (Runtime.InvalidEntrypoint)"
    defaults = {"runtime": "provided.al2023"}
    argument_help = {"runtime": "the OS-only runtime (default: provided.al2023)"}
    example = {"runtime": "provided.al2"}

    def inject(self, target: FaultTarget, params: InvalidEntrypoint) -> list[str]:
        target.refuse_if_aliased(
            " whose version keeps its runtime: a runtime change reaches its callers only with a new version"
        )
        config = target.config()
        runtime = config.get("Runtime")
        if not runtime:
            raise ChaosError(f"{target.function_name} is a container image: it has no runtime setting to change")
        if str(runtime).startswith("provided") and "runtime" not in target.store.slots:  # not this kind's change
            raise ChaosError(f"{target.function_name} already runs on an OS-only runtime ({runtime})")
        target.store.remember("runtime", runtime)
        target.update_config(Runtime=params.runtime)
        target.store.record_fault({"kind": "invalid_entrypoint", "runtime": params.runtime})
        return [f"runtime set to {params.runtime} (was {runtime}); the package has no bootstrap"]

    def restore(self, target: FaultTarget, slot: str, original: Any) -> str:
        target.update_config(Runtime=original)
        return f"runtime restored to {original}"
