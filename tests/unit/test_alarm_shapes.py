"""Every shape of alarm notification CloudWatch sends to SNS, read as ingest reads it.

The bodies follow AWS's own examples: the schema in the CloudWatch User Guide ("Schema of Amazon SNS
notifications when alarms change state", Notify_Users_Alarm_Changes), and aws/aws-lambda-go's fixtures
events/testdata/cloudwatch-alarm-sns-payload-single-metric.json (a Trigger with MetricName and Dimensions)
and cloudwatch-alarm-sns-payload-multiple-metrics.json (a Trigger with Metrics: an expression over MetricStat
entries), with Lambda's metrics and dimensions (FunctionName, Resource, ExecutedVersion) in place of EC2's.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

import pytest

from incident_responder.intake.alerts import Home, parse_alert, read_alert
from incident_responder.intake.errors import (
    AlertIgnoredError,
    ForeignAlertError,
    FunctionNotNamedError,
    MalformedAlertError,
)
from incident_responder.intake.pending import CompositeAlarm, QueueAlarm

NOW = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)
HOME = Home(account="123456789012", region="us-east-1")


def notification(name: str = "orders-api-errors", state: str = "ALARM", **fields) -> dict:
    body = {
        "AlarmName": name,
        "AlarmDescription": "EXAMPLE",
        "AWSAccountId": "123456789012",
        "AlarmConfigurationUpdatedTimestamp": "2026-11-20T09:00:00.000+0000",
        "NewStateValue": state,
        "NewStateReason": "Threshold Crossed: 1 out of the last 1 datapoints [12.0 (24/11/26 11:42:00)] was greater "
        "than the threshold (5.0) (minimum 1 datapoint for OK -> ALARM transition).",
        "StateChangeTime": "2026-11-24T11:43:27.123+0000",
        "Region": "US East (N. Virginia)",
        "AlarmArn": f"arn:aws:cloudwatch:us-east-1:123456789012:alarm:{name}",
        "OldStateValue": "OK" if state == "ALARM" else "ALARM",
        "OKActions": [],
        "AlarmActions": ["arn:aws:sns:us-east-1:123456789012:incident-responder-IncidentTopic"],
        "InsufficientDataActions": [],
    }
    return {**body, **fields}


def single(metric: str = "Errors", **dimensions: str) -> dict:
    return {
        "MetricName": metric,
        "Namespace": "AWS/Lambda",
        "StatisticType": "Statistic",
        "Statistic": "SUM",
        "Unit": None,
        "Dimensions": [{"value": v, "name": k} for k, v in (dimensions or {"FunctionName": "orders-api"}).items()],
        "Period": 60,
        "EvaluationPeriods": 1,
        "DatapointsToAlarm": 1,
        "ComparisonOperator": "GreaterThanThreshold",
        "Threshold": 5.0,
        "TreatMissingData": "missing",
        "EvaluateLowSampleCountPercentile": "",
    }


def stat(metric_id: str, metric: str, function: str = "orders-api", **more: str) -> dict:
    dims = {"FunctionName": function, **more}
    return {
        "Id": metric_id,
        "MetricStat": {
            "Metric": {
                "Dimensions": [{"value": v, "name": k} for k, v in dims.items()],
                "MetricName": metric,
                "Namespace": "AWS/Lambda",
            },
            "Period": 60,
            "Stat": "Sum",
        },
        "ReturnData": False,
    }


def math(*metrics: dict, expression: str = "100 * m1 / m2") -> dict:
    """A metric-math trigger: an error rate, Errors / Invocations."""
    return {
        "Period": 60,
        "EvaluationPeriods": 1,
        "ComparisonOperator": "GreaterThanThreshold",
        "Threshold": 5.0,
        "TreatMissingData": "missing",
        "EvaluateLowSampleCountPercentile": "",
        "Metrics": [{"Expression": expression, "Id": "e1", "Label": "Error rate", "ReturnData": True}, *metrics],
    }


def anomaly() -> dict:
    """An anomaly-detection trigger: a band around Duration, the alarm on the band (ThresholdMetricId)."""
    duration = {**stat("m1", "Duration"), "ReturnData": True}
    duration["MetricStat"]["Stat"] = "Average"
    return {
        "Period": 300,
        "EvaluationPeriods": 3,
        "ComparisonOperator": "GreaterThanUpperThreshold",
        "ThresholdMetricId": "ad1",
        "TreatMissingData": "missing",
        "EvaluateLowSampleCountPercentile": "",
        "Metrics": [
            duration,
            {
                "Expression": "ANOMALY_DETECTION_BAND(m1, 2)",
                "Id": "ad1",
                "Label": "Duration (expected)",
                "ReturnData": True,
            },
        ],
    }


def test_a_single_metric_alarm_names_its_function():
    incident = parse_alert(notification(Trigger=single()), now=NOW, home=HOME)
    assert (incident.function_name, incident.qualifier, incident.metric_name) == ("orders-api", None, "Errors")


def test_a_metric_math_alarm_finds_the_function_in_the_metrics_it_reads():
    trigger = math(stat("m1", "Errors"), stat("m2", "Invocations"))
    incident = parse_alert(notification(Trigger=trigger), now=NOW, home=HOME)
    assert incident.function_name == "orders-api" and incident.metric_name == "Errors, Invocations"
    assert incident.namespace == "AWS/Lambda" and incident.alarm_name == "orders-api-errors"


def test_an_anomaly_detection_alarm_finds_the_function_under_its_band():
    incident = parse_alert(notification("orders-api-slow", Trigger=anomaly()), now=NOW, home=HOME)
    assert (incident.function_name, incident.metric_name) == ("orders-api", "Duration")


@pytest.mark.parametrize(
    "trigger, qualifier",
    [
        (single(FunctionName="orders-api", Resource="orders-api:live"), "live"),
        (single(FunctionName="orders-api", Resource="orders-api:7"), "7"),
        (single(FunctionName="orders-api", Resource="orders-api", ExecutedVersion="12"), "12"),
        (
            math(
                stat("m1", "Errors", Resource="orders-api:live"), stat("m2", "Invocations", Resource="orders-api:live")
            ),
            "live",
        ),
    ],
    ids=["alias", "version", "executed-version", "math-on-an-alias"],
)
def test_the_alias_or_version_the_alarm_names_is_kept(trigger, qualifier):
    incident = parse_alert(notification(Trigger=trigger), now=NOW, home=HOME)
    assert (incident.function_name, incident.qualifier) == ("orders-api", qualifier)
    assert incident.model_dump()["qualifier"] == qualifier  # it travels with the incident


def test_an_alarm_over_several_functions_says_which_and_chooses_none():
    trigger = math(stat("m1", "Errors", "orders-api"), stat("m2", "Errors", "billing"), expression="m1 + m2")
    with pytest.raises(MalformedAlertError, match=r"several functions \(billing, orders-api\).*none is chosen"):
        parse_alert(notification(Trigger=trigger), now=NOW, home=HOME)


def test_a_queue_alarm_in_metric_math_still_waits_for_its_consumer():
    queue = {
        "Id": "m1",
        "MetricStat": {
            "Metric": {
                "Dimensions": [{"value": "orders", "name": "QueueName"}],
                "MetricName": "ApproximateAgeOfOldestMessage",
                "Namespace": "AWS/SQS",
            }
        },
    }
    pending = read_alert(notification("orders-backlog", Trigger=math(queue, expression="m1 / 60")), now=NOW, home=HOME)
    assert isinstance(pending, QueueAlarm) and pending.queue_arn == "arn:aws:sqs:us-east-1:123456789012:orders"


@pytest.mark.parametrize("state", ["OK", "INSUFFICIENT_DATA"])
@pytest.mark.parametrize(
    "shape",
    [
        {"Trigger": single()},
        {"Trigger": math(stat("m1", "Errors"), stat("m2", "Invocations"))},
        {"Trigger": single("CPUUtilization", InstanceId="i-1")},  # nothing of ours, and still no rejection
        {"AlarmRule": 'ALARM("orders-api-errors") OR ALARM("orders-api-throttles")', "TriggeringChildren": []},
        {"Trigger": single(), "AWSAccountId": "999999999999"},  # the state is read before anything else
    ],
    ids=["single", "math", "not-lambda", "composite", "foreign"],
)
def test_a_change_out_of_alarm_is_ignored_not_rejected(state, shape):
    with pytest.raises(AlertIgnoredError, match=rf"changed to {state} from ALARM: only a change into ALARM"):
        read_alert(notification(state=state, **shape), now=NOW, home=HOME)


@pytest.mark.parametrize(
    "fields, words",
    [
        (
            {
                "AWSAccountId": "999999999999",
                "AlarmArn": "arn:aws:cloudwatch:us-east-1:999999999999:alarm:orders-api-errors",
            },
            "from account 999999999999, Region us-east-1",
        ),
        (
            {"AlarmArn": "arn:aws:cloudwatch:eu-west-1:123456789012:alarm:orders-api-errors"},
            "from account 123456789012, Region eu-west-1",
        ),
    ],
    ids=["account", "region"],
)
def test_another_accounts_or_regions_alarm_is_refused_not_resolved_locally(fields, words):
    with pytest.raises(ForeignAlertError, match=words + ".*watches account 123456789012 in us-east-1"):
        parse_alert(notification(Trigger=single(), **fields), now=NOW, home=HOME)
    # Without a home (a unit reading the alarm alone), the same alarm reads as before.
    assert parse_alert(notification(Trigger=single(), **fields), now=NOW).function_name == "orders-api"


def test_a_project_alert_from_another_account_is_refused_too():
    alert = {"function_name": "orders-api", "detected_at": "2026-11-24T11:00:00Z", "account_id": "999999999999"}
    with pytest.raises(ForeignAlertError, match="from account 999999999999"):
        parse_alert(alert, now=NOW, home=HOME)


def test_a_composite_alarm_waits_for_the_children_that_set_it_off():
    child = "arn:aws:cloudwatch:us-east-1:123456789012:alarm:orders-api-errors"
    composite = notification(
        "orders-api-composite",
        AlarmRule='ALARM("orders-api-errors") OR ALARM("orders-api-throttles")',
        TriggeringChildren=[{"Arn": child, "State": {"Value": "ALARM", "Timestamp": "2026-11-24T11:43:27.123+0000"}}],
    )
    pending = read_alert(composite, now=NOW, home=HOME)
    assert isinstance(pending, CompositeAlarm)
    assert (pending.children, pending.triggered) == (["orders-api-errors"], True)
    with pytest.raises(FunctionNotNamedError, match="is a composite alarm; ingest resolves it through its child"):
        parse_alert(composite, now=NOW, home=HOME)
    # Without TriggeringChildren (the schema lists them as bare ARNs; often empty): the rule's ALARM() terms,
    # quoted or not, by name or ARN, never a NOT ALARM() one.
    by_rule = dict(composite, TriggeringChildren=[], AlarmRule=f'(ALARM({child}) OR ALARM(b)) AND NOT ALARM("quiet")')
    pending = read_alert(by_rule, now=NOW, home=HOME)
    assert (pending.children, pending.triggered) == (["orders-api-errors", "b"], False)
    assert read_alert(dict(composite, TriggeringChildren=[child]), now=NOW, home=HOME).children == ["orders-api-errors"]
    with pytest.raises(MalformedAlertError, match="names no alarm in ALARM"):
        read_alert(dict(by_rule, AlarmRule="OK(a) AND NOT ALARM(b)"), now=NOW, home=HOME)
    # A composite's recovery is ignored like any other.
    with pytest.raises(AlertIgnoredError):
        read_alert(dict(composite, NewStateValue="OK"), now=NOW, home=HOME)


def eventbridge(state: str = "ALARM", **detail) -> dict:
    """The "CloudWatch Alarm State Change" event of the CloudWatch User Guide's "Alarm events and EventBridge"."""
    return {
        "version": "0",
        "id": "c4c1c1c9-6542-e61b-6ef0-8c4d36933a92",
        "detail-type": "CloudWatch Alarm State Change",
        "source": "aws.cloudwatch",
        "account": "123456789012",
        "time": "2026-11-24T11:43:27Z",
        "region": "us-east-1",
        "resources": ["arn:aws:cloudwatch:us-east-1:123456789012:alarm:orders-api-errors"],
        "detail": {
            "alarmName": "orders-api-errors",
            "configuration": {
                "metrics": [
                    {
                        "id": "m1",
                        "metricStat": {
                            "metric": {
                                "dimensions": {"FunctionName": "orders-api", "Resource": "orders-api:live"},
                                "name": "Errors",
                                "namespace": "AWS/Lambda",
                            },
                            "period": 60,
                            "stat": "Sum",
                        },
                        "returnData": True,
                    }
                ]
            },
            "previousState": {"reason": "ok", "timestamp": "2026-11-24T11:38:27.123+0000", "value": "OK"},
            "state": {"reason": "Threshold Crossed", "timestamp": "2026-11-24T11:43:27.123+0000", "value": state},
            **detail,
        },
    }


