"""How long each Lambda handler takes to start, in fresh processes, beside ``import boto3``.

    python scripts/cold_start.py [--runs 3] [--no-first-call] [--json] [handlers.ingest ...]

For each handler module, in a new interpreter each time (bytecode precompiled; medians of ``runs``):

(a) **import**: ``import handlers.<name>`` with the environment Lambda gives the function at init (its
    settings, ``LAMBDA_TASK_ROOT``, active tracing), so what runs is what Lambda's init runs: the settings
    validated, Powertools' Tracer built with the X-Ray SDK as in Lambda;
(b) **first call**: in a new interpreter again, the same import and then one call of the handler's main
    path, against the embedded lab (moto and the lab's MCP servers; no AWS account, the offline model).
    The lifecycle functions are called by one real incident (``scenarios/throttled-to-zero.yaml``, alert
    to the end of the closed loop), each function's handler in a fresh process with that function's lab
    environment, so each gets the event the state machine (or SNS) really sends. Reconcile gets the ended
    execution's status event, the MCP servers a ``tools/list`` request through their function URL
    adapter. Verify reads the function's health from CloudWatch metrics, as deployed (the lab's workload
    records them), not through the lab's in-process probe.

``import boto3`` is measured the same way in the same run; the targets are ratios to it (ingest at most
1.3x, the other lifecycle handlers at most 4x). Wall and CPU time are both reported: on a shared machine
CPU time is the steadier. ``measure()`` returns the figures for ``scripts/bench.py``.

Each child is a fresh ``python -c`` that imports nothing before the clock starts but what it needs.
"""

from __future__ import annotations

import inspect
import json
import os
import statistics
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
BASELINE = "boto3"
# Every Lambda entry point, and the handler attribute Lambda calls in the function measured.
HANDLERS: dict[str, str] = {
    "handlers.ingest": "handler",
    "handlers.investigate": "handler",
    "handlers.propose": "handler",
    "handlers.review": "handler",
    "handlers.approval": "request_handler",
    "handlers.remediate": "handler",
    "handlers.verify": "handler",
    "handlers.reconcile": "handler",
    "handlers.report": "handler",
    "handlers.diagnostics_mcp": "handler",
    "handlers.remediation_mcp": "handler",
}
# The issue's targets: a handler's import time at most this many times boto3's (None: no target set).
TARGETS: dict[str, float | None] = {
    "handlers.ingest": 1.3,
    "handlers.diagnostics_mcp": None,
    "handlers.remediation_mcp": None,
}
LIFECYCLE_TARGET = 4.0
# What an agent handler cannot import less than: the graph framework it runs (LangGraph's StateGraph imports
# langchain_core's tracers, which import langsmith), measured the same way so the floor under the ratio shows.
FLOORS = ["langgraph.graph"]
FIRST_CALL_SCENARIO = REPO / "scenarios" / "throttled-to-zero.yaml"
MCP_SERVERS = ("handlers.diagnostics_mcp", "handlers.remediation_mcp")

