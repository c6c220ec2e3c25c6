"""Benchmark: what redaction costs per tool call (`make bench-redaction`).

In the embedded lab, the sample workload onboarded and its log group holding the lines of
scenarios/secrets-in-logs.yaml (one of each secret shape) among ordinary ones: each diagnostics tool is called as
its MCP server calls it, and the redaction of its result (what the server does before the result leaves) is timed
apart, with the log reader's own pass over the raw lines. Prints a table and refreshes the `redaction` block of
docs/evaluation.md. Figures, not a test: medians of repeated runs on this machine.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path

import yaml

from incident_responder.account.baseline import record_baseline
from incident_responder.core.aws import AwsClients
from incident_responder.investigation import diagnostics
from incident_responder.lab import Lab
from incident_responder.lab.account.data_processor import create_sample_account
from incident_responder.redaction.redactor import default_redactor

REPO = Path(__file__).resolve().parents[1]
DOCS_PAGE = REPO / "docs" / "evaluation.md"
REPEATS = 25
ORDINARY = "processed object s3://input/2026/11/27/part-{n:04d}.json in 182 ms (batch {n})"


def median_ms(call, repeats: int = REPEATS) -> float:
    timings = []
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        timings.append((time.perf_counter() - started) * 1000)
    return statistics.median(timings)


def main() -> int:
    secret_lines = yaml.safe_load((REPO / "scenarios" / "secrets-in-logs.yaml").read_text())["workload"]["log_lines"]
    redactor = default_redactor()
    rows = []
    with Lab() as lab:
        os.environ.update(lab.env)
        clients = AwsClients()
        account = create_sample_account(clients)
        name = account.function_name
        record_baseline(clients, name)
        group = f"/aws/lambda/{name}"
        logs = clients.get("logs")
        logs.create_log_stream(logGroupName=group, logStreamName="2026/11/27/[$LATEST]bench")
        now = int(time.time() * 1000)
        lines = [ORDINARY.format(n=n) for n in range(20)] + list(secret_lines)
        logs.put_log_events(
            logGroupName=group,
            logStreamName="2026/11/27/[$LATEST]bench",
            logEvents=[{"timestamp": now - 1000 * (len(lines) - i), "message": line} for i, line in enumerate(lines)],
        )
        calls = {
            "get_recent_logs": lambda: diagnostics.get_recent_logs(clients, name, 10),
            "get_iam_state": lambda: diagnostics.get_iam_state(clients, name),
            "get_lambda_config": lambda: diagnostics.get_lambda_config(clients, name, None),
            "get_network_config": lambda: diagnostics.get_network_config(clients, name),
            "get_config_drift": lambda: diagnostics.get_config_drift(clients, name, None),
            "get_function_metrics": lambda: diagnostics.get_function_metrics(clients, name, 60),
            "get_recent_changes": lambda: diagnostics.get_recent_changes(clients, name, 24),
            "get_dependencies": lambda: diagnostics.get_dependencies(clients, name),
        }
        for tool, call in calls.items():
            result = call().model_dump(mode="json", exclude_none=True)
            tool_ms = median_ms(call, 5)
            redact_ms = median_ms(lambda result=result: redactor.value(result))
            _, counts = redactor.value(result)
            rows.append(
                {
                    "tool": tool,
                    "bytes": len(json.dumps(result)),
                    "tool_ms": round(tool_ms, 2),
                    "redaction_ms": round(redact_ms, 3),
                    "share": round(redact_ms / tool_ms, 4) if tool_ms else None,
                    "redacted": sum(counts.values()),
                }
            )
        reader_ms = median_ms(lambda: [redactor.text(line) for line in lines])
    table = [
        f"Measured {time.strftime('%Y-%m-%d', time.gmtime())} by `make bench-redaction`.",
        "",
        "| tool | result | tool call (lab) | redaction at the server | share | markers |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in rows:
        table.append(
            f"| `{row['tool']}` | {row['bytes']:,} B | {row['tool_ms']:.1f} ms | {row['redaction_ms'] * 1000:.0f} µs "
            f"| {row['share']:.1%} | {row['redacted']} |"
        )
    table.append(
        f"| the log reader's pass over {len(lines)} raw lines (inside `get_recent_logs`) | | | "
        f"{reader_ms * 1000:.0f} µs | | |"
    )
    text = "\n".join(table) + "\n"
    start, end = "<!-- BENCH:redaction:START -->", "<!-- BENCH:redaction:END -->"
    page = DOCS_PAGE.read_text(encoding="utf-8")
    if start in page and end in page:
        page = page[: page.index(start) + len(start)] + "\n" + text + page[page.index(end) :]
        DOCS_PAGE.write_text(page, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
