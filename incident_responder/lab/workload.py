"""The lab's sample workloads, emulated against whatever account they are given.

moto records configuration but enforces none of it (a revoked policy denies nothing, reserved
concurrency 0 throttles nothing, a removed egress rule blocks nothing, a disabled key or event source
mapping stops nothing). So each workload reads the account state the real function would run into,
decides each invocation's fate from it, and leaves only the traces the real function and the AWS
services would leave: runtime log lines in ``/aws/lambda/<name>`` (none at all when its role cannot
write logs), ``AWS/Lambda`` metrics (and its dependencies' ``AWS/DynamoDB`` / ``AWS/SQS`` metrics),
and a CloudWatch alarm notification on the incidents topic. Nothing names the injected fault. What
every function shares (throttling, the platform's lines, logs, metrics, alarms) is emulation.py; each
workload here supplies what it does:

* ``data-processor`` (Python, in a VPC): reads an object from S3 and writes the result back. Its
  network path (security groups, NACLs) must reach S3; its role must allow GetObject and PutObject.
* ``orders-api`` (Node.js, invoked through its alias ``live``): runs the code of the version ``live``
  routes to (a version whose code throws fails every invocation with that error), reads and writes
  its DynamoDB table (its role must allow GetItem and PutItem; a table whose latest consumed write
  capacity, ``AWS/DynamoDB ConsumedWriteCapacityUnits``, exceeds what is provisioned throttles its
  writes: ``ProvisionedThroughputExceededException`` after the SDK's retries). Its environment is
  encrypted with a customer-managed key: while the key is not enabled the Lambda service refuses every
  invocation (emulation.py). Its timeout and memory are read from the function's configuration, as
  the responder's baseline records them (a real published version keeps the settings it was
  published with).
* ``queue-consumer`` (Python, fed by SQS): a producer sends messages to its queue; while its event
  source mapping is enabled and its role may receive from the queue, Lambda's poller receives them
  in batches, invokes the function once per batch and deletes what succeeded. Otherwise the function
  is never invoked: the messages wait, ``AWS/SQS ApproximateAgeOfOldestMessage`` grows and the queue's
  age alarm fires (the lab compresses the minutes that takes, as it does for every alarm period).
"""

from __future__ import annotations

import ipaddress
import json
import secrets
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from incident_responder.account.state import NetworkState, read_queue_url, read_secrets
from incident_responder.core.aws import AwsClients
from incident_responder.lab.account import INPUT_KEY, ORDERS_API, QUEUE_CONSUMER
from incident_responder.lab.emulation import (
    REGION_NAMES,
    AccountView,
    AlarmSpec,
    BurstResult,
    Invocation,
    InvocationOutcome,
    Workload,
    WorkloadProfile,
)
from incident_responder.lab.runtimes import Frame, NodeRuntime, RaisedError, locate, split_error

__all__ = [
    "REGION_NAMES",
    "BurstResult",
    "DataProcessor",
    "InvocationOutcome",
    "OrdersApi",
    "QueueConsumer",
    "Workload",
    "WorkloadProfile",
    "egress_to_s3_allowed",
    "take_over_queue_polling",
    "workload_for",
]

# A public S3 address in us-east-1: where the function's HTTPS connection goes.
S3_DESTINATION = ipaddress.ip_address("52.217.0.10")
EPHEMERAL_PORTS = (1024, 65535)


# -- data-processor ---------------------------------------------------------------------------------
def _covers(cidr: str | None, address: ipaddress.IPv4Address) -> bool:
    return bool(cidr) and address in ipaddress.ip_network(cidr, strict=False)


def _protocol_matches(protocol: str, port: int, port_range: dict[str, Any] | None) -> bool:
    if str(protocol) == "-1":
        return True
    if str(protocol).lower() not in ("6", "tcp"):
        return False
    if not port_range:
        return True
    return int(port_range.get("From", 0)) <= port <= int(port_range.get("To", 65535))


def _nacl_allows(entries: list[dict[str, Any]], *, egress: bool, port: int) -> bool:
    """NACLs are stateless and ordered: the lowest-numbered matching rule decides; none matching denies."""
    for entry in sorted((e for e in entries if bool(e.get("Egress")) == egress), key=lambda e: e["RuleNumber"]):
        if not _covers(entry.get("CidrBlock"), S3_DESTINATION):
            continue
        if _protocol_matches(entry.get("Protocol", "-1"), port, entry.get("PortRange")):
            return entry.get("RuleAction") == "allow"
    return False


