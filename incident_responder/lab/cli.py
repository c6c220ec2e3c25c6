"""The lab's commands of ``responder``: demo, run, eval, lab up / invoke, chaos.

They drive the embedded lab (moto, the sample workload, chaos, scenarios) and never ship in a Lambda
artifact; the production command line (:mod:`incident_responder.cli.commands`) hands these commands over here
only when one of them is run, so ``responder show`` and the other operator commands import no lab code.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import signal
import sys
import time
from typing import Any

from incident_responder.cli.arguments import LAB_COMMANDS, ArgumentParser, tcp_port

MODEL_HELP = (
    "the agents' model: offline (rule-based, the default here), bedrock_converse:<model-id> (your AWS "
    "credentials reach Bedrock), openai:<model> or ollama:<model>"
)


def _cmd_demo(args: argparse.Namespace) -> int:
    from pathlib import Path

    from incident_responder.lab.demo import run_demo

    return run_demo(fault=args.fault, out_dir=Path(args.out), verbose=args.verbose, model=args.model)


def _cmd_run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from incident_responder.lab.demo import show_record
    from incident_responder.lab.pipeline.artifacts import write_artifacts
    from incident_responder.lab.pipeline.startup import LabPipeline
    from incident_responder.lab.scenario import ScenarioError, load_scenario

    try:
        scenario = load_scenario(args.scenario)
    except ScenarioError as exc:
        print(f"responder run: {exc}", file=sys.stderr)
        return 2
    _quiet(args)

    def entered(state: str, _when: Any) -> None:
        # The incident's lifecycle status as it moves (the ASL's upper-case Pass states), on stderr.
        if state.replace("_", "").isupper():
            print(f"  {time.monotonic() - started:6.1f} s  {state}", file=sys.stderr, flush=True)

    # The functions' own log lines go to stderr: stdout carries only the record.
    with (
        contextlib.redirect_stdout(sys.stderr),
        LabPipeline.start(model=args.model) as pipeline,
    ):
        print(
            f"lab ready; {scenario.name}: injecting the fault, then following the incident", file=sys.stderr, flush=True
        )
        started = time.monotonic()
        record = pipeline.run(scenario, approval=args.approval, on_state=entered)
        written = write_artifacts(pipeline, record, Path(args.out)) if args.out else {}
    if written.get("report"):
        print(f"report: {written['report']}", file=sys.stderr)
    if record.no_alert:  # nothing to show: a scenario whose faults do not make its workload fail
        print(f"responder run: {scenario.name}: {record.no_alert}", file=sys.stderr)
        return 1
    if args.json:
        print(record.model_dump_json(indent=2))
    else:
        show_record(record)
    outcome = "a failure end" if record.failed else "done"
    print(f"{scenario.name}: {record.status} ({outcome}) in {time.monotonic() - started:.1f} s", file=sys.stderr)
    return 1 if record.failed else 0


def _stop(signum: int, frame: object) -> None:
    """SIGTERM stops the lab as Ctrl-C does, and a second signal cannot cut the cleanup short."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise KeyboardInterrupt


