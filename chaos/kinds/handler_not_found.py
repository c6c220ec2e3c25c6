"""handler_not_found: the function's handler setting names a method its code does not have (catalogue entry
handler-not-found)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from chaos.kinds.base import DATA_PROCESSOR, QUEUE_CONSUMER, ChaosKind, KindParameters
from chaos.target import FaultTarget
from incident_responder.core.contracts import FaultType


class HandlerNotFound(KindParameters):
    """The handler setting keeps its file and names another method (a rename the code did not make)."""

    kind: Literal["handler_not_found"]
    method: str = Field(default="lambda_handler", pattern=r"^[A-Za-z_$][\w$]{0,63}$")


class HandlerNotFoundKind(ChaosKind[HandlerNotFound]):
    """Point the function's handler setting at a method its code does not define."""

    parameters = HandlerNotFound
    fault_type = FaultType.HANDLER_MISCONFIGURED
    # A published version keeps the handler it was published with: callers of an alias see a handler change only
    # with a new version (bad_deploy's way in).
    workloads = frozenset({DATA_PROCESSOR, QUEUE_CONSUMER})
    refusal = "is invoked through an alias"
    slots = ("handler",)
    help = "point the handler setting at a method the code does not define"
    defaults = {"method": "lambda_handler"}
    argument_help = {"method": "the method the handler setting names instead (default: lambda_handler, the console's)"}
    example = {"method": "main"}

    def inject(self, target: FaultTarget, params: HandlerNotFound) -> list[str]:
        target.refuse_if_aliased(
            " whose version keeps its handler: a handler change reaches its callers only with a new version (use bad_deploy)"
        )
        handler = target.config()["Handler"]
        module = handler.rsplit(".", 1)[0]
        target.store.remember("handler", handler)
        target.update_config(Handler=f"{module}.{params.method}")
        target.store.record_fault({"kind": "handler_not_found", "method": params.method})
        return [f"handler set to {module}.{params.method} (was {handler})"]

    def restore(self, target: FaultTarget, slot: str, original: Any) -> str:
        target.update_config(Handler=original)
        return f"handler restored to {original}"
