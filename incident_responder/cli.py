"""``responder``: the project's command line.

responder demo                                   the main job on the embedded lab
responder lab up                                 run the lab for other processes to share
responder lab invoke [--count N]                 one burst of the sample workload
responder onboard FUNCTION                       record a function's baseline
responder chaos COMMAND ...                      inject faults / restore (see --help)
responder mcp serve diagnostics --port N         run an MCP server
responder mcp call URL TOOL key=value ...        call one MCP tool
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys


def _cmd_demo(args: argparse.Namespace) -> int:
    from pathlib import Path

    from incident_responder.demo import run_demo

    return run_demo(fault=args.fault, out_dir=Path(args.out), verbose=args.verbose)


def _cmd_run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from incident_responder.demo import show_record
    from incident_responder.lab.pipeline import LabPipeline, write_artifacts
    from incident_responder.scenario import ScenarioError, load_scenario

    try:
        scenario = load_scenario(args.scenario)
    except ScenarioError as exc:
        print(f"responder run: {exc}", file=sys.stderr)
        return 2
    if not args.verbose:
        os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
        os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    # The functions' own log lines go to stderr: stdout carries only the record.
    with (
        contextlib.redirect_stdout(sys.stderr),
        LabPipeline.start(model=os.environ.get("RESPONDER_MODEL", "offline")) as pipeline,
    ):
        record = pipeline.run(scenario)
        if args.out:
            write_artifacts(pipeline, record, Path(args.out))
    if args.json:
        print(record.model_dump_json(indent=2))
    else:
        show_record(record)
    return 0


def _cmd_lab_up(args: argparse.Namespace) -> int:
    from incident_responder.aws import AwsClients
    from incident_responder.baseline import record_baseline
    from incident_responder.lab import Lab
    from incident_responder.lab.account import create_sample_account

    lab = Lab(port=args.port).start()
    if args.empty:
        os.environ.update(lab.env)
        if not args.no_sample:
            clients = AwsClients()
            sample = create_sample_account(clients)
            record_baseline(clients, sample.function_name)
            print(f"sample workload {sample.function_name} created and onboarded (baseline recorded)")
            print(f"MCP API key (also in SSM {sample.api_key_parameter}): {sample.api_key}")
        exports = dict(lab.env)
        return _serve_lab(lab, exports, None)
    from incident_responder.lab.pipeline import LabPipeline

    if not args.verbose:
        os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
        os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    with LabPipeline.start(lab=lab, model=os.environ.get("RESPONDER_MODEL", "offline")) as pipeline:
        exports = {
            **lab.env,
            "INCIDENT_STATE_TABLE": pipeline.stack.physical["IncidentStateTable"],
            "INCIDENT_CONTEXT_TABLE": pipeline.stack.physical["IncidentContextTable"],
            "BASELINE_TABLE": pipeline.stack.physical["BaselineTable"],
            "INCIDENT_TOPIC_ARN": pipeline.stack.output("IncidentTopicArn"),
            "MCP_API_KEY": pipeline.sample.api_key,
        }
        print(f"stack {pipeline.stack.name} deployed from template.yaml; state machine {pipeline.state_machine_arn}")
        print(
            f"diagnostics MCP server at {pipeline.mcp_url}; sample workload {pipeline.sample.function_name} onboarded"
        )
        return _serve_lab(lab, exports, pipeline)


def _serve_lab(lab, exports: dict[str, str], pipeline) -> int:
    print("lab running; in another shell:")
    for key, value in exports.items():
        print(f"  export {key}={value}")
    if pipeline is not None:
        print(
            "then e.g.: responder chaos iam_revoke --target s3 && responder lab invoke   (the alert starts the lifecycle here)"
        )
        print("           responder show <incident-id>")
    print("Ctrl-C stops the lab (and forgets everything in it).")
    try:
        signal.pause()
    except KeyboardInterrupt:
        pass
    finally:
        if pipeline is None:
            lab.stop()
    return 0


def _cmd_lab_invoke(args: argparse.Namespace) -> int:
    from incident_responder.aws import AwsClients
    from incident_responder.lab.workload import DataProcessor

    result = DataProcessor(AwsClients(), args.function).invoke(
        invocations=args.count, log_lines=args.log_line, app_error=args.app_error
    )
    print(result.model_dump_json(indent=2))
    return 0 if result.healthy else 1


def _cmd_onboard(args: argparse.Namespace) -> int:
    from incident_responder.aws import AwsClients
    from incident_responder.baseline import record_baseline

    baseline = record_baseline(AwsClients(), args.function)
    print(baseline.model_dump_json(indent=2))
    return 0


def _cmd_investigate(args: argparse.Namespace) -> int:
    from pathlib import Path

    from incident_responder.agent.errors import McpConnectionError, McpInitError, ModelAuthError, ModelTransientError
    from incident_responder.alerts import MalformedAlertError, parse_alert
    from incident_responder.investigation import run_investigation

    text = sys.stdin.read() if args.alert == "-" else Path(args.alert).read_text()
    try:
        incident = parse_alert(text)
        result, _ = run_investigation(incident)
    except MalformedAlertError as exc:
        print(f"responder investigate: {exc}", file=sys.stderr)
        return 2
    except (McpConnectionError, McpInitError, ModelAuthError, ModelTransientError) as exc:
        print(f"responder investigate: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    print(result.model_dump_json(indent=2))
    return 0 if result.outcome == "DIAGNOSED" else 3


def _cmd_eval(args: argparse.Namespace) -> int:
    from pathlib import Path

    from incident_responder.agent.models import ModelConfigError
    from incident_responder.evaluation import evaluate
    from incident_responder.scenario import ScenarioError

    if not args.verbose:
        os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
        os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    try:
        with contextlib.redirect_stdout(sys.stderr):
            report = evaluate(Path(args.directory), model=args.model)
    except (ScenarioError, ModelConfigError) as exc:
        print(f"responder eval: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(report.model_dump_json(indent=2))
    else:
        for s in report.scenarios:
            mark = "PASS" if s.passed else "FAIL"
            print(
                f"{mark} {s.name:<34} {s.status:<16} faults={','.join(s.fault_types) or '-'} actions={','.join(s.actions) or '-'}"
                f" mitigated={s.mitigated} grounded={s.grounded_ratio} llm={s.llm_calls} tools={s.tool_calls}"
            )
            for failure in s.failures:
                print(f"     - {failure}")
        print(f"{report.summary['passed']} passed, {report.summary['total'] - report.summary['passed']} failed")
    return 0 if report.summary["passed"] == report.summary["total"] else 1


def _cmd_show(args: argparse.Namespace) -> int:
    from incident_responder.aws import AwsClients
    from incident_responder.lifecycle import get_incident_state
    from incident_responder.store import load_record

    clients = AwsClients()
    state = get_incident_state(clients, args.incident_id)
    if state is None:
        print(
            f"responder show: no incident {args.incident_id} in {os.environ.get('INCIDENT_STATE_TABLE', 'incident-state')}",
            file=sys.stderr,
        )
        return 1
    investigation = load_record(clients, args.incident_id, "investigation") or {}
    proposal = load_record(clients, args.incident_id, "proposal") or {}
    history = []
    if state.get("execution_arn"):
        from incident_responder.lab.engine import states_entered

        try:
            history = states_entered(clients.get("stepfunctions"), state["execution_arn"])
        except Exception as exc:  # noqa: BLE001 - the record is still worth showing without the history
            history = [f"(history unavailable: {type(exc).__name__})"]
    shown = {
        "incident_id": args.incident_id,
        "status": state.get("status"),
        "error_category": state.get("error_category"),
        "error_reason": state.get("error_reason"),
        "timings": {k: v for k, v in state.items() if k.endswith("_at") and k != "expires_at"},
        "diagnosis": investigation.get("summary", {}).get("diagnosis"),
        "evidence": investigation.get("summary", {}).get("evidence"),
        "proposal": proposal.get("summary", {}).get("proposal"),
        "states_visited": history,
        "artifacts": [r.get("artifact_uri") for r in (investigation, proposal) if r.get("artifact_uri")],
    }
    print(json.dumps(shown, indent=2, default=str))
    return 0


def _cmd_chaos(args: argparse.Namespace) -> int:
    from chaos.cli import run

    return run(args)


def _cmd_mcp_serve(args: argparse.Namespace) -> int:
    from incident_responder.mcp_app import serve
    from incident_responder.mcp_auth import ApiKeyUnavailableError

    try:
        serve(args.server, host=args.host, port=args.port)
    except ApiKeyUnavailableError as exc:
        print(f"responder mcp serve: {exc}", file=sys.stderr)
        return 2
    return 0


def _cmd_mcp_call(args: argparse.Namespace) -> int:
    import anyio

    from incident_responder.mcp_client import mcp_session, tool_payload

    arguments = {}
    for pair in args.arguments:
        key, sep, value = pair.partition("=")
        if not sep:
            print(f"responder mcp call: expected key=value, got {pair!r}", file=sys.stderr)
            return 2
        arguments[key] = int(value) if value.isdigit() else value

    async def call() -> dict:
        async with mcp_session(args.url, args.api_key or os.environ.get("MCP_API_KEY")) as session:
            return tool_payload(await session.call_tool(args.tool, arguments))

    payload = anyio.run(call)
    print(json.dumps(payload, indent=2))
    return 1 if payload.get("error") else 0


def build_parser() -> argparse.ArgumentParser:
    from chaos.cli import add_arguments as add_chaos_arguments

    parser = argparse.ArgumentParser(
        prog="responder", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("demo", help="start the lab, break the sample workload, investigate over MCP")
    p.add_argument(
        "--fault",
        default="iam_revoke",
        choices=["iam_revoke", "iam_revoke_logs", "throttle", "network_block", "timeout", "memory"],
        help="which fault to inject (default: the S3 permission revoked)",
    )
    p.add_argument("--out", default="out", help="folder for the execution history and picture (default: out)")
    p.add_argument("--verbose", action="store_true", help="also show the functions' JSON logs and metrics")
    p.set_defaults(handler=_cmd_demo)

    p = sub.add_parser("run", help="run one scenario file in a fresh lab and print the final incident record")
    p.add_argument("scenario", help="scenario YAML (format: see scenarios/)")
    p.add_argument("--json", action="store_true", help="print the record as JSON")
    p.add_argument("--out", help="also write the execution history and picture to this folder")
    p.add_argument("--verbose", action="store_true", help="also show the functions' JSON logs (on stderr)")
    p.set_defaults(handler=_cmd_run)

    lab = sub.add_parser("lab", help="the embedded AWS lab").add_subparsers(dest="lab_command", required=True)
    p = lab.add_parser("up", help="run the lab in the foreground for other processes to use")
    p.add_argument("--port", type=int, default=5000)
    p.add_argument("--empty", action="store_true", help="moto only: do not deploy template.yaml")
    p.add_argument("--no-sample", action="store_true", help="with --empty: do not create the sample workload either")
    p.add_argument("--verbose", action="store_true", help="show the functions' JSON logs and metrics")
    p.set_defaults(handler=_cmd_lab_up)
    p = lab.add_parser("invoke", help="invoke the sample workload once as a concurrent burst")
    p.add_argument("--function", default="data-processor")
    p.add_argument("--count", type=int, default=3)
    p.add_argument("--log-line", action="append", default=[], help="extra raw line the function logs")
    p.add_argument("--app-error", help="a bug in the function's own code, e.g. \"KeyError: 'order_id'\"")
    p.set_defaults(handler=_cmd_lab_invoke)

    p = sub.add_parser("onboard", help="record a function's known-good configuration as its baseline")
    p.add_argument("function")
    p.set_defaults(handler=_cmd_onboard)

    p = sub.add_parser(
        "investigate",
        help="run the supervisor agent on one alert (CloudWatch alarm or project alert JSON) and store the diagnosis",
        description="Needs DIAGNOSTICS_MCP_URL (or RESPONDER_MCP_CONFIG), the MCP key (MCP_API_KEY or SSM), "
        "the model (RESPONDER_MODEL, default offline), and where to store (INCIDENT_CONTEXT_TABLE, ARTIFACTS_BUCKET).",
    )
    p.add_argument("alert", help="alert JSON file, or - for standard input")
    p.set_defaults(handler=_cmd_investigate)

    p = sub.add_parser("eval", help="run every scenario file in DIR in a fresh lab and score it")
    p.add_argument("directory")
    p.add_argument("--json", action="store_true", help="print the scores as JSON")
    p.add_argument(
        "--model",
        help="RESPONDER_MODEL for this run, e.g. bedrock_converse:<model-id> (your AWS credentials reach Bedrock)",
    )
    p.add_argument("--verbose", action="store_true", help="also show the functions' JSON logs (on stderr)")
    p.set_defaults(handler=_cmd_eval)

    p = sub.add_parser(
        "show",
        help="print a stored incident: status, diagnosis, proposal, history",
        description="Reads INCIDENT_STATE_TABLE / INCIDENT_CONTEXT_TABLE (the stack's outputs) in the account boto3 reaches.",
    )
    p.add_argument("incident_id")
    p.set_defaults(handler=_cmd_show)

    p = sub.add_parser("chaos", help="inject faults into a function and restore them")
    add_chaos_arguments(p)
    p.set_defaults(handler=_cmd_chaos)

    mcp = sub.add_parser("mcp", help="the project's MCP servers").add_subparsers(dest="mcp_command", required=True)
    p = mcp.add_parser("serve", help="run an MCP server (streamable HTTP, bearer auth)")
    p.add_argument("server", choices=["diagnostics", "remediation"])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8081)
    p.set_defaults(handler=_cmd_mcp_serve)
    p = mcp.add_parser("call", help="call one tool on a running MCP server and print its result")
    p.add_argument("url", help="e.g. http://127.0.0.1:8081/mcp")
    p.add_argument("tool")
    p.add_argument("arguments", nargs="*", metavar="key=value")
    p.add_argument("--api-key", help="bearer key (default: $MCP_API_KEY)")
    p.set_defaults(handler=_cmd_mcp_call)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.handler(args)


if __name__ == "__main__":
    sys.exit(main())