def test_the_eventbridge_alarm_event_is_read_like_the_notification():
    incident = parse_alert(eventbridge(), now=NOW, home=HOME)
    assert (incident.function_name, incident.qualifier, incident.metric_name) == ("orders-api", "live", "Errors")
    assert (incident.alarm_name, incident.detected_at, incident.region) == (
        "orders-api-errors",
        "2026-11-24T11:43:27.123+0000",
        "us-east-1",
    )
    assert incident == parse_alert(json.dumps(eventbridge()), now=NOW, home=HOME)
    with pytest.raises(AlertIgnoredError, match="changed to OK from OK"):
        parse_alert(eventbridge("OK"), now=NOW, home=HOME)
    with pytest.raises(ForeignAlertError, match="from account 210987654321"):
        arn = "arn:aws:cloudwatch:us-east-1:210987654321:alarm:orders-api-errors"
        parse_alert(dict(eventbridge(), account="210987654321", resources=[arn]), now=NOW, home=HOME)
    with pytest.raises(MalformedAlertError, match="not 'CloudWatch Alarm State Change'"):
        parse_alert(dict(eventbridge(), **{"detail-type": "CloudWatch Alarm Configuration Change"}), now=NOW)
    with pytest.raises(MalformedAlertError, match="not a CloudWatch alarm's"):
        parse_alert({"source": "aws.s3", "detail": {}}, now=NOW)
    with pytest.raises(MalformedAlertError, match="alarm event without"):
        parse_alert(dict(eventbridge(), detail={"alarmName": "x"}), now=NOW)


