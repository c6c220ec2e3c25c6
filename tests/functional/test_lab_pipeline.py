"""The deployed path in the lab: template.yaml in moto, SNS -> ingest -> Step Functions -> investigate.

Deployed here with RemediationMode=propose_only (the lifecycle ends at PROPOSAL_READY and changes nothing);
the closed loop runs through the same path in the corpus (test_evaluation.py) and the demo.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from incident_responder.lab.hostile_alerts import hostile_alerts
from incident_responder.lab.pipeline.artifacts import write_artifacts
from incident_responder.lab.pipeline.startup import LabPipeline
from incident_responder.lab.scenario import Scenario, Setup, load_scenario
from incident_responder.state import keys
from incident_responder.state.lifecycle import execution_path, get_incident_state
from tests.lifecycle_paths import HAPPY
from tests.report_checks import assert_report

REPO = Path(__file__).parents[2]


@pytest.fixture(scope="module")
def _pipeline(lab):
    """One pipeline for the module: starting its function URL processes costs seconds, a refresh does not.
    Its functions run in execution environments of their own, as the lab's commands run them: in this process,
    a handler's environment swap raced the storms' and the concurrent executions' other threads."""
    with LabPipeline.start(lab=lab, workers=True, parameters={"RemediationMode": "propose_only"}) as running:
        yield running, []


@pytest.fixture
def pipeline(_pipeline):
    """The module's pipeline as the next scenario of an eval finds it: every fault restored and what an incident
    leaves behind cleared (``clean_restore``), or, when that cannot make it clean, a fresh lab (moto reset, the
    stack redeployed, the workloads onboarded)."""
    running, used = _pipeline
    if used and running.clean_restore():
        running.refresh()
    used.append(True)
    return running


@pytest.fixture
def fresh_pipeline(_pipeline):
    """A fresh lab, for a test that counts what the whole account holds (every execution, dead letter, invocation
    of the stack's functions): a clean restore clears an incident's leftovers, not the lab's history."""
    running, used = _pipeline
    if used:
        running.refresh()
    used.append(True)
    return running


def executions(pipeline) -> list[dict]:
    return pipeline.clients.get("stepfunctions").list_executions(stateMachineArn=pipeline.state_machine_arn)[
        "executions"
    ]


def dead_letters(pipeline) -> list[dict]:
    sqs = pipeline.clients.get("sqs")
    url = pipeline.stack.output("AlertsDeadLetterQueueUrl")
    return sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, MessageAttributeNames=["All"]).get("Messages", [])


def drain_dead_letters(pipeline) -> list[dict]:
    """Every message in the dead-letter queue (received and deleted, ten at a time)."""
    sqs = pipeline.clients.get("sqs")
    url = pipeline.stack.output("AlertsDeadLetterQueueUrl")
    letters = []
    while batch := dead_letters(pipeline):
        letters += batch
        sqs.delete_message_batch(
            QueueUrl=url, Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(batch)]
        )
    return letters


def ingest(pipeline, fired_at: str = "2026-11-23T04:00:00Z", error_type: str = "TimeoutError"):
    """A project alert for data-processor through the deployed ingest's logic, as the stack configures it."""
    from incident_responder.intake.ingest import ingest_alert

    alert = {"function_name": "data-processor", "detected_at": fired_at, "error_type": error_type}
    tables = pipeline.stack.physical
    return ingest_alert(
        pipeline.clients,
        json.dumps(alert),
        state_machine_arn=pipeline.state_machine_arn,
        state_table=tables["IncidentStateTable"],
        baseline_table=tables["BaselineTable"],
        window_seconds=1800,
    )


