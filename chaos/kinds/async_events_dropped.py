"""async_events_dropped: the function's asynchronous invocation configuration is put again with no retries and the
shortest maximum event age, and without its on-failure destination: a failed event is dropped at once (catalogue
entry async-events-dropped)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from chaos.errors import ChaosError
from chaos.kinds.base import DATA_PROCESSOR, ChaosKind, KindParameters
from chaos.target import FaultTarget
from incident_responder.account.state import read_event_invoke_config
from incident_responder.core.contracts import FaultType


class AsyncEventsDropped(KindParameters):
    """PutFunctionEventInvokeConfig with these two settings only: it removes every setting it leaves out (the
    on-failure destination with them)."""

    kind: Literal["async_events_dropped"]
    retries: int = Field(default=0, ge=0, le=2)
    max_event_age: int = Field(default=60, ge=60, le=21600)


class AsyncEventsDroppedKind(ChaosKind[AsyncEventsDropped]):
    """Put the function's event invoke configuration again with few retries and a short maximum event age only."""

    parameters = AsyncEventsDropped
    fault_type = FaultType.ASYNC_CONFIG_CHANGED
    # S3 event notifications invoke data-processor asynchronously; the others are invoked synchronously (API
    # Gateway) or by a poller (the event source mapping), which Lambda does not retry this way.
    workloads = frozenset({DATA_PROCESSOR})
    refusal = "is not invoked asynchronously"
    slots = ("event_invoke_config",)
    help = "put the asynchronous invocation configuration again with no retries and no on-failure destination"
    defaults = {"retries": 0, "max_event_age": 60}
    argument_help = {
        "retries": "MaximumRetryAttempts (default: 0)",
        "max_event_age": "MaximumEventAgeInSeconds (default: 60, the least Lambda takes)",
    }
    example = {"retries": 0, "max_event_age": 60}

    def inject(self, target: FaultTarget, params: AsyncEventsDropped) -> list[str]:
        before = read_event_invoke_config(target.clients, target.function_name)
        if not before:
            raise ChaosError(
                f"{target.function_name} is not invoked asynchronously: it has no event invoke configuration to change"
            )
        kept = {k: before[k] for k in ("MaximumRetryAttempts", "MaximumEventAgeInSeconds", "DestinationConfig")}
        target.store.remember("event_invoke_config", {k: v for k, v in kept.items() if v})
        target.lambda_client.put_function_event_invoke_config(
            FunctionName=target.function_name,
            MaximumRetryAttempts=params.retries,
            MaximumEventAgeInSeconds=params.max_event_age,
        )
        target.store.record_fault(
            {"kind": "async_events_dropped", "retries": params.retries, "max_event_age": params.max_event_age}
        )
        return [
            f"event invoke configuration put with {params.retries} retries and a maximum event age of "
            f"{params.max_event_age} s, no destination (was {kept})"
        ]

    def restore(self, target: FaultTarget, slot: str, original: Any) -> str:
        target.lambda_client.put_function_event_invoke_config(FunctionName=target.function_name, **original)
        return f"event invoke configuration restored to {original}"
