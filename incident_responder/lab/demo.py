"""``responder demo``: the project's main job on the embedded lab, end to end, to REMEDIATED.

Start the lab and deploy ``template.yaml`` into it, create and onboard the sample workload, inject a
fault (by default the S3 permission revoked), let the function fail and raise its alarm, then follow
the incident through the state machine state by state: SNS -> ingest -> Step Functions -> the
investigator agent over the diagnostics MCP server -> the proposer -> the critic -> an approval request
whose link the lab's person opens and approves -> the remediate function -> the settle wait -> the
verify function. The execution history and a picture of the path taken are written to ``out/``.
Finally the workload is invoked again: healthy, with nothing restored by hand.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from incident_responder.lab.pipeline.artifacts import write_artifacts
from incident_responder.lab.pipeline.record import IncidentRecord
from incident_responder.lab.pipeline.startup import LabPipeline
from incident_responder.lab.scenario import Scenario

FAULTS = {
    "iam_revoke": [{"kind": "iam_revoke", "target": "s3"}],
    "iam_revoke_logs": [{"kind": "iam_revoke", "target": "cloudwatch"}],
    "throttle": [{"kind": "throttle", "reserved_concurrency": 0}],
    "network_block": [{"kind": "network_block"}],
    "timeout": [{"kind": "timeout", "seconds": 1}],
    "memory": [{"kind": "memory", "mb": 128}],
}


def _step(text: str) -> None:
    print(f"\n== {text}")


# What a lab record shares with a stored incident as incident_view.gather reads it.
SHOWN_FIELDS = frozenset(
    ("incident_id", "status", "error_category", "error_reason", "timings")
    + ("diagnosis", "evidence", "proposal", "review", "approval")
)


def show_record(record: IncidentRecord) -> None:
    """The record a lab run ends with, as ``responder show`` presents a stored incident, and its cost."""
    from incident_responder.reporting.view import alert_to_end_seconds, render_text

    remediation = record.remediation or {}
    shown = {
        **record.model_dump(include=SHOWN_FIELDS),
        "verification": remediation.get("verification_json"),
        "rollback": {"rollback_reason": remediation["rollback_reason"]} if remediation.get("rollback_reason") else None,
    }
    print(render_text(shown, hint=False))
    m = record.metrics
    # The incident's own recorded times, as its report counts them (the lab's wall clock also holds the burst).
    spent = alert_to_end_seconds(record.timings)
    print(
        f"  {m['llm_calls']} model calls, {m['tool_calls']} tool calls, {m['total_tokens']} tokens, "
        f"grounded {m['grounded_ratio'] if m['grounded_ratio'] is not None else '-'}; "
        f"{f'{spent:.1f} s' if spent else '-'} alert to end"
    )


def run_demo(
    fault: str = "iam_revoke", out_dir: Path = Path("out"), verbose: bool = False, model: str = "offline"
) -> int:
    scenario = Scenario.model_validate({"name": f"demo-{fault}", "faults": FAULTS[fault]})
    # The functions' own JSON logs and EMF lines would drown the story; `--verbose` keeps them.
    if not verbose:
        os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
        os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    _step("lab: moto on loopback; deploying template.yaml into it")
    with LabPipeline.start(model=model) as pipeline:
        print(f"  stack {pipeline.stack.name}: state machine {pipeline.state_machine_arn.rsplit(':', 1)[-1]}")
        print(f"  left to the lab (moto cannot create them): {', '.join(pipeline.stack.left_out)}")
        print(f"  MCP servers behind their function URLs (AWS_IAM: SigV4 checked), diagnostics at {pipeline.mcp_url}")
        print(f"  sample workload {pipeline.sample.function_name} created and onboarded (baseline recorded)")
        _step("healthy burst of 3 invocations")
        healthy = pipeline.workload().invoke(3)
        print(f"  {[i.status for i in healthy.invocations]}, alarm: {healthy.alert is not None}")

        _step(f"chaos: {fault} {FAULTS[fault]}")
        for line in pipeline.inject(scenario):
            print(f"  {line}")
        scenario = scenario.model_copy(update={"faults": []})  # injected above; run() only drives the workload
        _step("the function fails, its alarm goes to SNS, and the lifecycle runs:")

        def on_state(name: str, entered: Any) -> None:
            print(f"  -> {name:<22} {entered:%H:%M:%S.%f}"[:-3])

        record = pipeline.run(scenario, on_state=on_state)
        _step("final record")
        show_record(record)
        paths = write_artifacts(pipeline, record, out_dir)
        print(f"  execution history: {paths.get('history')}")
        print(f"  path taken: {paths.get('picture')}")
        print(f"  report: {paths.get('report')}")

        _step("the workload again, after the responder's own fix (nothing restored by hand)")
        after = pipeline.workload().invoke(3, notify=False)
        print(f"  {[i.status for i in after.invocations]}, alarm: {after.alert is not None}")
        print(f"  configuration back at its baseline: {record.end_state.get('matches_baseline')}")
    ok = demo_succeeded(record.status, after.healthy)
    print(f"\n{'REMEDIATED and verified' if ok else 'the demo did not reach REMEDIATED: ' + record.status}")
    return 0 if ok else 1


def demo_succeeded(status: str | None, healthy_after: bool) -> bool:
    """The demo's story ends REMEDIATED and verified (the workload healthy again); any other end is a failed demo
    (its exit status 1): PROPOSAL_FAILED, ERROR, a lifecycle that never ended."""
    return status == "REMEDIATED" and healthy_after
