"""Alert grouping at ingest: an open incident absorbs the alerts of its function and fault, whichever alarm sent them.

A composite alarm and its child fire together for one fault; an error-rate alarm reads the same Errors as an
error-count alarm. Each of those is one incident (one execution, one approval request), while another fault of the
same function (its Throttles, its Duration) or another alias of it is an incident of its own.
"""

from __future__ import annotations

import json

import pytest

from incident_responder.account.baseline import baseline_table_name
from incident_responder.intake.ingest import ingest_alert
from incident_responder.lab.account.resources import create_table
from tests.alarm_fixtures import FIXTURES, create_child_alarms

STATE_TABLE = "incident-state"


@pytest.fixture
def machine(sample, clients) -> str:
    """A one-state lifecycle (enough to count what ingest starts), the state table, and the composites' children."""
    create_table(clients, "IncidentStateTable", STATE_TABLE)
    create_child_alarms(clients)
    definition = {"StartAt": "Done", "States": {"Done": {"Type": "Succeed"}}}
    return clients.get("stepfunctions").create_state_machine(
        name="incident-lifecycle", definition=json.dumps(definition), roleArn="arn:aws:iam::123456789012:role/sfn"
    )["stateMachineArn"]


def ingest(clients, machine, fixture: str, **changes):
    message = {**json.loads((FIXTURES / fixture).read_text()), **changes}
    return ingest_alert(
        clients,
        message,
        state_machine_arn=machine,
        state_table=STATE_TABLE,
        baseline_table=baseline_table_name(),
        window_seconds=900,
    )


def executions(clients, machine) -> list[dict]:
    return clients.get("stepfunctions").list_executions(stateMachineArn=machine)["executions"]


@pytest.mark.parametrize(
    "composite", ["composite-triggering-children.json", "composite-rule-only.json", "alarm-action-composite.json"]
)
def test_a_composite_and_its_child_firing_for_one_fault_are_one_incident(clients, machine, composite):
    """Defect: the group was the alarm's name, so the composite started a second incident (and approval request)."""
    child = ingest(clients, machine, "single-metric-errors.json")
    assert child.outcome == "started", child.reason
    parent = ingest(clients, machine, composite)
    assert (parent.outcome, parent.incident_id) == ("attached", child.incident_id), parent.reason
    assert parent.alert_incident_id != child.incident_id and len(executions(clients, machine)) == 1


def test_the_child_after_its_composite_joins_the_composites_incident(clients, machine):
    parent = ingest(clients, machine, "composite-triggering-children.json")
    assert parent.outcome == "started", parent.reason
    child = ingest(clients, machine, "single-metric-errors.json")
    assert (child.outcome, child.incident_id) == ("attached", parent.incident_id)


def test_another_alarm_on_the_same_metric_joins_and_other_faults_start_their_own(clients, machine):
    """An error-rate alarm (Errors over Invocations) is about Errors too; Throttles, Duration and an alias are not."""
    errors = ingest(clients, machine, "single-metric-errors.json")
    rate = ingest(clients, machine, "metric-math-error-rate.json")
    assert (rate.outcome, rate.incident_id) == ("attached", errors.incident_id)
    trigger = {**json.loads((FIXTURES / "single-metric-errors.json").read_text())["Trigger"], "MetricName": "Throttles"}
    others = [
        ingest(clients, machine, "single-metric-errors.json", AlarmName="data-processor-throttles", Trigger=trigger),
        ingest(clients, machine, "anomaly-detection-duration.json"),
        ingest(clients, machine, "single-metric-alias.json"),
    ]
    assert [o.outcome for o in others] == ["started"] * 3, [o.reason for o in others]
    assert len(executions(clients, machine)) == 4


def test_the_composite_after_its_childs_incident_ended_is_a_recurrence(clients, machine):
    """Absorbed only while the incident is open: once it has ended, the fault firing again is a new incident."""
    child = ingest(clients, machine, "single-metric-errors.json")
    clients.get("dynamodb").put_item(
        TableName=STATE_TABLE, Item={"incident_id": {"S": child.incident_id}, "status": {"S": "REMEDIATED"}}
    )
    parent = ingest(clients, machine, "composite-triggering-children.json")
    assert (parent.outcome, parent.recurrence_of) == ("started", child.incident_id)
    assert parent.incident_id != child.incident_id and len(executions(clients, machine)) == 2
