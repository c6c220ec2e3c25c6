"""`make bench`: how fast, how cheap, how well it scales, against the design it replaces.

Writes bench/results.json and bench/results.md, and replaces the table between the BENCH markers in
README.md. Every figure comes from this one run on this machine, in the embedded lab, with the
offline model (so "model time" is the offline model's own time; with Bedrock it dominates).
Figures are medians and ratios; nothing here is a pass/fail test.

    latency      30 incidents through the closed loop, alert -> REMEDIATED (and -> PROPOSAL_READY): p50 / p95,
                 split into model, tools, the rest
    throughput   50 alerts published at once: all terminal, none lost or duplicated, incidents/s
    cold start   import time of each handler in a fresh process (bytecode precompiled)
    scaling      bytes of tool output sent to the model as the log group grows 100 -> 100,000 events
    cost         model calls, tool calls, tokens, Step Functions state transitions per incident
    baseline     gather logs + IAM + config unconditionally (truncated to a token budget) vs the agent
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "bench"
LATENCY_INCIDENTS = 30
THROUGHPUT_INCIDENTS = 50
LOG_SIZES = (100, 1_000, 10_000, 100_000)
BASELINE_TOKEN_BUDGET = 4_000  # the fixed design's context budget for gathered data
HANDLERS = [
    "handlers.ingest",
    "handlers.investigate",
    "handlers.propose",
    "handlers.diagnostics_mcp",
    "handlers.reconcile",
]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def _ms(stamp: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(stamp.replace("Z", "+00:00").replace("+0000", "+00:00")).timestamp() * 1000


def bench_latency_and_cost(pipeline, scenarios) -> dict[str, Any]:
    from incident_responder.lifecycle import history

    rows = []
    for i in range(LATENCY_INCIDENTS):
        scenario = scenarios[i % len(scenarios)]
        record = pipeline.run(scenario)  # the whole closed loop, the lab's person approving the link
        pipeline.restore(scenario.workload.function)
        events = history(pipeline.clients.get("stepfunctions"), record.execution["arn"])
        transitions = sum(1 for e in events if e["type"].endswith("StateEntered"))
        m = record.metrics
        # The first half's share: everything after PROPOSAL_READY was recorded is the closed loop.
        after_proposal = _ms(record.timings["ended_at"]) - _ms(record.timings["proposal_ready_at"])
        rows.append(
            {
                **m,
                "transitions": transitions,
                "status": record.status,
                "to_proposal_ms": m["latency_ms"] - after_proposal,
            }
        )
    total = [r["latency_ms"] for r in rows]
    to_proposal = [r["to_proposal_ms"] for r in rows]
    return {
        "incidents": len(rows),
        "all_remediated": all(r["status"] == "REMEDIATED" for r in rows),
        "latency_ms_p50": percentile(total, 0.5),
        "latency_ms_p95": percentile(total, 0.95),
        "to_proposal_ready_ms_p50": percentile(to_proposal, 0.5),
        "to_proposal_ready_ms_p95": percentile(to_proposal, 0.95),
        "model_ms_p50": statistics.median(r["model_ms"] for r in rows),
        "tool_ms_p50": statistics.median(r["tool_ms"] for r in rows),
        "state_machine_and_rest_ms_p50": statistics.median(
            r["latency_ms"] - r["model_ms"] - r["tool_ms"] for r in rows
        ),
        "per_incident": {
            "llm_calls_median": statistics.median(r["llm_calls"] for r in rows),
            "tool_calls_median": statistics.median(r["tool_calls"] for r in rows),
            "tokens_median": statistics.median(r["total_tokens"] for r in rows),
            "state_transitions_median": statistics.median(r["transitions"] for r in rows),
        },
    }


def bench_throughput(pipeline) -> dict[str, Any]:
    from incident_responder.lab.scenario import Scenario
    from incident_responder.lifecycle import TERMINAL_STATUSES

    # The first half only: 50 incidents waiting for a person would measure the approval timeout.
    pipeline.stack_parameters["RemediationMode"] = "propose_only"
    pipeline.refresh()
    # The fault the alerts are about; the alerts come from outside (no workload burst, whose own alarm
    # would add a 51st incident).
    pipeline.inject(Scenario.model_validate({"name": "t", "faults": [{"kind": "timeout", "seconds": 1}]}))
    sns = pipeline.clients.get("sns")
    topic = pipeline.stack.output("IncidentTopicArn")
    alerts = [
        json.dumps(
            {
                "function_name": "data-processor",
                "detected_at": "2026-11-23T05:00:00Z",
                "alert_id": f"load-{i}",
                "error_type": "Sandbox.Timedout",
            }
        )
        for i in range(THROUGHPUT_INCIDENTS)
    ]
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=10) as pool:
        list(pool.map(lambda message: sns.publish(TopicArn=topic, Message=message), alerts))
    sfn = pipeline.clients.get("stepfunctions")
    deadline = time.monotonic() + 900
    while time.monotonic() < deadline:
        executions = sfn.list_executions(stateMachineArn=pipeline.state_machine_arn)["executions"]
        if len(executions) >= THROUGHPUT_INCIDENTS and all(e["status"] != "RUNNING" for e in executions):
            break
        time.sleep(0.5)
    elapsed = time.monotonic() - started
    ddb = pipeline.clients.get("dynamodb")
    items = [
        i
        for i in ddb.scan(TableName=pipeline.stack.physical["IncidentStateTable"])["Items"]
        if "#" not in i["incident_id"]["S"] and "status" in i  # incidents, not counters, groups or ledgers
    ]
    statuses = [i["status"]["S"] for i in items]
    return {
        "alerts": THROUGHPUT_INCIDENTS,
        "executions": len(executions),
        "incidents_recorded": len(items),
        "terminal": sum(s in TERMINAL_STATUSES for s in statuses),
        "proposal_ready": statuses.count("PROPOSAL_READY"),
        "seconds": round(elapsed, 1),
        "incidents_per_second": round(len(items) / elapsed, 2),
    }


def bench_scaling(pipeline) -> list[dict[str, Any]]:
    from incident_responder.lab.log_volume import fill_log_group
    from incident_responder.lab.scenario import Scenario

    rows = []
    for size in LOG_SIZES:
        pipeline.refresh()
        # Noise first, in the function's own log group, then the fault and its real log lines.
        group = "/aws/lambda/data-processor"
        pipeline.clients.get("logs").delete_log_group(logGroupName=group)
        fill_log_group(pipeline.clients, group, size, streams=20, message_len=200)
        record = pipeline.run(
            Scenario.model_validate({"name": f"scale-{size}", "faults": [{"kind": "memory", "mb": 128}]})
        )
        rows.append(
            {
                "events_in_group": size,
                "tool_bytes_to_model": record.metrics["tool_output_bytes"],
                "estimated_tokens": record.metrics["total_tokens"],
                "correct": (record.diagnosis or {}).get("fault_types") == ["memory_exhaustion"],
            }
        )
    return rows


def bench_baseline(pipeline, scenarios) -> dict[str, Any]:
    """The fixed design: logs + IAM + config every time, truncated to a token budget, one diagnosis."""
    import anyio
    from langchain_core.messages import HumanMessage, ToolMessage

    from incident_responder.agent.graph import quote_untrusted
    from incident_responder.agent.offline import Observations, build_diagnosis
    from incident_responder.agent.tools import McpToolProvider, load_mcp_servers

    budget_chars = BASELINE_TOKEN_BUDGET * 4
    # The lab's function URLs are AWS_IAM, as deployed: requests are SigV4-signed with the lab's credentials.
    os.environ.update(DIAGNOSTICS_MCP_URL=pipeline.mcp_url, MCP_AUTH="iam")
    os.environ.pop("MCP_API_KEY", None)
    agent = {"calls": 0, "bytes": 0, "correct": 0}
    fixed = {"calls": 0, "bytes": 0, "correct": 0}
    for scenario in scenarios:
        pipeline.refresh()
        record = pipeline.run(scenario)
        expected = sorted(f.value for f in scenario.expect.fault_types)
        agent["calls"] += record.metrics["tool_calls"]
        agent["bytes"] += record.metrics["tool_output_bytes"]
        agent["correct"] += sorted((record.diagnosis or {}).get("fault_types", [])) == expected

        async def gather(function: str) -> list[tuple[str, str]]:
            async with McpToolProvider(load_mcp_servers(only=("diagnostics",))) as provider:
                out = []
                for tool in ("get_recent_logs", "get_iam_state", "get_lambda_config"):
                    raw = await provider.call_tool(tool, {"lambda_name": function})
                    out.append((tool, quote_untrusted(tool, raw.structured or {})))
                return out

        gathered = anyio.run(gather, scenario.workload.function)
        text = "".join(body for _, body in gathered)
        kept, remaining = [], budget_chars
        for tool, body in gathered:  # truncation keeps whole results only (a cut JSON document is useless)
            if len(body) <= remaining:
                kept.append((tool, body))
                remaining -= len(body)
        fixed["calls"] += len(gathered)
        fixed["bytes"] += min(len(text), budget_chars)
        messages = [
            HumanMessage(f"<incident>\n{json.dumps({'function_name': scenario.workload.function})}\n</incident>")
        ]
        messages += [ToolMessage(body, tool_call_id=tool, name=tool) for tool, body in kept]
        diagnosis = build_diagnosis(Observations(messages))
        fixed["correct"] += sorted(diagnosis["fault_types"]) == expected
    n = len(scenarios)
    return {
        "scenarios": n,
        "agent": {"tool_calls": agent["calls"], "bytes_to_model": agent["bytes"], "correct": f"{agent['correct']}/{n}"},
        "fixed_gather": {
            "tool_calls": fixed["calls"],
            "bytes_to_model": fixed["bytes"],
            "correct": f"{fixed['correct']}/{n}",
        },
        "token_budget": BASELINE_TOKEN_BUDGET,
    }


def bench_cold_start() -> list[dict[str, Any]]:
    import compileall

    compileall.compile_dir(str(REPO / "incident_responder"), quiet=1)
    compileall.compile_dir(str(REPO / "handlers"), quiet=1)
    rows = []
    for module in HANDLERS:
        times = []
        for _ in range(3):
            env = {"PATH": os.environ["PATH"], "AWS_DEFAULT_REGION": "us-east-1", "POWERTOOLS_TRACE_DISABLED": "1"}
            started = time.perf_counter()
            subprocess.run([sys.executable, "-c", f"import {module}"], cwd=REPO, env=env, check=True)
            times.append(time.perf_counter() - started)
        rows.append({"handler": module, "import_s_median": round(statistics.median(times), 2)})
    return rows


def bench_artifact_sizes() -> list[dict[str, Any]]:
    """Unzipped size of each `sam build` artifact (function code, and the shared dependencies layer)."""
    import tempfile

    sam = REPO / ".tools" / "venv" / "bin" / "sam"
    if not sam.exists():
        return []
    with tempfile.TemporaryDirectory() as build:
        env = {**os.environ, "SAM_CLI_TELEMETRY": "0", "AWS_DEFAULT_REGION": "us-east-1"}
        for key in ("AWS_ENDPOINT_URL",):
            env.pop(key, None)
        subprocess.run(
            [str(sam), "build", "--build-in-source", "--build-dir", build, "--template", "template.yaml"],
            cwd=REPO,
            env=env,
            check=True,
            capture_output=True,
        )
        rows = []
        for artifact in sorted(Path(build).iterdir()):
            if artifact.is_dir():
                size = sum(f.stat().st_size for f in artifact.rglob("*") if f.is_file())
                rows.append({"artifact": artifact.name, "unzipped_mb": round(size / 2**20, 1)})
        return rows


def markdown(results: dict[str, Any]) -> str:
    lat, thr, base = results["latency"], results["throughput"], results["baseline"]
    lines = [
        "| measure | result |",
        "| --- | --- |",
        f"| latency, alert -> REMEDIATED, closed loop with the lab's approver ({lat['incidents']} incidents) | p50 {lat['latency_ms_p50']} ms, p95 {lat['latency_ms_p95']} ms |",
        f"| ... of which alert -> PROPOSAL_READY | p50 {lat['to_proposal_ready_ms_p50']} ms, p95 {lat['to_proposal_ready_ms_p95']} ms |",
        f"| ... of which model / tools / state machine and the rest (p50) | {lat['model_ms_p50']} / {lat['tool_ms_p50']} / {lat['state_machine_and_rest_ms_p50']} ms |",
        f"| throughput ({thr['alerts']} alerts at once) | {thr['terminal']}/{thr['alerts']} terminal, {thr['incidents_recorded']} recorded, {thr['executions']} executions, {thr['incidents_per_second']} incidents/s |",
        f"| per incident (median) | {lat['per_incident']['llm_calls_median']} model calls, {lat['per_incident']['tool_calls_median']} tool calls, {lat['per_incident']['tokens_median']} tokens (estimated), {lat['per_incident']['state_transitions_median']} state transitions |",
    ]
    for row in results["scaling"]:
        lines.append(
            f"| tool output to the model, {row['events_in_group']:,} events in the log group | {row['tool_bytes_to_model']:,} bytes, correct: {row['correct']} |"
        )
    for row in results["cold_start"]:
        lines.append(
            f"| cold import `{row['handler']}` (python {sys.version_info.major}.{sys.version_info.minor}, bytecode precompiled) | {row['import_s_median']} s |"
        )
    layer = next((r["unzipped_mb"] for r in results.get("artifacts", []) if r["artifact"] == "DependenciesLayer"), None)
    functions = [r for r in results.get("artifacts", []) if r["artifact"] != "DependenciesLayer"]
    if layer is not None and functions:
        largest = max(functions, key=lambda r: r["unzipped_mb"])
        lines.append(
            f"| unzipped `sam build` artifacts (Lambda limit 250 MB with layers) | dependencies layer {layer} MB; "
            f"largest function {largest['artifact']} {largest['unzipped_mb']} MB |"
        )
    lines.append(
        f"| agent vs fixed gather ({base['scenarios']} scenarios) | agent: {base['agent']['tool_calls']} calls, {base['agent']['bytes_to_model']:,} bytes, {base['agent']['correct']} correct; "
        f"fixed: {base['fixed_gather']['tool_calls']} calls, {base['fixed_gather']['bytes_to_model']:,} bytes, {base['fixed_gather']['correct']} correct |"
    )
    return "\n".join(lines) + "\n"


def main() -> int:
    from incident_responder.lab.pipeline import LabPipeline
    from incident_responder.lab.scenario import load_scenario

    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    corpus = [load_scenario(p) for p in sorted((REPO / "scenarios").glob("*.yaml"))]
    single = [
        s for s in corpus if s.expect.status == "REMEDIATED" and len(s.faults) == 1 and s.lifecycle.approval is None
    ]
    results: dict[str, Any] = {}
    import contextlib

    with (
        contextlib.redirect_stdout(sys.stderr),
        LabPipeline.start(parameters={"MaxIncidentsPerHour": "100000"}) as pipeline,
    ):
        results["latency"] = bench_latency_and_cost(pipeline, single)
        results["throughput"] = bench_throughput(pipeline)
        results["scaling"] = bench_scaling(pipeline)
        results["baseline"] = bench_baseline(pipeline, corpus)
    results["cold_start"] = bench_cold_start()
    results["artifacts"] = bench_artifact_sizes()
    OUT.mkdir(exist_ok=True)
    (OUT / "results.json").write_text(json.dumps(results, indent=2))
    table = markdown(results)
    (OUT / "results.md").write_text(table)
    readme = REPO / "README.md"
    text = readme.read_text()
    start, end = "<!-- BENCH:START -->", "<!-- BENCH:END -->"
    if start in text and end in text:
        readme.write_text(text[: text.index(start) + len(start)] + "\n" + table + text[text.index(end) :])
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