# What Lambda sets in every function's environment (the template adds the function's own variables).
LAMBDA_ENV = {
    "AWS_REGION": "us-east-1",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EXECUTION_ENV": "AWS_Lambda_python3.12",
    "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "1024",
    "AWS_LAMBDA_FUNCTION_VERSION": "1",
    "AWS_LAMBDA_INITIALIZATION_TYPE": "on-demand",
    "AWS_XRAY_DAEMON_ADDRESS": "127.0.0.1:2000",  # UDP: segments sent here go nowhere
    "AWS_XRAY_CONTEXT_MISSING": "LOG_ERROR",
    "AWS_ACCESS_KEY_ID": "ASIACOLDSTART",
    "AWS_SECRET_ACCESS_KEY": "cold-start",
    "AWS_SESSION_TOKEN": "cold-start",
    "TZ": ":UTC",
    # Globals in template.yaml
    "POWERTOOLS_SERVICE_NAME": "incident-responder",
    "POWERTOOLS_METRICS_NAMESPACE": "IncidentResponder",
}
# The deployed functions' own variables, all at once (each settings model reads only its fields).
FUNCTION_ENV = {
    "STATE_MACHINE_ARN": "arn:aws:states:us-east-1:123456789012:stateMachine:incident-responder-incident-lifecycle",
    "DEAD_LETTER_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/incident-responder-dlq",
    "INCIDENT_STATE_TABLE": "incident-responder-IncidentStateTable",
    "INCIDENT_CONTEXT_TABLE": "incident-responder-IncidentContextTable",
    "BASELINE_TABLE": "incident-responder-BaselineTable",
    "ARTIFACTS_BUCKET": "incident-responder-artifacts",
    "ALERT_GROUP_WINDOW_MINUTES": "30",
    "STUCK_AFTER_MINUTES": "30",
    "INCIDENT_TTL_DAYS": "7",
    "RESPONDER_MODEL": "bedrock_converse:global.anthropic.claude-haiku-4-5-20251001-v1:0",
    "MCP_AUTH": "iam",
    "DIAGNOSTICS_MCP_URL": "https://diagnostics.lambda-url.us-east-1.on.aws/mcp",
    "REMEDIATION_MCP_URL": "https://remediation.lambda-url.us-east-1.on.aws/mcp",
    "AGENT_RECURSION_LIMIT": "12",
    "AGENT_TOKEN_CAP": "100000",
    "AUTO_APPROVE": "none",
    "AUTO_APPROVE_IAM_AND_NETWORK": "false",
    "APPROVAL_TOPIC_ARN": "arn:aws:sns:us-east-1:123456789012:incident-responder-approval-requests",
    "APPROVAL_URL": "https://approval.lambda-url.us-east-1.on.aws/",
}


def lambda_environment(module: str, function_env: dict[str, str] | None = None, attribute: str | None = None) -> dict:
    """The environment of the Lambda function running ``module`` (nothing inherited from this process)."""
    name = module.rsplit(".", 1)[-1]
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": os.environ.get("HOME", "/tmp"),
        **LAMBDA_ENV,
        **(FUNCTION_ENV if function_env is None else function_env),
        "AWS_LAMBDA_FUNCTION_NAME": f"incident-responder-{name}",
        "LAMBDA_TASK_ROOT": str(REPO),
        "_HANDLER": f"{module}.{attribute or HANDLERS.get(module, 'handler')}",
    }


# -- the children: one fresh interpreter each --------------------------------------------------------
IMPORT_CHILD = """
import importlib, json, sys, time
sys.path.insert(0, sys.argv[1])  # LAMBDA_TASK_ROOT is on Lambda's path
wall, cpu = time.perf_counter(), time.process_time()
importlib.import_module(sys.argv[2])
print(json.dumps({"import_wall_s": time.perf_counter() - wall, "import_cpu_s": time.process_time() - cpu}))
"""

# argv: repo, module, attribute, where to write the outcome; stdin: {"event", "timeout_s"}.
CALL_CHILD = """
import importlib, json, sys, time, uuid
sys.path.insert(0, sys.argv[1])
request = json.load(sys.stdin)
wall, cpu = time.perf_counter(), time.process_time()
module = importlib.import_module(sys.argv[2])
out = {"import_wall_s": time.perf_counter() - wall, "import_cpu_s": time.process_time() - cpu}

class Context:
    function_name = "incident-responder-function"
    memory_limit_in_mb = 1024
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:incident-responder-function:live"
    aws_request_id = str(uuid.uuid4())
    _deadline = time.monotonic() + request["timeout_s"]
    def get_remaining_time_in_millis(self):
        return max(0, int((self._deadline - time.monotonic()) * 1000))

wall, cpu = time.perf_counter(), time.process_time()
try:
    out["result"] = getattr(module, sys.argv[3])(request["event"], Context())
except Exception as exc:
    out["error"] = {"type": type(exc).__name__, "message": str(exc)}
out["call_wall_s"], out["call_cpu_s"] = time.perf_counter() - wall, time.process_time() - cpu
with open(sys.argv[4], "w") as f:
    json.dump(out, f, default=str)
"""


