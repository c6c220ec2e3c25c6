"""Memory on the deployed path in the lab (template.yaml's stack, AutoApprove=low), through the corpus's memory
scenarios (each runs its earlier incidents first): an incident's end is written to its function's history by the
report function from the stored records; the same fix rolled back last time, or a fault back soon after a verified
fix, is not approved automatically again; a recurring fault is concluded from the drift in fewer turns."""

from __future__ import annotations

from pathlib import Path

import pytest

from incident_responder.approval.page import _PARAMS, render_review_page
from incident_responder.approval.record import load_approval_record
from incident_responder.lab.evaluation import score
from incident_responder.lab.pipeline import LabPipeline
from incident_responder.lab.scenario import load_scenario
from incident_responder.memory.history import read_history
from incident_responder.review.policy import AUTO_APPROVER
from incident_responder.state.store import load_record

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


@pytest.fixture(scope="module")
def pipeline(lab):
    with LabPipeline.start(lab=lab, workers=False, parameters={"AutoApprove": "low"}) as running:
        yield running


def _run(pipeline, name: str):
    scenario = load_scenario(SCENARIOS / f"{name}.yaml")
    if pipeline.clean_restore():
        pipeline.refresh()
    record = pipeline.run(scenario)
    scored = score(scenario, record, None)
    assert scored.failures == [] or scored.failures == [f"status {record.status} (expected REMEDIATED)"], scored
    return scenario, record


def test_a_fix_rolled_back_last_time_needs_a_person_the_next_time(pipeline):
    _, record = _run(pipeline, "memory-fix-rolled-back-last-time")
    tables = pipeline.stack.physical
    (first,) = record.earlier
    history = read_history(pipeline.clients, tables["IncidentStateTable"], "data-processor")
    second, remembered = history.incidents
    review = load_record(pipeline.clients, tables["IncidentContextTable"], record.incident_id, "review")
    approval = load_approval_record(pipeline.clients, tables["IncidentStateTable"], record.incident_id)
    page = (
        pipeline.clients.get("s3")
        .get_object(Bucket=tables["ArtifactsBucket"], Key=f"reports/{record.incident_id}/report.html")["Body"]
        .read()
        .decode()
    )
    # The first time: approved automatically (a low-risk restore the critic approved), applied, rolled back ...
    assert first["status"] == "ROLLED_BACK"
    # ... and remembered from the records: the ledger's undone step, the verification's reason, the approval.
    assert remembered.incident_id == first["incident_id"] and remembered.status == "ROLLED_BACK"
    assert remembered.fault_types == ["timeout"] and remembered.failure_modes == ["function-timeout"]
    assert [(a.action_type, a.outcome) for a in remembered.actions] == [
        ("update_function_configuration", "rolled_back")
    ]
    assert "timeout is still seen" in remembered.rolled_back_reason
    assert remembered.decided_by == AUTO_APPROVER
    assert remembered.report_key == f"reports/{first['incident_id']}/report.html"
    # The second time the same fix for the same fault needs a person, with the history's words; a person approved.
    assert review["summary"]["outcome"] == "NEEDS_APPROVAL"
    (verdict,) = review["summary"]["verdicts"]
    assert verdict["verdict"] == "needs_human"
    assert any(
        p.startswith(f"rolled back last time ({remembered.ended_at}: the symptom remains") for p in verdict["policy"]
    )
    assert any("rolled back last time" in h for h in review["summary"]["history"])
    assert record.status == "REMEDIATED" and record.approval["approved_by"] != AUTO_APPROVER
    assert second.incident_id == record.incident_id and history.version == 2
    # The approval page the person decided on says why: seen before, rolled back last time.
    assert approval is not None and any("rolled back last time" in h for h in approval.history)
    params = {k: "x" for k in _PARAMS} | {"decision": "approve"}
    shown = render_review_page(approval, params)
    assert "<h2>Seen before</h2>" in shown and "rolled back last time" in shown
    # The second report says it was seen before, and links the first one's report beside it.
    assert "Seen before: 1 earlier incident of this function; the last ended" in page
    assert f"<a href='../{first['incident_id']}/report.html'>" in page


def test_a_fault_back_soon_after_a_verified_fix_goes_to_a_person(pipeline):
    _, record = _run(pipeline, "memory-fault-back-after-a-verified-fix")
    (first,) = record.earlier
    review = load_record(
        pipeline.clients, pipeline.stack.physical["IncidentContextTable"], record.incident_id, "review"
    )
    assert first["status"] == "REMEDIATED"
    (verdict,) = review["summary"]["verdicts"]
    assert verdict["verdict"] == "needs_human"
    assert any("a fix that does not stick is a symptom" in p for p in verdict["policy"]), verdict["policy"]
    assert record.status == "REMEDIATED" and record.approval["approved_by"] != AUTO_APPROVER


def test_a_recurring_fault_is_concluded_from_the_drift_in_fewer_turns_and_tokens_than_the_first_time(pipeline):
    # The mapping disabled again: the first time the investigation read the logs and the dependencies after its
    # first reads; the second concludes from its first reads (the history, and the drift showing that fault again).
    _, record = _run(pipeline, "memory-mapping-disabled-again")
    (first,) = record.earlier
    investigation = load_record(
        pipeline.clients, pipeline.stack.physical["IncidentContextTable"], record.incident_id, "investigation"
    )
    warm = investigation["summary"]
    assert first["status"] == "REMEDIATED" and record.status == "REMEDIATED"
    assert warm["diagnosis"]["fault_types"] == ["event_source_disabled"]
    assert warm["diagnosis"]["failure_modes"] == ["event-source-mapping-disabled"]
    assert (first["turns_by_agent"]["investigation"], warm["metrics"]["llm_calls"]) == (2, 1)
    assert warm["metrics"]["total_tokens"] < first["tokens_by_agent"]["investigation"] * 0.8
    assert any("get_incident_history" in gap for gap in warm["diagnosis"]["investigation_gaps"])
    # The queue alarm's first reads were made before the model's first turn, and nothing after them.
    tools = [e["tool"] for e in investigation["transcript"] if e.get("kind") == "tool"]
    turns = [e for e in investigation["transcript"] if e.get("kind") == "model"]
    assert tools == ["get_incident_history", "get_function_metrics", "get_lambda_config", "get_config_drift"]
    assert len(turns) == 1