def egress_to_s3_allowed(network: NetworkState) -> bool:
    """Can an HTTPS connection from the function reach S3 (and its replies come back)?"""
    if not network.in_vpc:
        return True
    # Security groups are stateful: one egress rule suffices, replies are allowed.
    sg_ok = any(
        _protocol_matches(
            rule.get("IpProtocol", "-1"), 443, {"From": rule.get("FromPort", 0), "To": rule.get("ToPort", 65535)}
        )
        and (
            any(_covers(r.get("CidrIp"), S3_DESTINATION) for r in rule.get("IpRanges", []))
            or bool(rule.get("PrefixListIds"))
        )
        for group in network.security_groups
        for rule in group.egress_rules
    )
    acl_ok = all(
        _nacl_allows(subnet.entries, egress=True, port=443)
        and any(_nacl_allows(subnet.entries, egress=False, port=p) for p in EPHEMERAL_PORTS)
        for subnet in network.subnets
    )
    return sg_ok and acl_ok


def _traceback(error_type: str, message: str, line: int, code: str) -> RaisedError:
    return RaisedError(error_type, message, [Frame("/var/task/app.py", line, "handler", code=code)])


def _session_name(role_arn: str) -> str:
    return role_arn.rsplit("/", 1)[-1].removesuffix("-role")


def _module_error(error_type: str, message: str, source: str | None, code: str) -> RaisedError:
    """An exception raised while the runtime imports the handler's module (its init phase)."""
    return RaisedError(error_type, message, [Frame("/var/task/app.py", locate(source, code)[0], "<module>", code=code)])


class DataProcessor(Workload):
    """``data-processor``: an S3 object in, the processed object out (staged on /tmp)."""

    default_function_name = "data-processor"
    default_profile = WorkloadProfile(tmp_write_mb=700)

    def facts(self, view: AccountView) -> dict[str, Any]:
        bucket = view.environment.get("INPUT_BUCKET", "")
        return {
            "init_error": None
            if "INPUT_BUCKET" in view.environment
            else _module_error("KeyError", "'INPUT_BUCKET'", view.code.source, 'BUCKET = os.environ["INPUT_BUCKET"]'),
            "tmp_mb": (view.raw.get("EphemeralStorage") or {}).get("Size", 512),
            "network_ok": egress_to_s3_allowed(view.config.network),
            "can_get": view.allowed("s3:GetObject", f"arn:aws:s3:::{bucket}/{INPUT_KEY}"),
            "can_put": view.allowed(
                "s3:PutObject", f"arn:aws:s3:::{bucket}/{INPUT_KEY.replace('incoming/', 'processed/')}"
            ),
            "role_arn": view.role_arn,
            "bucket": bucket,
        }

    def handle(
        self,
        ctx: Invocation,
        view: AccountView,
        facts: dict[str, Any],
        event: Any,
        extra: list[str],
        app_error: str | None,
    ) -> None:
        p = self.profile
        key = INPUT_KEY
        get_line = 'body = s3.get_object(Bucket=os.environ["INPUT_BUCKET"], Key=key)["Body"].read()'
        if facts["init_error"] is not None:
            ctx.spend(0.05)
            ctx.fail(facts["init_error"])
        ctx.info(f"Processing s3://{facts['bucket']}/{key}", at=0.01)
        ctx.spend(0.02)
        ctx.log_raw(extra)
        if facts["thrown"] is not None:
            ctx.fail(facts["thrown"])
        if not facts["network_ok"]:
            ctx.spend(p.connect_timeout_seconds * p.connect_attempts)
            url = f"https://{facts['bucket']}.s3.amazonaws.com/{key}"
            msg = f'Connect timeout on endpoint URL: "{url}"'
            ctx.fail(_traceback("ConnectTimeoutError", msg, 10, get_line))
        if not facts["can_get"]:
            ctx.spend(0.08)
            msg = self._access_denied("GetObject", "s3:GetObject", f"{facts['bucket']}/{key}", facts["role_arn"])
            ctx.fail(_traceback("ClientError", msg, 10, get_line))
        if app_error:
            ctx.spend(0.12)
            etype, _, emsg = app_error.partition(":")
            ctx.fail(_traceback(etype.strip(), emsg.strip(), 11, "orders = [transform(o) for o in json.loads(body)]"))
        ctx.peak(p.peak_memory_mb)
        ctx.compute(p.work_seconds_at_512mb)
        processed = key.replace("incoming/", "processed/")
        if p.tmp_write_mb > facts["tmp_mb"]:
            ctx.spend(0.4)
            write = "json.dump(orders, out)"
            frames = [
                Frame("/var/task/app.py", locate(view.code.source, write)[0], "handler", code=write),
                Frame("/var/lang/lib/python3.12/json/__init__.py", 180, "dump", code="fp.write(chunk)"),
            ]
            ctx.fail(RaisedError("OSError", "[Errno 28] No space left on device", frames))
        if not facts["can_put"]:
            msg = self._access_denied("PutObject", "s3:PutObject", f"{facts['bucket']}/{processed}", facts["role_arn"])
            ctx.fail(_traceback("ClientError", msg, 12, "s3.put_object(...)"))
        ctx.info(f"Processed 20 orders -> s3://{facts['bucket']}/{processed}")

    @staticmethod
    def _access_denied(operation: str, action: str, resource: str, role_arn: str) -> str:
        role_name = role_arn.rsplit("/", 1)[-1]
        account = role_arn.split(":")[4]
        return (
            f"An error occurred (AccessDenied) when calling the {operation} operation: User: "
            f"arn:aws:sts::{account}:assumed-role/{role_name}/{_session_name(role_arn)} is not authorized "
            f'to perform: {action} on resource: "arn:aws:s3:::{resource}" because no identity-based policy '
            f"allows the {action} action"
        )