def _import_in_child(module: str, env: dict[str, str]) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, "-c", IMPORT_CHILD, str(REPO), module],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{module}: the child failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def call_in_child(
    module: str, attribute: str, event: dict[str, Any], env: dict[str, str], timeout_s: int = 900
) -> dict[str, Any]:
    """Import ``module`` in a fresh interpreter with ``env`` and call its ``attribute`` once with ``event``.

    Returns the timings and ``result`` or ``error`` (the exception's type name and message, as Lambda reports it).
    """
    trace = f"Root=1-{uuid.uuid4().hex[:8]}-{uuid.uuid4().hex[:24]};Parent={uuid.uuid4().hex[:16]};Sampled=1"
    with tempfile.TemporaryDirectory(prefix="cold-start-") as folder:
        outcome = Path(folder) / "outcome.json"
        done = subprocess.run(
            [sys.executable, "-c", CALL_CHILD, str(REPO), module, attribute, str(outcome)],
            cwd=REPO,
            env={**env, "_X_AMZN_TRACE_ID": trace},  # Lambda sets it per invocation
            input=json.dumps({"event": event, "timeout_s": timeout_s}),
            capture_output=True,
            text=True,
            timeout=timeout_s + 60,
        )
        if done.returncode != 0 or not outcome.exists():
            raise RuntimeError(f"{module}.{attribute}: the child failed:\n{done.stderr[-3000:]}")
        return json.loads(outcome.read_text())


class ColdCalls:
    """Stands in for lab functions' in-process handlers: each call runs in a fresh interpreter (a cold start,
    as for an incident's rare invocations), and the first call of each function is kept."""

    def __init__(self) -> None:
        self.first: dict[str, dict[str, Any]] = {}

    def handler(self, module: str, attribute: str, env: dict[str, str], timeout_s: int) -> Callable[..., Any]:
        def call(event: dict[str, Any], context: Any) -> Any:
            outcome = call_in_child(module, attribute, event, env, timeout_s)
            self.first.setdefault(module, outcome)
            if "error" in outcome:  # raised under the handler's own exception name, for the state machine
                raise type(outcome["error"]["type"], (Exception,), {})(outcome["error"]["message"])
            return outcome["result"]

        return call


def _function_url_event(body: dict[str, Any]) -> dict[str, Any]:
    """A function URL request (payload 2.0) as Lambda passes it after checking the caller's SigV4 signature."""
    return {
        "version": "2.0",
        "rawPath": "/mcp",
        "rawQueryString": "",
        "headers": {
            "content-type": "application/json",
            "accept": "application/json, text/event-stream",
            "host": "abc.lambda-url.us-east-1.on.aws",
        },
        "requestContext": {
            "http": {"method": "POST", "path": "/mcp"},
            "authorizer": {
                "iam": {"accessKey": "ASIACOLDSTART", "userArn": "arn:aws:sts::123456789012:assumed-role/x"}
            },
        },
        "body": json.dumps(body),
        "isBase64Encoded": False,
    }


