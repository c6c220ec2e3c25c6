"""`responder check-alert`: ingest's decision on each notification shape AWS sends, against the lab's account, with
nothing started and nothing written. The fixtures and where each shape comes from: tests/fixtures/alarms/index.json.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from incident_responder.account.baseline import baseline_table_name
from incident_responder.cli.commands import main
from incident_responder.core.aws import AwsClients
from tests.alarm_fixtures import FIXTURES, INDEX, create_child_alarms


def put_composite_alarm(name: str, rule: str, account: str = "123456789012", region: str = "us-east-1") -> None:
    """A composite alarm in the lab's moto (which stores them, and describes them, but has no PutCompositeAlarm)."""
    from moto.cloudwatch.models import cloudwatch_backends

    backend = cloudwatch_backends[account][region]
    backend.put_metric_alarm(
        name=name, namespace=None, metric_name=None, comparison_operator=None, evaluation_periods=None, period=None,
        threshold=None, statistic=None, description=None, dimensions=[], alarm_actions=[], rule=rule,
    )  # fmt: skip
    backend.alarms[name].update_state("composite rule", "{}", "ALARM")


def account_snapshot(clients: AwsClients) -> dict:
    """What a side effect would change: every table's items, queue's messages, execution, alarm."""
    ddb, sqs = clients.get("dynamodb"), clients.get("sqs")
    tables = {t: ddb.scan(TableName=t)["Items"] for t in ddb.list_tables()["TableNames"]}
    queues = {
        url: sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]["ApproximateNumberOfMessages"]
        for url in sqs.list_queues().get("QueueUrls", [])
    }
    sfn = clients.get("stepfunctions")
    executions = [
        e["executionArn"]
        for m in sfn.list_state_machines()["stateMachines"]
        for e in sfn.list_executions(stateMachineArn=m["stateMachineArn"])["executions"]
    ]
    alarms = clients.get("cloudwatch").describe_alarms()
    return {"tables": tables, "queues": queues, "executions": executions, "alarms": len(alarms["MetricAlarms"])}


@pytest.fixture
def checked(sample, clients, capsys) -> tuple[int, list[dict]]:
    create_child_alarms(clients)
    before = account_snapshot(clients)
    code = main(["check-alert", *(str(FIXTURES / name) for name in INDEX), "--json"])
    assert account_snapshot(clients) == before  # nothing started, nothing written
    return code, json.loads(capsys.readouterr().out)


def test_every_shape_aws_sends_gets_ingests_decision_and_its_reason(checked):
    code, results = checked
    assert [Path(r["file"]).name for r in results] == list(INDEX)
    for result in results:
        expected = INDEX[Path(result["file"]).name]
        assert set(result) == {"file", "outcome", "function", "qualifier", "reason"}
        got = (result["outcome"], result["function"], result["qualifier"])
        assert got == (expected["outcome"], expected["function"], expected["qualifier"]), result
        assert expected["says"] in result["reason"], result
    assert code == 1  # some are rejected


def test_the_text_output_says_the_same_and_exits_zero_when_nothing_is_rejected(sample, clients, capsys):
    code = main(["check-alert", str(FIXTURES / "single-metric-alias.json"), str(FIXTURES / "ok-recovery.json")])
    out = capsys.readouterr().out
    assert code == 0
    assert "single-metric-alias.json: start data-processor:live\n" in out
    assert "ok-recovery.json: ignore\n  alarm 'data-processor-errors' changed to OK from ALARM" in out


def test_a_file_that_cannot_be_read_is_rejected_with_the_reason_not_a_traceback(sample, tmp_path, capsys):
    binary = tmp_path / "latin1.json"
    binary.write_bytes(b'{"AlarmName": "caf\xe9"}')
    code = main(["check-alert", str(binary), str(tmp_path / "missing.json"), "--json"])
    results = json.loads(capsys.readouterr().out)
    assert code == 1
    assert [r["outcome"] for r in results] == ["reject", "reject"]
    assert "not UTF-8" in results[0]["reason"] and "No such file" in results[1]["reason"]


def test_a_composite_names_one_onboarded_function_or_says_why_not(sample, clients, tmp_path, capsys):
    create_child_alarms(clients)
    create_child_alarms(clients, function="billing")
    composite = json.loads((FIXTURES / "composite-triggering-children.json").read_text())
    bodies = {
        "billing": dict(
            composite, TriggeringChildren=[{"Arn": "arn:aws:cloudwatch:us-east-1:123456789012:alarm:billing-errors"}]
        ),
        "both": dict(
            composite, TriggeringChildren=[], AlarmRule="ALARM(billing-errors) OR ALARM(data-processor-errors)"
        ),
        "gone": dict(composite, TriggeringChildren=[], AlarmRule='ALARM("deleted-alarm")'),
        "nested": dict(composite, TriggeringChildren=[], AlarmRule="ALARM(inner-composite)"),
    }
    put_composite_alarm("inner-composite", "ALARM(data-processor-errors) OR ALARM(data-processor-throttles)")
    for name, body in bodies.items():
        (tmp_path / f"{name}.json").write_text(json.dumps(body))
    main(["check-alert", *(str(tmp_path / f"{name}.json") for name in bodies), "--json"])
    billing, both, gone, nested = json.loads(capsys.readouterr().out)
    assert billing["outcome"] == "reject" and "'billing' is not onboarded" in billing["reason"]
    assert both["outcome"] == "reject"
    assert "several functions (billing (billing-errors); data-processor (data-processor-errors))" in both["reason"]
    assert gone["outcome"] == "reject" and "child alarm 'deleted-alarm' does not exist" in gone["reason"]
    # A composite of composites: followed down to the metric alarm in ALARM (the throttles one is OK).
    assert (nested["outcome"], nested["function"]) == ("start", "data-processor"), nested