# -- orders-api -------------------------------------------------------------------------------------
# How long the table's consumption is looked back on: an overload older than this has passed.
TABLE_LOAD_WINDOW = timedelta(minutes=15)
_SDK = "/var/runtime/node_modules/@aws-sdk"
# The AWS SDK for JavaScript v3 (as bundled with nodejs20.x) between the service's answer and the handler.
_SDK_FRAMES = (
    Frame(f"{_SDK}/node_modules/@smithy/smithy-client/dist-cjs/index.js", 867, "throwDefaultError", 20),
    Frame(f"{_SDK}/node_modules/@smithy/smithy-client/dist-cjs/index.js", 876, None, 5),
    Frame(f"{_SDK}/client-dynamodb/dist-cjs/index.js", 2293, "de_CommandError", 14),
    Frame("node:internal/process/task_queues", 95, "process.processTicksAndRejections", 5),
    Frame(f"{_SDK}/node_modules/@smithy/middleware-serde/dist-cjs/index.js", 35, None, 20, asynchronous=True),
    Frame(f"{_SDK}/node_modules/@aws-sdk/core/dist-cjs/index.js", 165, None, 18, asynchronous=True),
    Frame(f"{_SDK}/node_modules/@smithy/middleware-retry/dist-cjs/index.js", 320, None, 38, asynchronous=True),
    Frame(f"{_SDK}/node_modules/@aws-sdk/middleware-logger/dist-cjs/index.js", 34, None, 22, asynchronous=True),
)
PUT_CALL = r"^\s*await ddb\.send\($"  # the PutItem call spans lines: its await stands alone
# What Secrets Manager answers GetSecretValue for a secret scheduled for deletion.
SECRET_MARKED_FOR_DELETION = "You can't perform this operation on the secret because it was marked for deletion."
THROUGHPUT_EXCEEDED = (
    "The level of configured provisioned throughput for the table was exceeded. Consider increasing your "
    "provisioning level with the UpdateTable API."
)


def table_write_load(clients: AwsClients, table: str) -> float | None:
    """Write capacity units per second the table consumed in its latest ``ConsumedWriteCapacityUnits``
    datapoint (a minute's sum) within the window; None without one."""
    now = datetime.now(UTC)
    points = clients.get("cloudwatch").get_metric_statistics(
        Namespace="AWS/DynamoDB",
        MetricName="ConsumedWriteCapacityUnits",
        Dimensions=[{"Name": "TableName", "Value": table}],
        StartTime=now - TABLE_LOAD_WINDOW,
        EndTime=now + timedelta(minutes=1),
        Period=1,  # every datapoint on its own: the latest one is the load now
        Statistics=["Sum"],
    )["Datapoints"]
    if not points:
        return None
    return max(points, key=lambda p: p["Timestamp"])["Sum"] / 60


def _dynamodb_request_id() -> str:
    return secrets.token_hex(26).upper()


