"""The lifecycle's VERIFYING on the deployed metric probe: the real state machine, the verify handler it invokes,
and CloudWatch metrics the lab's workload wrote (``metric_verification_probe``), instead of the lab's usual burst.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from incident_responder.lab.pipeline import LabPipeline
from incident_responder.lab.pipeline.incident import metric_verification_probe
from incident_responder.lab.scenario import load_scenario
from incident_responder.remediation.health import set_health_probe

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


@pytest.mark.filterwarnings("ignore:No application metrics to publish")
def test_the_lifecycle_verifies_and_rolls_back_from_the_lab_workloads_metrics(lab):
    # In this process (workers=False), so the verify handler uses the probe set here.
    with LabPipeline.start(lab=lab, workers=False) as pipeline:
        set_health_probe(metric_verification_probe())
        table = pipeline.clients.get("dynamodb")
        state_table = pipeline.stack.physical["IncidentStateTable"]
        outcomes = {}
        for name in ("s3-policy-revoked", "loop-fault-returns-during-verifying"):
            record = pipeline.run(load_scenario(SCENARIOS / f"{name}.yaml"))
            item = table.get_item(TableName=state_table, Key={"incident_id": {"S": record.incident_id}})["Item"]
            outcomes[name] = (record.status, item.get("verification_json", {}).get("S"), item.get("rollback_reason"))
            if name == "s3-policy-revoked":
                pipeline.refresh()
    status, verification, _ = outcomes["s3-policy-revoked"]
    assert status == "REMEDIATED"
    (check,) = json.loads(verification)["checks"]
    assert check["detail"].endswith("; no errors (3 invocations, 0 errors, 0 throttles)")  # the metrics' figures
    # The timeout put back while VERIFYING: the workload's three invocations time out, its metrics count them.
    status, _, reason = outcomes["loop-fault-returns-during-verifying"]
    assert status == "ROLLED_BACK"
    assert "timeout is still seen (3 invocations, 3 errors, 0 throttles)" in reason["S"]
