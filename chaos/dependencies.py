"""Fault injection into what the function depends on: its DynamoDB table overloaded by another writer, its secrets
scheduled for deletion."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from botocore.exceptions import ClientError

from chaos.errors import ChaosError
from chaos.target import FaultTarget
from incident_responder.account.environment import read_secrets
from incident_responder.account.iam_policy import statement_services, statements
from incident_responder.account.role import managed_policy_documents, read_role

# How far another writer overloads the table: this many times its provisioned write capacity.
OVERLOAD_FACTOR = 4


def _table_of(resource: str) -> str | None:
    """The table a DynamoDB ARN names (a table, or its indexes and streams), else None."""
    parts = resource.split(":", 5)
    if len(parts) < 6 or parts[2] != "dynamodb" or not parts[5].startswith("table/"):
        return None
    table = parts[5].split("/")[1]
    return None if any(c in table for c in "*?") else table


class DependencyFaults(FaultTarget):
    """Faults in the services the function calls."""

    def downstream_throttle(self) -> list[str]:
        """Another writer consumes several times the provisioned write capacity of the function's tables
        (published as their ``AWS/DynamoDB ConsumedWriteCapacityUnits``; the lab's workloads obey it)."""
        ddb = self.clients.get("dynamodb")
        tables = self._tables()
        if not tables:
            raise ChaosError(f"{self.function_name} uses no DynamoDB table: there is no dependency to overload")
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
            latest = self._latest_write_load(table)
            self.store.remember(slot, {"consumed_write_capacity_units": latest[1] if latest else 0.0})
            try:
                self._put_write_load(table, units * 60 * OVERLOAD_FACTOR, self._after(latest))
            except ClientError as exc:
                self.store.forget(slot)
                raise ChaosError(
                    f"CloudWatch refused the table's load ({exc.response['Error']['Code']}): only AWS publishes AWS/ "
                    "metrics in a real account, so downstream_throttle runs against the lab"
                ) from exc
            changes.append(f"table {table}: another writer consumes {units * OVERLOAD_FACTOR} of {units} write units/s")
        self.store.record_fault({"kind": "downstream_throttle"})
        return changes

    def secret_scheduled_for_deletion(self) -> list[str]:
        """Schedule every Secrets Manager secret the function's environment names for deletion (7 days)."""
        variables = (self._config().get("Environment") or {}).get("Variables") or {}
        secrets = [s for s in read_secrets(self.clients, variables) if s.exists]
        if not secrets:
            raise ChaosError(f"{self.function_name}'s environment names no Secrets Manager secret by ARN")
        sm = self.clients.get("secretsmanager")
        changes = []
        for secret in secrets:
            self.store.remember(f"secret.{secret.secret_arn}", secret.deleted_date)
            if secret.deleted_date:
                changes.append(f"secret {secret.secret_arn} is already scheduled for deletion")
                continue
            sm.delete_secret(SecretId=secret.secret_arn, RecoveryWindowInDays=7)
            changes.append(f"secret {secret.secret_arn} ({secret.variable}) scheduled for deletion in 7 days")
        self.store.record_fault({"kind": "secret_scheduled_for_deletion"})
        return changes

    def _tables(self) -> list[str]:
        """The DynamoDB tables the function's role grants access to, or its environment names."""
        config = self._config()
        role = read_role(self.clients, config["Role"])
        documents = [
            *role.inline_policies.values(),
            *managed_policy_documents(self.clients, role.attached_policy_arns).values(),
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
        existing = set(self.clients.get("dynamodb").list_tables().get("TableNames", []))
        found = [t for t in found if t in existing]
        for value in config.get("Environment", {}).get("Variables", {}).values():
            if value in existing and value not in found:
                found.append(value)
        return found

    def _latest_write_load(self, table: str) -> tuple[datetime, float] | None:
        now = datetime.now(UTC)
        points = self.clients.get("cloudwatch").get_metric_statistics(
            Namespace="AWS/DynamoDB",
            MetricName="ConsumedWriteCapacityUnits",
            Dimensions=[{"Name": "TableName", "Value": table}],
            StartTime=now - timedelta(hours=1),
            EndTime=now + timedelta(minutes=5),
            Period=1,
            Statistics=["Sum"],
        )["Datapoints"]
        if not points:
            return None
        latest = max(points, key=lambda p: p["Timestamp"])
        return latest["Timestamp"], latest["Sum"]

    @staticmethod
    def _after(latest: tuple[datetime, float] | None) -> datetime:
        """Now, or clearly after the latest datapoint (statistics come back to the millisecond): the workloads
        read the latest one as the load."""
        now = datetime.now(UTC)
        return max(now, latest[0] + timedelta(seconds=2)) if latest else now

    def _put_write_load(self, table: str, units_per_minute: float, at: datetime) -> None:
        self.clients.get("cloudwatch").put_metric_data(
            Namespace="AWS/DynamoDB",
            MetricData=[
                {
                    "MetricName": "ConsumedWriteCapacityUnits",
                    "Dimensions": [{"Name": "TableName", "Value": table}],
                    "Value": units_per_minute,
                    "Unit": "Count",
                    "Timestamp": at,
                }
            ],
        )