class OrdersApi(Workload):
    """``orders-api``: stores an order in its DynamoDB table, invoked through its alias ``live``."""

    default_function_name = ORDERS_API
    default_profile = WorkloadProfile(
        work_seconds_at_512mb=0.7, peak_memory_mb=150, init_seconds=0.18, base_memory_mb=82
    )
    invoked_alias = "live"

    def facts(self, view: AccountView) -> dict[str, Any]:
        table = view.environment.get("TABLE_NAME", "")
        table_arn = f"arn:aws:dynamodb:{view.region}:{view.account}:table/{table}"
        throttled = False
        try:
            described = self.clients.get("dynamodb").describe_table(TableName=table)["Table"]
        except self.clients.get("dynamodb").exceptions.ResourceNotFoundException:
            described = None
        if described is not None:
            provisioned = described.get("ProvisionedThroughput", {}).get("WriteCapacityUnits") or 0
            load = table_write_load(self.clients, table)
            throttled = bool(provisioned) and load is not None and load > provisioned
        secret_arn = view.environment.get("PAYMENT_SECRET_ARN")
        secret = (
            next(iter(read_secrets(self.clients, {"PAYMENT_SECRET_ARN": secret_arn})), None) if secret_arn else None
        )
        return {
            "secret_arn": secret_arn,
            "secret_deleted": secret is not None and (secret.deleted_date is not None or not secret.exists),
            "can_read_secret": bool(secret_arn) and view.allowed("secretsmanager:GetSecretValue", secret_arn),
            "table": table,
            "table_arn": table_arn,
            "can_get": view.allowed("dynamodb:GetItem", table_arn),
            "can_put": view.allowed("dynamodb:PutItem", table_arn),
            "throttled": throttled,
            "throttled_writes": 0,
        }

    def deliveries(self, invocations: int, view: AccountView, facts: dict[str, Any]) -> list[Any]:
        return [
            {"orderId": f"o-{uuid.uuid4().hex[:8]}", "items": [{"sku": "A-1", "price": 9.5, "qty": n % 3 + 1}]}
            for n in range(invocations)
        ]

    def _sdk_error(
        self,
        view: AccountView,
        error_type: str,
        message: str,
        call: str,
        *,
        status: int = 400,
        attempts: int = 1,
        namespace: str = "com.amazonaws.dynamodb.v20120810",
    ) -> RaisedError:
        # IAM's denials come from the request layer, the rest from the service itself.
        service = "com.amazon.coral.service" if error_type == "AccessDeniedException" else namespace
        details = {
            "name": error_type,
            "$fault": "client",
            "$metadata": {
                "httpStatusCode": status,
                "requestId": _dynamodb_request_id(),
                "attempts": attempts,
                "totalRetryDelay": 0 if attempts == 1 else 112,
            },
            "__type": f"{service}#{error_type}",
        }
        handler = NodeRuntime().handler_frame(
            view.code.filename or "index.mjs", view.code.source, call, asynchronous=True
        )
        return RaisedError(error_type, message, [*_SDK_FRAMES, handler], details)

    def _access_denied(
        self, view: AccountView, facts: dict[str, Any], action: str, call: str, resource: str | None = None
    ) -> RaisedError:
        role = view.role_arn.rsplit("/", 1)[-1]
        message = (
            f"User: arn:aws:sts::{view.account}:assumed-role/{role}/{self.function_name} is not authorized to "
            f"perform: {action} on resource: {resource or facts['table_arn']} because no identity-based policy "
            f"allows the {action} action"
        )
        return self._sdk_error(view, "AccessDeniedException", message, call)

    def handle(
        self,
        ctx: Invocation,
        view: AccountView,
        facts: dict[str, Any],
        event: Any,
        extra: list[str],
        app_error: str | None,
    ) -> None:
        source, filename = view.code.source, view.code.filename or "index.mjs"
        ctx.spend(0.01)
        ctx.log_raw(extra)
        if facts["thrown"] is not None:
            ctx.spend(0.01)
            ctx.fail(facts["thrown"])
        ctx.info(f"Creating order {event['orderId']} ({len(event['items'])} items)")
        if facts["secret_arn"]:
            ctx.spend(0.03)  # GetSecretValue
            call = r"await secrets\.send\(new GetSecretValueCommand"
            if not facts["can_read_secret"]:
                denied = "secretsmanager:GetSecretValue"
                ctx.fail(self._access_denied(view, facts, denied, call, facts["secret_arn"]))
            if facts["secret_deleted"]:
                ctx.fail(
                    self._sdk_error(
                        view, "InvalidRequestException", SECRET_MARKED_FOR_DELETION, call, namespace="secretsmanager"
                    )
                )
        ctx.spend(0.04)  # GetItem
        if not facts["can_get"]:
            ctx.fail(self._access_denied(view, facts, "dynamodb:GetItem", r"await ddb\.send\(new GetItemCommand"))
        if app_error:
            ctx.spend(0.01)
            error_type, message = split_error(app_error, "Error")
            line, column = locate(source, "order.items.reduce")
            handler_file = f"file:///var/task/{filename}"
            # Thrown inside the reduce callback, as V8 reports it.
            frames = [
                Frame(handler_file, line, None, column + len("order.items.reduce(")),
                Frame("<anonymous>", 0, "Array.reduce"),
                Frame(handler_file, line, "Runtime.handler", column + len("order.items.")),
                *NodeRuntime.RUNTIME_FRAMES,
            ]
            ctx.fail(RaisedError(error_type, message, frames))
        ctx.peak(self.profile.peak_memory_mb)
        ctx.compute(self.profile.work_seconds_at_512mb)
        if facts["throttled"]:
            ctx.spend(0.34)  # the SDK's three attempts with backoff
            facts["throttled_writes"] += 3
            ctx.fail(
                self._sdk_error(
                    view,
                    "ProvisionedThroughputExceededException",
                    THROUGHPUT_EXCEEDED,
                    PUT_CALL,
                    attempts=3,
                )
            )
        ctx.spend(0.03)  # PutItem
        if not facts["can_put"]:
            ctx.fail(self._access_denied(view, facts, "dynamodb:PutItem", PUT_CALL))
        ctx.info(f"Order {event['orderId']} stored")

    def after_burst(
        self, view: AccountView, facts: dict[str, Any], outcomes: list[InvocationOutcome], start: datetime
    ) -> dict[str, Any]:
        if facts["throttled_writes"]:
            table = facts["table"]
            dims = [{"Name": "TableName", "Value": table}]
            self.clients.get("cloudwatch").put_metric_data(
                Namespace="AWS/DynamoDB",
                MetricData=[
                    {
                        "MetricName": "WriteThrottleEvents",
                        "Dimensions": dims,
                        "Value": facts["throttled_writes"],
                        "Unit": "Count",
                        "Timestamp": start,
                    },
                    {
                        "MetricName": "ThrottledRequests",
                        "Dimensions": [*dims, {"Name": "Operation", "Value": "PutItem"}],
                        "Value": facts["throttled_writes"],
                        "Unit": "Count",
                        "Timestamp": start,
                    },
                ],
            )
        return {}


