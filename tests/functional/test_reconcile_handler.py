"""The reconcile and sweep functions act on the table their validated settings name, and on no other; an execution
that ended while changing the account hands its change over (operators alarmed, resources freed), and `responder
rollback` undoes it, fenced."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from incident_responder.account.state import read_reserved_concurrency
from incident_responder.core.contracts import ApprovalDecision, RemediationAction, actions_digest
from incident_responder.lab.account.resources import create_table
from incident_responder.lab.lambda_context import LambdaContext
from incident_responder.remediation import lease as leases
from incident_responder.remediation.ledger import Ledger
from tests.conftest import STATE_TABLE

TABLE = "stack-IncidentStateTable-0123"  # not the default name: a fallback would miss it
INCIDENT = "data-processor-20261123T040000-0123456789"
ARN = f"arn:aws:states:us-east-1:123456789012:execution:lifecycle:{INCIDENT}"
RESOURCE = "function:data-processor"
INCIDENT_JSON = {"function_name": "data-processor", "source": "alert", "detected_at": "2026-11-23T04:00:00Z"}


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
    assert out == {
        "execution_arn": ARN,
        "action": "marked_failed",
        "handed_over": {"released": [], "unverified": [], "alarmed": False},  # it never changed the account
    }
    item = clients.get("dynamodb").get_item(TableName=state_table, Key={"incident_id": {"S": INCIDENT}})["Item"]
    assert (item["status"]["S"], item["error_category"]["S"]) == ("FAILED", "execution_aborted")


def test_the_sweep_handler_scans_its_settings_table(clients, state_table, monkeypatch):
    from handlers import reconcile

    monkeypatch.setenv("STUCK_AFTER_MINUTES", "30")
    out = reconcile.sweep_handler({}, LambdaContext("sweep"))
    reconcile.metrics.clear_metrics()  # not flushed with metrics disabled: left for the next handler in this process
    assert out == {"reconciled": [], "active": {"INVESTIGATING": 1}}  # seen there, not stuck yet


def _unverified_change(clients, table: str, status: str) -> RemediationAction:
    """The incident is ``status`` and its ledger holds one applied, unverified change under a held lease."""
    clients.get("dynamodb").update_item(
        TableName=table,
        Key={"incident_id": {"S": INCIDENT}},
        UpdateExpression="SET #s = :s, function_name = :f, incident_json = :incident",
        ExpressionAttributeNames={"#s": "status"},
        ExpressionAttributeValues={
            ":s": {"S": status},
            ":f": {"S": "data-processor"},
            ":incident": {"S": json.dumps({**INCIDENT_JSON, "incident_id": INCIDENT})},
        },
    )
    action = RemediationAction.model_validate(
        {
            "fault_type": "throttling",
            "action_type": "update_concurrency",
            "target_resource": "data-processor",
            "parameters": {"function_name": "data-processor", "reserved_concurrent_executions": 10},
            "risk_level": "low",
            "reasoning": "restore the baseline's reservation",
            "execution_order": 1,
        }
    )
    approval = ApprovalDecision(
        decision="approve",
        decided_by="alice@example.com",
        decided_at="2026-11-23T04:05:00Z",
        channel="cli",
        actions_digest=actions_digest([action]),
    )
    ledger = Ledger(clients, table, INCIDENT)
    tokens = leases.take_all(clients, table, [RESOURCE], INCIDENT, ARN)
    ledger.open(actions_digest([action]), [1], approval, [RESOURCE])
    prior = {"function_name": "data-processor", "reserved_concurrent_executions": 0}
    ledger.record(action, prior, tokens)
    ledger.mark(1, "applied", after={**prior, "reserved_concurrent_executions": 10}, fences=tokens)
    return action


@pytest.fixture
def operator_inbox(clients, monkeypatch):
    """The operator topic, read through an SQS subscription."""
    sns, sqs = clients.get("sns"), clients.get("sqs")
    topic = sns.create_topic(Name="stack-operator-notifications")["TopicArn"]
    queue = sqs.create_queue(QueueName="operator-inbox")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=queue_arn)
    monkeypatch.setenv("OPERATOR_TOPIC_ARN", topic)

    def received() -> list[dict]:
        got = sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10).get("Messages", [])
        return [json.loads(m["Body"]) for m in got]

    return received


@pytest.mark.parametrize("status", ["REMEDIATING", "VERIFYING"])
def test_an_execution_stopped_while_acting_hands_its_change_over_and_frees_its_resources(
    clients, state_table, operator_inbox, status
):
    """Defect: an execution stopped (StopExecution) or timed out while REMEDIATING or VERIFYING left an applied,
    unverified change, its lease held, and no operator alarm."""
    from handlers import reconcile

    _unverified_change(clients, state_table, status)
    with pytest.MonkeyPatch.context() as mp:  # the execution has ended: its lease would still read as held
        mp.setattr(leases, "execution_running", lambda clients, arn: True)
        assert leases.holder(clients, state_table, RESOURCE)["holder"] == INCIDENT
    event = {"detail": {"executionArn": ARN, "status": "ABORTED", "cause": "stopped by alice"}}
    out = reconcile.handler(event, LambdaContext("reconcile"))
    assert out["action"] == "marked_remediation_failed"
    assert out["handed_over"] == {"released": [RESOURCE], "unverified": [1], "alarmed": True}
    item = clients.get("dynamodb").get_item(TableName=state_table, Key={"incident_id": {"S": INCIDENT}})["Item"]
    assert (item["status"]["S"], item["error_category"]["S"]) == ("REMEDIATION_FAILED", "execution_aborted")
    (alarm,) = operator_inbox()
    assert alarm["Subject"] == f"UNVERIFIED CHANGE, needs a person: data-processor ({INCIDENT})"[:100]
    assert "execution aborted: stopped by alice" in alarm["Message"]
    assert "1. update_concurrency on data-processor: applied" in alarm["Message"]
    assert '"reserved_concurrent_executions": 0' in alarm["Message"]  # the prior state, to undo it by hand
    assert f'{{"{RESOURCE}": 1}}' in alarm["Message"]  # and its fencing token
    # Its resources are free for the next incident, whose token is newer.
    item = clients.get("dynamodb").get_item(TableName=state_table, Key=leases.lease_key(RESOURCE))["Item"]
    assert "holder" not in item and item["released_by"]["S"] == INCIDENT
    assert leases.take(clients, state_table, RESOURCE, "inc-next") == (2, True)


def test_an_execution_that_ended_with_nothing_left_unverified_alarms_nobody(clients, state_table, operator_inbox):
    from handlers import reconcile

    _unverified_change(clients, state_table, "VERIFYING")
    Ledger(clients, state_table, INCIDENT).mark(1, "undone")  # its rollback finished before the end
    out = reconcile.handler({"detail": {"executionArn": ARN, "status": "TIMED_OUT"}}, LambdaContext("reconcile"))
    assert out["handed_over"] == {"released": [RESOURCE], "unverified": [], "alarmed": False}
    assert operator_inbox() == []


def test_responder_rollback_undoes_a_handed_over_change(clients, sample, state_table, operator_inbox, capsys):
    from handlers import reconcile
    from incident_responder.cli.commands import main

    _unverified_change(clients, state_table, "VERIFYING")  # what the step left: the sample's reservation of 10
    reconcile.handler({"detail": {"executionArn": ARN, "status": "ABORTED"}}, LambdaContext("reconcile"))
    capsys.readouterr()
    assert main(["rollback", INCIDENT, "--yes", "--reason", "not wanted"]) == 0
    assert read_reserved_concurrency(clients, "data-processor") == 0
    out = capsys.readouterr().out
    assert "1. update_concurrency on data-processor: undone" in out and out.rstrip().endswith("ROLLED_BACK")


def test_responder_rollback_never_undoes_what_another_incident_leased_since(
    clients, sample, state_table, operator_inbox, capsys
):
    from handlers import reconcile
    from incident_responder.cli.commands import main

    _unverified_change(clients, state_table, "VERIFYING")
    reconcile.handler({"detail": {"executionArn": ARN, "status": "ABORTED"}}, LambdaContext("reconcile"))
    leases.take(clients, state_table, RESOURCE, "inc-next")  # another incident acts on the function now
    capsys.readouterr()
    assert main(["rollback", INCIDENT, "--yes"]) == 1
    assert read_reserved_concurrency(clients, "data-processor") == 10
    out = capsys.readouterr().out
    assert f"undo_failed  fenced: {RESOURCE} passed to incident inc-next (fencing token 2)" in out
    assert out.rstrip().endswith("ROLLBACK_FAILED")
