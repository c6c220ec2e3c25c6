"""``responder demo``: the project's main job on the embedded lab, end to end, to REMEDIATED.

Start the lab and deploy ``template.yaml`` into it, create and onboard the sample workload, inject a
fault (by default the S3 permission revoked), let the function fail and raise its alarm, then follow
the incident through the state machine state by state: SNS -> ingest -> Step Functions -> the
supervisor agent over the diagnostics MCP server -> the resolver -> the critic -> an approval request
whose link the lab's person opens and approves -> the remediate function -> the settle wait -> the
verify function. The execution history and a picture of the path taken are written to ``out/``.
Finally the workload is invoked again: healthy, with nothing restored by hand.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from incident_responder.lab.pipeline import IncidentRecord, LabPipeline, write_artifacts
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


def show_record(record: IncidentRecord) -> None:
    print(f"  incident {record.incident_id}: {record.status}")
    if record.error_category:
        print(f"  error: [{record.error_category}] {record.error_reason}")
    d = record.diagnosis
    if d:
        print(f"  root cause: {d['root_cause']}")
        print(f"  fault types: {', '.join(d['fault_types'])}; severity {d['severity']}; confidence {d['confidence']}")
        for e in d["evidence"]:
            mark = "verified" if e["verified"] else "UNVERIFIED"
            print(f"    [{mark}] {e['tool']} {e['field']} = {e['value'][:70]!r}: {e['interpretation']}")
        for step in d["remediation_plan"]:
            print(f"    plan: {step['action']} (risk {step['risk_level']}, evidence {step['evidence_basis']})")
    p = record.proposal
    if p:
        print(f"  proposal ({p['confidence']} confidence):")
        for a in p["actions"]:
            print(
                f"    {a['execution_order']}. {a['action_type']} on {a['target_resource']} [{a['risk_level']} risk, approval {'required' if a['requires_approval'] else 'not required'}]"
            )
            print(f"       {json.dumps(a['parameters'])[:160]}")
        for r in p["rejected_actions"]:
            print(f"    rejected by guardrails: {r['action']['action_type']}: {'; '.join(r['reasons'])}")
        if p["unresolvable_faults"]:
            print(f"    needs a person: {', '.join(p['unresolvable_faults'])}")
    review = record.review
    if review:
        print(f"  critic: {review.get('outcome')}: {review.get('summary')}")
        for v in review.get("verdicts", []):
            print(
                f"    action {v['execution_order']}: {v['verdict']}{' (policy: ' + '; '.join(v['policy']) + ')' if v.get('policy') else ''}"
            )
    approval = record.approval or {}
    if approval.get("approved_by"):
        print(
            f"  approved by {approval['approved_by']} ({approval.get('approval_channel')}) at {approval.get('approved_at')}"
        )
    if approval.get("rejected_by"):
        print(f"  rejected by {approval['rejected_by']}")
    remediation = record.remediation or {}
    verification = remediation.get("verification_json")
    if isinstance(verification, dict):
        print(f"  verification: {verification.get('outcome')}: {verification.get('summary')}")
    if remediation.get("rollback_reason"):
        print(f"  rolled back because {remediation['rollback_reason']}")
    m = record.metrics
    print(
        f"  {m['llm_calls']} model calls, {m['tool_calls']} tool calls, {m['total_tokens']} tokens, "
        f"grounded {m['grounded_ratio'] if m['grounded_ratio'] is not None else '-'}; {m['latency_ms']} ms alert to end"
    )
    for key, value in record.timings.items():
        print(f"    {key:<20} {value}")


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

        _step("the workload again, after the responder's own fix (nothing restored by hand)")
        after = pipeline.workload().invoke(3, notify=False)
        print(f"  {[i.status for i in after.invocations]}, alarm: {after.alert is not None}")
        print(f"  configuration back at its baseline: {record.end_state.get('matches_baseline')}")
    # The demo's story ends REMEDIATED and verified; any other end is a failed demo.
    ok = record.status == "REMEDIATED" and after.healthy
    print(f"\n{'REMEDIATED and verified' if ok else 'the demo did not reach REMEDIATED: ' + record.status}")
    return 0 if ok else 1