def _cmd_lab_up(args: argparse.Namespace) -> int:
    from incident_responder.account.baseline import record_baseline
    from incident_responder.core.aws import AwsClients
    from incident_responder.lab import Lab
    from incident_responder.lab.account.data_processor import create_sample_account
    from incident_responder.lab.environment import NOT_FOR_THE_LAB
    from incident_responder.lab.model_route import resolve_model_route

    # Installed before anything starts: every exit path then runs the context managers that stop the
    # function URL processes (an unhandled SIGTERM would leave them orphaned).
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    # The model's credentials come from the user's profile, which the lab is about to unset.
    route = None if args.empty else resolve_model_route(args.model)
    for key in NOT_FOR_THE_LAB:
        os.environ.pop(key, None)
    with Lab(port=args.port) as lab:
        # Chaos in other shells keeps its originals where this lab just cleared those of earlier labs.
        exports = {**lab.env, "RESPONDER_CHAOS_STATE_DIR": str(lab.chaos_state_dir)}
        if args.empty:
            os.environ.update(lab.env)
            if not args.no_sample:
                clients = AwsClients()
                sample = create_sample_account(clients)
                record_baseline(clients, sample.function_name)
                print(f"sample workload {sample.function_name} created and onboarded (baseline recorded)")
                print(
                    f"MCP API key for a self-hosted `responder mcp serve` on this lab (the server reads it from "
                    f"SSM {sample.api_key_parameter} itself): {sample.api_key}"
                )
            return _serve_lab(exports, follow=False)
        from incident_responder.lab.pipeline.startup import LabPipeline

        _quiet(args)
        # A person answers here (the link in the lab's inbox, or `responder approve`): a person's timeout.
        with LabPipeline.start(
            lab=lab,
            model=args.model,
            parameters={"ApprovalTimeoutMinutes": "30", "VerifySettleSeconds": "5"},
            model_route=route,
        ) as pipeline:
            exports |= {
                "INCIDENT_STATE_TABLE": pipeline.stack.physical["IncidentStateTable"],
                "INCIDENT_CONTEXT_TABLE": pipeline.stack.physical["IncidentContextTable"],
                "BASELINE_TABLE": pipeline.stack.physical["BaselineTable"],
                "ARTIFACTS_BUCKET": pipeline.stack.physical["ArtifactsBucket"],
                "INCIDENT_TOPIC_ARN": pipeline.stack.output("IncidentTopicArn"),
                # Behind the lab's function URLs (AWS_IAM): requests are signed with the credentials above.
                "MCP_AUTH": "iam",
                "DIAGNOSTICS_MCP_URL": pipeline.stack.output("DiagnosticsMcpUrl"),
                "REMEDIATION_MCP_URL": pipeline.stack.output("RemediationMcpUrl"),
                "RESPONDER_MODEL": args.model,
            }
            print(
                f"stack {pipeline.stack.name} deployed from template.yaml; state machine {pipeline.state_machine_arn}"
            )
            print(
                "MCP servers behind their function URLs (IAM auth, SigV4); "
                f"sample workload {pipeline.sample.function_name} onboarded"
            )
            return _serve_lab(exports, follow=True)