def test_a_composite_alarm_event_names_the_alarms_that_set_it_off():
    """The alarm action's event (Powertools' cloudWatchAlarmEventCompositeMetric.json): triggeringAlarms in reasonData."""
    child = "arn:aws:cloudwatch:us-east-1:123456789012:alarm:CompositeDemo.FirstChild"
    event = {
        "source": "aws.cloudwatch",
        "alarmArn": "arn:aws:cloudwatch:us-east-1:123456789012:alarm:CompositeDemo.Main",
        "accountId": "123456789012",
        "time": "2026-11-24T11:43:27.123+0000",
        "region": "us-east-1",
        "alarmData": {
            "alarmName": "CompositeDemo.Main",
            "state": {
                "value": "ALARM",
                "reason": f"{child} transitioned to ALARM",
                "reasonData": json.dumps({"triggeringAlarms": [{"arn": child, "state": {"value": "ALARM"}}]}),
                "timestamp": "2026-11-24T11:43:27.123+0000",
            },
            "previousState": {"value": "OK", "reason": "", "timestamp": "2026-11-24T11:00:00.000+0000"},
            "configuration": {"alarmRule": "ALARM(CompositeDemo.FirstChild) OR ALARM(CompositeDemo.SecondChild)"},
        },
    }
    pending = read_alert(event, now=NOW, home=HOME)
    assert isinstance(pending, CompositeAlarm) and pending.children == ["CompositeDemo.FirstChild"]
    event["alarmData"]["state"]["reasonData"] = ""
    assert read_alert(event, now=NOW, home=HOME).children == ["CompositeDemo.FirstChild", "CompositeDemo.SecondChild"]


