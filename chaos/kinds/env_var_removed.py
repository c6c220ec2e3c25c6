"""env_var_removed: an environment variable the function's code needs is removed (the code fails as it starts)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from chaos.errors import ChaosError
from chaos.kinds.base import DATA_PROCESSOR, ORDERS_API, QUEUE_CONSUMER, ChaosKind, KindParameters
from chaos.target import FaultTarget
from incident_responder.core.contracts import FaultType


class EnvVarRemoved(KindParameters):
    """An environment variable the code needs is removed (the code fails as it starts)."""

    kind: Literal["env_var_removed"]
    name: str = Field(pattern=r"^[a-zA-Z]([a-zA-Z0-9_])*$", max_length=128)


class EnvVarRemovedKind(ChaosKind[EnvVarRemoved]):
    """Remove one environment variable the function's code reads."""

    parameters = EnvVarRemoved
    fault_type = FaultType.CONFIGURATION_DRIFT
    workloads = frozenset({DATA_PROCESSOR, ORDERS_API, QUEUE_CONSUMER})
    slots = ("env",)  # env.<name>: its value
    help = "remove an environment variable the code needs"
    example = {"name": "INPUT_BUCKET"}

    def inject(self, target: FaultTarget, params: EnvVarRemoved) -> list[str]:
        name = params.name
        variables = target.variables()
        if name not in variables and f"env.{name}" in target.store.slots:
            return [f"environment variable {name} is already removed"]
        if name not in variables:
            raise ChaosError(
                f"{target.function_name} has no environment variable {name!r} (it has {sorted(variables)})"
            )
        target.store.remember(f"env.{name}", variables.pop(name))
        target.update_config(Environment={"Variables": variables})
        target.store.record_fault({"kind": "env_var_removed", "name": name})
        return [f"removed environment variable {name}"]

    def restore(self, target: FaultTarget, slot: str, original: Any) -> str:
        return target.restore_variable(slot.removeprefix("env."), original)
