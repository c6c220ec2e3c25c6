"""EMULATING ``queue-consumer`` (Python, fed by SQS).

A producer sends messages to its queue; while its event source mapping is enabled and its role may receive from the
queue, Lambda's poller receives them in batches, invokes the function once per batch and deletes what succeeded.
Otherwise the function is never invoked: the messages wait, ``AWS/SQS ApproximateAgeOfOldestMessage`` grows and the
queue's age alarm fires (the lab compresses the minutes that takes, as it does for every alarm period).
"""

from __future__ import annotations

import json
import uuid
from datetime import datetime
from typing import Any

from incident_responder.account.event_sources import read_queue_url
from incident_responder.lab.account.sources import QUEUE_CONSUMER
from incident_responder.lab.emulation.burst import Workload
from incident_responder.lab.emulation.invocation import (
    AccountView,
    AlarmSpec,
    BurstResult,
    Invocation,
    InvocationOutcome,
    WorkloadProfile,
)
from incident_responder.lab.moto_patches.awslambda import record_processing_result
from incident_responder.lab.moto_patches.sqs import take_over_queue_polling
from incident_responder.lab.runtimes import Frame, RaisedError, locate, split_error

QUEUE_AGE_THRESHOLD = 300.0
SEND_RESULT = 'sqs.send_message(QueueUrl=os.environ["RESULTS_QUEUE_URL"], MessageBody=json.dumps(process(order)))'
MAX_POLLS = 100  # a burst's poller stops here even if producers keep the queue full


def _order(message: dict[str, Any]) -> dict[str, Any]:
    """The order a message carries, as the function's code reads it (json.loads of the body)."""
    try:
        order = json.loads(message.get("Body") or "")
    except ValueError:
        return {}
    return order if isinstance(order, dict) else {}


