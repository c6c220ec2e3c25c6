"""Memory on the deployed path in the lab (template.yaml's stack, AutoApprove=low): an incident's end is written to
its function's history by the report function from the stored records, and the same fix rolled back last time is not
approved automatically again: the review's floor sends it to a person, saying why."""

from __future__ import annotations

from pathlib import Path

from incident_responder.approval.page import _PARAMS, render_review_page
from incident_responder.approval.record import load_approval_record
from incident_responder.lab.pipeline import LabPipeline
from incident_responder.lab.scenario import load_scenario
from incident_responder.memory.history import read_history
from incident_responder.state.store import load_record

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


def test_a_fix_rolled_back_last_time_needs_a_person_the_next_time(lab):
    scenario = load_scenario(SCENARIOS / "loop-fault-returns-during-verifying.yaml")
    with LabPipeline.start(lab=lab, workers=False, parameters={"AutoApprove": "low"}) as pipeline:
        tables = pipeline.stack.physical
        first = pipeline.run(scenario)
        (remembered,) = read_history(pipeline.clients, tables["IncidentStateTable"], "data-processor").incidents
        review = load_record(pipeline.clients, tables["IncidentContextTable"], first.incident_id, "review")
        second = pipeline.run(scenario)
        again = load_record(pipeline.clients, tables["IncidentContextTable"], second.incident_id, "review")
        history = read_history(pipeline.clients, tables["IncidentStateTable"], "data-processor")
        approval = load_approval_record(pipeline.clients, tables["IncidentStateTable"], second.incident_id)
        page = (
            pipeline.clients.get("s3")
            .get_object(Bucket=tables["ArtifactsBucket"], Key=f"reports/{second.incident_id}/report.html")["Body"]
            .read()
            .decode()
        )
    # The first time: approved automatically (a low-risk restore the critic approved), applied, rolled back ...
    assert first.status == "ROLLED_BACK" and review["summary"]["outcome"] == "APPROVED"
    # ... and remembered from the records: the ledger's undone step, the verification's reason, the approval.
    assert remembered.incident_id == first.incident_id and remembered.status == "ROLLED_BACK"
    assert remembered.fault_types == ["timeout"] and remembered.failure_modes == ["function-timeout"]
    assert [(a.action_type, a.outcome) for a in remembered.actions] == [
        ("update_function_configuration", "rolled_back")
    ]
    assert "timeout is still seen" in remembered.rolled_back_reason
    assert remembered.decided_by == "auto-approve (AutoApprove=low)"
    assert remembered.report_key == f"reports/{first.incident_id}/report.html"
    # The second time the same fix for the same fault needs a person, with the history's words.
    assert again["summary"]["outcome"] == "NEEDS_APPROVAL"
    (verdict,) = again["summary"]["verdicts"]
    assert verdict["verdict"] == "needs_human"
    assert any(
        p.startswith(f"rolled back last time ({remembered.ended_at}: the symptom remains") for p in verdict["policy"]
    )
    assert any("rolled back last time" in h for h in again["summary"]["history"])
    assert [p.incident_id for p in history.incidents] == [second.incident_id, first.incident_id]
    assert history.version == 2
    # The approval page the person decides on says why: seen before, rolled back last time.
    assert approval is not None and any("rolled back last time" in h for h in approval.history)
    params = {k: "x" for k in _PARAMS} | {"decision": "approve"}
    shown = render_review_page(approval, params)
    assert "<h2>Seen before</h2>" in shown and "rolled back last time" in shown
    # The second report says it was seen before, and links the first one's report beside it.
    assert "Seen before: 1 earlier incident of this function; the last ended" in page
    assert f"<a href='../{first.incident_id}/report.html'>" in page


def test_a_recurring_fault_is_concluded_on_the_historys_hypothesis_in_no_more_turns_than_the_first_time(lab):
    # memory-too-low twice: the history is read with the first tools both times (no turn of its own); the first
    # incident has no past, is fixed and verified; the second finds that verified fault shown again by the drift
    # and concludes from the drift without reading further.
    scenario = load_scenario(SCENARIOS / "memory-too-low.yaml")
    with LabPipeline.start(lab=lab, workers=False) as pipeline:
        tables = pipeline.stack.physical
        runs = []
        for _ in range(2):
            record = pipeline.run(scenario)
            investigation = load_record(
                pipeline.clients, tables["IncidentContextTable"], record.incident_id, "investigation"
            )
            runs.append((record, investigation["summary"]))
    (first, cold), (second, warm) = runs
    assert first.status == "REMEDIATED" and second.status == "REMEDIATED"
    for summary in (cold, warm):
        assert summary["diagnosis"]["fault_types"] == ["memory_exhaustion"]
        assert summary["diagnosis"]["failure_modes"] == ["memory-exhaustion"]
    assert warm["metrics"]["llm_calls"] <= cold["metrics"]["llm_calls"] == 2  # tools, then the diagnosis
    assert any("get_incident_history" in gap for gap in warm["diagnosis"]["investigation_gaps"])
    print(
        "memory-too-low investigation: first",
        {k: cold["metrics"][k] for k in ("llm_calls", "tool_calls", "input_tokens", "output_tokens")},
        "recurring",
        {k: warm["metrics"][k] for k in ("llm_calls", "tool_calls", "input_tokens", "output_tokens")},
    )
