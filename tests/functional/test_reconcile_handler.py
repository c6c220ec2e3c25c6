"""The reconcile and sweep functions act on the table their validated settings name, and on no other."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from incident_responder.lab.account.resources import create_table
from incident_responder.lab.lambda_context import LambdaContext
from tests.conftest import STATE_TABLE

TABLE = "stack-IncidentStateTable-0123"  # not the default name: a fallback would miss it
INCIDENT = "data-processor-20261123T040000-0123456789"
ARN = f"arn:aws:states:us-east-1:123456789012:execution:lifecycle:{INCIDENT}"


@pytest.fixture
def state_table(clients, monkeypatch):
    create_table(clients, "IncidentStateTable", TABLE)
    now = datetime.now(UTC).isoformat(timespec="milliseconds")
    clients.get("dynamodb").put_item(
        TableName=TABLE,
        Item={
            "incident_id": {"S": INCIDENT},
            "status": {"S": "INVESTIGATING"},
            "execution_arn": {"S": ARN},
            "created_at": {"S": now},
            "updated_at": {"S": now},
        },
    )
    # Padded as a template can leave it: the settings model strips it, so only the validated value names the table
    # (the raw variable, read where the table is used, would not).
    monkeypatch.setenv("INCIDENT_STATE_TABLE", f" {TABLE}\n")
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    # The default table does not exist: reading it instead would fail with ResourceNotFoundException.
    assert STATE_TABLE not in clients.get("dynamodb").list_tables()["TableNames"]
    return TABLE


def test_the_reconcile_handler_marks_the_incident_in_its_settings_table(clients, state_table):
    from handlers import reconcile

    event = {"detail": {"executionArn": ARN, "status": "ABORTED", "cause": "stopped"}}
    out = reconcile.handler(event, LambdaContext("reconcile"))
    assert out == {"execution_arn": ARN, "action": "marked_failed"}
    item = clients.get("dynamodb").get_item(TableName=state_table, Key={"incident_id": {"S": INCIDENT}})["Item"]
    assert (item["status"]["S"], item["error_category"]["S"]) == ("FAILED", "execution_aborted")


def test_the_sweep_handler_scans_its_settings_table(clients, state_table, monkeypatch):
    from handlers import reconcile

    monkeypatch.setenv("STUCK_AFTER_MINUTES", "30")
    out = reconcile.sweep_handler({}, LambdaContext("sweep"))
    assert out == {"reconciled": [], "active": {"INVESTIGATING": 1}}  # seen there, not stuck yet
