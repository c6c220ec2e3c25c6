"""``responder``: the project's command line.

Operator commands (production code only, for the lab or a real account):
  responder onboard FUNCTION                       record a function's baseline
  responder check-alert FILE... [--json]           what ingest would do with each alarm notification
  responder investigate ALERT.json                 run the supervisor agent on one alert
  responder show INCIDENT_ID                       print a stored incident
  responder report INCIDENT_ID                     write its HTML report (out/INCIDENT_ID/report.html)
  responder pending                                incidents awaiting approval
  responder approve INCIDENT_ID [--reject]         decide on them, with your own credentials
  responder mcp serve diagnostics --port N         run an MCP server (bearer key)
  responder mcp call URL TOOL key=value ...        call one MCP tool (bearer key or SigV4)

Lab commands (the embedded lab; `responder COMMAND --help` for each):
  responder demo                                   the main job on the embedded lab
  responder run SCENARIO.yaml                      one scenario in a fresh lab
  responder eval DIR                               score every scenario in DIR
  responder lab up | invoke                        run the lab for other processes / one burst
  responder chaos COMMAND ...                      inject faults / restore
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import sys
from typing import Any

# Run by the lab's own parsers (incident_responder.lab.cli), imported only when one of them is run.
LAB_COMMANDS = {
    "demo": "start the lab, break the sample workload, follow the incident to its end",
    "run": "run one scenario file in a fresh lab and print the final incident record",
    "eval": "run every scenario file in DIR in a fresh lab and score it",
    "lab": "the embedded AWS lab (up, invoke)",
    "chaos": "inject faults into a function and restore them",
}
# What the `lab` extra (pyproject.toml) installs, by import name: `pip install .` leaves them out.
LAB_EXTRA_MODULES = ("moto", "jsonata", "samtranslator")


def _cmd_onboard(args: argparse.Namespace) -> int:
    from incident_responder.account.baseline import record_baseline
    from incident_responder.core.aws import AwsClients

    baseline = record_baseline(AwsClients(), args.function)
    print(baseline.model_dump_json(indent=2))
    for entry in baseline.not_restorable:
        print(f"not restorable: {entry.path}: {entry.reason} (a person restores it)", file=sys.stderr)
    return 0


def _cmd_check_alert(args: argparse.Namespace) -> int:
    from pathlib import Path

    from incident_responder.account.baseline import baseline_table_name
    from incident_responder.core.aws import AwsClients
    from incident_responder.intake.alerts import Home
    from incident_responder.intake.ingest import AlertCheck, check_alert

    clients = AwsClients()
    # The stack's account and Region: its topic's (or state machine's) ARN, else the caller's account here.
    stack_arn = os.environ.get("INCIDENT_TOPIC_ARN") or os.environ.get("STATE_MACHINE_ARN") or ""
    home = Home.of(stack_arn) or Home(clients.get("sts").get_caller_identity()["Account"], clients.region)
    checks = []
    for name in args.files:
        try:
            text = sys.stdin.read() if name == "-" else Path(name).read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            why = exc.strerror if isinstance(exc, OSError) else f"not UTF-8 text ({exc.reason} at byte {exc.start})"
            checked = AlertCheck(outcome="reject", reason=f"cannot read the file: {why or exc}")
        else:
            checked = check_alert(clients, text, baseline_table_name(), home)
        checks.append({"file": name, **checked.model_dump()})
    if args.json:
        print(json.dumps(checks, indent=2))
    else:
        for check in checks:
            target = ":".join(filter(None, (check["function"], check["qualifier"])))
            print(f"{check['file']}: {check['outcome']}{' ' + target if target else ''}\n  {check['reason']}")
    return 1 if any(check["outcome"] == "reject" for check in checks) else 0


def _cmd_doctor(args: argparse.Namespace) -> int:
    from incident_responder.cli.doctor import main

    return main(args)


def _cmd_investigate(args: argparse.Namespace) -> int:
    from pathlib import Path

    from incident_responder.agent.graph import Limits
    from incident_responder.agent.models import ModelConfigError, create_chat_model
    from incident_responder.agent.tools import load_mcp_servers
    from incident_responder.intake.alerts import MalformedAlertError, parse_alert
    from incident_responder.investigation.investigate import run_investigation
    from incident_responder.state.store import RecordStore

    try:
        text = sys.stdin.read() if args.alert == "-" else Path(args.alert).read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        print(
            f"responder investigate: {args.alert}: not UTF-8 text ({exc.reason} at byte {exc.start})", file=sys.stderr
        )
        return 2
    try:
        incident = parse_alert(text)
        result, _ = run_investigation(
            incident,
            model=create_chat_model(args.model),
            servers=load_mcp_servers(only=("diagnostics",)),
            store=RecordStore.from_env(),
            limits=Limits(),
        )
    except (MalformedAlertError, ModelConfigError) as exc:
        print(f"responder investigate: {exc}", file=sys.stderr)
        return 2
    print(result.model_dump_json(indent=2))
    return 0 if result.outcome == "DIAGNOSED" else 3


def _no_incident(command: str, incident_id: str) -> int:
    table = os.environ.get("INCIDENT_STATE_TABLE", "incident-state")
    print(f"responder {command}: no incident {incident_id} in {table}", file=sys.stderr)
    return 1


def _cmd_show(args: argparse.Namespace) -> int:
    from incident_responder.core.aws import AwsClients
    from incident_responder.reporting.view import gather, render_text

    shown = gather(AwsClients(), args.incident_id)
    if shown is None:
        return _no_incident("show", args.incident_id)
    print(json.dumps(shown, indent=2, default=str) if args.json else render_text(shown))
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    from pathlib import Path

    from incident_responder.core.aws import AwsClients
    from incident_responder.reporting.report import collect, render_html

    detail = collect(AwsClients(), args.incident_id)
    if detail is None:
        return _no_incident("report", args.incident_id)
    path = Path(args.out) / args.incident_id / "report.html"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render_html(detail))
    except OSError as exc:
        print(f"responder report: cannot write {path}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    print(path)
    for what in detail.get("unavailable") or []:
        print(f"responder report: not in the report: {what}", file=sys.stderr)
    return 0


def _cmd_pending(args: argparse.Namespace) -> int:
    from incident_responder.approval.approval import pending_records
    from incident_responder.core.aws import AwsClients
    from incident_responder.state.lifecycle import get_incident_state, state_table_name

    clients = AwsClients()
    pending = []
    for record in pending_records(clients, state_table_name()):
        state = get_incident_state(clients, record.incident_id) or {}
        if state.get("status") != "AWAITING_APPROVAL":
            continue  # a request left over from an execution that ended (expired, swept) is not pending
        pending.append(
            {
                "incident_id": record.incident_id,
                "function_name": record.function_name,
                "risk": record.risk,
                "approval_expires_at": record.approval_expires_at,
                "actions_digest": record.actions_digest,
                "actions": [
                    {
                        k: a.get(k)
                        for k in ("execution_order", "action_type", "fault_type", "target_resource", "risk_level")
                    }
                    for a in sorted(record.actions, key=lambda a: a["execution_order"])
                ],
            }
        )
    if args.json:
        print(json.dumps(pending, indent=2))
        return 0
    if not pending:
        print("no incident is awaiting approval")
    for item in pending:
        print(
            f"{item['incident_id']}  {item['function_name']}  risk {item['risk']}  expires {item['approval_expires_at']}"
        )
        for a in item["actions"]:
            print(f"  {a['execution_order']}. {a['action_type']} ({a['risk_level']}) {a['target_resource']}")
    return 0


def _cmd_approve(args: argparse.Namespace) -> int:
    from datetime import UTC, datetime

    from incident_responder.approval.approval import (
        ApprovalNotFoundError,
        NotAwaitingApprovalError,
        check,
        decide,
        load_record,
        task_token_from_history,
    )
    from incident_responder.core.aws import AwsClients
    from incident_responder.state.lifecycle import get_incident_state, history, state_table_name

    clients = AwsClients()
    table = state_table_name()
    decision = "reject" if args.reject else "approve"
    state = get_incident_state(clients, args.incident_id)
    if state is None:
        raise ApprovalNotFoundError(f"no incident {args.incident_id} in {table}")
    if state.get("status") != "AWAITING_APPROVAL":
        raise NotAwaitingApprovalError(f"incident {args.incident_id} is {state.get('status')}, not awaiting approval")
    record = load_record(clients, table, args.incident_id)
    if record is None or not state.get("execution_arn"):
        raise ApprovalNotFoundError(f"incident {args.incident_id} has no approval request recorded in {table}")
    # The token comes from the execution's own history, read with the caller's credentials: the record
    # holds only its hash.
    token = task_token_from_history(history(clients.get("stepfunctions"), state["execution_arn"]))
    if token is None:
        raise NotAwaitingApprovalError(f"the execution of incident {args.incident_id} is not waiting for approval")
    check(record, record.incident_id, record.actions_digest, token, datetime.now(UTC))  # refuse before asking
    count = len(record.actions)
    print(f"Incident {record.incident_id} on function {record.function_name}: {decision} {count} action(s)")
    for action in sorted(record.actions, key=lambda a: a["execution_order"]):
        print(
            f"  {action['execution_order']}. {action['action_type']} for {action['fault_type']}"
            f" (risk {action.get('risk_level')}) on {action['target_resource']}"
        )
        print("     parameters: " + json.dumps(action["parameters"], sort_keys=True))
    print(f"Digest: {record.actions_digest}")
    print(f"Request expires at {record.approval_expires_at}")
    if not args.yes:
        if not sys.stdin.isatty():
            print(f"responder approve: not a terminal: pass --yes to {decision} without a prompt", file=sys.stderr)
            return 2
        try:
            answer = input(f"{decision.capitalize()} exactly these {count} action(s)? Type yes to confirm: ")
        except EOFError:
            answer = ""
        if answer.strip().lower() != "yes":
            print("nothing decided", file=sys.stderr)
            return 1
    caller = clients.get("sts").get_caller_identity()["Arn"]
    result = decide(
        clients,
        table=table,
        incident_id=record.incident_id,
        digest=record.actions_digest,
        token=token,
        decision=decision,
        decided_by=caller,
        channel="cli",
        reason=args.reason,
    )
    print(f"{'Approved' if decision == 'approve' else 'Rejected'} by {result.decided_by} at {result.decided_at}")
    return 0


def _cmd_mcp_serve(args: argparse.Namespace) -> int:
    from incident_responder.mcp_transport.app import serve
    from incident_responder.mcp_transport.auth import ApiKeyUnavailableError

    try:
        serve(args.server, host=args.host, port=args.port)
    except ApiKeyUnavailableError as exc:
        print(f"responder mcp serve: {exc}", file=sys.stderr)
        return 2
    return 0


def _cmd_mcp_call(args: argparse.Namespace) -> int:
    import anyio

    from incident_responder.mcp_transport.client import mcp_session, tool_payload

    arguments = {}
    for pair in args.arguments:
        key, sep, value = pair.partition("=")
        if not sep:
            print(f"responder mcp call: expected key=value, got {pair!r}", file=sys.stderr)
            return 2
        arguments[key] = int(value) if value.isdigit() else value

    from incident_responder.agent.tools import classify_mcp_error
    from incident_responder.mcp_transport.client import SigV4Auth

    # MCP_AUTH=iam (as `responder lab up` exports) signs even when a key for another server is exported.
    key = args.api_key or (None if os.environ.get("MCP_AUTH") == "iam" else os.environ.get("MCP_API_KEY"))
    try:
        auth = None if key else SigV4Auth.from_session(args.url)  # deployed servers: IAM auth
    except ValueError as exc:
        print(f"responder mcp call: {exc}; or give --api-key for a self-hosted server", file=sys.stderr)
        return 2

    async def call() -> dict:
        async with mcp_session(args.url, key, auth=auth) as session:
            return tool_payload(await session.call_tool(args.tool, arguments))

    try:
        payload = anyio.run(call)
    except Exception as exc:  # noqa: BLE001 - transport and auth failures, typed as the agents type them
        raise classify_mcp_error(exc, args.url) from exc
    print(json.dumps(payload, indent=2))
    return 1 if payload.get("error") else 0


def _cmd_lab(args: argparse.Namespace) -> int:
    """A lab command: handed to the lab's own parser, imported only now."""
    from incident_responder.lab.cli import main as lab_main

    return lab_main(args.command, args.rest)


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions keep their line breaks; an option's help ends with its default when it has one."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        if "default" in text or default in (None, False, [], argparse.SUPPRESS) or not action.option_strings:
            return action.help  # said already, or nothing to say
        return f"{text} (default: %(default)s)" if text else "default: %(default)s"


