"""The incident lifecycle as DynamoDB ``incident-state`` sees it, and its safety nets.

The state machine writes every transition itself (direct DynamoDB integrations with from-status
conditions). This module holds what runs outside it: starting an execution for an alert (ingest),
marking incidents whose execution died without a terminal status (reconcile, sweep), and reading
an incident back (``responder show``). The table is always the caller's: a function passes the name its
validated settings hold (core/settings.py), so nothing here reads the environment or falls back to a default.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import BaseModel

from incident_responder.core.aws import AwsClients
from incident_responder.core.contracts import Incident
from incident_responder.core.encoding import iso
from incident_responder.core.status import ACTING_STATUSES, ACTIVE_STATUSES, TERMINAL_STATUSES

# Waits for a person, bounded by its own ApprovalTimeoutMinutes: the sweep never stops it.
WAITING_STATUSES = {"AWAITING_APPROVAL"}


class StartResult(BaseModel):
    incident_id: str
    execution_arn: str | None
    duplicate: bool


def execution_input(incident: Incident) -> dict[str, Any]:
    """What the state machine starts with: the incident (the state machine computes TTLs and windows itself)."""
    return {"incident": incident.model_dump(mode="json", exclude_none=True)}


def start_incident(clients: AwsClients, state_machine_arn: str, incident: Incident) -> StartResult:
    """Start the lifecycle for one incident. The execution name is the incident id, so a duplicate
    alert (SNS delivers at least once) finds its execution already there and starts nothing."""
    sfn = clients.get("stepfunctions")
    try:
        arn = sfn.start_execution(
            stateMachineArn=state_machine_arn, name=incident.incident_id, input=json.dumps(execution_input(incident))
        )["executionArn"]
    except sfn.exceptions.ExecutionAlreadyExists:
        prefix = state_machine_arn.replace(":stateMachine:", ":execution:")
        return StartResult(
            incident_id=incident.incident_id, execution_arn=f"{prefix}:{incident.incident_id}", duplicate=True
        )
    return StartResult(incident_id=incident.incident_id, execution_arn=arn, duplicate=False)


def incident_id_of(execution_arn: str) -> str:
    """The incident an execution runs: its name (:func:`start_incident` names it so)."""
    return execution_arn.rsplit(":", 1)[-1]


def get_incident_state(clients: AwsClients, table: str, incident_id: str) -> dict[str, Any] | None:
    item = (
        clients.get("dynamodb")
        .get_item(TableName=table, Key={"incident_id": {"S": incident_id}}, ConsistentRead=True)
        .get("Item")
    )
    return _plain(item) if item else None


def _plain(item: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for key, typed in item.items():
        ((kind, value),) = typed.items()
        out[key] = (
            int(value)
            if kind == "N" and value.isdigit()
            else (json.loads(value) if kind == "S" and key.endswith("_json") else value)
        )
    return out


def mark_failed(
    clients: AwsClients,
    table: str,
    incident_id: str,
    from_status: str,
    reason: str,
    category: str,
    to_status: str = "FAILED",
) -> bool:
    """FAILED (or ``to_status``), only if the incident is still in ``from_status`` (never overwrites a terminal one)."""
    ddb = clients.get("dynamodb")
    try:
        ddb.update_item(
            TableName=table,
            Key={"incident_id": {"S": incident_id}},
            UpdateExpression=(
                "SET #s = :failed, error_reason = :reason, error_category = :category, updated_at = :now, ended_at = :now"
            ),
            ConditionExpression="#s = :from",
            ExpressionAttributeNames={"#s": "status"},
            ExpressionAttributeValues={
                ":failed": {"S": to_status},
                ":reason": {"S": reason[:500]},
                ":category": {"S": category},
                ":from": {"S": from_status},
                ":now": {"S": iso(datetime.now(UTC), "milliseconds")},
            },
        )
    except ddb.exceptions.ConditionalCheckFailedException:
        return False
    return True


def reconcile_execution(
    clients: AwsClients, table: str, execution_arn: str, execution_status: str, cause: str | None = None
) -> str:
    """An execution ended (FAILED, TIMED_OUT, ABORTED...): make sure its incident is not left active.

    Returns what was done: ``marked_failed``, ``marked_remediation_failed`` (it died while acting on the
    account), ``already_terminal``, ``unknown_incident`` or ``still_running``.
    """
    if execution_status in ("RUNNING", "PENDING_REDRIVE"):
        return "still_running"
    incident_id = incident_id_of(execution_arn)
    state = get_incident_state(clients, table, incident_id)
    if state is None:
        return "unknown_incident"
    if state.get("status") in TERMINAL_STATUSES:
        return "already_terminal"
    reason = f"execution {execution_status.lower()} while {state.get('status')}" + (f": {cause}" if cause else "")
    acting = state["status"] in ACTING_STATUSES
    to_status = "REMEDIATION_FAILED" if acting else "FAILED"
    done = mark_failed(
        clients, table, incident_id, state["status"], reason, f"execution_{execution_status.lower()}", to_status
    )
    if not done:
        return "already_terminal"
    return "marked_remediation_failed" if acting else "marked_failed"


def sweep_stuck(
    clients: AwsClients,
    table: str,
    state_machine_arn: str | None = None,
    older_than_minutes: int = 30,
    active: dict[str, int] | None = None,
) -> list[dict[str, str]]:
    """Find incidents active for too long. Ended executions are reconciled; executions still running
    past the limit are stopped first (their end is then reconciled the same way). ``active``, when given,
    gets the number of incidents in each active status the scan saw (the sweep's gauges)."""
    cutoff = datetime.now(UTC) - timedelta(minutes=older_than_minutes)
    ddb = clients.get("dynamodb")
    sfn = clients.get("stepfunctions")
    done = []
    kwargs: dict[str, Any] = {
        "TableName": table,
        "FilterExpression": f"#s IN ({', '.join(f':s{i}' for i in range(len(ACTIVE_STATUSES)))})",
        "ExpressionAttributeNames": {"#s": "status"},
        "ExpressionAttributeValues": {f":s{i}": {"S": status} for i, status in enumerate(sorted(ACTIVE_STATUSES))},
    }
    while True:
        page = ddb.scan(**kwargs)
        for raw in page.get("Items", []):
            item = _plain(raw)
            if active is not None:
                active[item["status"]] = active.get(item["status"], 0) + 1
            updated = datetime.fromisoformat(item.get("updated_at", item.get("created_at", "")).replace("Z", "+00:00"))
            if updated > cutoff or "execution_arn" not in item:
                continue
            arn = item["execution_arn"]
            status = sfn.describe_execution(executionArn=arn)["status"]
            if status == "RUNNING" and item["status"] in WAITING_STATUSES:
                continue
            if status == "RUNNING":
                sfn.stop_execution(
                    executionArn=arn, error="IncidentStuck", cause=f"active for more than {older_than_minutes} minutes"
                )
                status = "ABORTED"
            done.append(
                {
                    "incident_id": item["incident_id"],
                    "action": reconcile_execution(clients, table, arn, status, "swept"),
                }
            )
        if "LastEvaluatedKey" not in page:
            return done
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def execution_path(sfn: Any, execution_arn: str) -> list[str]:
    """The path an execution took: the states it entered, in order (:func:`entered_states` of its history, read
    without the states' input and output)."""
    return entered_states(history(sfn, execution_arn, data=False))


def entered_states(events: list[dict[str, Any]]) -> list[str]:
    """The names of the states entered, in order, in an execution's history events."""
    return [e["stateEnteredEventDetails"]["name"] for e in events if "stateEnteredEventDetails" in e]


def history(sfn: Any, execution_arn: str, *, data: bool = True) -> list[dict[str, Any]]:
    """An execution's history events, every page; ``data``: with each event's input and output."""
    events: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {"executionArn": execution_arn, "includeExecutionData": data}
    while True:
        page = sfn.get_execution_history(**kwargs)
        events += page["events"]
        if not page.get("nextToken"):
            return events
        kwargs["nextToken"] = page["nextToken"]
