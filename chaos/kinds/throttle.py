"""throttle: the function's reserved concurrency set to 0 (every invocation throttled) or 1."""

from __future__ import annotations

from typing import Any, Literal

from chaos.errors import ChaosError
from chaos.kinds.base import DATA_PROCESSOR, ORDERS_API, QUEUE_CONSUMER, ChaosKind, KindParameters
from chaos.target import FaultTarget
from incident_responder.account.state import read_reserved_concurrency
from incident_responder.core.contracts import FaultType


class Throttle(KindParameters):
    kind: Literal["throttle"]
    reserved_concurrency: Literal[0, 1]


class ThrottleKind(ChaosKind[Throttle]):
    """Set reserved concurrency (0 throttles every invocation, 1 all but one at a time)."""

    parameters = Throttle
    fault_type = FaultType.THROTTLING
    workloads = frozenset({DATA_PROCESSOR, ORDERS_API, QUEUE_CONSUMER})
    slots = ("concurrency",)
    help = "set reserved concurrency to 0 (all throttled) or 1"
    defaults = {"reserved_concurrency": 0}
    example = {"reserved_concurrency": 0}

    def inject(self, target: FaultTarget, params: Throttle) -> list[str]:
        reserved_concurrency = params.reserved_concurrency
        if reserved_concurrency < 0:
            raise ChaosError("reserved concurrency must be 0 or more")
        target.store.remember("concurrency", read_reserved_concurrency(target.clients, target.function_name))
        target.lambda_client.put_function_concurrency(
            FunctionName=target.function_name, ReservedConcurrentExecutions=reserved_concurrency
        )
        target.store.record_fault({"kind": "throttle", "reserved_concurrency": reserved_concurrency})
        return [f"reserved concurrency set to {reserved_concurrency}"]

    def restore(self, target: FaultTarget, slot: str, original: Any) -> str:
        if original is None:
            target.lambda_client.delete_function_concurrency(FunctionName=target.function_name)
            return "reserved concurrency removed (none was set)"
        target.lambda_client.put_function_concurrency(
            FunctionName=target.function_name, ReservedConcurrentExecutions=original
        )
        return f"reserved concurrency restored to {original}"
