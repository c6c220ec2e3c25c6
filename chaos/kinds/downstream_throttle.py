"""downstream_throttle: another writer overloads the function's DynamoDB table, so its writes are throttled (nothing
of the function changes). Lab only: in a real account only AWS publishes ``AWS/DynamoDB`` metrics."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Literal

from botocore.exceptions import ClientError

from chaos.errors import ChaosError
from chaos.kinds.base import ORDERS_API, ChaosKind, KindParameters
from chaos.metrics import after, latest_datapoint, put_datapoints
from chaos.target import FaultTarget
from incident_responder.account.iam_policy import statement_services, statements
from incident_responder.account.role import managed_policy_documents, read_role
from incident_responder.core.contracts import FaultType

# How far another writer overloads the table: this many times its provisioned write capacity.
OVERLOAD_FACTOR = 4
NAMESPACE = "AWS/DynamoDB"
METRIC = "ConsumedWriteCapacityUnits"


class DownstreamThrottle(KindParameters):
    """Something else overloads the function's table: its writes are throttled (nothing of the function changes)."""

    kind: Literal["downstream_throttle"]


class DownstreamThrottleKind(ChaosKind[DownstreamThrottle]):
    """Another writer consumes several times the provisioned write capacity of the function's tables (published
    as their ``AWS/DynamoDB ConsumedWriteCapacityUnits``; the lab's workloads obey it)."""

    parameters = DownstreamThrottle
    fault_type = FaultType.DEPENDENCY_THROTTLING
    workloads = frozenset({ORDERS_API})
    refusal = "uses no DynamoDB table"
    slots = ("load",)  # load.<table>: the table's write load before the other writer
    help = "overload the function's DynamoDB table from another writer (lab only)"

    def inject(self, target: FaultTarget, params: DownstreamThrottle) -> list[str]:
        ddb = target.clients.get("dynamodb")
        tables = _tables(target)
        if not tables:
            raise ChaosError(f"{target.function_name} uses no DynamoDB table: there is no dependency to overload")
        capacity = {}
        for table in tables:  # all checked before any is touched
            described = ddb.describe_table(TableName=table)["Table"]
            units = described.get("ProvisionedThroughput", {}).get("WriteCapacityUnits") or 0
            if described.get("BillingModeSummary", {}).get("BillingMode") == "PAY_PER_REQUEST" or not units:
                raise ChaosError(f"table {table} is on-demand: it has no provisioned write capacity to exceed")
            capacity[table] = units
        changes = []
        for table, units in capacity.items():
            slot = f"load.{table}"
            latest = _latest_write_load(target, table)
            target.store.remember(slot, {"consumed_write_capacity_units": latest[1] if latest else 0.0})
            try:
                _put_write_load(target, table, units * 60 * OVERLOAD_FACTOR, latest)
            except ClientError as exc:
                target.store.forget(slot)
                raise ChaosError(
                    f"CloudWatch refused the table's load ({exc.response['Error']['Code']}): only AWS publishes AWS/ "
                    "metrics in a real account, so downstream_throttle runs against the lab"
                ) from exc
            changes.append(f"table {table}: another writer consumes {units * OVERLOAD_FACTOR} of {units} write units/s")
        target.store.record_fault({"kind": "downstream_throttle"})
        return changes

    def restore(self, target: FaultTarget, slot: str, original: Any) -> str:
        # A datapoint cannot be taken back: a later one says the other writer is back to its usual load.
        table = slot.removeprefix("load.")
        units = original["consumed_write_capacity_units"]
        _put_write_load(target, table, units, _latest_write_load(target, table))
        return f"table {table}: the other writer's load is back to {units / 60:g} write units/s"


def _table_of(resource: str) -> str | None:
    """The table a DynamoDB ARN names (a table, or its indexes and streams), else None."""
    parts = resource.split(":", 5)
    if len(parts) < 6 or parts[2] != "dynamodb" or not parts[5].startswith("table/"):
        return None
    table = parts[5].split("/")[1]
    return None if any(c in table for c in "*?") else table


def _tables(target: FaultTarget) -> list[str]:
    """The DynamoDB tables the function's role grants access to, or its environment names."""
    config = target.config()
    role = read_role(target.clients, config["Role"])
    documents = [
        *role.inline_policies.values(),
        *managed_policy_documents(target.clients, role.attached_policy_arns).values(),
    ]
    found: list[str] = []
    for document in documents:
        for statement in statements(document):
            if statement.get("Effect") != "Allow" or "dynamodb" not in statement_services(statement):
                continue
            resources = statement.get("Resource", [])
            for resource in [resources] if isinstance(resources, str) else resources:
                table = _table_of(resource)
                if table and table not in found:
                    found.append(table)
    existing = set(target.clients.get("dynamodb").list_tables().get("TableNames", []))
    found = [t for t in found if t in existing]
    for value in config.get("Environment", {}).get("Variables", {}).values():
        if value in existing and value not in found:
            found.append(value)
    return found


def _latest_write_load(target: FaultTarget, table: str) -> tuple[datetime, float] | None:
    dimensions = [{"Name": "TableName", "Value": table}]
    return latest_datapoint(target.clients, NAMESPACE, METRIC, dimensions, "Sum", timedelta(hours=1))


def _put_write_load(
    target: FaultTarget, table: str, units_per_minute: float, latest: tuple[datetime, float] | None
) -> None:
    """The table's write load from now on: a datapoint clearly after ``latest``."""
    datapoint = {
        "MetricName": METRIC,
        "Dimensions": [{"Name": "TableName", "Value": table}],
        "Value": units_per_minute,
        "Unit": "Count",
        "Timestamp": after(latest),
    }
    put_datapoints(target.clients, NAMESPACE, [datapoint])
