"""``responder demo``: the project's main job on the embedded lab, end to end as far as it exists.

Start the lab, create and onboard the sample workload, break it, let it fail and raise its alarm,
then investigate through the diagnostics MCP server running as a separate process (real streamable
HTTP, bearer key read from SSM): first each tool by hand, then the supervisor agent, whose
diagnosis is printed with its evidence marked verified or not. Finally restore.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from typing import Any

import anyio
import httpx

from chaos.faults import FaultInjector
from incident_responder.alerts import parse_alert
from incident_responder.aws import AwsClients
from incident_responder.baseline import record_baseline
from incident_responder.investigation import InvestigationResult, run_investigation
from incident_responder.lab import Lab
from incident_responder.lab.account import create_sample_account
from incident_responder.lab.workload import BurstResult, DataProcessor
from incident_responder.mcp_client import mcp_session, tool_payload

FAULTS = {
    "iam_revoke": ("iam_revoke", {"target": "s3"}),
    "iam_revoke_logs": ("iam_revoke", {"target": "cloudwatch"}),
    "throttle": ("throttle", {"reserved_concurrency": 0}),
    "network_block": ("network_block", {}),
    "timeout": ("timeout", {"seconds": 1}),
    "memory": ("memory", {"mb": 128}),
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _step(text: str) -> None:
    print(f"\n== {text}")


def _show_burst(result: BurstResult) -> None:
    for outcome in result.invocations:
        detail = f"{outcome.error_type}: {outcome.error_message}"[:140] if outcome.error_type else ""
        logged = "" if outcome.logged else " (no log lines written)"
        print(f"  {outcome.request_id[:8]}  {outcome.status:<10} {detail}{logged}")
    if result.alert:
        print(f"  alert on SNS: {result.alert['AlarmName']} -> {result.alert['NewStateReason'][:100]}")
    else:
        print("  no alarm fired")


def start_mcp_server(name: str, port: int, env: dict[str, str]) -> subprocess.Popen:
    proc = subprocess.Popen(
        [sys.executable, "-m", "incident_responder.cli", "mcp", "serve", name, "--port", str(port)],
        env=env,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"MCP server {name} exited with code {proc.returncode}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.2)
    proc.terminate()
    raise RuntimeError(f"MCP server {name} did not become healthy on port {port}")


def _summarize(tool: str, payload: dict[str, Any]) -> list[str]:
    if payload.get("error"):
        return [f"error: {payload['error']}"]
    if tool == "get_recent_logs":
        events = payload["events"]
        lines = [f"{len(events)} events in {payload['log_group']} (last {payload['window_minutes']} min)"]
        interesting = [e for e in events if not e["message"].startswith(("START", "END", "REPORT"))]
        return lines + [f"  {e['message'].splitlines()[0][:150]}" for e in interesting[-4:]]
    if tool == "get_iam_state":
        return [
            f"role {payload['role_name']}: inline policies {sorted(payload['inline_policies'])}, "
            f"attached {payload['attached_policy_arns']}"
        ]
    if tool == "get_lambda_config":
        return [
            f"memory {payload['MemorySize']} MB, timeout {payload['Timeout']} s, reserved concurrency "
            f"{payload['ReservedConcurrentExecutions']}, state {payload['State']}"
        ]
    if tool == "get_network_config":
        groups = ", ".join(
            f"{g['group_id']}: {len(g['egress_rules'])} egress rule(s)" for g in payload["security_groups"]
        )
        acls = ", ".join(
            f"{s['network_acl_id']}: egress "
            + " ".join(f"#{e['RuleNumber']}={e['RuleAction']}" for e in s["entries"] if e.get("Egress"))
            for s in payload["subnets"]
        )
        return [f"in VPC {payload['vpc_id']}; {groups}; {acls}"]
    if tool == "get_config_drift":
        if not payload["drifted"]:
            return [f"no drift from the baseline captured at {payload['baseline_captured_at']}"]
        return [f"drift at {d['path']}" for d in payload["differences"]]
    return [str(payload)[:200]]


async def investigate(url: str, api_key: str, function_name: str) -> dict[str, dict[str, Any]]:
    found = {}
    async with mcp_session(url, api_key) as session:
        tools = [t.name for t in (await session.list_tools()).tools]
        print(f"  tools offered: {', '.join(tools)}")
        for tool in tools:
            payload = tool_payload(await session.call_tool(tool, {"lambda_name": function_name}))
            found[tool] = payload
            for line in _summarize(tool, payload):
                print(f"  {tool}: {line}")
    return found


def show_investigation(result: InvestigationResult) -> None:
    m = result.metrics
    print(f"  incident {result.incident_id}: {result.outcome} ({result.end_reason})")
    if result.diagnosis:
        d = result.diagnosis
        print(f"  root cause: {d['root_cause']}")
        print(f"  fault types: {', '.join(d['fault_types'])}; severity {d['severity']}; confidence {d['confidence']}")
        for e in d["evidence"]:
            mark = "verified" if e["verified"] else "UNVERIFIED"
            print(f"    [{mark}] {e['tool']} {e['field']} = {e['value'][:70]!r}: {e['interpretation']}")
        for step in d["remediation_plan"]:
            print(f"    plan: {step['action']} (risk {step['risk_level']}, evidence {step['evidence_basis']})")
    print(
        f"  {m.llm_calls} model calls, {m.tool_calls} tool calls ({', '.join(result.tools_called)}), "
        f"{m.total_tokens} tokens, {m.tool_output_bytes} bytes of tool output, grounded {m.grounded_ratio:.0%}"
    )
    if result.diagnosis_ref:
        print(f"  stored: {result.diagnosis_ref}")


def run_demo(fault: str = "iam_revoke") -> int:
    kind, params = FAULTS[fault]
    with Lab() as lab:
        os.environ.update(lab.env)
        _step(f"lab: moto server at {lab.endpoint_url}")
        clients = AwsClients()
        sample = create_sample_account(clients)
        record_baseline(clients, sample.function_name)
        print(f"  created and onboarded {sample.function_name} (baseline recorded in {sample.baseline_table})")
        workload = DataProcessor(clients, sample.function_name)
        _step("healthy burst of 3 invocations")
        _show_burst(workload.invoke(3))

        _step(f"chaos: {kind} {params}")
        injector = FaultInjector.for_function(sample.function_name, clients=clients)
        for line in getattr(injector, kind)(**params):
            print(f"  {line}")
        _step("burst of 3 invocations after the fault")
        burst = workload.invoke(3)
        _show_burst(burst)

        port = _free_port()
        server_env = {k: v for k, v in os.environ.items() if k != "MCP_API_KEY"}  # the server reads SSM
        _step(f"diagnostics MCP server (separate process) on 127.0.0.1:{port}, key from SSM")
        server = start_mcp_server("diagnostics", port, server_env)
        try:
            url = f"http://127.0.0.1:{port}/mcp"
            anyio.run(investigate, url, sample.api_key, sample.function_name)
            if burst.alert is not None:
                _step(
                    f"INVESTIGATING: supervisor agent (model: {os.environ.get('RESPONDER_MODEL', 'offline')}) over MCP"
                )
                os.environ.update(
                    DIAGNOSTICS_MCP_URL=url, MCP_API_KEY=sample.api_key, ARTIFACTS_BUCKET=sample.artifacts_bucket
                )
                result, _ = run_investigation(parse_alert(burst.alert), clients=clients)
                show_investigation(result)
            _step("chaos: restore")
            for line in injector.restore():
                print(f"  {line}")
            _step("burst after restore")
            result = workload.invoke(3)
            _show_burst(result)
        finally:
            server.terminate()
            server.wait(timeout=10)
    print(
        "\nNext: the state machine takes this alert through RECEIVED -> INVESTIGATING -> DIAGNOSED -> PROPOSAL_READY."
    )
    return 0 if result.healthy else 1
