"""recursive_loop: the function's output queue is pointed at the queue that triggers it."""

from __future__ import annotations

import re
from typing import Any, Literal

from chaos.errors import ChaosError
from chaos.kinds.base import QUEUE_CONSUMER, ChaosKind, KindParameters
from chaos.target import FaultTarget
from incident_responder.account.event_sources import read_queue_url
from incident_responder.core.contracts import FaultType

# An SQS queue URL, as an environment variable names the queue a function writes to.
QUEUE_URL_RE = re.compile(r"^https?://[^/]+/\d{12}/[A-Za-z0-9_-]{1,80}(\.fifo)?$")


class RecursiveLoop(KindParameters):
    """The function's output is pointed at the queue that triggers it."""

    kind: Literal["recursive_loop"]


class RecursiveLoopKind(ChaosKind[RecursiveLoop]):
    """Point the environment variable naming the function's output queue at the queue that triggers it."""

    parameters = RecursiveLoop
    fault_type = FaultType.RECURSIVE_LOOP
    workloads = frozenset({QUEUE_CONSUMER})
    refusal = "has no SQS event source mapping"
    slots = ("env",)  # env.<name>: its value (as env_var_removed records it)
    help = "point its output queue at the queue that triggers it"

    def inject(self, target: FaultTarget, params: RecursiveLoop) -> list[str]:
        sources = target.sqs_sources()
        if not sources:
            raise ChaosError(f"{target.function_name} has no SQS event source mapping: nothing triggers it to loop on")
        variables = target.variables()
        outputs = [k for k, v in variables.items() if QUEUE_URL_RE.match(v or "")]
        if not outputs:
            raise ChaosError(f"{target.function_name}'s environment names no queue it writes to")
        name = outputs[0]
        source = sources[0]
        target.store.remember(f"env.{name}", variables[name])
        variables[name] = read_queue_url(target.clients, source)
        target.update_config(Environment={"Variables": variables})
        target.store.record_fault({"kind": "recursive_loop"})
        return [f"{name} now names {source.rsplit(':', 1)[-1]}, the queue that triggers {target.function_name}"]

    def restore(self, target: FaultTarget, slot: str, original: Any) -> str:
        return target.restore_variable(slot.removeprefix("env."), original)