@pytest.mark.parametrize("resource", ["orders-api:bad/alias", "orders-api:" + "a" * 200])
def test_a_qualifier_that_is_no_lambda_qualifier_is_refused(resource):
    with pytest.raises(MalformedAlertError, match="is not a Lambda alias or version"):
        parse_alert(notification(Trigger=single(FunctionName="orders-api", Resource=resource)), now=NOW, home=HOME)


@pytest.mark.parametrize(
    "message, words",
    [
        ('{"source": "aws.cloudwatch", "alarmData": {}}', "alarm event without 'state'"),
        # JSON's escapes spell a lone surrogate: no UTF-8 encoder (the incident id's hash, DynamoDB, SQS) takes it.
        (json.dumps(notification("\ud800", Trigger=single())), r"lone surrogate .*AlarmName"),
        # A composite's child of that name went on to DescribeAlarms, whose request could not be encoded.
        (
            json.dumps(notification("c", AlarmRule="ALARM(a)", TriggeringChildren=[{"Arn": "x\udfff"}])),
            r"lone surrogate .*TriggeringChildren\.0\.Arn",
        ),
    ],
    ids=["empty-alarm-data", "alarm-name", "composite-child"],
)
def test_an_alert_that_is_no_alarm_is_a_reason_never_a_crash(message, words):
    """Defect: these raised KeyError and UnicodeEncodeError, or went on to AWS (ingest's invocation failed and was
    retried; `responder check-alert` printed a traceback)."""
    with pytest.raises(MalformedAlertError, match=words):
        read_alert(message, now=NOW, home=HOME)


