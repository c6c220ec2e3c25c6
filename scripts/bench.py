"""`make bench`: how fast, how cheap, how well it scales, against the design it replaces.

Writes bench/results.json and bench/results.md, and replaces each table between its BENCH markers
(``<!-- BENCH:<table>:START -->`` ... ``END``) in docs/evaluation.md. Every figure comes from this one run on this machine, in the embedded lab, with the
offline model (so "model time" is the offline model's own time; with Bedrock it dominates).
Figures are medians and ratios; nothing here is a pass/fail test.

    latency      30 incidents, one after another, alert -> PROPOSAL_READY (RemediationMode propose_only):
                 p50 / p95, split by lifecycle phase and into model, tools and the rest
    throughput   50 alerts for distinct incidents published at once (breaker raised), in a lab whose functions
                 run in worker processes and in the serialized lab (handlers in-process, one at a time), in
                 the same run: all terminal, none lost or duplicated, incidents/s, and the ratio
    corpus       every scenario through the closed loop over the Converse wire at the default model: tokens per
                 incident (per agent) beside accuracy, cost per incident at list prices with and without caching,
                 alert -> REMEDIATED p50 / p95
    cold start   each handler's import (and import + first call) in fresh processes beside `import boto3`
    size         each `sam build` artifact unzipped and zipped, and each function with its layers
    scaling      bytes of tool output sent to the model as the log group grows 100 -> 100,000 events
    baseline     gather logs + IAM + config unconditionally (truncated to a token budget) vs the agent
    memory       each scenario with earlier incidents: its own incident with the history they left and without it
                 (`python scripts/bench.py memory` measures this table alone)
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
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


# Lifecycle phases of alert -> PROPOSAL_READY, from the incident's own timestamps.
PHASES = (
    ("alert -> investigating", "detected_at", "investigating_at"),
    ("investigating -> diagnosed", "investigating_at", "diagnosed_at"),
    ("diagnosed -> proposing", "diagnosed_at", "proposing_at"),
    ("proposing -> proposal ready", "proposing_at", "proposal_ready_at"),
)
RAISED_BREAKER = {"MaxIncidentsPerHour": "100000", "MaxIncidentsPerFunctionPerHour": "100000"}


def bench_latency(pipeline, scenarios) -> dict[str, Any]:
    """alert -> PROPOSAL_READY, one incident at a time (the lab's functions warm after the first)."""
    from incident_responder.state.lifecycle import history

    rows = []
    for i in range(LATENCY_INCIDENTS):
        scenario = scenarios[i % len(scenarios)]
        record = pipeline.run(scenario)
        events = history(pipeline.clients.get("stepfunctions"), record.execution["arn"]) if record.execution else []
        if pipeline.clean_restore():  # not clean (a scenario's setup): a fresh lab
            pipeline.refresh()
        t = record.timings
        if record.status != "PROPOSAL_READY":
            rows.append({"status": record.status})
            continue
        m = record.metrics
        rows.append(
            {
                **m,
                "status": record.status,
                "alert_to_proposal_ms": _ms(t["proposal_ready_at"]) - _ms(t["detected_at"]),
                "phases": {name: _ms(t[b]) - _ms(t[a]) for name, a, b in PHASES},
                "transitions": sum(1 for e in events if e["type"].endswith("StateEntered")),
            }
        )
    done = [r for r in rows if r["status"] == "PROPOSAL_READY"]
    total = [r["alert_to_proposal_ms"] for r in done]
    return {
        "incidents": len(rows),
        "proposal_ready": len(done),
        "alert_to_proposal_ready_ms_p50": percentile(total, 0.5),
        "alert_to_proposal_ready_ms_p95": percentile(total, 0.95),
        "phases_ms_p50": {name: statistics.median(r["phases"][name] for r in done) for name, _, _ in PHASES},
        "model_ms_p50": statistics.median(r["model_ms"] for r in done),
        "tool_ms_p50": statistics.median(r["tool_ms"] for r in done),
        "per_incident": {
            "llm_calls_median": statistics.median(r["llm_calls"] for r in done),
            "tool_calls_median": statistics.median(r["tool_calls"] for r in done),
            "state_transitions_median": statistics.median(r["transitions"] for r in done),
        },
    }


def _machine_cpu_seconds() -> float | None:
    """CPU time every core of this machine spent busy since boot (Linux /proc/stat), whatever process ran."""
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    except OSError:
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(f) for f in fields[:8])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def bench_throughput(pipeline) -> dict[str, Any]:
    """50 alerts for distinct incidents at once; the wait for them is event-driven (the lab's moto runs here)."""
    from incident_responder.lab.changes import LAB_CHANGES
    from incident_responder.lab.scenario import Scenario
    from incident_responder.state import keys
    from incident_responder.state.lifecycle import TERMINAL_STATUSES

    # The fault the alerts are about; the alerts come from outside (no workload burst, whose own alarm
    # would add a 51st incident).
    pipeline.inject(Scenario.model_validate({"name": "t", "faults": [{"kind": "timeout", "seconds": 1}]}))
    sns = pipeline.clients.get("sns")
    sfn = pipeline.clients.get("stepfunctions")
    topic = pipeline.stack.output("IncidentTopicArn")
    # Fifty alerts for different faults of the function: project alerts with fifty error types (alerts of one
    # fault, whichever alarm says so, are grouped into one incident on purpose: see intake.alerts.fault_signature).
    detected = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    alerts = [
        json.dumps(
            {
                "function_name": "data-processor",
                "detected_at": detected,
                "error_type": f"LoadError{i}",
                "error_message": "Task timed out after 1.00 seconds",
            }
        )
        for i in range(THROUGHPUT_INCIDENTS)
    ]
    changes = LAB_CHANGES.seen("execution")
    started, busy_before, lab_before = time.monotonic(), _machine_cpu_seconds(), time.process_time()
    with ThreadPoolExecutor(max_workers=10) as pool:
        list(pool.map(lambda message: sns.publish(TopicArn=topic, Message=message), alerts))
    deadline = time.monotonic() + 900
    while True:
        pages = sfn.get_paginator("list_executions").paginate(stateMachineArn=pipeline.state_machine_arn)
        executions = [e for page in pages for e in page["executions"]]
        ended = len(executions) >= THROUGHPUT_INCIDENTS and all(e["status"] != "RUNNING" for e in executions)
        if ended or time.monotonic() > deadline:
            break
        changes = LAB_CHANGES.wait(changes, "execution", timeout=5)
    elapsed = time.monotonic() - started
    busy_after, lab_cpu = _machine_cpu_seconds(), time.process_time() - lab_before
    ddb = pipeline.clients.get("dynamodb")
    items = [
        i
        for page in ddb.get_paginator("scan").paginate(TableName=pipeline.stack.physical["IncidentStateTable"])
        for i in page["Items"]
        if keys.is_incident(i["incident_id"]["S"]) and "status" in i  # incidents, not counters, groups or ledgers
    ]
    statuses = [i["status"]["S"] for i in items]
    ids = [i["incident_id"]["S"] for i in items]
    pipeline.restore()
    return {
        "alerts": THROUGHPUT_INCIDENTS,
        "executions": len(executions),
        "incidents_recorded": len(items),
        "distinct_incidents": len(set(ids)),
        "terminal": sum(s in TERMINAL_STATUSES for s in statuses),
        "proposal_ready": statuses.count("PROPOSAL_READY"),
        "seconds": round(elapsed, 1),
        "incidents_per_second": round(len(items) / elapsed, 2),
        "cold_starts": {name.split("-")[2]: len(ms) for name, ms in pipeline.dispatcher.cold_starts().items()},
        # Where the ceiling is: cores busy on average (every process), and the lab's own process (moto, the
        # state machine engine; one interpreter) in cores. Throughput cannot pass cores / busy cores of a
        # serialized run, nor 1 / the lab process's CPU seconds per incident.
        "cores": os.cpu_count(),
        "busy_cores": None if busy_before is None else round((busy_after - busy_before) / elapsed, 2),
        "lab_process_cores": round(lab_cpu / elapsed, 2),
        "lab_process_cpu_ms_per_incident": round(lab_cpu / max(len(items), 1) * 1000),
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

    from incident_responder.agent.offline.diagnosis import build_diagnosis
    from incident_responder.agent.offline.observations import Observations
    from incident_responder.agent.protocol import quote_untrusted
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


def bench_cold_start() -> dict[str, Any]:
    sys.path.insert(0, str(REPO / "scripts"))
    import cold_start

    return cold_start.measure(list(cold_start.HANDLERS), runs=3)


def bench_artifact_sizes() -> dict[str, Any]:
    """Each `sam build` artifact (unzipped, zipped) and each function with every layer it may get."""
    import tempfile

    sys.path.insert(0, str(REPO / "scripts"))
    import artifacts

    sam = REPO / ".tools" / "venv" / "bin" / "sam"
    if not sam.exists():
        return {"skipped": "sam is not installed here (make tools)"}
    with tempfile.TemporaryDirectory() as build:
        env = {**os.environ, "SAM_CLI_TELEMETRY": "0", "AWS_DEFAULT_REGION": "us-east-1"}
        env.pop("AWS_ENDPOINT_URL", None)
        subprocess.run(
            [str(sam), "build", "--build-dir", build, "--template", "template.yaml"],
            cwd=REPO,
            env=env,
            check=True,
            capture_output=True,
        )
        return {
            "artifacts": artifacts.artifact_sizes(Path(build)),
            "deployments": artifacts.deployments(Path(build)),
        }


def bench_corpus() -> dict[str, Any]:
    """The whole corpus through the closed loop, over the Converse wire at the default model: tokens per incident
    beside accuracy (a saving never hides a loss), and what each incident would cost at the default model's list
    prices with Bedrock's prompt caching (as the local Converse server accounts for it: lab/converse/backends.py's
    PromptCache) and without. The conversations are the offline model's; a real model's differ (more turns)."""
    from unittest import mock

    from incident_responder.agent.model_catalog import DEFAULT_MODEL, LIST_PRICES, base_model_id
    from incident_responder.lab.converse.backends import OfflineBackend, PromptCache
    from incident_responder.lab.converse.gateway import ConverseGateway
    from incident_responder.lab.evaluation import evaluate
    from incident_responder.lab.tokens import by_agent, by_tool, cost_summary, token_summary

    with ConverseGateway(OfflineBackend(PromptCache())) as bedrock:
        user = {
            "AWS_ACCESS_KEY_ID": "AKIABENCH",
            "AWS_SECRET_ACCESS_KEY": "bench",
            "AWS_REGION": "us-east-1",
            "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": bedrock.url,
        }
        unset = ("AWS_PROFILE", "AWS_SESSION_TOKEN", "PRICE_PER_MTOK_INPUT", "PRICE_PER_MTOK_OUTPUT")
        with mock.patch.dict(os.environ, user):
            for key in unset:
                os.environ.pop(key, None)
            # The functions act as their own roles, so the lab counts their AWS calls apart from its own.
            report = evaluate(REPO / "scenarios", model=DEFAULT_MODEL, count_calls=True)
    prices = LIST_PRICES[base_model_id(DEFAULT_MODEL.partition(":")[2])]
    return {
        **token_summary(report.scenarios),
        "model": DEFAULT_MODEL,
        "prices_per_mtok": {
            "input": prices.input,
            "output": prices.output,
            "cache_read": prices.cache_read,
            "cache_write": prices.cache_write,
        },  # fmt: skip
        "cost_usd": cost_summary(report.scenarios, prices),
        # The responder's AWS calls per incident (alert to report), in all and by API.
        "aws_calls_per_incident": report.summary.get("aws_calls"),
        # Where they go: tokens, turns and cost per agent, tool calls and their answers' tokens per tool.
        "by_agent": by_agent(report.scenarios, prices),
        "by_tool": by_tool(report.scenarios),
        "summary": report.summary,
    }


def bench_memory(scenarios) -> list[dict[str, Any]]:
    """Each scenario with earlier incidents (the function's past) in one lab, its own incident twice: with the history
    its earlier incidents left, and with that history deleted just before (the same incident without memory). The
    offline model's turns and tokens, and the time from the alert to the incident's end."""
    from incident_responder.lab.evaluation import approved_by
    from incident_responder.lab.pipeline.startup import LabPipeline

    rows = []
    with LabPipeline.start() as pipeline:
        for index, scenario in enumerate(scenarios):
            row: dict[str, Any] = {"scenario": scenario.name}
            for memory in (True, False):
                pipeline.ready_for(scenario, fresh=index == 0 and memory)
                record = pipeline.run(scenario, memory=memory)
                row["with_memory" if memory else "without_memory"] = {
                    "status": record.status,
                    "approved_by": approved_by(record),
                    "investigation_turns": record.metrics["turns_by_agent"]["investigation"],
                    "investigation_tokens": record.metrics["tokens_by_agent"]["investigation"],
                    "total_tokens": record.metrics["total_tokens"],
                    "alert_to_end_ms": record.metrics["latency_ms"],
                }
            rows.append(row)
    return rows


WHO = {"person": "a person", "policy": "AutoApprove", None: "nobody"}


def memory_rows(rows: list[dict[str, Any]]) -> list[str]:
    table = [
        "| scenario | memory | end (approved by) | investigation: turns, tokens | all agents: tokens | alert -> end |",
        "| --- | --- | --- | ---: | ---: | ---: |",
    ]
    for row in rows:
        for key, label in (("with_memory", "with"), ("without_memory", "without")):
            r = row[key]
            table.append(
                f"| {row['scenario'] if key == 'with_memory' else ''} | {label} | {r['status']} ({WHO[r['approved_by']]}) "
                f"| {r['investigation_turns']}, {r['investigation_tokens']:,} | {r['total_tokens']:,} | {r['alert_to_end_ms'] / 1000:.1f} s |"
            )
    return table


def cost_rows(corpus: dict[str, Any]) -> list[str]:
    cost, p = corpus["cost_usd"], corpus["prices_per_mtok"]
    with_, without = cost["with_caching"], cost["without_caching"]
    prices = f"${p['input']:g} in / ${p['output']:g} out / ${p['cache_read']:g} cache read / ${p['cache_write']:g} cache write per million tokens"
    return [
        f"| cost per incident at {corpus['model'].partition(':')[2]} list prices ({prices}), prompt caching on | median ${with_['median']:.4f}, mean ${with_['mean']:.4f}, p95 ${with_['p95']:.4f}; corpus ${with_['total']:.2f}; {cost['cache_read_share']:.0%} of input read from the cache, {cost['cache_write_share']:.0%} written |",
        f"| ... prompt caching off | median ${without['median']:.4f}, mean ${without['mean']:.4f}, p95 ${without['p95']:.4f}; corpus ${without['total']:.2f} |",
    ]


DOCS_PAGE = REPO / "docs" / "evaluation.md"


def aws_call_rows(corpus: dict[str, Any]) -> list[str]:
    calls = corpus.get("aws_calls_per_incident")
    if not calls:
        return []
    top = ", ".join(f"{api} {n:g}" for api, n in list(calls["by_api_per_incident"].items())[:6])
    return [
        f"| the responder's AWS calls per incident, alert to report | median {calls['median']:g}, p95 {calls['p95']}, max {calls['max']}; REMEDIATED median {calls['remediated_median']:g} |",
        f"| ... the APIs called most (per incident, mean) | {top} |",
    ]


def spend_rows(corpus: dict[str, Any]) -> list[str]:
    """Where an incident's tokens, cost and AWS calls go: per agent, per tool and per function of the stack."""
    agents, tools = corpus.get("by_agent"), corpus.get("by_tool")
    calls = corpus.get("aws_calls_per_incident") or {}
    if not agents or not tools:
        return ["(no spend per agent and tool: run `make bench`)"]
    rows = [
        "| agent | tokens per incident (median, mean) | model turns (mean) | cost per incident, caching on (median, mean) | input read from the cache |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for agent, a in agents.items():
        share = "" if a["cache_read_share"] is None else f"{a['cache_read_share']:.0%}"
        rows.append(
            f"| {agent} | {a['tokens']['median']:,.0f}, {a['tokens']['mean']:,.0f} | {a['turns_mean']:g} | ${a['cost_usd']['median']:.4f}, ${a['cost_usd']['mean']:.4f} | {share} |"
        )
    rows += [
        "",
        "| tool | calls per incident (mean) | tokens of its answers per incident (mean) |",
        "| --- | ---: | ---: |",
    ]
    rows += [f"| `{tool}` | {t['calls']:g} | {t['tokens']:,} |" for tool, t in tools.items()]
    functions = calls.get("by_function_per_incident") or {}
    rows += ["", "| function | the responder's AWS calls per incident (mean) |", "| --- | ---: |"]
    rows += [f"| {name} | {n:g} |" for name, n in functions.items()]
    return rows


def tables(results: dict[str, Any]) -> dict[str, str]:
    """The docs page's tables, by marker name: lifecycle, scaling, cold-start, sizes."""
    lat, thr, base, corpus = results["latency"], results["throughput"], results["baseline"], results["corpus"]
    workers, serial = thr["workers"], thr["serialized"]
    phases = ", ".join(f"{name} {ms:.0f}" for name, ms in lat["phases_ms_p50"].items())
    tokens = corpus["tokens_per_incident"]
    agents = ", ".join(f"{agent} {stats['median']:.0f}" for agent, stats in corpus["tokens_per_agent"].items())
    header = ["| measure | result |", "| --- | --- |"]
    lifecycle = [
        *header,
        f"| latency, alert -> PROPOSAL_READY ({lat['proposal_ready']}/{lat['incidents']} incidents, one at a time) | p50 {lat['alert_to_proposal_ready_ms_p50']:.0f} ms, p95 {lat['alert_to_proposal_ready_ms_p95']:.0f} ms |",
        f"| ... by phase (p50, ms) | {phases} |",
        f"| ... model / tools (p50) | {lat['model_ms_p50']} / {lat['tool_ms_p50']} ms |",
        f"| throughput, {workers['alerts']} alerts at once, functions in worker processes | {workers['incidents_per_second']} incidents/s; {workers['terminal']}/{workers['alerts']} terminal, {workers['distinct_incidents']} distinct incidents, {workers['executions']} executions |",
        f"| throughput, the same, handlers serialized in one process | {serial['incidents_per_second']} incidents/s; {serial['terminal']}/{serial['alerts']} terminal ({thr['ratio']}x with workers) |",
        f"| ... CPU in use (of {workers['cores']} cores): serialized / workers | {serial['busy_cores']} / {workers['busy_cores']} cores busy; the lab process (moto, state machine engine) {serial['lab_process_cores']} / {workers['lab_process_cores']} cores, {serial['lab_process_cpu_ms_per_incident']} / {workers['lab_process_cpu_ms_per_incident']} ms per incident |",
        f"| corpus ({corpus['accuracy']['total']} scenarios, closed loop) | {corpus['accuracy']['passed']}/{corpus['accuracy']['total']} pass; alert -> REMEDIATED p50 {corpus['summary']['alert_to_remediated_ms_p50']} ms, p95 {corpus['summary']['alert_to_remediated_ms_p95']} ms |",
        f"| tokens per incident (estimated, whole corpus) | median {tokens['median']:.0f}, mean {tokens['mean']:.0f}, p95 {tokens['p95']}; per agent (median): {agents} |",
        *cost_rows(corpus),
        *aws_call_rows(corpus),
        f"| per incident to PROPOSAL_READY (median) | {lat['per_incident']['llm_calls_median']} model calls, {lat['per_incident']['tool_calls_median']} tool calls, {lat['per_incident']['state_transitions_median']} state transitions |",
    ]
    scaling = [*header]
    for row in results["scaling"]:
        scaling.append(
            f"| tool output to the model, {row['events_in_group']:,} events in the log group | {row['tool_bytes_to_model']:,} bytes, correct: {row['correct']} |"
        )
    scaling.append(
        f"| agent vs fixed gather ({base['scenarios']} scenarios) | agent: {base['agent']['tool_calls']} calls, {base['agent']['bytes_to_model']:,} bytes, {base['agent']['correct']} correct; "
        f"fixed: {base['fixed_gather']['tool_calls']} calls, {base['fixed_gather']['bytes_to_model']:,} bytes, {base['fixed_gather']['correct']} correct |"
    )
    cold = results["cold_start"]
    cold_rows = [
        *header,
        f"| cold import `boto3` (python {cold['python']}, bytecode precompiled) | {cold['boto3']['import_s']} s |",
    ]
    for floor in cold.get("floors", []):
        cold_rows.append(
            f"| cold import `{floor['module']}` alone (the floor under an agent handler) | {floor['import_s']} s, {floor['ratio']}x boto3 |"
        )
    for row in cold["handlers"]:
        target = "" if row["target"] is None else f" (target <= {row['target']:g}x)"
        first = "" if row["first_call_s"] is None else f"; import + first call {row['first_call_s']} s"
        cold_rows.append(
            f"| cold import `{row['handler']}` | {row['import_s']} s, {row['ratio']}x boto3{target}{first} |"
        )
    sizes = results.get("size", {})
    size_rows = ["| artifact | unzipped | zipped |", "| --- | ---: | ---: |"]
    for row in sizes.get("artifacts", []):
        zipped = "" if row.get("zipped_bytes") is None else f"{row['zipped_bytes'] / 2**20:.1f} MiB"
        size_rows.append(f"| `{row['name']}` ({row['kind']}) | {row['bytes'] / 2**20:.1f} MiB | {zipped} |")
    if sizes.get("deployments"):
        largest = sizes["deployments"][0]
        size_rows.append(
            f"| largest function with its layers: {largest['function']} (Lambda's limit: 250 MB, counted in MiB) | {largest['bytes'] / 2**20:.1f} MiB | |"
        )
    if len(size_rows) == 2:
        size_rows.append("| no `sam build` output to measure | | |")
    measured = results.get("measured_at")
    blocks = {
        "lifecycle": lifecycle,
        "scaling": scaling,
        "cold-start": cold_rows,
        "sizes": size_rows,
        "memory": memory_rows(results.get("memory", [])),
        "spend": spend_rows(corpus),
    }
    out = {name: "\n".join(rows) + "\n" for name, rows in blocks.items()}
    if measured:
        dates = {"memory": results.get("memory_measured_at", measured)}
        out = {name: f"Measured {dates.get(name, measured)} by `make bench`.\n\n{table}" for name, table in out.items()}
    return out


def markdown(results: dict[str, Any]) -> str:
    """Every table, one after another (bench/results.md)."""
    return "\n".join(f"### {name}\n\n{table}" for name, table in tables(results).items())


def refresh_page(text: str, new_tables: dict[str, str]) -> str:
    """``text`` with each ``<!-- BENCH:<name>:START -->`` ... ``<!-- BENCH:<name>:END -->`` block replaced."""
    for name, table in new_tables.items():
        start, end = f"<!-- BENCH:{name}:START -->", f"<!-- BENCH:{name}:END -->"
        if start in text and end in text:
            text = text[: text.index(start) + len(start)] + "\n" + table + text[text.index(end) :]
    return text


def main(argv: list[str] | None = None) -> int:
    import contextlib

    from incident_responder.lab.pipeline.startup import LabPipeline
    from incident_responder.lab.scenario import load_scenario

    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    corpus = [load_scenario(p) for p in sorted((REPO / "scenarios").rglob("*.yaml"))]
    remembering = [s for s in corpus if s.earlier]
    if (argv if argv is not None else sys.argv[1:]) == ["memory"]:  # this table alone, the others kept as measured
        with contextlib.redirect_stdout(sys.stderr):
            rows = bench_memory(remembering)
        today = time.strftime("%Y-%m-%d", time.gmtime())
        return _write({**json.loads((OUT / "results.json").read_text()), "memory": rows, "memory_measured_at": today})
    single = [
        s for s in corpus if s.expect.status == "REMEDIATED" and len(s.faults) == 1 and s.lifecycle.approval is None
    ]
    results: dict[str, Any] = {"throughput": {}}
    first_half = {**RAISED_BREAKER, "RemediationMode": "propose_only"}
    with contextlib.redirect_stdout(sys.stderr):
        with LabPipeline.start(parameters=first_half, workers=True) as pipeline:
            results["latency"] = bench_latency(pipeline, single)
            pipeline.refresh()
            results["throughput"]["workers"] = bench_throughput(pipeline)
            results["scaling"] = bench_scaling(pipeline)
            results["baseline"] = bench_baseline(pipeline, corpus)
        with LabPipeline.start(parameters=first_half, workers=False) as pipeline:
            results["throughput"]["serialized"] = bench_throughput(pipeline)
        results["corpus"] = bench_corpus()
        results["memory"] = bench_memory(remembering)
    thr = results["throughput"]
    thr["ratio"] = round(thr["workers"]["incidents_per_second"] / thr["serialized"]["incidents_per_second"], 2)
    results["cold_start"] = bench_cold_start()
    results["size"] = bench_artifact_sizes()
    results["measured_at"] = results["memory_measured_at"] = time.strftime("%Y-%m-%d", time.gmtime())
    return _write(results)


def _write(results: dict[str, Any]) -> int:
    OUT.mkdir(exist_ok=True)
    (OUT / "results.json").write_text(json.dumps(results, indent=2, default=str))
    table = markdown(results)
    (OUT / "results.md").write_text(table)
    DOCS_PAGE.write_text(refresh_page(DOCS_PAGE.read_text(encoding="utf-8"), tables(results)), encoding="utf-8")
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
