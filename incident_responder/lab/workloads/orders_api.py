"""EMULATING ``orders-api`` (Node.js, invoked by API Gateway through its alias ``live``).

Lambda lets API Gateway invoke the alias only while the function's resource-based policy allows it (a statement for
apigateway.amazonaws.com on ``live`` whose source ARN matches the API's route); otherwise every request is refused
before the function runs: API Gateway logs the refusal and answers 500, and the function records nothing.

It runs the code of the version ``live`` routes to (a version whose code throws fails every invocation with that
error), reads and writes its DynamoDB table (its role must allow GetItem and PutItem; a table whose latest consumed
write capacity, ``AWS/DynamoDB ConsumedWriteCapacityUnits``, exceeds what is provisioned throttles its writes:
``ProvisionedThroughputExceededException`` after the SDK's retries). Its environment is encrypted with a
customer-managed key: while the key is not enabled the Lambda service refuses every invocation
(lab/emulation/burst.py). Its timeout and memory are read from the function's configuration, as the responder's
baseline records them (a real published version keeps the settings it was published with).
"""

from __future__ import annotations

import secrets
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from incident_responder.account.environment import read_secrets
from incident_responder.core.aws import AwsClients
from incident_responder.lab.account.sources import ORDERS_API, ORDERS_API_GATEWAY
from incident_responder.lab.emulation.burst import Workload
from incident_responder.lab.emulation.invocation import AccountView, Invocation, InvocationOutcome, WorkloadProfile
from incident_responder.lab.runtimes import Frame, NodeRuntime, RaisedError, locate, split_error

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
    invoked_by = "apigateway.amazonaws.com"
    # What API Gateway's execution log says when the function's resource-based policy does not let it invoke.
    refused_caller_message = "Execution failed due to configuration error: Invalid permissions on Lambda function"

    def caller_arn(self, view: AccountView) -> str:
        api_id, stage, route = ORDERS_API_GATEWAY
        return f"arn:aws:execute-api:{view.region}:{view.account}:{api_id}/{stage}/{route}"

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