class QueueConsumer(Workload):
    """``queue-consumer``: Lambda's poller feeds it batches from its SQS queue."""

    default_function_name = QUEUE_CONSUMER
    default_profile = WorkloadProfile(
        work_seconds_at_512mb=0.9, peak_memory_mb=140, init_seconds=0.3, base_memory_mb=76
    )

    def facts(self, view: AccountView) -> dict[str, Any]:
        mapping = next((m for m in view.config.event_source_mappings if ":sqs:" in m.event_source_arn), None)
        facts: dict[str, Any] = {"mapping": mapping, "sent": 0, "received": 0, "deleted": 0, "unprocessed": 0}
        if mapping is None:
            return facts
        _, _, _, _, owner, queue_name = mapping.event_source_arn.split(":")
        sqs = self.clients.get("sqs")
        queue_url = sqs.get_queue_url(QueueName=queue_name, QueueOwnerAWSAccountId=owner)["QueueUrl"]
        results = view.environment.get("RESULTS_QUEUE_URL", "")
        facts.update(
            queue_name=queue_name,
            queue_url=queue_url,
            polled=mapping.state == "Enabled" and view.allowed("sqs:ReceiveMessage", mapping.event_source_arn),
            can_delete=view.allowed("sqs:DeleteMessage", mapping.event_source_arn),
            batch_size=mapping.batch_size or 10,
            visibility=mapping.queue_visibility_timeout,
            dead_letter_queue=mapping.dead_letter_queue_arn,
            results_url=results,
            # Its output goes back to the queue that triggers it: Lambda's recursive loop detection stops the chain.
            loops=bool(results) and results.rstrip("/").rsplit("/", 1)[-1] == queue_name,
            redelivered=0,
            recursive_dropped=0,
        )
        return facts

    def invoked_qualifier(self, view: AccountView) -> str | None:
        """The version or alias the SQS mapping invokes, as its FunctionArn names it (None: $LATEST)."""
        mapping = next((m for m in view.config.event_source_mappings if ":sqs:" in m.event_source_arn), None)
        if mapping is None:
            return None
        arn = self.clients.get("lambda").get_event_source_mapping(UUID=mapping.uuid).get("FunctionArn", "")
        return arn.split(":function:", 1)[-1].partition(":")[2] or None

    def deliveries(self, invocations: int, view: AccountView, facts: dict[str, Any]) -> list[Any]:
        if facts["mapping"] is None:
            return []
        take_over_queue_polling()
        sqs = self.clients.get("sqs")
        url, batch_size = facts["queue_url"], facts["batch_size"]
        # The producers: a batch's worth of order events for each invocation the burst stands for.
        bodies = [
            json.dumps({"order_id": f"o-{uuid.uuid4().hex[:8]}", "items": [{"price": 9.5, "qty": n % 3 + 1}]})
            for n in range(invocations * batch_size)
        ]
        for first in range(0, len(bodies), 10):
            entries = [{"Id": str(i), "MessageBody": body} for i, body in enumerate(bodies[first : first + 10])]
            sqs.send_message_batch(QueueUrl=url, Entries=entries)
        facts["sent"] = len(bodies)
        if not facts["polled"]:
            return []  # the mapping is off, or Lambda may not receive: nothing invokes the function
        batches = []
        for _ in range(MAX_POLLS):
            batch: list[dict[str, Any]] = []
            while len(batch) < batch_size:
                got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=min(10, batch_size - len(batch))).get(
                    "Messages", []
                )
                if not got:
                    break
                batch += got
            if not batch:
                break
            facts["received"] += len(batch)
            batches.append(batch)
        return batches

    def settle(self, view: AccountView, facts: dict[str, Any], event: Any, outcome: InvocationOutcome) -> None:
        # A failed or throttled batch stays in the queue: visible again after its visibility timeout.
        if outcome.status != "succeeded" or not facts["can_delete"]:
            facts["unprocessed"] += len(event)
            return
        sqs = self.clients.get("sqs")
        visibility = facts.get("visibility")
        if facts.get("loops") or (visibility is not None and outcome.duration_ms / 1000 > visibility):
            self._to_dead_letter_queue(facts, event, outcome)
            return
        for first in range(0, len(event), 10):
            chunk = event[first : first + 10]
            sqs.delete_message_batch(
                QueueUrl=facts["queue_url"],
                Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(chunk)],
            )
        facts["deleted"] += len(event)

    def handle(
        self,
        ctx: Invocation,
        view: AccountView,
        facts: dict[str, Any],
        event: Any,
        extra: list[str],
        app_error: str | None,
    ) -> None:
        source, filename = view.code.source, view.code.filename or "app.py"
        ctx.spend(0.01)
        ctx.log_raw(extra)
        if facts["thrown"] is not None:
            ctx.spend(0.01)
            ctx.fail(facts["thrown"])
        ctx.info(f"Received {len(event)} messages")
        if not app_error and any("items" not in _order(m) for m in event):
            app_error = "KeyError: 'items'"  # an order the code cannot process fails the whole batch
        if app_error:
            ctx.spend(0.02)
            error_type, message = split_error(app_error, "Exception")
            frames = [
                Frame(f"/var/task/{filename}", locate(source, "process(order)")[0], "handler", code=SEND_RESULT),
                Frame(
                    f"/var/task/{filename}",
                    locate(source, "total = sum(")[0],
                    "process",
                    code='total = sum(item["price"] * item["qty"] for item in order["items"])',
                ),
            ]
            ctx.fail(RaisedError(error_type, message, frames))
        ctx.peak(self.profile.peak_memory_mb)
        ctx.compute(self.profile.work_seconds_at_512mb)
        ctx.info(f"Processed {len(event)} orders")

    def _record_processing_result(self, facts: dict[str, Any], outcomes: list[InvocationOutcome]) -> None:
        """What Lambda reports as the mapping's LastProcessingResult after its polls: a batch the function failed
        (an error or a timeout) is a problem; batches it processed are OK (throttled ones: neither)."""
        if any(o.status in ("failed", "timed_out") for o in outcomes):
            record_processing_result(facts["mapping"].uuid, "PROBLEM: Function call failed")
        elif any(o.status == "succeeded" for o in outcomes):
            record_processing_result(facts["mapping"].uuid, "OK")

    def _to_dead_letter_queue(self, facts: dict[str, Any], event: Any, outcome: InvocationOutcome) -> None:
        """What SQS and Lambda do with a batch whose messages cannot finish: sent back to the queue that
        triggers the function, Lambda stops the chain after about 16 invocations (recursive loop detection);
        visible again while still in flight (a visibility timeout shorter than the invocation), they are
        received again by other pollers until their receive count passes maxReceiveCount. Either way SQS
        redrives them to the queue's dead-letter queue, and the burst stands for what that takes."""
        sqs = self.clients.get("sqs")
        if facts.get("loops"):
            facts["recursive_dropped"] += len(event)
        else:
            facts["redelivered"] += len(event) * 2
        dlq = facts.get("dead_letter_queue")
        for first in range(0, len(event), 10):
            chunk = event[first : first + 10]
            if dlq:
                sqs.send_message_batch(
                    QueueUrl=read_queue_url(self.clients, dlq),
                    Entries=[{"Id": str(i), "MessageBody": m["Body"]} for i, m in enumerate(chunk)],
                )
            sqs.delete_message_batch(
                QueueUrl=facts["queue_url"],
                Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(chunk)],
            )

    def after_burst(
        self, view: AccountView, facts: dict[str, Any], outcomes: list[InvocationOutcome], start: datetime
    ) -> dict[str, Any]:
        if facts["mapping"] is None:
            return {}
        self._dead_letter_metrics(facts, start)
        self._record_processing_result(facts, outcomes)
        attributes = self.clients.get("sqs").get_queue_attributes(
            QueueUrl=facts["queue_url"], AttributeNames=["ApproximateNumberOfMessages"]
        )["Attributes"]
        visible = int(attributes.get("ApproximateNumberOfMessages", 0))
        if not facts["polled"] and visible:
            # Nobody reads the queue: the oldest message ages until the alarm's next minute sees it past the
            # threshold (the lab jumps to that datapoint instead of waiting for it).
            age = QUEUE_AGE_THRESHOLD + (60 - start.second) % 60
        else:
            age = max((o.duration_ms for o in outcomes), default=0.0) / 1000 + 1.0
        facts["age"] = float(round(age))
        dims = [{"Name": "QueueName", "Value": facts["queue_name"]}]
        figures = {
            "ApproximateAgeOfOldestMessage": (facts["age"], "Seconds"),
            "ApproximateNumberOfMessagesVisible": (visible, "Count"),
            "NumberOfMessagesSent": (facts["sent"], "Count"),
            "NumberOfMessagesReceived": (facts["received"], "Count"),
            "NumberOfMessagesDeleted": (facts["deleted"], "Count"),
        }
        self.clients.get("cloudwatch").put_metric_data(
            Namespace="AWS/SQS",
            MetricData=[
                {"MetricName": name, "Dimensions": dims, "Value": value, "Unit": unit, "Timestamp": start}
                for name, (value, unit) in figures.items()
            ],
        )
        facts["visible"] = visible
        left = facts["unprocessed"] + facts["recursive_dropped"] + facts["redelivered"] // 2
        return {"messages_left": visible + left}

    def _dead_letter_metrics(self, facts: dict[str, Any], start: datetime) -> None:
        cloudwatch = self.clients.get("cloudwatch")
        if facts["recursive_dropped"]:
            cloudwatch.put_metric_data(
                Namespace="AWS/Lambda",
                MetricData=[
                    {
                        "MetricName": "RecursiveInvocationsDropped",
                        "Dimensions": [{"Name": "FunctionName", "Value": self.function_name}],
                        "Value": facts["recursive_dropped"],
                        "Unit": "Count",
                        "Timestamp": start,
                    }
                ],
            )
        dlq = facts.get("dead_letter_queue")
        if not dlq:
            return
        sqs = self.clients.get("sqs")
        url = read_queue_url(self.clients, dlq)
        depth = int(
            sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessages"])["Attributes"].get(
                "ApproximateNumberOfMessages", 0
            )
        )
        facts["dead_letter_depth"] = depth
        facts["dead_letter_name"] = dlq.rsplit(":", 1)[-1]
        cloudwatch.put_metric_data(
            Namespace="AWS/SQS",
            MetricData=[
                {
                    "MetricName": "ApproximateNumberOfMessagesVisible",
                    "Dimensions": [{"Name": "QueueName", "Value": facts["dead_letter_name"]}],
                    "Value": depth,
                    "Unit": "Count",
                    "Timestamp": start,
                }
            ],
        )

    def extra_alarm(
        self, view: AccountView, facts: dict[str, Any], result: BurstResult, start: datetime
    ) -> AlarmSpec | None:
        if facts["mapping"] is not None and facts.get("recursive_dropped"):
            return AlarmSpec(
                f"{self.function_name}-recursive-loop",
                f"{self.function_name} RecursiveInvocationsDropped alarm",
                "RecursiveInvocationsDropped",
                "AWS/Lambda",
                float(facts["recursive_dropped"]),
                [{"value": self.function_name, "name": "FunctionName"}],
                "GreaterThanOrEqualToThreshold",
                1.0,
                "notBreaching",
            )
        if facts["mapping"] is not None and facts.get("redelivered") and facts.get("dead_letter_depth"):
            name = facts["dead_letter_name"]
            return AlarmSpec(
                f"{name}-depth",
                f"{name} ApproximateNumberOfMessagesVisible alarm",
                "ApproximateNumberOfMessagesVisible",
                "AWS/SQS",
                float(facts["dead_letter_depth"]),
                [{"value": name, "name": "QueueName"}],
                "GreaterThanOrEqualToThreshold",
                1.0,
                "notBreaching",
                statistic="MAXIMUM",
            )
        if facts["mapping"] is None or facts.get("age", 0) < QUEUE_AGE_THRESHOLD:
            return None
        queue = facts["queue_name"]
        return AlarmSpec(
            f"{queue}-age",
            f"{queue} ApproximateAgeOfOldestMessage alarm",
            "ApproximateAgeOfOldestMessage",
            "AWS/SQS",
            facts["age"],
            [{"value": queue, "name": "QueueName"}],
            "GreaterThanOrEqualToThreshold",
            QUEUE_AGE_THRESHOLD,
            "missing",
            statistic="MAXIMUM",
        )
