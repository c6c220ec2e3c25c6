"""Benchmark: what one investigation costs, per fault and for combined faults.

For each case: inject the faults in a fresh lab, let the workload fail, run the investigator (offline
model) through the diagnostics MCP server over HTTP, and report model calls, tool calls and the bytes
of tool output sent to the model, beside a baseline that calls get_recent_logs, get_iam_state and
get_lambda_config unconditionally (the fixed gather-everything design). Prints a markdown table.
"""

from __future__ import annotations

import os
import socket
import sys
import tempfile
from pathlib import Path

import anyio

from chaos import FaultInjector
from incident_responder.account.baseline import record_baseline
from incident_responder.agent.protocol import quote_untrusted
from incident_responder.agent.tools import McpToolProvider, load_mcp_servers
from incident_responder.core.aws import AwsClients
from incident_responder.intake.alerts import parse_alert
from incident_responder.investigation.investigate import run_investigation
from incident_responder.lab import Lab
from incident_responder.lab.account.data_processor import create_sample_account
from incident_responder.lab.workloads.data_processor import DataProcessor
from incident_responder.mcp_transport.app import start_server_process as start_mcp_server

CASES = [
    ("iam s3", [("iam_revoke", {"target": "s3"})], {"permission_loss"}),
    ("iam cloudwatch", [("iam_revoke", {"target": "cloudwatch"})], {"permission_loss"}),
    ("iam both", [("iam_revoke", {"target": "both"})], {"permission_loss"}),
    ("throttle 0", [("throttle", {"reserved_concurrency": 0})], {"throttling"}),
    ("throttle 1", [("throttle", {"reserved_concurrency": 1})], {"throttling"}),
    ("network", [("network_block", {})], {"network_block"}),
    ("timeout", [("timeout", {"seconds": 1})], {"timeout"}),
    ("memory", [("memory", {"mb": 128})], {"memory_exhaustion"}),
    (
        "s3 + throttle 0",
        [("iam_revoke", {"target": "s3"}), ("throttle", {"reserved_concurrency": 0})],
        {"permission_loss", "throttling"},
    ),
    ("network + timeout", [("network_block", {}), ("timeout", {"seconds": 1})], {"network_block", "timeout"}),
    (
        "memory + s3",
        [("memory", {"mb": 128}), ("iam_revoke", {"target": "s3"})],
        {"memory_exhaustion", "permission_loss"},
    ),
    (
        "timeout + memory + throttle 1",
        [("timeout", {"seconds": 1}), ("memory", {"mb": 128}), ("throttle", {"reserved_concurrency": 1})],
        {"timeout", "memory_exhaustion", "throttling"},
    ),
]
BASELINE_TOOLS = ("get_recent_logs", "get_iam_state", "get_lambda_config")


async def baseline_bytes(function: str) -> int:
    async with McpToolProvider(load_mcp_servers()) as provider:
        total = 0
        for tool in BASELINE_TOOLS:
            raw = await provider.call_tool(tool, {"lambda_name": function})
            total += len(quote_untrusted(tool, raw.structured or {}))
        return total


def main() -> int:
    rows = []
    with Lab() as lab, tempfile.TemporaryDirectory() as state:
        os.environ.update(lab.env)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        key = "bench-key"
        server = start_mcp_server("diagnostics", port, {**os.environ, "MCP_API_KEY": key})
        os.environ.update(
            DIAGNOSTICS_MCP_URL=f"http://127.0.0.1:{port}/mcp", MCP_API_KEY=key, RESPONDER_MODEL="offline"
        )
        try:
            for name, faults, expected in CASES:
                lab.reset()
                clients = AwsClients()
                sample = create_sample_account(clients)
                record_baseline(clients, sample.function_name)
                os.environ["ARTIFACTS_BUCKET"] = sample.artifacts_bucket
                chaos = FaultInjector.for_function(sample.function_name, clients=clients, state_dir=Path(state))
                for kind, params in faults:
                    getattr(chaos, kind)(**params)
                burst = DataProcessor(clients).invoke(3)
                result, _ = run_investigation(parse_alert(burst.alert), clients=clients)
                found = set(result.diagnosis["fault_types"]) if result.diagnosis else set()
                fixed = anyio.run(baseline_bytes, sample.function_name)
                m = result.metrics
                rows.append(
                    (name, found == expected, m.llm_calls, m.tool_calls, m.tool_output_bytes, fixed, m.total_tokens)
                )
        finally:
            server.terminate()
    print(
        "| case | correct | model calls | tool calls | tool bytes to model | baseline bytes | agent / baseline | tokens (est.) |"
    )
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, ok, llm, tools, sent, fixed, tokens in rows:
        print(
            f"| {name} | {'yes' if ok else 'NO'} | {llm} | {tools} | {sent:,} | {fixed:,} | {sent / fixed:.2f} | {tokens:,} |"
        )
    agent_total = sum(r[4] for r in rows)
    fixed_total = sum(r[5] for r in rows)
    print(
        f"\n{sum(r[1] for r in rows)}/{len(rows)} correct; tool output sent to the model: agent {agent_total:,} B, "
        f"baseline (logs + IAM + config every time) {fixed_total:,} B, ratio {agent_total / fixed_total:.2f}"
    )
    return 0 if all(r[1] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
