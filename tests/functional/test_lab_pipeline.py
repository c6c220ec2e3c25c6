"""The deployed path in the lab: template.yaml in moto, SNS -> ingest -> Step Functions -> investigate."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from incident_responder.lab.pipeline import LabPipeline, write_artifacts
from incident_responder.lab.scenario import Scenario, load_scenario
from tests.functional.test_state_machine import HAPPY

REPO = Path(__file__).parents[2]


@pytest.fixture
def pipeline(lab, _engine, tmp_path):
    with LabPipeline.start(lab=lab, dispatcher=_engine) as running:
        yield running


def executions(pipeline) -> list[dict]:
    return pipeline.clients.get("stepfunctions").list_executions(stateMachineArn=pipeline.state_machine_arn)[
        "executions"
    ]


def dead_letters(pipeline) -> list[dict]:
    sqs = pipeline.clients.get("sqs")
    url = pipeline.stack.output("AlertsDeadLetterQueueUrl")
    return sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, MessageAttributeNames=["All"]).get("Messages", [])


def test_scenario_end_to_end_through_the_deployed_path(pipeline, tmp_path):
    record = pipeline.run(load_scenario(REPO / "scenarios" / "s3-policy-revoked.yaml"))
    assert record.status == "PROPOSAL_READY"
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
        [sys.executable, "-m", "incident_responder.cli", "show", record.incident_id],
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
    paths = write_artifacts(pipeline, record, tmp_path)
    assert json.loads(paths["history"].read_text())[0]["type"] == "ExecutionStarted"
    svg = paths["picture"].read_text()
    assert svg.startswith("<svg") and "Run supervisor agent" in svg and "#2e7d32" in svg


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
    assert len([i for i in items if not i["incident_id"]["S"].startswith("rate#")]) == 1
    assert dead_letters(pipeline) == []


def test_malformed_alerts_land_in_the_dead_letter_queue(pipeline):
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


def test_an_event_that_is_not_sns_is_kept_by_the_functions_own_dead_letter_queue(pipeline):
    ingest = pipeline.stack.functions["IngestFunction"]
    target = pipeline.dispatcher.functions[ingest].dead_letter_arn
    from incident_responder.lab.engine import _to_dead_letter

    pipeline.dispatcher.deliver_async(
        ingest, {"hello": "world"}, lambda event, exc: _to_dead_letter(target, event, exc)
    )
    (letter,) = dead_letters(pipeline)
    assert json.loads(letter["Body"]) == {"hello": "world"}
    assert pipeline.dispatcher.functions[ingest].invocations == 3  # the first try and Lambda's two retries


def test_responder_run_prints_the_final_record_as_json(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "MCP_", "MOTO_", "RESPONDER_"))}
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "incident_responder.cli",
            "run",
            str(REPO / "scenarios" / "s3-policy-revoked.yaml"),
            "--json",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    record = json.loads(out.stdout)
    for key in ("incident_id", "status", "error_category", "diagnosis", "proposal", "metrics", "execution"):
        assert key in record
    assert record["status"] == "PROPOSAL_READY" and record["proposal"]["actions"]
    assert set(record["metrics"]) >= {"tool_calls", "llm_calls", "total_tokens", "latency_ms"}
    assert (
        record["execution"]["states_visited"][0] == "RECEIVED" and record["execution"]["name"] == record["incident_id"]
    )
