"""Secrets in a failing function's logs (each shape the redactor knows, scenarios/secrets-in-logs.yaml) reach
nothing: not one request to the model (read on the wire of a server speaking Converse), the stored records
(DynamoDB and S3), the report page or the chat notice; and the incident still ends REMEDIATED on grounded
evidence, the model having seen the markers where the secrets were."""

from __future__ import annotations

import json
from pathlib import Path

from incident_responder.agent.model_catalog import DEFAULT_MODEL
from incident_responder.lab.converse.backends import OfflineBackend
from incident_responder.lab.converse.gateway import ConverseGateway
from incident_responder.lab.pipeline.startup import LabPipeline
from incident_responder.lab.scenario import load_scenario
from incident_responder.reporting.report import collect, render_html
from tests.secret_lines import SECRET_LINES

REPO = Path(__file__).parents[2]
USER_KEY, USER_SECRET = "AKIAUSERKEY00000002", "the-users-own-secret"


def _everything_stored(clients, stack) -> str:
    dynamodb, s3 = clients.get("dynamodb"), clients.get("s3")
    items = []
    for table in ("IncidentStateTableName", "IncidentContextTableName"):
        items += dynamodb.scan(TableName=stack.output(table))["Items"]
    bucket = stack.output("ArtifactsBucketName")
    objects = [
        s3.get_object(Bucket=bucket, Key=o["Key"])["Body"].read().decode()
        for o in s3.list_objects_v2(Bucket=bucket).get("Contents", [])
    ]
    assert items and objects
    return json.dumps(items) + "\n".join(objects)


def test_no_secret_in_the_logs_reaches_the_model_a_store_the_report_or_a_notice(lab, monkeypatch):
    for key in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SESSION_TOKEN", "BEDROCK_REGION", "BEDROCK_PROFILE"):
        monkeypatch.delenv(key, raising=False)
    with ConverseGateway(OfflineBackend(), secrets={USER_KEY: USER_SECRET}) as gateway:
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", USER_KEY)
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", USER_SECRET)
        monkeypatch.setenv("AWS_REGION", "us-east-1")
        monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", gateway.url)
        with LabPipeline.start(lab=lab, workers=True, model=DEFAULT_MODEL) as pipeline:
            sqs, sns = pipeline.clients.get("sqs"), pipeline.clients.get("sns")
            inbox = sqs.create_queue(QueueName="news-inbox")["QueueUrl"]
            inbox_arn = sqs.get_queue_attributes(QueueUrl=inbox, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
            sns.subscribe(TopicArn=pipeline.stack.output("IncidentNewsTopicArn"), Protocol="sqs", Endpoint=inbox_arn)
            record = pipeline.run(load_scenario(REPO / "scenarios" / "secrets-in-logs.yaml"))
            stored = _everything_stored(pipeline.clients, pipeline.stack)
            detail = collect(
                pipeline.clients,
                record.incident_id,
                state_table=pipeline.stack.output("IncidentStateTableName"),
                context_table=pipeline.stack.output("IncidentContextTableName"),
            )
            page = render_html(detail)
            notices = json.dumps(sqs.receive_message(QueueUrl=inbox, MaxNumberOfMessages=10).get("Messages", []))
        requests = json.dumps([exchange.request for exchange in gateway.exchanges])
    assert record.status == "REMEDIATED", record.error
    assert record.diagnosis["fault_types"] == ["permission_loss"]
    assert record.evidence["grounded_ratio"] == 1.0
    assert notices != "[]" and "REMEDIATED" in notices
    for kind, (secret, _) in SECRET_LINES.items():
        for where, text in (("a model request", requests), ("a store", stored), ("the report", page)):
            assert secret not in text, f"{kind} reached {where}"
            assert json.dumps(secret)[1:-1] not in text, f"{kind} reached {where} (JSON-escaped)"
        assert secret not in notices, f"{kind} reached the chat notice"
        # The logs did reach the model: as markers.
        assert f"[REDACTED:{kind}]" in requests, kind
    # The stored tool output says what was redacted, as the server counted it.
    logs = [r for r in detail["tool_results"] if r["tool"] == "get_recent_logs"]
    assert logs and set(logs[0]["result"]["redacted"]) == set(SECRET_LINES)
    # And the report counts them, per tool and kind.
    assert "Secrets redacted from the tool output before the model saw it" in page
    shown = page[page.index("Secrets redacted from the tool output") :]
    assert "<b>get_recent_logs</b>: " in shown and all(kind in shown for kind in SECRET_LINES)
