"""Fault injection into what invokes the function: its event source mappings, its queue's visibility timeout, and an
output queue pointed back at the queue that triggers it."""

from __future__ import annotations

import re
import time
from typing import Any

from chaos.errors import ChaosError
from chaos.target import FaultTarget
from incident_responder.account.event_sources import read_queue_url, read_queue_visibility_timeout

# An SQS queue URL, as an environment variable names the queue a function writes to.
QUEUE_URL_RE = re.compile(r"^https?://[^/]+/\d{12}/[A-Za-z0-9_-]{1,80}(\.fifo)?$")


class EventSourceFaults(FaultTarget):
    """Faults in the queues and mappings that feed the function."""

    def esm_disable(self) -> list[str]:
        """Disable every event source mapping that invokes the function."""
        mappings = self._mappings()
        if not mappings:
            raise ChaosError(f"{self.function_name} has no event source mappings: no queue or stream invokes it")
        changes = []
        for mapping in mappings:
            uuid, state = mapping["UUID"], mapping.get("State")
            self.store.remember(f"esm.{uuid}", state)
            if state in ("Disabled", "Disabling"):
                changes.append(f"event source mapping {uuid} is already {state.lower()}")
                continue
            self._lambda.update_event_source_mapping(UUID=uuid, Enabled=False)
            self._wait_mapping(uuid)
            changes.append(f"disabled event source mapping {uuid} ({mapping.get('EventSourceArn')})")
        self.store.record_fault({"kind": "esm_disable"})
        return changes

    def queue_visibility(self, seconds: int) -> list[str]:
        """Set the visibility timeout of every SQS queue the function's mappings read."""
        queues = [m["EventSourceArn"] for m in self._mappings() if ":sqs:" in m.get("EventSourceArn", "")]
        if not queues:
            raise ChaosError(f"{self.function_name} has no SQS event source mapping: no queue feeds it")
        sqs = self.clients.get("sqs")
        changes = []
        for arn in dict.fromkeys(queues):
            url = read_queue_url(self.clients, arn)
            self.store.remember(f"queue.{arn}", read_queue_visibility_timeout(self.clients, arn))
            sqs.set_queue_attributes(QueueUrl=url, Attributes={"VisibilityTimeout": str(seconds)})
            changes.append(f"queue {arn.rsplit(':', 1)[-1]}: visibility timeout set to {seconds} s")
        self.store.record_fault({"kind": "queue_visibility", "seconds": seconds})
        return changes

    def recursive_loop(self) -> list[str]:
        """Point the environment variable naming the function's output queue at the queue that triggers it."""
        sources = [m["EventSourceArn"] for m in self._mappings() if ":sqs:" in m.get("EventSourceArn", "")]
        if not sources:
            raise ChaosError(f"{self.function_name} has no SQS event source mapping: nothing triggers it to loop on")
        variables = dict((self._config().get("Environment") or {}).get("Variables") or {})
        outputs = [k for k, v in variables.items() if QUEUE_URL_RE.match(v or "")]
        if not outputs:
            raise ChaosError(f"{self.function_name}'s environment names no queue it writes to")
        name = outputs[0]
        source = sources[0]
        self.store.remember(f"env.{name}", variables[name])
        variables[name] = read_queue_url(self.clients, source)
        self._update_config(Environment={"Variables": variables})
        self.store.record_fault({"kind": "recursive_loop"})
        return [f"{name} now names {source.rsplit(':', 1)[-1]}, the queue that triggers {self.function_name}"]

    def _mappings(self) -> list[dict[str, Any]]:
        return [
            mapping
            for page in self._lambda.get_paginator("list_event_source_mappings").paginate(
                FunctionName=self.function_name
            )
            for mapping in page["EventSourceMappings"]
        ]

    def _wait_mapping(self, uuid: str) -> None:
        """Mappings change state asynchronously; another update fails while one is under way."""
        for _ in range(60):
            if self._lambda.get_event_source_mapping(UUID=uuid).get("State") in ("Enabled", "Disabled"):
                return
            time.sleep(1)