# -- queue-consumer ---------------------------------------------------------------------------------
QUEUE_AGE_THRESHOLD = 300.0
SEND_RESULT = 'sqs.send_message(QueueUrl=os.environ["RESULTS_QUEUE_URL"], MessageBody=json.dumps(process(order)))'
MAX_POLLS = 100  # a burst's poller stops here even if producers keep the queue full


def take_over_queue_polling() -> None:
    """Stop moto invoking a queue's mapped function itself: it does so the moment a message arrives, with
    its echo backend, and deletes the message. The lab's workloads poll instead (QueueConsumer), honouring
    the mapping's state and the role's permissions. Effective where moto serves the lab (this process);
    elsewhere harmless."""
    try:
        from moto.sqs.models import Queue
    except ImportError:
        return
    if isinstance(Queue.__dict__.get("lambda_event_source_mappings"), property):
        return

    class _Registered(dict):
        """Still the registry moto's Lambda writes to; shows its poll-on-send nothing to invoke."""

        def items(self):  # type: ignore[override]
            return {}.items()

    def get(queue: Any) -> dict[str, Any]:
        value = queue.__dict__.get("lambda_event_source_mappings")
        if not isinstance(value, _Registered):
            value = _Registered(value or {})
            queue.__dict__["lambda_event_source_mappings"] = value
        return value

    def set_(queue: Any, value: dict[str, Any]) -> None:
        queue.__dict__["lambda_event_source_mappings"] = _Registered(value)

    Queue.lambda_event_source_mappings = property(get, set_)  # type: ignore[attr-defined]


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


# -- choosing the emulator --------------------------------------------------------------------------
WORKLOADS: dict[str, type[Workload]] = {
    DataProcessor.default_function_name: DataProcessor,
    OrdersApi.default_function_name: OrdersApi,
    QueueConsumer.default_function_name: QueueConsumer,
}


def workload_for(clients: AwsClients, function_name: str, alert_topic_arn: str | None = None) -> Workload:
    """The emulator of ``function_name``: a sample workload by name, else by its shape (fed by an SQS
    mapping: a queue consumer; Node.js: the orders API; otherwise a copy of data-processor)."""
    kind = WORKLOADS.get(function_name)
    if kind is None:
        lam = clients.get("lambda")
        mappings = lam.list_event_source_mappings(FunctionName=function_name).get("EventSourceMappings", [])
        runtime = lam.get_function_configuration(FunctionName=function_name).get("Runtime", "")
        if any(":sqs:" in m.get("EventSourceArn", "") for m in mappings):
            kind = QueueConsumer
        elif runtime.startswith("nodejs"):
            kind = OrdersApi
        else:
            kind = DataProcessor
    return kind(clients, function_name, alert_topic_arn=alert_topic_arn)
