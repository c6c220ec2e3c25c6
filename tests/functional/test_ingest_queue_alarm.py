"""An alarm that names no function: the queue's ApproximateAgeOfOldestMessage alarm is resolved, at ingest, to the one
onboarded function whose event source mapping reads the queue, and the incident says so; an unknown queue, or a
queue several functions read, starts nothing and says why. Reading the alarm stays pure (no AWS call).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from aws_lambda_powertools.utilities.parser.models import SnsModel

from incident_responder.account.baseline import baseline_table_name, record_baseline
from incident_responder.intake.alerts import parse_alert, read_alert
from incident_responder.intake.errors import FunctionNotNamedError, MalformedAlertError, UnresolvedAlertError
from incident_responder.intake.ingest import ingest_alert
from incident_responder.intake.pending import QueueAlarm
from incident_responder.intake.resolve import functions_reading, incident_from_alert
from tests.wider_account import CONSUMER, QUEUE, STATE_TABLE, build_wider_account, code

EVENTS = Path(__file__).parents[2] / "events"
NOW = datetime(2026, 11, 23, 6, 0, tzinfo=UTC)
ALARM = {
    "AlarmName": "queue-consumer-queue-age",
    "AWSAccountId": "123456789012",
    "NewStateValue": "ALARM",
    "NewStateReason": "Threshold Crossed: 1 datapoint [612.0] was greater than or equal to the threshold (300.0).",
    "StateChangeTime": "2026-11-23T05:13:02.417+0000",
    "AlarmArn": "arn:aws:cloudwatch:us-east-1:123456789012:alarm:queue-consumer-queue-age",
    "Trigger": {
        "MetricName": "ApproximateAgeOfOldestMessage",
        "Namespace": "AWS/SQS",
        "Dimensions": [{"name": "QueueName", "value": QUEUE}],
        "ComparisonOperator": "GreaterThanOrEqualToThreshold",
        "Threshold": 300.0,
    },
}
QUEUE_ARN = f"arn:aws:sqs:us-east-1:123456789012:{QUEUE}"


def alarm_on(queue: str = QUEUE, **changes) -> dict:
    trigger = {**ALARM["Trigger"], "Dimensions": [{"name": "QueueName", "value": queue}]}
    return {**ALARM, "Trigger": trigger, **changes}


# -- reading the alarm: pure ----------------------------------------------------------------------------
def test_a_queue_alarm_reads_as_a_queue_alarm_with_the_queue_arn():
    pending = read_alert(json.dumps(ALARM), now=NOW)
    assert isinstance(pending, QueueAlarm)
    assert (pending.queue_name, pending.queue_arn) == (QUEUE, QUEUE_ARN)
    incident = pending.incident(CONSUMER, "queue queue-consumer-queue via its event source mapping")
    assert (incident.function_name, incident.alarm_name, incident.namespace, incident.metric_name) == (
        CONSUMER,
        "queue-consumer-queue-age",
        "AWS/SQS",
        "ApproximateAgeOfOldestMessage",
    )
    assert incident.incident_id.startswith("queue-consumer-20261123T051302-")
    # parse_alert promises an Incident: for a queue it says the function has to be found, and carries the queue.
    with pytest.raises(FunctionNotNamedError, match="names no function: it watches queue queue-consumer-queue") as e:
        parse_alert(ALARM, now=NOW)
    assert isinstance(e.value, MalformedAlertError) and e.value.pending.queue_arn == QUEUE_ARN
    # An alarm naming a function is read as before.
    lambda_alarm = {
        **ALARM,
        "Trigger": {"Namespace": "AWS/Lambda", "Dimensions": [{"name": "FunctionName", "value": "f"}]},
    }
    assert read_alert(lambda_alarm, now=NOW).function_name == "f"


def test_the_partition_region_and_account_come_from_the_alarm():
    gov = alarm_on(AlarmArn="arn:aws-us-gov:cloudwatch:us-gov-west-1:210987654321:alarm:x", AWSAccountId="210987654321")
    assert read_alert(gov, now=NOW).queue_arn == f"arn:aws-us-gov:sqs:us-gov-west-1:210987654321:{QUEUE}"
    fifo = read_alert(alarm_on("orders.fifo"), now=NOW)
    assert fifo.queue_arn.endswith(":orders.fifo")


@pytest.mark.parametrize(
    "message, words",
    [
        ({**ALARM, "AlarmArn": None}, r"has no region \(AlarmArn\) and account \(AWSAccountId\)"),
        ({**alarm_on(), "AlarmArn": "arn:aws:cloudwatch:::alarm:x"}, "has no region"),
        ({**ALARM, "AWSAccountId": "me"}, r"has no region \(AlarmArn\) and account \(AWSAccountId\)"),
        (alarm_on("bad/name"), "is not an SQS queue name"),
        (alarm_on("q" * 81), "is not an SQS queue name"),
        ({**ALARM, "Trigger": {**ALARM["Trigger"], "Namespace": "Custom"}}, "nor the QueueName of an AWS/SQS metric"),
        ({**ALARM, "StateChangeTime": "2999-01-01T00:00:00Z"}, "in the future"),
        ({**ALARM, "StateChangeTime": "soon"}, "not an ISO 8601 date and time"),
    ],
    ids=[
        "no-arn",
        "arn-without-region",
        "bad-account",
        "bad-name",
        "long-name",
        "other-namespace",
        "future",
        "no-time",
    ],
)
def test_malformed_queue_alarms_get_a_clear_reason(message, words):
    with pytest.raises(MalformedAlertError, match=words):
        read_alert(message, now=NOW)


def test_the_sample_event_is_the_queue_alarm():
    (record,) = SnsModel.model_validate(json.loads((EVENTS / "ingest-queue-alarm.json").read_text())).Records
    pending = read_alert(record.Sns.Message, now=NOW)
    assert isinstance(pending, QueueAlarm) and pending.queue_arn == QUEUE_ARN
    assert pending.alarm.Trigger.MetricName == "ApproximateAgeOfOldestMessage"


# -- resolving it at ingest --------------------------------------------------------------------------------
@pytest.fixture
def world(clients):
    return build_wider_account(clients)


@pytest.fixture
def machine(world):
    """A one-state lifecycle, enough to see what ingest starts and with which input."""
    definition = {"StartAt": "Done", "States": {"Done": {"Type": "Succeed"}}}
    return world.clients.get("stepfunctions").create_state_machine(
        name="incident-lifecycle", definition=json.dumps(definition), roleArn="arn:aws:iam::123456789012:role/sfn"
    )["stateMachineArn"]


def ingest(world, machine, message):
    return ingest_alert(
        world.clients,
        message,
        state_machine_arn=machine,
        state_table=STATE_TABLE,
        baseline_table=baseline_table_name(),
        window_seconds=900,
    )


def recent_alarm(queue: str = QUEUE) -> dict:
    return alarm_on(queue, StateChangeTime=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.000+0000"))


def test_ingest_resolves_the_queue_to_the_function_that_reads_it(world, machine):
    assert world.queue_arn == QUEUE_ARN and functions_reading(world.clients, QUEUE_ARN) == [CONSUMER]
    alarm = recent_alarm()
    started = ingest(world, machine, json.dumps(alarm))
    assert started.outcome == "started", started.reason
    assert started.resolved_from == "queue queue-consumer-queue via its event source mapping"
    assert started.incident_id.startswith("queue-consumer-")
    execution = world.clients.get("stepfunctions").describe_execution(executionArn=started.execution_arn)
    incident = json.loads(execution["input"])["incident"]
    assert (incident["function_name"], incident["resolved_from"], incident["namespace"]) == (
        CONSUMER,
        "queue queue-consumer-queue via its event source mapping",
        "AWS/SQS",
    )
    # SNS delivers at least once: the same alarm again is the same incident, nothing new starts.
    again = ingest(world, machine, json.dumps(alarm))
    assert (again.outcome, again.incident_id) == ("duplicate", started.incident_id)
    assert incident_from_alert(world.clients, alarm).incident_id == started.incident_id


def test_an_alarm_on_a_queue_no_onboarded_function_reads_starts_nothing(world, machine):
    world.clients.get("sqs").create_queue(QueueName="nobodys-queue")
    rejected = ingest(world, machine, recent_alarm("nobodys-queue"))
    assert rejected.outcome == "rejected" and rejected.incident_id is None
    assert rejected.reason.startswith(
        "alarm 'queue-consumer-queue-age' watches queue nobodys-queue "
        "(arn:aws:sqs:us-east-1:123456789012:nobodys-queue), which no onboarded function reads"
    )
    assert world.clients.get("stepfunctions").list_executions(stateMachineArn=machine)["executions"] == []


def test_a_queue_several_onboarded_functions_read_names_them_and_starts_nothing(world, machine):
    lam = world.clients.get("lambda")
    lam.create_function(
        FunctionName="queue-auditor",
        Runtime="python3.12",
        Role="arn:aws:iam::123456789012:role/queue-consumer-role",
        Handler="app.handler",
        Code={"ZipFile": code("def handler(e, c):\n    return None\n", "app.py")},
    )
    lam.create_event_source_mapping(EventSourceArn=world.queue_arn, FunctionName="queue-auditor")
    record_baseline(world.clients, "queue-auditor")
    with pytest.raises(
        UnresolvedAlertError, match=r"several onboarded functions read \(queue-auditor, queue-consumer\)"
    ):
        incident_from_alert(world.clients, recent_alarm())
    rejected = ingest(world, machine, recent_alarm())
    assert rejected.outcome == "rejected" and "none is chosen" in rejected.reason


def test_a_mapping_only_added_after_onboarding_does_not_count(world, machine):
    """What ingest trusts is the baseline: a function not onboarded with the mapping is not found through it."""
    sqs, lam = world.clients.get("sqs"), world.clients.get("lambda")
    url = sqs.create_queue(QueueName="late-queue")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    lam.create_event_source_mapping(EventSourceArn=arn, FunctionName=CONSUMER)
    assert functions_reading(world.clients, arn) == []
    assert ingest(world, machine, recent_alarm("late-queue")).outcome == "rejected"
    record_baseline(world.clients, CONSUMER)  # onboarded again: now it is found
    assert functions_reading(world.clients, arn) == [CONSUMER]
    assert ingest(world, machine, recent_alarm("late-queue")).outcome == "started"


def test_malformed_and_function_alarms_are_unchanged_at_ingest(world, machine):
    assert ingest(world, machine, "not json {").reason.startswith("alert is not JSON")
    unknown = {
        **recent_alarm(),
        "Trigger": {"Namespace": "AWS/Lambda", "Dimensions": [{"name": "FunctionName", "value": "billing"}]},
    }
    rejected = ingest(world, machine, unknown)
    assert rejected.outcome == "rejected" and "function 'billing' is not onboarded" in rejected.reason


def test_another_alarm_on_the_same_queue_metric_joins_the_open_incident(world, machine):
    """The fault is the queue's age as its consumer's, whichever alarm (a warning, a critical one) reported it."""
    started = ingest(world, machine, recent_alarm())
    critical = {**recent_alarm(), "AlarmName": "queue-consumer-queue-age-critical"}
    critical["AlarmArn"] = f"{ALARM['AlarmArn']}-critical"
    joined = ingest(world, machine, critical)
    assert (joined.outcome, joined.incident_id) == ("attached", started.incident_id), joined.reason