def first_calls(handlers: list[str], runs: int) -> tuple[dict[str, list[dict[str, Any]]], list[str]]:
    """(b): import + first call of each handler in ``runs`` fresh processes (see the module's docstring), and
    how each run's incident ended."""
    samples: dict[str, list[dict[str, Any]]] = {m: [] for m in handlers}
    ended: list[str] = []
    for module in [m for m in handlers if m in MCP_SERVERS]:
        event = _function_url_event({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}})
        for _ in range(runs):
            samples[module].append(call_in_child(module, "handler", event, lambda_environment(module), 60))
    lifecycle = [m for m in handlers if m not in MCP_SERVERS]
    if not lifecycle:
        return samples, ended
    from incident_responder.lab.pipeline.startup import LabPipeline
    from incident_responder.lab.scenario import load_scenario

    scenario = load_scenario(FIRST_CALL_SCENARIO)
    # Handlers called in this process (then replaced by ColdCalls), not in the lab's worker processes, if it has them.
    options = {"workers": False} if "workers" in inspect.signature(LabPipeline.start).parameters else {}
    with LabPipeline.start(**options) as pipeline:
        for run in range(runs):
            if run:
                pipeline.refresh()
            calls, reconcile_env = ColdCalls(), None
            for logical_id, resource in pipeline.stack.template["Resources"].items():
                if resource["Type"] != "AWS::Lambda::Function" or logical_id not in pipeline.stack.functions:
                    continue
                module, _, attribute = resource["Properties"]["Handler"].rpartition(".")
                if module not in lifecycle or attribute != HANDLERS[module]:
                    continue
                function = pipeline.dispatcher.functions[pipeline.stack.functions[logical_id]]
                env = lambda_environment(module, {**pipeline.lab.env, **function.environment}, attribute)
                if module == "handlers.reconcile":
                    reconcile_env = env  # called below, once the incident's execution has ended
                    continue
                function.handler = calls.handler(module, attribute, env, function.timeout_seconds)
            record = pipeline.run(scenario)
            ended.append(record.status)
            if reconcile_env is not None and record.incident_id:
                arn = f"{pipeline.state_machine_arn.replace(':stateMachine:', ':execution:')}:{record.incident_id}"
                event = {"detail": {"executionArn": arn, "status": "FAILED"}}
                calls.first["handlers.reconcile"] = call_in_child("handlers.reconcile", "handler", event, reconcile_env)
            for module in lifecycle:
                samples[module].append(calls.first.get(module) or {"error": {"type": "NotCalled", "message": ""}})
    return samples, ended


# -- the measure ---------------------------------------------------------------------------------------
def precompile() -> None:
    """Bytecode for the project's code, as the build ships it (site-packages compile on install)."""
    import compileall

    for folder in ("incident_responder", "handlers", "mcp"):
        compileall.compile_dir(str(REPO / folder), quiet=1)


def target_of(module: str) -> float | None:
    return TARGETS.get(module, LIFECYCLE_TARGET)


def _median(values: list[float]) -> float | None:
    return round(statistics.median(values), 3) if values else None


def measure(handlers: list[str], runs: int = 3, first_call: bool = True) -> dict[str, Any]:
    """(a) each handler's import time and boto3's, in fresh processes, and (b) import + first call; medians of
    ``runs``. Ratios are to boto3's medians of this run; ``meets_target`` compares the wall-time ratio.

    Returns ``{"python", "runs", "boto3": {"import_s", "import_cpu_s"}, "handlers": [{"handler", "import_s",
    "import_cpu_s", "ratio", "ratio_cpu", "target", "meets_target", "first_call_s", "first_call_cpu_s",
    "first_call_outcome"}], "first_call_incidents": [how each run's incident ended], "first_call_error"}``.

    It starts a lab of its own for the first calls: call it outside any lab this process runs.
    """
    precompile()
    imports: dict[str, list[dict[str, float]]] = {m: [] for m in [BASELINE, *FLOORS, *handlers]}
    for _ in range(runs):
        for module in imports:  # interleaved: a burst of load elsewhere spreads over every module
            imports[module].append(_import_in_child(module, lambda_environment(module)))
    calls: dict[str, list[dict[str, Any]]] = {}
    incidents: list[str] = []
    first_call_error = None
    if first_call:
        try:
            calls, incidents = first_calls(handlers, runs)
        except Exception as exc:  # noqa: BLE001 - (a) stands without (b); the reason is reported
            first_call_error = f"{type(exc).__name__}: {exc}"

    def median(module: str, key: str) -> float:
        return statistics.median(s[key] for s in imports[module])

    base_wall, base_cpu = median(BASELINE, "import_wall_s"), median(BASELINE, "import_cpu_s")
    rows = []
    for module in handlers:
        wall, cpu = median(module, "import_wall_s"), median(module, "import_cpu_s")
        target = target_of(module)
        done = [c for c in calls.get(module, []) if "call_wall_s" in c]
        outcomes = sorted({c["error"]["type"] if "error" in c else "ok" for c in calls.get(module, [])})
        rows.append(
            {
                "handler": module,
                "import_s": round(wall, 3),
                "import_cpu_s": round(cpu, 3),
                "ratio": round(wall / base_wall, 2),
                "ratio_cpu": round(cpu / base_cpu, 2),
                "target": target,
                "meets_target": None if target is None else wall / base_wall <= target,
                "first_call_s": _median([c["import_wall_s"] + c["call_wall_s"] for c in done]),
                "first_call_cpu_s": _median([c["import_cpu_s"] + c["call_cpu_s"] for c in done]),
                "first_call_outcome": ",".join(outcomes) or None,
            }
        )
    floors = [
        {
            "module": module,
            "import_s": round(median(module, "import_wall_s"), 3),
            "import_cpu_s": round(median(module, "import_cpu_s"), 3),
            "ratio": round(median(module, "import_wall_s") / base_wall, 2),
            "ratio_cpu": round(median(module, "import_cpu_s") / base_cpu, 2),
        }
        for module in FLOORS
    ]
    return {
        "python": f"{sys.version_info.major}.{sys.version_info.minor}",
        "runs": runs,
        "boto3": {"import_s": round(base_wall, 3), "import_cpu_s": round(base_cpu, 3)},
        "floors": floors,
        "handlers": rows,
        "first_call_incidents": incidents,
        "first_call_error": first_call_error,
    }