def test_scenario_end_to_end_through_the_deployed_path(pipeline, tmp_path, capsys):
    sqs, sns = pipeline.clients.get("sqs"), pipeline.clients.get("sns")
    inbox = sqs.create_queue(QueueName="proposal-inbox")["QueueUrl"]
    inbox_arn = sqs.get_queue_attributes(QueueUrl=inbox, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    sns.subscribe(TopicArn=pipeline.stack.output("IncidentNewsTopicArn"), Protocol="sqs", Endpoint=inbox_arn)
    record = pipeline.run(load_scenario(REPO / "scenarios" / "s3-policy-revoked.yaml"))
    assert record.status == "PROPOSAL_READY"
    # propose_only: the proposal is the end, and the account is exactly as the alert found it.
    assert record.end_state["unchanged_since_alert"] and not record.end_state["matches_baseline"]
    assert record.diagnosis["fault_types"] == ["permission_loss"]
    (action,) = record.proposal["actions"]
    assert action["action_type"] == "restore_iam_policy" and action["parameters"]["policy_name"] == "s3-access"
    assert record.proposal["rejected_actions"] == []
    assert record.execution["states_visited"] == HAPPY and record.execution["status"] == "SUCCEEDED"
    assert record.metrics["llm_calls"] > 0 and record.metrics["tool_calls"] > 0 and record.metrics["total_tokens"] > 0
    assert list(record.timings) == [
        "detected_at",
        "created_at",
        "received_at",
        "investigating_at",
        "diagnosed_at",
        "proposing_at",
        "proposal_ready_at",
        "ended_at",
    ]
    ingest = pipeline.stack.functions["IngestFunction"]
    assert pipeline.dispatcher.functions[ingest].invocations == 1
    shown = subprocess.run(
        [sys.executable, "-m", "incident_responder.cli", "show", record.incident_id, "--json"],
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shown.returncode == 0, shown.stderr
    stored = json.loads(shown.stdout)
    assert stored["status"] == "PROPOSAL_READY" and stored["diagnosis"]["fault_types"] == ["permission_loss"]
    assert stored["proposal"]["actions"][0]["action_type"] == "restore_iam_policy"
    assert stored["states_visited"] == HAPPY and len(stored["artifacts"]) == 2
    # Without --json: for a person, from the same stores (in this process: the command itself ran above).
    from incident_responder.cli.commands import main

    capsys.readouterr()
    assert main(["show", record.incident_id]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"incident {record.incident_id}: PROPOSAL_READY"
    assert "  fault types: permission_loss; severity high; confidence high" in lines and "  timeline:" in lines
    assert any(line.strip().startswith("1. restore_iam_policy on ") for line in lines)
    # `responder report`: the same page, from the stores, where asked; an unknown incident is a clear error.
    assert main(["report", record.incident_id, "--out", str(tmp_path / "cli")]) == 0
    written = tmp_path / "cli" / record.incident_id / "report.html"
    assert capsys.readouterr().out.strip() == str(written)
    assert_report(written.read_text(), "PROPOSAL_READY")
    assert main(["report", "no-such-incident", "--out", str(tmp_path / "cli")]) == 1
    assert "responder report: no incident no-such-incident in " in capsys.readouterr().err
    paths = write_artifacts(pipeline, record, tmp_path)
    assert json.loads(paths["history"].read_text())[0]["type"] == "ExecutionStarted"
    svg = paths["picture"].read_text()
    assert svg.startswith("<svg") and "Run investigator agent" in svg and "#2e7d32" in svg
    # The report, from the stores: the evidence beside the tool output it quotes (from the artifact in S3).
    page = paths["report"].read_text()
    assert_report(page, "PROPOSAL_READY")
    assert "<mark>" in page and "tool output at that path" in page and "Nothing at " not in page
    # When the execution ended, the report function (the EventBridge rule's target in AWS) put the page in the
    # artifacts bucket and sent a pre-signed link to it on the proposal topic.
    bucket = pipeline.stack.physical["ArtifactsBucket"]
    key = f"reports/{record.incident_id}/report.html"
    stored = pipeline.clients.get("s3").get_object(Bucket=bucket, Key=key)
    assert stored["ContentType"].startswith("text/html")
    assert_report(stored["Body"].read().decode(), "PROPOSAL_READY")
    bodies = [json.loads(m["Body"]) for m in sqs.receive_message(QueueUrl=inbox, MaxNumberOfMessages=10)["Messages"]]
    (notice,) = [b for b in bodies if b.get("Subject", "").startswith("Incident report:")]
    assert notice["Subject"] == f"Incident report: data-processor PROPOSAL_READY ({record.incident_id})"
    link = next(line for line in notice["Message"].splitlines() if line.startswith("Report (")).split(": ", 1)[1]
    assert f"/{key}?" in link and "X-Amz-Algorithm=AWS4-HMAC-SHA256" in link and "X-Amz-Expires=43200" in link
    import urllib.request

    with urllib.request.urlopen(link, timeout=10) as fetched:  # moto serves the object at the signed address
        assert fetched.read().decode().startswith("<!DOCTYPE html>")


def test_a_callers_alert_starts_the_incident_and_the_functions_own_alarm_is_not_sent(fresh_pipeline):
    """A scenario's alert: the project alert the caller's monitoring publishes to the incident topic, for the
    workload's function. The function's own alarm (its invocations time out) is evaluated but not sent: one
    incident, the alert's; its text is untrusted, so the diagnosis follows the function's own errors."""
    pipeline = fresh_pipeline
    scenario = Scenario.model_validate(
        {
            "name": "caller-alert",
            "faults": [{"kind": "timeout", "seconds": 1}],
            "alert": {"error_type": "RequestTooLargeException", "error_message": "payload too large for {account}"},
            "workload": {"function": "orders-api"},
        }
    )
    record = pipeline.run(scenario)
    assert record.workload["alert"] == "RequestTooLargeException"
    assert set(record.workload["invocations"]) == {"timed_out"}
    (execution,) = executions(pipeline)
    assert execution["executionArn"].endswith(f":{record.incident_id}")
    assert record.incident_id.startswith("orders-api-")
    assert record.status == "PROPOSAL_READY"
    assert record.diagnosis["fault_types"] == ["timeout"]
    assert record.diagnosis["failure_modes"] == ["function-timeout"]
    assert not drain_dead_letters(pipeline)


def test_a_refresh_stops_the_execution_environments_of_the_functions_it_replaced(pipeline):
    """moto names a redeployed function anew: the replaced one's workers must not pile up, one set per refresh."""
    old = dict(pipeline.dispatcher.functions)
    ingest = pipeline.stack.functions["IngestFunction"]
    pipeline.dispatcher.invoke(ingest, {"Records": []})  # an execution environment started for it
    pool = old[ingest].pool
    assert pool is not None and pool._count == 1
    pipeline.refresh()
    assert set(pipeline.dispatcher.functions) == set(pipeline.stack.functions.values())
    assert not set(old) & set(pipeline.dispatcher.functions)
    assert pool._closed and pool._idle == []


def test_ten_copies_of_one_alert_start_one_execution(pipeline):
    pipeline.inject(Scenario.model_validate({"name": "t", "faults": [{"kind": "timeout", "seconds": 1}]}))
    burst = pipeline.workload().invoke(1)
    topic = pipeline.stack.output("IncidentTopicArn")
    for _ in range(9):  # the burst published it once; SNS delivers at least once
        pipeline.clients.get("sns").publish(TopicArn=topic, Message=json.dumps(burst.alert))
    ingest = pipeline.stack.functions["IngestFunction"]
    assert pipeline.dispatcher.functions[ingest].invocations == 10
    runs = executions(pipeline)
    assert len(runs) == 1
    pipeline.follow(runs[0]["executionArn"])
    items = pipeline.clients.get("dynamodb").scan(TableName=pipeline.stack.physical["IncidentStateTable"])["Items"]
    assert len([i for i in items if keys.is_incident(i["incident_id"]["S"])]) == 1
    assert drain_dead_letters(pipeline) == []


def test_concurrent_copies_of_one_alert_are_counted_from_the_execution_that_exists(fresh_pipeline):
    pipeline = fresh_pipeline
    """Step Functions answers a repeated StartExecution (same name, same input) with success: ingest must not
    count every copy as started. The conditional claim on the group decides which one did."""
    from concurrent.futures import ThreadPoolExecutor

    def deliver(_):
        return ingest(pipeline, error_type="E")

    with ThreadPoolExecutor(10) as pool:
        outcomes = list(pool.map(deliver, range(10)))
    assert sorted(o.outcome for o in outcomes) == ["duplicate"] * 9 + ["started"]
    assert len({o.incident_id for o in outcomes}) == 1 and len(executions(pipeline)) == 1
    pipeline.follow(executions(pipeline)[0]["executionArn"])


def test_an_alarm_storm_is_one_incident_and_another_function_is_still_investigated(fresh_pipeline):
    pipeline = fresh_pipeline
    from incident_responder.account.baseline import record_baseline
    from incident_responder.intake.alerts import parse_alert
    from incident_responder.intake.ingest import group_key
    from incident_responder.lab.account.data_processor import create_sample_account

    pipeline.inject(Scenario.model_validate({"name": "t", "faults": [{"kind": "timeout", "seconds": 1}]}))
    burst = pipeline.workload().invoke(1)
    topic = pipeline.stack.output("IncidentTopicArn")
    sns = pipeline.clients.get("sns")
    for i in range(1, 50):  # the alarm fires again and again: 50 notifications in all
        refired = {**burst.alert, "StateChangeTime": f"2026-11-23T04:{i // 60:02}:{i % 60:02}.000+0000"}
        sns.publish(TopicArn=topic, Message=json.dumps(refired))
    other = create_sample_account(pipeline.clients, function_name="orders-worker", responder_resources=False)
    record_baseline(pipeline.clients, other.function_name)
    pipeline.workload(other.function_name).invoke(2, app_error="KeyError: 'order_id'")

    runs = executions(pipeline)
    assert len(runs) == 2, [r["name"] for r in runs]
    followed = {r["name"]: pipeline.follow(r["executionArn"]) for r in runs}
    ends = {name: execution["status"] for name, execution in followed.items()}
    assert set(ends.values()) == {"SUCCEEDED"}, {  # how one that did not succeed ended, and where
        name: (
            e["status"],
            e.get("error"),
            e.get("cause"),
            execution_path(pipeline.clients.get("stepfunctions"), e["executionArn"])[-4:],
        )
        for name, e in followed.items()
        if e["status"] != "SUCCEEDED"
    }
    states = {
        name: get_incident_state(pipeline.clients, pipeline.stack.physical["IncidentStateTable"], name) for name in ends
    }
    assert sorted(s["function_name"] for s in states.values()) == ["data-processor", "orders-worker"]
    assert all(s["status"] == "PROPOSAL_READY" and s.get("investigating_at") for s in states.values())
    group = pipeline.clients.get("dynamodb").get_item(
        TableName=pipeline.stack.physical["IncidentStateTable"],
        Key={"incident_id": {"S": group_key(parse_alert(burst.alert))}},
    )["Item"]
    assert len(group["attached_alerts"]["SS"]) == 49 and group["group_incident_id"]["S"] in ends
    assert drain_dead_letters(pipeline) == []


def test_two_incidents_in_different_functions_at_once_do_not_interfere(fresh_pipeline):
    pipeline = fresh_pipeline
    """data-processor's timeout is lowered while orders-api gets a bad deployment: two alerts, two executions
    side by side, each with its own baseline, its own diagnosis and its own proposal, nothing of the other."""
    from concurrent.futures import ThreadPoolExecutor

    from incident_responder.state.store import load_record

    faults = {"data-processor": {"kind": "timeout", "seconds": 1}, "orders-api": {"kind": "bad_deploy"}}
    for function, fault in faults.items():
        pipeline.inject(
            Scenario.model_validate({"name": function, "faults": [fault], "workload": {"function": function}})
        )
    bursts = {function: pipeline.workload(function).invoke(3) for function in faults}
    assert all(b.alert is not None for b in bursts.values())
    runs = {r["name"]: r["executionArn"] for r in executions(pipeline)}
    assert len(runs) == 2
    with ThreadPoolExecutor(2) as pool:
        ends = dict(zip(runs, pool.map(pipeline.follow, runs.values()), strict=True))
    assert {e["status"] for e in ends.values()} == {"SUCCEEDED"}
    # Side by side: each started before the other ended.
    first, second = ends.values()
    assert first["startDate"] < second["stopDate"] and second["startDate"] < first["stopDate"]

    by_function = {
        get_incident_state(pipeline.clients, pipeline.stack.physical["IncidentStateTable"], name)["function_name"]: name
        for name in runs
    }
    assert sorted(by_function) == ["data-processor", "orders-api"]
    expected = {
        "data-processor": (
            ["timeout"],
            {"function_name": "data-processor", "timeout": 30, "memory_size": None, "ephemeral_storage": None},
        ),
        "orders-api": (
            ["deployment_regression"],
            {"function_name": "orders-api", "alias_name": "live", "function_version": "1"},
        ),
    }
    for function, incident_id in by_function.items():
        other = next(f for f in faults if f != function)
        diagnosis = load_record(
            pipeline.clients, pipeline.stack.physical["IncidentContextTable"], incident_id, "investigation"
        )["summary"]["diagnosis"]
        proposal = load_record(
            pipeline.clients, pipeline.stack.physical["IncidentContextTable"], incident_id, "proposal"
        )["summary"]["proposal"]
        fault_types, parameters = expected[function]
        assert diagnosis["fault_types"] == fault_types, (function, diagnosis["root_cause"])
        assert [a["parameters"] for a in proposal["actions"]] == [parameters]
        assert other not in json.dumps([diagnosis, proposal]), f"{function}'s incident mentions {other}"


def test_malformed_alerts_land_in_the_dead_letter_queue(fresh_pipeline):
    pipeline = fresh_pipeline
    topic = pipeline.stack.output("IncidentTopicArn")
    sns = pipeline.clients.get("sns")
    bad = [
        "this is not json",
        json.dumps({"function_name": "x"}),
        json.dumps({"AlarmName": "cpu", "NewStateValue": "OK"}),
    ]
    for message in bad:
        sns.publish(TopicArn=topic, Message=message)
    letters = dead_letters(pipeline)
    assert sorted(m["Body"] for m in letters) == sorted(bad)
    reasons = [m["MessageAttributes"]["reason"]["StringValue"] for m in letters]
    assert any("not JSON" in r for r in reasons) and any("detected_at" in r for r in reasons)
    assert executions(pipeline) == []


def test_a_hundred_malformed_alerts_each_get_a_reason_and_start_nothing(fresh_pipeline):
    pipeline = fresh_pipeline
    topic = pipeline.stack.output("IncidentTopicArn")
    sns = pipeline.clients.get("sns")
    alerts = hostile_alerts()
    for message in alerts:
        sns.publish(TopicArn=topic, Message=message)
    ingest = pipeline.stack.functions["IngestFunction"]
    assert pipeline.dispatcher.functions[ingest].invocations == 100  # no crash, so no retry
    letters = drain_dead_letters(pipeline)
    assert all(m["MessageAttributes"]["reason"]["StringValue"] for m in letters)  # ingest's own copy, with reason
    # Nothing lost: each alert as it came (base64 where SQS cannot carry its characters).
    bodies = [
        base64.b64decode(m["Body"]).decode()
        if m["MessageAttributes"]["body_encoding"]["StringValue"] == "base64"
        else m["Body"]
        for m in letters
    ]
    assert sorted(bodies) == sorted(alerts)
    reasons = " ".join(m["MessageAttributes"]["reason"]["StringValue"] for m in letters)
    for words in ("not onboarded", "nested too deeply", "not usable JSON", "not an ISO 8601", "in the future"):
        assert words in reasons
    assert executions(pipeline) == []
    counters = pipeline.clients.get("dynamodb").scan(TableName=pipeline.stack.physical["IncidentStateTable"])
    assert counters["Items"] == []  # nothing started, no budget spent


def test_an_event_that_is_not_sns_is_kept_by_the_functions_own_dead_letter_queue(fresh_pipeline):
    pipeline = fresh_pipeline
    ingest = pipeline.stack.functions["IngestFunction"]
    target = pipeline.dispatcher.functions[ingest].dead_letter_arn
    from incident_responder.lab.engine import _to_dead_letter

    pipeline.dispatcher.deliver_async(
        ingest, {"hello": "world"}, lambda event, exc: _to_dead_letter(target, event, exc)
    )
    (letter,) = dead_letters(pipeline)
    assert json.loads(letter["Body"]) == {"hello": "world"}
    assert pipeline.dispatcher.functions[ingest].invocations == 3  # the first try and Lambda's two retries


def test_a_clean_restore_leaves_nothing_of_the_last_incident_and_says_when_it_cannot(pipeline):
    record = pipeline.run(load_scenario(REPO / "scenarios" / "timeout-too-low.yaml"))
    assert record.status == "PROPOSAL_READY"  # nothing applied: the fault is still in the account
    assert pipeline.clean_restore() == []  # chaos restored it; the rest emptied
    ddb, logs = pipeline.clients.get("dynamodb"), pipeline.clients.get("logs")
    for table in ("IncidentStateTable", "IncidentContextTable"):
        assert ddb.scan(TableName=pipeline.stack.physical[table])["Count"] == 0
    assert logs.describe_log_streams(logGroupName="/aws/lambda/data-processor")["logStreams"] == []
    metrics = pipeline.clients.get("cloudwatch").list_metrics(Namespace="AWS/Lambda")["Metrics"]
    assert metrics == []
    # The next incident starts as in a fresh lab: its own diagnosis only.
    again = pipeline.run(load_scenario(REPO / "scenarios" / "throttled-to-one.yaml"))
    assert again.diagnosis["fault_types"] == ["throttling"]

    # A change no chaos state knows of, and a baseline recorded again: not clean, and said why.
    from incident_responder.account.baseline import record_baseline

    pipeline.clients.get("lambda").update_function_configuration(FunctionName="orders-api", MemorySize=1024)
    pipeline.clients.get("lambda").update_function_configuration(FunctionName="queue-consumer", Timeout=30)
    record_baseline(pipeline.clients, "queue-consumer")
    pipeline.onboarded.pop("queue-consumer")  # recorded within the second onboarding did: told apart all the same
    problems = pipeline.clean_restore()
    assert any(p.startswith("orders-api: 1 difference(s) from its baseline") for p in problems), problems
    assert any(p.startswith("queue-consumer: its baseline was recorded again") for p in problems), problems


def test_recoveries_are_ignored_and_an_alias_travels_with_the_incident(pipeline):
    """OK and INSUFFICIENT_DATA notifications of a real alarm (alarms often notify the topic of every change)
    start nothing and page nobody; an alarm on an alias keeps it in the incident the execution runs."""
    topic = pipeline.stack.output("IncidentTopicArn")
    sns = pipeline.clients.get("sns")
    account, region = pipeline.state_machine_arn.split(":")[4], pipeline.state_machine_arn.split(":")[3]

    def alarm(state: str, **dimensions: str) -> str:
        return json.dumps(
            {
                "AlarmName": "data-processor-errors",
                "AWSAccountId": account,
                "NewStateValue": state,
                "NewStateReason": "Threshold Crossed",
                "StateChangeTime": "2026-11-24T11:43:27.123+0000",
                "AlarmArn": f"arn:aws:cloudwatch:{region}:{account}:alarm:data-processor-errors",
                "OldStateValue": "ALARM" if state != "ALARM" else "OK",
                "Trigger": {
                    "MetricName": "Errors",
                    "Namespace": "AWS/Lambda",
                    "Dimensions": [{"name": k, "value": v} for k, v in dimensions.items()],
                },
            }
        )

    for state in ("OK", "INSUFFICIENT_DATA"):
        sns.publish(TopicArn=topic, Message=alarm(state, FunctionName="data-processor"))
    ingest = pipeline.stack.functions["IngestFunction"]
    assert pipeline.dispatcher.functions[ingest].invocations == 2
    assert dead_letters(pipeline) == [] and executions(pipeline) == []
    sns.publish(TopicArn=topic, Message=alarm("ALARM", FunctionName="data-processor", Resource="data-processor:live"))
    (execution,) = executions(pipeline)
    described = pipeline.clients.get("stepfunctions").describe_execution(executionArn=execution["executionArn"])
    incident = json.loads(described["input"])["incident"]
    assert (incident["function_name"], incident["qualifier"]) == ("data-processor", "live")
    # ... and in the incident's record, which the investigation and every later state read.
    pipeline.follow(execution["executionArn"])
    record = get_incident_state(pipeline.clients, pipeline.stack.physical["IncidentStateTable"], execution["name"])
    assert record["incident_json"]["qualifier"] == "live"


def test_every_alarm_shape_aws_sends_through_the_deployed_ingest(fresh_pipeline):
    pipeline = fresh_pipeline
    """The fixtures of tests/fixtures/alarms (AWS's own examples, cited in its index.json) published to the incident
    topic: each start starts, each ignore pages nobody, each reject reaches the dead-letter queue with its reason."""
    from tests.alarm_fixtures import FIXTURES, INDEX, create_child_alarms

    create_child_alarms(pipeline.clients)
    topic = pipeline.stack.output("IncidentTopicArn")
    sns = pipeline.clients.get("sns")
    for name in INDEX:
        sns.publish(TopicArn=topic, Message=(FIXTURES / name).read_text())
    ingest = pipeline.stack.functions["IngestFunction"]
    assert pipeline.dispatcher.functions[ingest].invocations == len(INDEX)
    letters = drain_dead_letters(pipeline)
    rejected = {name: fixture["says"] for name, fixture in INDEX.items() if fixture["outcome"] == "reject"}
    reasons = sorted(m["MessageAttributes"]["reason"]["StringValue"] for m in letters)
    assert len(reasons) == len(rejected), reasons
    for says in rejected.values():
        assert any(says in reason for reason in reasons), (says, reasons)
    # Four faults, one incident each: the function's Errors (whichever alarm: each shape of data-processor-errors,
    # the error rate, the composites), its alias's and its version's Errors, and its Duration.
    incidents = [json.loads(e.get("input") or "{}").get("incident", {}) for e in described(pipeline)]
    started = sorted((i.get("metric_name"), i.get("qualifier", "")) for i in incidents)
    assert started == [("Duration", ""), ("Errors", ""), ("Errors", "3"), ("Errors", "live")], started


def described(pipeline) -> list[dict]:
    sfn = pipeline.clients.get("stepfunctions")
    return [sfn.describe_execution(executionArn=e["executionArn"]) for e in executions(pipeline)]


def test_the_alarm_firing_again_after_its_incident_ended_starts_a_new_incident(pipeline):
    """Defect: within the grouping window a recurrence was attached to the ended incident: nothing started."""
    tables = pipeline.stack.physical

    def deliver(fired_at):
        return ingest(pipeline, fired_at)

    def ends(incident_id, status):  # as the state machine records the end it reached
        pipeline.clients.get("dynamodb").update_item(
            TableName=tables["IncidentStateTable"],
            Key={"incident_id": {"S": incident_id}},
            UpdateExpression="SET #s = :s",
            ExpressionAttributeNames={"#s": "status"},
            ExpressionAttributeValues={":s": {"S": status}},
        )

    pipeline.inject(Scenario.model_validate({"name": "t", "faults": [{"kind": "timeout", "seconds": 1}]}))
    owner = deliver("2026-11-23T04:00:00Z")
    assert owner.outcome == "started"
    pipeline.follow(owner.execution_arn)
    assert (
        get_incident_state(pipeline.clients, pipeline.stack.physical["IncidentStateTable"], owner.incident_id)["status"]
        == "PROPOSAL_READY"
    )
    # Still awaiting a person (propose only): a recurrence belongs to it.
    again = deliver("2026-11-23T04:00:30Z")
    assert (again.outcome, again.incident_id) == ("attached", owner.incident_id)
    for minute, ended in enumerate(["REMEDIATED", "ROLLED_BACK", "REJECTED", "FAILED"], start=1):
        ends(owner.incident_id, ended)
        recurred = deliver(f"2026-11-23T04:{minute:02}:00Z")
        assert recurred.outcome == "started" and recurred.recurrence_of == owner.incident_id, ended
        pipeline.follow(recurred.execution_arn)
        # The new incident owns the group now: a further copy joins it, not the ended one.
        assert deliver(f"2026-11-23T04:{minute:02}:30Z").incident_id == recurred.incident_id
        owner = recurred
    assert len(executions(pipeline)) == 5


def test_an_aws_error_that_passes_is_retried_by_the_state_machine_not_the_end_of_the_incident(fresh_pipeline):
    pipeline = fresh_pipeline
    """Defect: S3 answering 500 for a few seconds (past botocore's own attempts) inside the investigate
    function ended the incident ERROR. The handler now raises AwsTransientError, which the state machine retries."""
    from incident_responder.lab.moto_patches.stepfunctions import instant_retries

    pipeline.inject(Scenario.model_validate({"name": "t", "faults": [{"kind": "timeout", "seconds": 1}]}))
    pipeline.lab.fail_requests("PutObject", service="s3", code="InternalError", status=500, times=4)
    try:
        with instant_retries() as delays:
            started = ingest(pipeline)
            assert started.outcome == "started", started
            arn = started.execution_arn
            execution = pipeline.follow(arn)
    finally:
        pipeline.lab.clear_failures()
    assert pipeline.lab.failed_requests[-4:] == ["s3:PutObject"] * 4  # the record's first write: botocore's 4 attempts
    assert execution["status"] == "SUCCEEDED", (execution.get("error"), execution.get("cause"))
    assert (
        get_incident_state(pipeline.clients, pipeline.stack.physical["IncidentStateTable"], started.incident_id)[
            "status"
        ]
        == "PROPOSAL_READY"
    )
    failed = [
        e["taskFailedEventDetails"]["error"]
        for e in pipeline.clients.get("stepfunctions").get_execution_history(executionArn=arn)["events"]
        if e["type"] == "TaskFailed"
    ]
    assert failed == ["AwsTransientError"] and len(delays) == 1, (failed, delays)


def test_a_report_that_keeps_failing_is_kept_in_the_dead_letter_queue_with_its_error(pipeline):
    """Defect: the report function had no dead-letter target; when its writes kept failing, Lambda's two retries
    of the asynchronous invocation ran out and the execution's end was dropped without a trace. The lab hands the
    end to the function as EventBridge does (asynchronously), so it lands in the deployed queue."""
    scenario = Scenario.model_validate({"name": "t", "faults": [{"kind": "timeout", "seconds": 1}]})

    def once_proposed(state, at):  # every write of the incident itself is done: the report's page fails
        if state == "PROPOSAL_READY":
            pipeline.lab.fail_requests("PutObject", service="s3", code="AccessDenied", status=403, times=3)

    try:
        record = pipeline.run(scenario, on_state=once_proposed)
    finally:
        pipeline.lab.clear_failures()
    assert record.status == "PROPOSAL_READY"  # the incident itself ended well: only its report was lost
    report = pipeline.stack.functions["ReportFunction"]
    assert pipeline.dispatcher.functions[report].invocations == 3  # once, then Lambda's two retries
    sqs = pipeline.clients.get("sqs")
    kept = sqs.receive_message(
        QueueUrl=pipeline.stack.output("ExecutionEndedDeadLetterQueueUrl"), MessageAttributeNames=["All"]
    )["Messages"]
    (message,) = kept
    assert json.loads(message["Body"])["detail"]["executionArn"].endswith(f":{record.incident_id}")
    assert "AccessDenied" in message["MessageAttributes"]["ErrorMessage"]["StringValue"]


def test_a_failure_outside_the_catalogue_is_unknown_with_its_timeline_error_and_gaps(pipeline):
    """What the responder does not know, it says: fault type unknown, no action, and what is known (when the
    metrics departed from normal, the error AWS documents, what could not be explained)."""
    record = pipeline.run(load_scenario(REPO / "scenarios" / "orders-api-import-error-outside-catalogue.yaml"))
    assert record.status == "PROPOSAL_READY"
    diagnosis = record.diagnosis
    assert diagnosis["fault_types"] == ["unknown"] and record.proposal["actions"] == []
    cause = diagnosis["root_cause"]
    assert "Errors departed from normal at 20" in cause, cause
    assert "the logs report Runtime.ImportModuleError" in cause, cause
    # AWS documents the error (import-module-error), but the layers it could come from are as recorded.
    assert any("import-module-error" in gap for gap in diagnosis["investigation_gaps"]), diagnosis
    tools = {p["tool"] for p in diagnosis["evidence"]}
    assert {"get_function_metrics", "get_recent_logs"} <= tools, diagnosis["evidence"]
    assert all(p["verified"] for p in diagnosis["evidence"])


def test_throttles_that_are_not_this_functions_doing_name_the_other_function(pipeline):
    """noisy_neighbor: the function's own settings are untouched (no update_concurrency proposed); the diagnosis
    and the proposal name the function holding the account's concurrency."""
    record = pipeline.run(load_scenario(REPO / "scenarios" / "data-processor-noisy-neighbor.yaml"))
    assert record.status == "PROPOSAL_READY"
    assert record.diagnosis["fault_types"] == ["account_concurrency_exhausted"]
    assert record.proposal["actions"] == []
    assert "data-processor-neighbor" in record.diagnosis["root_cause"]
    assert "data-processor-neighbor" in record.proposal["chain_of_thought"], record.proposal["chain_of_thought"]


def test_a_scenarios_setup_is_put_back_between_scenarios_without_a_redeploy(pipeline):
    """A scenario's setup changes the function and records its baseline again; between scenarios the lab puts back
    both (the configuration and the onboarded baseline, its capture time with it), even when the setup recorded
    within the second onboarding did, so the next scenario starts as in a fresh lab without a redeploy."""
    from incident_responder.account.baseline import baseline_table_name

    ddb, lam = pipeline.clients.get("dynamodb"), pipeline.clients.get("lambda")
    key = {"function_name": {"S": "data-processor"}}
    onboarded_item = ddb.get_item(TableName=baseline_table_name(), Key=key)["Item"]
    onboarded = pipeline.onboarded["data-processor"]
    before = lam.get_function_configuration(FunctionName="data-processor")
    reserved = lam.get_function_concurrency(FunctionName="data-processor").get("ReservedConcurrentExecutions")
    assert reserved is not None  # the sample workload's reservation, which the setup removes

    pipeline.set_up("data-processor", Setup(reserved_concurrency=None, timeout=before["Timeout"] + 5))
    pipeline.set_up("data-processor", Setup(memory=before["MemorySize"] * 2))  # a second one: the first is kept
    ddb.update_item(
        TableName=baseline_table_name(),
        Key=key,
        UpdateExpression="SET captured_at = :t",
        ExpressionAttributeValues={":t": {"S": onboarded}},
    )
    assert lam.get_function_concurrency(FunctionName="data-processor").get("ReservedConcurrentExecutions") is None

    assert pipeline.clean_restore() == []
    after = lam.get_function_configuration(FunctionName="data-processor")
    assert (after["Timeout"], after["MemorySize"]) == (before["Timeout"], before["MemorySize"])
    assert lam.get_function_concurrency(FunctionName="data-processor").get("ReservedConcurrentExecutions") == reserved
    assert ddb.get_item(TableName=baseline_table_name(), Key=key)["Item"] == onboarded_item
    assert pipeline.onboarded["data-processor"] == onboarded
    assert pipeline.set_up_undo == {}


def test_the_stacks_own_function_onboards_as_on_aws(pipeline, capsys):
    """Defect: moto's CloudFormation kept each role's inline policies as a Python repr, which boto3 hands back as a
    string where AWS gives a document: `responder onboard` of the stack's own function in the lab ended in a pydantic
    ValidationError traceback."""
    from incident_responder.cli.commands import main

    iam = pipeline.clients.get("iam")
    role = pipeline.stack.physical["IngestFunctionRole"]
    names = iam.list_role_policies(RoleName=role)["PolicyNames"]
    documents = [iam.get_role_policy(RoleName=role, PolicyName=name)["PolicyDocument"] for name in names]
    assert names and all(isinstance(d, dict) and d["Statement"] for d in documents), documents
    ingest_function = pipeline.stack.physical["IngestFunction"]
    capsys.readouterr()
    code = main(["onboard", ingest_function])
    out, err = capsys.readouterr()
    assert "Traceback" not in err and code == 0, err
    assert json.loads(out)["function_name"] == ingest_function


def test_an_execution_history_reads_as_moto_serializes_it_and_without_data_when_asked(pipeline):
    """The lab writes GetExecutionHistory's answer as JSON directly (moto's serializer took 50 ms of CPU for one):
    botocore parses the same events from it as from moto's own answer; with includeExecutionData false, the events
    lose their input and output only, as Step Functions answers."""
    from moto.stepfunctions.responses import StepFunctionResponse

    record = pipeline.run(load_scenario(REPO / "scenarios" / "timeout-too-low.yaml"))
    sfn = pipeline.clients.get("stepfunctions")
    arn = record.execution["arn"]
    ours = StepFunctionResponse.get_execution_history
    direct = sfn.get_execution_history(executionArn=arn)["events"]
    StepFunctionResponse.get_execution_history = ours.lab_original
    try:
        serialized = sfn.get_execution_history(executionArn=arn)["events"]
    finally:
        StepFunctionResponse.get_execution_history = ours
    assert len(direct) > 20 and direct == serialized
    lean = sfn.get_execution_history(executionArn=arn, includeExecutionData=False)["events"]
    data = {"input", "output", "inputDetails", "outputDetails"}
    assert [e["type"] for e in lean] == [e["type"] for e in direct]
    for full, without in zip(direct, lean, strict=True):
        for key, value in full.items():
            if key.endswith("Details"):
                assert without[key] == {k: v for k, v in value.items() if k not in data}
            else:
                assert without[key] == value
    assert any("input" in e.get("stateEnteredEventDetails", {}) for e in direct)