def _serve_lab(exports: dict[str, str], *, follow: bool) -> int:
    from incident_responder.lab.environment import NOT_FOR_THE_LAB

    print("lab running; in another shell:")
    print(f"  unset {' '.join(NOT_FOR_THE_LAB)}")
    for key, value in exports.items():
        print(f"  export {key}={shlex.quote(value)}")
    if follow:
        print("then e.g.: responder chaos iam_revoke --target s3")
        print("           responder lab invoke        (the alert starts the lifecycle here; prints the incident id)")
        print("           responder pending           (incidents waiting for a person, with the actions to approve)")
        print("           responder approve <incident-id> [--reject --reason TEXT]")
        print("           responder show <incident-id>")
        print("           responder investigate ALERT.json")
    print("Ctrl-C (or SIGTERM) stops the lab and its processes, and forgets everything in it.", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        signal.pause()
    return 0


def _cmd_lab_invoke(args: argparse.Namespace) -> int:
    from incident_responder.core.aws import AwsClients
    from incident_responder.intake.ingest import incident_for_alert
    from incident_responder.intake.resolve import incident_from_alert
    from incident_responder.lab.workloads.selection import workload_for

    clients = AwsClients()
    result = workload_for(clients, args.function).invoke(
        invocations=args.count, log_lines=args.log_line, app_error=args.app_error
    )
    shown = result.model_dump(mode="json")
    table = os.environ.get("INCIDENT_STATE_TABLE")  # exported by `lab up` when the lifecycle is deployed
    if result.alert is not None and table:
        # Ingest ran while the alarm was published; an alert joining an incident already under way
        # within the grouping window belongs to that incident, not to an id of its own.
        incident = incident_from_alert(clients, result.alert, os.environ.get("BASELINE_TABLE"))
        shown["incident_id"] = incident_for_alert(clients, table, incident)
    print(json.dumps(shown, indent=2))
    # For people: on stderr, so standard output stays one JSON document.
    if "incident_id" in shown:
        print(
            f"alarm sent for incident {shown['incident_id']}; follow it: responder show {shown['incident_id']}",
            file=sys.stderr,
        )
    elif result.alert is not None:
        print("alarm sent (no lifecycle to follow it: INCIDENT_STATE_TABLE is not set)", file=sys.stderr)
    # A failure no alarm caught is the only burst worth a non-zero exit.
    return 0 if result.alert is not None or result.healthy else 1


APPROVAL_ARGUMENT: dict = {
    "choices": ["auto", "reject", "none"],
    "default": "auto",
    "help": "who answers approval requests when a scenario does not say: auto (the lab's person opens the link and"
    " approves), reject, or none (requests expire); default: auto",
}


def _cmd_eval(args: argparse.Namespace) -> int:
    from pathlib import Path

    from incident_responder.agent.errors import ModelConfigError
    from incident_responder.lab.converse.errors import CassetteError
    from incident_responder.lab.evaluation import evaluate
    from incident_responder.lab.scenario import ScenarioError

    _quiet(args)
    # Each scenario's result as it ends: on stdout for a person, on stderr when stdout carries the JSON report.
    progress = sys.stderr if args.json else sys.stdout

    def finished(done: int, total: int, s: Any) -> None:
        mark = "PASS" if s.passed else "FAIL"
        print(
            f"[{done}/{total}] {mark} {s.name:<34} {s.status:<16} faults={','.join(s.fault_types) or '-'}"
            f" actions={','.join(s.actions) or '-'} mitigated={s.mitigated} grounded={s.grounded_ratio}"
            f" llm={s.llm_calls} tools={s.tool_calls}{f' aws={s.aws_calls}' if s.aws_calls is not None else ''}"
            f" {s.latency_ms} ms",
            file=progress,
            flush=True,
        )
        for failure in s.failures:
            print(f"     - {failure}", file=progress, flush=True)

    try:
        with contextlib.redirect_stdout(sys.stderr):
            report = evaluate(
                Path(args.directory),
                model=args.model,
                approval=args.approval,
                on_scenario=finished,
                out_dir=Path(args.out) if args.out else None,
                record=Path(args.record) if args.record else None,
                replay=Path(args.replay) if args.replay else None,
                max_cost_usd=args.max_cost,
                on_start=lambda line: print(line, file=progress, flush=True),
                count_calls=args.count_aws_calls,
            )
    except (ScenarioError, ModelConfigError, CassetteError) as exc:
        print(f"responder eval: {exc}", file=sys.stderr)
        return 2
    summary = report.summary
    if args.json:
        print(report.model_dump_json(indent=2))
    else:
        statuses = ", ".join(f"{k} {v}" for k, v in summary["final_statuses"].items())
        print(f"final statuses: {statuses}; approver: {summary['approval']}")
        if summary["alert_to_remediated_ms_p50"] is not None:
            print(
                f"alert -> REMEDIATED: p50 {summary['alert_to_remediated_ms_p50']} ms,"
                f" p95 {summary['alert_to_remediated_ms_p95']} ms"
            )
        if calls := summary.get("aws_calls"):
            top = ", ".join(f"{api} {n:g}" for api, n in list(calls["by_api_per_incident"].items())[:5])
            print(f"AWS calls per incident: median {calls['median']:g}, p95 {calls['p95']}; most: {top}")
    if args.out:
        print(f"each scenario's report: {args.out}/<scenario>/<incident id>/report.html", file=progress)
    if args.record:
        print(
            f"cassettes: {args.record}/<scenario>.json (replay: responder eval ... --replay {args.record})",
            file=progress,
        )
    if summary["spent_usd"] is not None:
        print(f"spent on the model: ${summary['spent_usd']:.4f} (from the usage it reported)", file=progress)
    if summary["stopped"]:
        print(f"stopped: {summary['stopped']}", file=progress)
    print(f"{summary['passed']} passed, {summary['total'] - summary['passed']} failed", file=progress)
    return 0 if summary["passed"] == summary["total"] else 1


def _cmd_chaos(args: argparse.Namespace) -> int:
    from chaos.cli import run

    return run(args)


def _quiet(args: argparse.Namespace) -> None:
    if not getattr(args, "verbose", False):
        os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
        os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")


def build_parser(command: str) -> argparse.ArgumentParser:
    """The parser of one lab command, as ``responder COMMAND`` shows it."""
    from chaos.cli import add_arguments as add_chaos_arguments

    p = ArgumentParser(prog=f"responder {command}", description=LAB_COMMANDS[command])
    if command == "demo":
        p.add_argument(
            "--fault",
            default="iam_revoke",
            choices=["iam_revoke", "iam_revoke_logs", "throttle", "network_block", "timeout", "memory"],
            help="which fault to inject (default: %(default)s, the S3 permission revoked)",
        )
        p.add_argument(
            "--out",
            default="out",
            help="folder for the execution history, picture, report and transcripts (default: out)",
        )
        p.add_argument("--model", default="offline", help=MODEL_HELP)
        p.add_argument("--verbose", action="store_true", help="also show the functions' JSON logs and metrics")
        p.set_defaults(handler=_cmd_demo)
    elif command == "run":
        p.add_argument("scenario", help="scenario YAML (format: see scenarios/)")
        p.add_argument("--json", action="store_true", help="print the record as JSON")
        p.add_argument("--out", help="also write the execution history, picture, report and transcripts to this folder")
        p.add_argument("--model", default="offline", help=MODEL_HELP)
        p.add_argument("--approval", **APPROVAL_ARGUMENT)
        p.add_argument("--verbose", action="store_true", help="also show the functions' JSON logs (on stderr)")
        p.set_defaults(handler=_cmd_run)
    elif command == "eval":
        p.add_argument("directory", metavar="DIR", help="a folder of scenario files (*.yaml), or one scenario file")
        p.add_argument("--json", action="store_true", help="print the scores as JSON")
        p.add_argument(
            "--out",
            help="also write each scenario's history, picture, report and agents' transcripts to "
            "OUT/<scenario>/<incident id>/",
        )
        p.add_argument("--model", help=MODEL_HELP + " (with --replay: the cassettes')")
        p.add_argument("--approval", **APPROVAL_ARGUMENT)
        p.add_argument(
            "--record",
            metavar="DIR",
            help="keep every model request and answer, one cassette per scenario: DIR/<scenario>.json"
            " (a bedrock_converse: model)",
        )
        p.add_argument(
            "--replay",
            metavar="DIR",
            help="answer the model's calls from the cassettes in DIR: no model, no credentials; a run that departs"
            " from them fails",
        )
        p.add_argument(
            "--max-cost",
            type=float,
            metavar="USD",
            help="a bedrock_converse: run stops calling the model there (default: what the run may cost at most)",
        )
        p.add_argument(
            "--count-aws-calls",
            action="store_true",
            help="count each incident's AWS calls by the responder's functions (they act as their own roles, so the"
            " lab tells their calls from its own), in all and by API",
        )
        p.add_argument("--verbose", action="store_true", help="also show the functions' JSON logs (on stderr)")
        p.set_defaults(handler=_cmd_eval)
    elif command == "lab":
        lab = p.add_subparsers(dest="lab_command", required=True, metavar="COMMAND")
        up = lab.add_parser("up", help="run the lab in the foreground for other processes to use")
        up.add_argument("--port", type=tcp_port, default=5000, help="moto's port (default: 5000)")
        up.add_argument("--empty", action="store_true", help="moto only: do not deploy template.yaml")
        up.add_argument(
            "--no-sample", action="store_true", help="with --empty: do not create the sample workload either"
        )
        up.add_argument("--model", default="offline", help=MODEL_HELP)
        up.add_argument("--verbose", action="store_true", help="show the functions' JSON logs and metrics")
        up.set_defaults(handler=_cmd_lab_up)
        invoke = lab.add_parser(
            "invoke",
            help="invoke the sample workload once as a concurrent burst; prints the incident id its alarm starts",
        )
        invoke.add_argument(
            "--function",
            default="data-processor",
            help="data-processor, orders-api or queue-consumer (default: data-processor)",
        )
        invoke.add_argument("--count", type=int, default=3, help="invocations in the burst (default: 3)")
        invoke.add_argument("--log-line", action="append", default=[], help="extra raw line the function logs")
        invoke.add_argument("--app-error", help="a bug in the function's own code, e.g. \"KeyError: 'order_id'\"")
        invoke.set_defaults(handler=_cmd_lab_invoke)
    elif command == "chaos":
        add_chaos_arguments(p)
        p.set_defaults(handler=_cmd_chaos)
    return p


def main(command: str, argv: list[str]) -> int:
    args = build_parser(command).parse_args(argv)
    from incident_responder.agent.errors import ModelConfigError
    from incident_responder.agent.models import parse_spec

    try:
        if getattr(args, "model", None) is not None:
            parse_spec(args.model)  # before any lab starts: a model that cannot work costs nothing
        # The lab raises it too before anything starts (the model's credentials or endpoint missing).
        return args.handler(args)
    except ModelConfigError as exc:
        print(f"responder {command}: {exc}", file=sys.stderr)
        return 2
