"""A deploy whose code update succeeds and whose environment update Lambda refuses (over 4 KB): the lab's Lambda
refuses it in AWS's words and changes nothing, its CloudTrail records the failed call with errorCode and
errorMessage, get_recent_changes shows the message without the variables it quotes, and the new code fails on
the variable it lacks."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime

import pytest
from botocore.exceptions import ClientError

from chaos import FaultInjector
from incident_responder.investigation import diagnostics
from incident_responder.lab.workloads.data_processor import DataProcessor
from tests.conftest import CANARY_SECRET

FN = "data-processor"
REFUSED = (
    "Lambda was unable to configure your environment variables because the environment variables you have provided "
    "exceeded the 4KB limit. String measured: "
)


def test_an_environment_over_4_kb_is_refused_and_recorded_as_a_failed_call(clients, sample, lab):
    lam, trail = clients.get("lambda"), clients.get("cloudtrail")
    time.sleep(1)  # StartTime travels in whole seconds
    started = datetime.now(UTC)
    before = lam.get_function_configuration(FunctionName=FN)["Environment"]["Variables"]
    with pytest.raises(ClientError) as refused:
        lam.update_function_configuration(FunctionName=FN, Environment={"Variables": {**before, "BIG": "x" * 4100}})
    assert refused.value.response["Error"]["Code"] == "InvalidParameterValueException"
    assert refused.value.response["Error"]["Message"].startswith(REFUSED)
    assert lam.get_function_configuration(FunctionName=FN)["Environment"]["Variables"] == before
    (event,) = trail.lookup_events(
        StartTime=started, LookupAttributes=[{"AttributeKey": "ResourceName", "AttributeValue": FN}]
    )["Events"]
    detail = json.loads(event["CloudTrailEvent"])
    assert detail["errorCode"] == "InvalidParameterValueException"
    assert detail["errorMessage"].startswith(REFUSED)
    # The tool says why without quoting the variables (their values: a secret among them).
    (change,) = [e for e in diagnostics.get_recent_changes(clients, FN).events if e.error_code]
    assert change.event_name == "UpdateFunctionConfiguration"
    assert change.error_message == REFUSED.removesuffix(" String measured: ")
    assert CANARY_SECRET not in json.dumps(change.model_dump())


def test_the_deploys_new_code_fails_on_the_variable_its_refused_update_was_to_add(clients, sample, lab):
    injector = FaultInjector.for_function(FN, clients=clients)
    injector.environment_update_rejected()
    assert (
        "FEATURE_FLAGS"
        not in clients.get("lambda").get_function_configuration(FunctionName=FN)["Environment"]["Variables"]
    )
    burst = DataProcessor(clients).invoke(2)
    assert {(i.status, i.error_type, i.error_message) for i in burst.invocations} == {
        ("failed", "KeyError", "'FEATURE_FLAGS'")
    }
    events = clients.get("logs").filter_log_events(logGroupName=f"/aws/lambda/{FN}", interleaved=True)["events"]
    logged = "\n".join(e["message"] for e in events)
    assert "[ERROR] KeyError: 'FEATURE_FLAGS'\nTraceback (most recent call last):" in logged
    assert 'in <module>\n    FEATURE_FLAGS = json.loads(os.environ["FEATURE_FLAGS"])' in logged
    assert "chaos" not in logged and "environment_update_rejected" not in logged
    injector.restore()
    assert DataProcessor(clients).invoke(1).healthy