class ArgumentParser(argparse.ArgumentParser):
    """Every command and subcommand of ``responder`` (argparse makes subcommands of the parent's class)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(prog="responder", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("onboard", help="record a function's known-good configuration as its baseline")
    p.add_argument("function")
    p.set_defaults(handler=_cmd_onboard)

    p = sub.add_parser(
        "check-alert",
        help="what ingest would do with each alarm notification (start, ignore or reject, with the reason); "
        "starts and writes nothing",
        description="Reads each file as ingest reads an SNS message (a CloudWatch alarm notification in any of its "
        "shapes, an EventBridge alarm event, or a project alert) and says what ingest would do: start (the function "
        "and alias or version it resolves to), ignore or reject, each with its reason. It reads the account boto3 "
        "reaches (BASELINE_TABLE, the stack's output: onboarded functions, queue consumers; DescribeAlarms for a "
        "composite's children) and changes nothing. The stack's account and Region come from INCIDENT_TOPIC_ARN "
        "(else your credentials' account and Region). Exit status: 0 when none is rejected, 1 otherwise.",
    )
    p.add_argument(
        "files", nargs="+", metavar="FILE", help="a notification's JSON (the SNS Message), or - for standard input"
    )
    p.add_argument("--json", action="store_true", help="print a list of {file, outcome, function, qualifier, reason}")
    p.set_defaults(handler=_cmd_check_alert)

    p = sub.add_parser(
        "doctor",
        help="whether this setup can work: credentials, the model, and a deployed stack; a line per check with its fix",
        description="Checks your credentials and Region; the model (it exists, its lifecycle is ACTIVE, it is "
        "invoked as named or needs an inference profile, it answers a minimal call); and with --stack, the deployed "
        "stack (outputs, onboarded functions' tags, their alarms reaching the incident topic, confirmed subscriptions "
        "on the approval and proposal topics). Exit status: 1 when a check fails.",
    )
    p.add_argument("--model", help="the model to check (default: $RESPONDER_MODEL, else the template's default)")
    p.add_argument("--stack", help="a deployed stack's name, to check it too")
    p.set_defaults(handler=_cmd_doctor)

    p = sub.add_parser(
        "investigate",
        help="run the supervisor agent on one alert (CloudWatch alarm or project alert JSON) and store the diagnosis",
        description="Needs DIAGNOSTICS_MCP_URL (or RESPONDER_MCP_CONFIG), the MCP server's auth (SigV4 with your "
        "credentials, or a bearer key in MCP_API_KEY), and where to store (INCIDENT_CONTEXT_TABLE, ARTIFACTS_BUCKET).",
    )
    p.add_argument("alert", help="alert JSON file, or - for standard input")
    p.add_argument(
        "--model",
        default=os.environ.get("RESPONDER_MODEL") or "offline",
        help="offline, bedrock_converse:<model-id>, openai:<model> or ollama:<model> "
        "(default: $RESPONDER_MODEL, else offline)",
    )
    p.set_defaults(handler=_cmd_investigate)

    p = sub.add_parser(
        "show",
        help="print a stored incident: status, diagnosis, proposal, approval, verification, timeline",
        description="Reads INCIDENT_STATE_TABLE / INCIDENT_CONTEXT_TABLE (the stack's outputs) in the account boto3 reaches.",
    )
    p.add_argument("incident_id")
    p.add_argument(
        "--json", action="store_true", help="print the whole record as JSON (default: a summary and timeline)"
    )
    p.set_defaults(handler=_cmd_show)

    p = sub.add_parser(
        "report",
        help="write a stored incident's report: one self-contained HTML page (timeline, execution, evidence, actions)",
        description="Reads INCIDENT_STATE_TABLE / INCIDENT_CONTEXT_TABLE, the artifacts in S3 and the execution's "
        "history in the account boto3 reaches; prints the path written. The cost shows when PRICE_PER_MTOK_INPUT "
        "and PRICE_PER_MTOK_OUTPUT (USD per million tokens) are set.",
    )
    p.add_argument("incident_id")
    p.add_argument("--out", default="out", help="folder to write INCIDENT_ID/report.html under (default: out)")
    p.set_defaults(handler=_cmd_report)

    p = sub.add_parser(
        "pending",
        help="incidents awaiting approval: actions, risk, expiry",
        description="Reads INCIDENT_STATE_TABLE (the stack's output) in the account boto3 reaches.",
    )
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(handler=_cmd_pending)

    p = sub.add_parser(
        "approve",
        help="approve (or --reject) exactly the actions an incident awaits approval for, with your credentials",
        description="Reads the task token from the execution's history with your own credentials, shows what "
        "will be decided, asks for confirmation on a terminal (unless --yes), and records your identity (STS).",
    )
    p.add_argument("incident_id")
    p.add_argument("--reject", action="store_true", help="reject instead of approve")
    p.add_argument("--reason", help="why (recorded with the decision)")
    p.add_argument("--yes", action="store_true", help="decide without asking")
    p.set_defaults(handler=_cmd_approve)

    mcp = sub.add_parser("mcp", help="the project's MCP servers").add_subparsers(dest="mcp_command", required=True)
    p = mcp.add_parser("serve", help="run an MCP server (streamable HTTP, bearer key)")
    p.add_argument("server", choices=["diagnostics", "remediation"])
    p.add_argument("--host", default="127.0.0.1", help="(default: 127.0.0.1)")
    p.add_argument("--port", type=int, default=8081, help="(default: 8081)")
    p.set_defaults(handler=_cmd_mcp_serve)
    p = mcp.add_parser("call", help="call one tool on a running MCP server and print its result")
    p.add_argument("url", help="e.g. http://127.0.0.1:8081/mcp")
    p.add_argument("tool")
    p.add_argument("arguments", nargs="*", metavar="key=value")
    p.add_argument("--api-key", help="bearer key (default: $MCP_API_KEY; without one, requests are SigV4-signed)")
    p.set_defaults(handler=_cmd_mcp_call)

    for command, help_text in LAB_COMMANDS.items():
        # Its arguments (--help included) are left for the lab's own parser.
        sub.add_parser(command, help=help_text, add_help=False).set_defaults(handler=_cmd_lab)
    return parser


def explain(exc: BaseException) -> tuple[str, int] | None:
    """One line and an exit code for an error the user can fix; None for anything else (a bug keeps its traceback)."""
    import botocore.exceptions as boto
    import httpx

    from incident_responder.account.state import InvalidFunctionNameError
    from incident_responder.agent import errors as agent_errors
    from incident_responder.approval.approval import ApprovalError

    if isinstance(exc, ApprovalError):  # refusals of a decision: the message says why
        return str(exc), 1
    if isinstance(exc, InvalidFunctionNameError):
        return str(exc), 2
    lab_hint = "is the lab running (responder lab up), and are its printed export lines set in this shell?"
    if isinstance(exc, ModuleNotFoundError) and (exc.name or "").split(".")[0] in LAB_EXTRA_MODULES:
        return (
            f"the embedded lab needs the 'lab' extra, and {exc.name} is not installed: in the repository run "
            "pip install -e '.[lab]' (or make demo, which sets everything up)",
            2,
        )
    if isinstance(exc, OSError) and exc.filename is not None:
        return f"{exc.filename}: {exc.strerror or exc}", 2
    if isinstance(exc, OSError) and exc.errno == errno.EADDRINUSE:
        return exc.strerror or str(exc), 1
    if isinstance(exc, boto.NoRegionError):
        return "no AWS region: set AWS_REGION (for the lab, the export lines `responder lab up` prints)", 1
    if isinstance(exc, boto.NoCredentialsError | boto.PartialCredentialsError):
        return (
            "no AWS credentials found: set AWS_PROFILE or access keys "
            "(for the lab, the export lines `responder lab up` prints)",
            1,
        )
    if isinstance(exc, boto.EndpointConnectionError):
        where = f" (AWS_ENDPOINT_URL={os.environ['AWS_ENDPOINT_URL']})" if os.environ.get("AWS_ENDPOINT_URL") else ""
        return f"cannot connect to {exc.kwargs.get('endpoint_url')}{where}: {lab_hint}", 1
    if isinstance(exc, boto.ClientError):
        error = exc.response.get("Error", {})
        line = f"{exc.operation_name} failed: {error.get('Code')}: {error.get('Message')}"
        if error.get("Code") == "ResourceNotFoundException":
            names = ("INCIDENT_STATE_TABLE", "INCIDENT_CONTEXT_TABLE", "BASELINE_TABLE")
            tables = ", ".join(f"{n}={os.environ[n]}" for n in names if os.environ.get(n)) or "none set"
            line += f" (tables from the environment: {tables}; use the stack's outputs)"
        return line, 1
    if isinstance(exc, boto.BotoCoreError):
        return str(exc), 1
    if type(exc).__module__ == agent_errors.__name__:  # the typed MCP and model failures; they name the server
        return f"{type(exc).__name__}: {exc}", 1
    if isinstance(exc, httpx.TransportError):
        return f"cannot connect: {type(exc).__name__}: {exc}", 1
    return None


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, rest = parser.parse_known_args(argv)
    if args.handler is _cmd_lab:
        args.rest = rest
    elif rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    # The one place where known errors become one line on stderr instead of a traceback.
    try:
        return args.handler(args)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        explained = explain(exc)
        if explained is None:
            raise
        message, code = explained
        command = " ".join(filter(None, (args.command, getattr(args, "mcp_command", None))))
        print(f"responder {command}: {message}", file=sys.stderr)
        return code