def test_an_alert_that_is_no_alarm_or_contradicts_itself_is_one_rejection_never_a_traceback(
    sample, clients, tmp_path, capsys
):
    """Defect: check-alert printed a traceback (and ingest raised, its alert dead-lettered only after retries) on the
    first two; the other two started an incident for the local data-processor."""
    from incident_responder.intake.ingest import ingest_alert

    create_child_alarms(clients)  # data-processor-errors, in ALARM here
    composite = json.loads((FIXTURES / "composite-triggering-children.json").read_text())
    eventbridge = json.loads((FIXTURES / "eventbridge-alarm-state-change.json").read_text())
    elsewhere = "arn:aws:cloudwatch:us-east-1:210987654321:alarm:data-processor-errors"
    bodies = {
        "empty": ({"source": "aws.cloudwatch", "alarmData": {}}, "alarm event without"),
        "surrogate": (dict(composite, AlarmName="data-processor-\ud800"), "lone surrogate (U+D800-U+DFFF"),
        "contradicts": (dict(eventbridge, resources=[elsewhere]), "contradicts itself about its account"),
        "foreign-child": (
            dict(composite, TriggeringChildren=[{"Arn": elsewhere, "State": {"Value": "ALARM"}}]),
            f"child alarm {elsewhere!r} is in account 210987654321",
        ),
    }
    for name, (body, _) in bodies.items():
        (tmp_path / f"{name}.json").write_text(json.dumps(body))  # the surrogate as JSON's escape, as SNS carries it
    code = main(["check-alert", *(str(tmp_path / f"{name}.json") for name in bodies)])
    out, err = capsys.readouterr()
    assert code == 1 and err == "" and "Traceback" not in out
    for name, (_, said) in bodies.items():
        assert f"{name}.json: reject\n  " in out and said in out, (name, out)
    machine = "arn:aws:states:us-east-1:123456789012:stateMachine:incident-lifecycle"
    for name, (body, said) in bodies.items():
        outcome = ingest_alert(
            clients,
            json.dumps(body),
            state_machine_arn=machine,
            state_table="incident-state",
            baseline_table=baseline_table_name(),
            window_seconds=900,
        )
        assert (outcome.outcome, outcome.incident_id) == ("rejected", None) and said in outcome.reason, name


def test_the_sns_event_ingest_receives_is_checked_record_by_record(sample, clients, tmp_path, capsys):
    """Defect: check-alert refused the event ingest itself receives (SNS's Lambda event, as in events/ingest-*.json):
    each record's message is checked as ingest reads it."""
    events = Path(__file__).parents[2] / "events"
    create_child_alarms(clients)
    two = json.loads((events / "ingest-cloudwatch-alarm.json").read_text())
    ok = json.loads(two["Records"][0]["Sns"]["Message"]) | {"NewStateValue": "OK", "OldStateValue": "ALARM"}
    two["Records"].append({**two["Records"][0], "Sns": {**two["Records"][0]["Sns"], "Message": json.dumps(ok)}})
    (tmp_path / "two.json").write_text(json.dumps(two))
    files = [events / "ingest-cloudwatch-alarm.json", events / "ingest-project-alert.json", tmp_path / "two.json"]
    code = main(["check-alert", *map(str, files), "--json"])
    results = json.loads(capsys.readouterr().out)
    assert [(r["file"], r["outcome"], r["function"]) for r in results] == [
        (str(files[0]), "start", "data-processor"),
        (str(files[1]), "start", "data-processor"),
        (f"{files[2]} (record 1)", "start", "data-processor"),
        (f"{files[2]} (record 2)", "ignore", None),
    ], results
    assert code == 0
    # An event ingest would raise on (not SNS's, or carrying no record) is one rejection that says so.
    (tmp_path / "sqs.json").write_text(json.dumps({"Records": [{"eventSource": "aws:sqs", "body": "{}"}]}))
    (tmp_path / "none.json").write_text(json.dumps({"Records": []}))
    code = main(["check-alert", str(tmp_path / "sqs.json"), str(tmp_path / "none.json"), "--json"])
    sqs, none = json.loads(capsys.readouterr().out)
    assert code == 1 and sqs["outcome"] == none["outcome"] == "reject"
    assert "not the SNS event ingest is invoked with (Records.0.EventSource" in sqs["reason"], sqs
    assert "no records" in none["reason"]