@pytest.mark.parametrize(
    "alert, words",
    [
        (dict(eventbridge(), account="123456789012", region="us-east-1",
              resources=["arn:aws:cloudwatch:us-east-1:210987654321:alarm:orders-api-errors"]),
         "account: '123456789012' (account), '210987654321' (the alarm's ARN)"),
        (dict(eventbridge(), region="eu-west-1"), "Region: 'eu-west-1' (region), 'us-east-1' (the alarm's ARN)"),
        ({"source": "aws.cloudwatch", "accountId": "123456789012", "region": "us-east-1",
          "alarmArn": "arn:aws:cloudwatch:us-east-1:210987654321:alarm:orders-api-errors",
          "alarmData": eventbridge()["detail"]},
         "account: '123456789012' (accountId), '210987654321' (the alarm's ARN)"),
        (notification(Trigger=single(), AlarmArn="arn:aws:cloudwatch:us-east-1:210987654321:alarm:orders-api-errors"),
         "account: '123456789012' (AWSAccountId), '210987654321' (AlarmArn)"),
    ],
    ids=["eventbridge-account", "eventbridge-region", "alarm-action-account", "notification-account"],
)  # fmt: skip
def test_an_alert_that_contradicts_itself_about_its_account_or_region_is_refused(alert, words):
    """Defect: the event's own `account` passed the home check while its alarm ARN named another account."""
    for home in (HOME, None):  # refused with or without a home: which account is meant is unknown
        with pytest.raises(MalformedAlertError, match=r"contradicts itself about its .*" + re.escape(words)):
            read_alert(alert, now=NOW, home=home)


@pytest.mark.parametrize(
    "children, rule",
    [
        ([{"Arn": "arn:aws:cloudwatch:us-east-1:210987654321:alarm:orders-api-errors"}], "ALARM(orders-api-errors)"),
        (["arn:aws:cloudwatch:eu-west-1:123456789012:alarm:orders-api-errors"], "ALARM(orders-api-errors)"),
        ([], 'ALARM("arn:aws:cloudwatch:us-east-1:210987654321:alarm:orders-api-errors") OR ALARM(b)'),
    ],
    ids=["triggering-child-account", "triggering-child-region", "rule-term-account"],
)
def test_a_composites_child_in_another_account_is_not_read_as_the_local_alarm_of_its_name(children, rule):
    """Defect: the child's ARN was cut to its name, which resolved to this account's alarm of the same name."""
    composite = notification("orders-api-composite", AlarmRule=rule, TriggeringChildren=children)
    for home in (HOME, None):  # the composite's own ARN says where its children are
        with pytest.raises(ForeignAlertError, match="child alarm 'arn:aws:cloudwatch:.*is another alarm"):
            read_alert(composite, now=NOW, home=home)
    # Its own account's children, by ARN, still read as names.
    local = "arn:aws:cloudwatch:us-east-1:123456789012:alarm:orders-api-errors"
    assert read_alert(dict(composite, TriggeringChildren=[local]), now=NOW, home=HOME).children == ["orders-api-errors"]
