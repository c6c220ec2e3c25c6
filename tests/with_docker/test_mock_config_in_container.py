"""The MockConfigFile test cases on a containerized Step Functions engine (needs a Docker engine).

amazon/aws-stepfunctions-local cannot run this definition: it predates JSONata, which the lifecycle
uses. LocalStack (>= 4.4) runs JSONata and reads the same MockConfigFile (LOCALSTACK_SFN_MOCK_CONFIG),
so that is the container used. Without a reachable Docker engine the test is skipped; the same cases
always run on the lab's local engine (tests/functional/test_mock_config.py).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

REPO = Path(__file__).parents[2]
FOLDER = REPO / "tests" / "statemachine"
IMAGE = os.environ.get("LOCALSTACK_IMAGE", "localstack/localstack:4.4")


def _docker_reachable() -> str | None:
    try:
        import docker

        docker.from_env(timeout=3).ping()
    except Exception as exc:  # noqa: BLE001 - any failure means "no engine here"
        return (
            f"no Docker engine reachable ({type(exc).__name__}: {str(exc)[:120]}); "
            "the same MockConfigFile cases run on the local engine in tests/functional/test_mock_config.py"
        )
    return None


pytestmark = pytest.mark.skipif(bool(_docker_reachable()), reason=_docker_reachable() or "")


@pytest.fixture(scope="module")
def localstack():
    from testcontainers.core.container import DockerContainer
    from testcontainers.core.waiting_utils import wait_for_logs

    container = (
        DockerContainer(IMAGE)
        .with_env("SERVICES", "stepfunctions,dynamodb,lambda,sns")
        .with_env("LOCALSTACK_SFN_MOCK_CONFIG", "/mock/MockConfigFile.json")
        .with_volume_mapping(str(FOLDER), "/mock", "ro")
        .with_exposed_ports(4566)
    )
    if os.environ.get("LOCALSTACK_AUTH_TOKEN"):
        container = container.with_env("LOCALSTACK_AUTH_TOKEN", os.environ["LOCALSTACK_AUTH_TOKEN"])
    with container:
        wait_for_logs(container, "Ready.", timeout=120)
        yield f"http://{container.get_container_host_ip()}:{container.get_exposed_port(4566)}"


TABLE = "incident-state"


@pytest.fixture(scope="module")
def machine(localstack):
    import boto3

    from incident_responder.lab.engine import substitute

    kwargs = {
        "endpoint_url": localstack,
        "region_name": "us-east-1",
        "aws_access_key_id": "test",
        "aws_secret_access_key": "test",
    }
    boto3.client("dynamodb", **kwargs).create_table(
        TableName=TABLE,
        AttributeDefinitions=[{"AttributeName": "incident_id", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "incident_id", "KeyType": "HASH"}],
        BillingMode="PAY_PER_REQUEST",
    )
    definition = substitute(
        (REPO / "statemachine" / "incident_lifecycle.asl.json").read_text(),
        {
            "IncidentStateTable": TABLE,
            "InvestigateFunctionArn": "arn:aws:lambda:us-east-1:000000000000:function:investigate",
            "MaxIncidentsPerHour": 20,
            "MaxIncidentsPerFunctionPerHour": 5,
            "InvestigateTimeoutSeconds": 30,
            "ProposeFunctionArn": "arn:aws:lambda:us-east-1:000000000000:function:propose",
            "ProposeTimeoutSeconds": 30,
            "IncidentNewsTopicArn": "arn:aws:sns:us-east-1:000000000000:incident-news",
            "IncidentTtlSeconds": 604800,
            # The MockConfigFile cases end at PROPOSAL_READY: the closed loop is not part of them.
            "RemediationMode": "propose_only",
            "ReviewFunctionArn": "arn:aws:lambda:us-east-1:000000000000:function:review",
            "ApprovalRequestFunctionArn": "arn:aws:lambda:us-east-1:000000000000:function:approval-request",
            "ApprovalTimeoutMinutes": 60,
            "RemediateFunctionArn": "arn:aws:lambda:us-east-1:000000000000:function:remediate",
            "VerifyFunctionArn": "arn:aws:lambda:us-east-1:000000000000:function:verify",
            "VerifySettleSeconds": 0,
            "OperatorTopicArn": "arn:aws:sns:us-east-1:000000000000:operators",
        },
    )
    sfn = boto3.client("stepfunctions", **kwargs)
    arn = sfn.create_state_machine(
        name="IncidentLifecycle", definition=definition, roleArn="arn:aws:iam::000000000000:role/sfn"
    )["stateMachineArn"]
    return sfn, boto3.client("dynamodb", **kwargs), arn


@pytest.mark.parametrize("case", list(json.loads((FOLDER / "expected.json").read_text())))
def test_mock_config_case_in_container(machine, case):
    from incident_responder.intake.alerts import parse_alert
    from incident_responder.state.lifecycle import execution_input

    sfn, ddb, arn = machine
    incident = parse_alert({"function_name": "data-processor", "detected_at": "2026-11-23T04:00:00Z", "alert_id": case})
    # "<state machine ARN>#<test case>" selects the MockConfigFile test case.
    execution = sfn.start_execution(
        stateMachineArn=f"{arn}#{case}", name=incident.incident_id, input=json.dumps(execution_input(incident))
    )
    for _ in range(600):
        described = sfn.describe_execution(executionArn=execution["executionArn"])
        if described["status"] != "RUNNING":
            break
        time.sleep(0.1)
    expected = json.loads((FOLDER / "expected.json").read_text())[case]
    assert described["status"] == expected["execution"]
    item = ddb.get_item(TableName=TABLE, Key={"incident_id": {"S": incident.incident_id}})["Item"]
    assert item["status"]["S"] == expected["status"]