def table(result: dict[str, Any]) -> str:
    base = result["boto3"]
    lines = [
        f"python {result['python']}, median of {result['runs']} fresh processes each, bytecode precompiled",
        f"{'module':26} {'import s':>9} {'cpu s':>6} {'x boto3':>8} {'(cpu)':>6} {'target':>9} "
        f"{'+1st call s':>12} {'cpu s':>6}  outcome",
        f"{'boto3':26} {base['import_s']:>9.3f} {base['import_cpu_s']:>6.3f} {1:>8.2f} {1:>6.2f}",
    ]
    for floor in result.get("floors", []):
        lines.append(
            f"{floor['module'] + ' (floor)':26} {floor['import_s']:>9.3f} {floor['import_cpu_s']:>6.3f} "
            f"{floor['ratio']:>8.2f} {floor['ratio_cpu']:>6.2f}"
        )
    for row in result["handlers"]:
        target = "" if row["target"] is None else f"<={row['target']:g} " + ("ok" if row["meets_target"] else "no")
        first = "" if row["first_call_s"] is None else f"{row['first_call_s']:.3f}"
        first_cpu = "" if row["first_call_cpu_s"] is None else f"{row['first_call_cpu_s']:.3f}"
        lines.append(
            f"{row['handler']:26} {row['import_s']:>9.3f} {row['import_cpu_s']:>6.3f} {row['ratio']:>8.2f} "
            f"{row['ratio_cpu']:>6.2f} {target:>9} {first:>12} {first_cpu:>6}  {row['first_call_outcome'] or ''}"
        )
    if result.get("first_call_incidents"):
        lines.append(f"first calls: the incidents ended {', '.join(result['first_call_incidents'])}")
    if result.get("first_call_error"):
        lines.append(f"first calls not measured: {result['first_call_error']}")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("handlers", nargs="*", default=list(HANDLERS))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-first-call", action="store_true", help="measure (a) only: no lab")
    parser.add_argument("--json", action="store_true", help="print the data as JSON instead of a table")
    args = parser.parse_args(argv)
    # The lab's functions and servers log to stdout: theirs goes to stderr, so stdout holds only the figures.
    sys.stdout.flush()
    stdout = os.dup(1)
    os.dup2(2, 1)
    try:
        result = measure(args.handlers, args.runs, first_call=not args.no_first_call)
    finally:
        sys.stdout.flush()
        os.dup2(stdout, 1)
        os.close(stdout)
    print(json.dumps(result, indent=2) if args.json else table(result))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))  # the lab, for the first calls
    sys.exit(main(sys.argv[1:]))
