"""An incident: ``responder investigate`` (run the investigation on one alert), ``show`` and ``report`` (read a
stored incident), ``pending`` and ``approve`` (decide on what awaits approval), ``rollback`` (undo what an ended
incident left applied)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Literal


def _cmd_investigate(args: argparse.Namespace) -> int:
    from pathlib import Path

    from incident_responder.agent.errors import ModelConfigError
    from incident_responder.agent.models import create_chat_model
    from incident_responder.agent.spec import Limits
    from incident_responder.agent.tools import load_mcp_servers
    from incident_responder.core.settings import StoreSettings
    from incident_responder.intake.alerts import parse_alert
    from incident_responder.intake.errors import AlertIgnoredError, MalformedAlertError
    from incident_responder.investigation.investigate import run_investigation
    from incident_responder.state.store import RecordStore

    try:
        text = sys.stdin.read() if args.alert == "-" else Path(args.alert).read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        print(
            f"responder investigate: {args.alert}: not UTF-8 text ({exc.reason} at byte {exc.start})", file=sys.stderr
        )
        return 2
    # Without the diagnostics server the agent would run with no tool it knows, store NO_EVIDENCE and say nothing
    # of why: refused before anything runs or is stored.
    servers = [s for s in load_mcp_servers() if s.name == "diagnostics"]
    if not servers:
        print(
            "responder investigate: no diagnostics MCP server configured: set DIAGNOSTICS_MCP_URL (or a server named "
            "diagnostics in RESPONDER_MCP_CONFIG / RESPONDER_MCP_SERVERS)",
            file=sys.stderr,
        )
        return 2
    try:
        incident = parse_alert(text)
        result, _ = run_investigation(
            incident,
            model=create_chat_model(args.model),
            servers=servers,
            store=RecordStore.from_settings(StoreSettings.current()),
            limits=Limits(),
        )
    except (MalformedAlertError, ModelConfigError) as exc:
        print(f"responder investigate: {exc}", file=sys.stderr)
        return 2
    except AlertIgnoredError as exc:  # an alarm back to OK: well-formed, and no incident (ingest ignores it too)
        print(f"responder investigate: {exc}: nothing to investigate", file=sys.stderr)
        return 2
    print(result.model_dump_json(indent=2))
    return 0 if result.outcome == "DIAGNOSED" else 3


def _no_incident(command: str, incident_id: str, table: str) -> int:
    print(f"responder {command}: no incident {incident_id} in {table}", file=sys.stderr)
    return 1


def _cmd_show(args: argparse.Namespace) -> int:
    from incident_responder.core.aws import AwsClients
    from incident_responder.core.settings import StoreSettings
    from incident_responder.reporting.transcript import transcript_text, transcripts
    from incident_responder.reporting.view import read_incident, render_text

    stores = StoreSettings.current()
    table = stores.incident_state_table
    clients = AwsClients()
    found = read_incident(clients, args.incident_id, state_table=table, context_table=stores.incident_context_table)
    if found is None:
        return _no_incident("show", args.incident_id, table)
    shown = found["shown"]
    said, unavailable = transcripts(clients, found["records"]) if args.transcript else ({}, [])
    if args.json:
        print(json.dumps({**shown, "transcripts": said} if args.transcript else shown, indent=2, default=str))
    else:
        print(render_text(shown, hint=not args.transcript))
        if args.transcript:
            print("\ntranscript:\n" + transcript_text(said))
    for what in unavailable:
        print(f"responder show: not shown: {what}", file=sys.stderr)
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    from pathlib import Path

    from incident_responder.core.aws import AwsClients
    from incident_responder.core.settings import StoreSettings
    from incident_responder.reporting.report import collect, render_html

    stores = StoreSettings.current()
    table = stores.incident_state_table
    detail = collect(AwsClients(), args.incident_id, state_table=table, context_table=stores.incident_context_table)
    if detail is None:
        return _no_incident("report", args.incident_id, table)
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
    from incident_responder.approval.record import pending_records
    from incident_responder.core.aws import AwsClients
    from incident_responder.core.settings import StoreSettings
    from incident_responder.state.lifecycle import get_incident_state

    clients = AwsClients()
    table = StoreSettings.current().incident_state_table
    pending: list[dict[str, Any]] = []
    for record in pending_records(clients, table):
        state = get_incident_state(clients, table, record.incident_id) or {}
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


def _unconfirmed(yes: bool, command: str, doing: str, question: str, nothing: str) -> int | None:
    """None when the person confirmed (or passed --yes); else the exit status, said why. Off a terminal, --yes."""
    if yes:
        return None
    if not sys.stdin.isatty():
        print(f"responder {command}: not a terminal: pass --yes to {doing} without a prompt", file=sys.stderr)
        return 2
    try:
        answer = input(f"{question} Type yes to confirm: ")
    except EOFError:
        answer = ""
    if answer.strip().lower() == "yes":
        return None
    print(nothing, file=sys.stderr)
    return 1


def _cmd_approve(args: argparse.Namespace) -> int:
    from datetime import UTC, datetime

    from incident_responder.approval.decision import check_decision, decide, task_token_from_history
    from incident_responder.approval.errors import ApprovalNotFoundError, NotAwaitingApprovalError
    from incident_responder.approval.record import load_approval_record
    from incident_responder.core.aws import AwsClients
    from incident_responder.core.settings import StoreSettings
    from incident_responder.state.lifecycle import get_incident_state, history

    clients = AwsClients()
    table = StoreSettings.current().incident_state_table
    decision: Literal["approve", "reject"] = "reject" if args.reject else "approve"
    state = get_incident_state(clients, table, args.incident_id)
    if state is None:
        raise ApprovalNotFoundError(f"no incident {args.incident_id} in {table}")
    if state.get("status") != "AWAITING_APPROVAL":
        raise NotAwaitingApprovalError(f"incident {args.incident_id} is {state.get('status')}, not awaiting approval")
    record = load_approval_record(clients, table, args.incident_id)
    if record is None or not state.get("execution_arn"):
        raise ApprovalNotFoundError(f"incident {args.incident_id} has no approval request recorded in {table}")
    # The token comes from the execution's own history, read with the caller's credentials: the record
    # holds only its hash.
    token = task_token_from_history(history(clients.get("stepfunctions"), state["execution_arn"]))
    if token is None:
        raise NotAwaitingApprovalError(f"the execution of incident {args.incident_id} is not waiting for approval")
    check_decision(record, record.incident_id, record.actions_digest, token, datetime.now(UTC))  # refuse before asking
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
    refused = _unconfirmed(
        args.yes, "approve", decision, f"{decision.capitalize()} exactly these {count} action(s)?", "nothing decided"
    )
    if refused is not None:
        return refused
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


def _cmd_rollback(args: argparse.Namespace) -> int:
    """Undo, with the caller's credentials, what an ended incident left applied: fenced, so a step another incident
    has leased since (and may have fixed) is refused and reported, never undone."""
    from incident_responder.core.aws import AwsClients
    from incident_responder.core.contracts import Incident
    from incident_responder.core.settings import StoreSettings
    from incident_responder.remediation import remediate
    from incident_responder.remediation.lease import execution_running
    from incident_responder.state.lifecycle import get_incident_state

    clients = AwsClients()
    table = StoreSettings.current().incident_state_table
    state = get_incident_state(clients, table, args.incident_id)
    if state is None or not isinstance(state.get("incident_json"), dict):
        return _no_incident("rollback", args.incident_id, table)
    if state.get("execution_arn") and execution_running(clients, state["execution_arn"]):
        print(
            f"responder rollback: the execution of incident {args.incident_id} is still running "
            f"({state.get('status')}): it verifies or undoes its own change; stop it first to take over",
            file=sys.stderr,
        )
        return 2
    refused = _unconfirmed(
        args.yes, "rollback", "roll back", f"Undo what incident {args.incident_id} applied?", "nothing undone"
    )
    if refused is not None:
        return refused
    caller = clients.get("sts").get_caller_identity()["Arn"]
    result = remediate.rollback(
        clients,
        table=table,
        incident=Incident.model_validate(state["incident_json"]),
        reason=f"rolled back by {caller}" + (f": {args.reason}" if args.reason else ""),
    )
    for step in result.steps:
        said = step.error or step.detail
        print(f"  {step.execution_order}. {step.action_type} on {step.target_resource}: {step.status}  {said}".rstrip())
    if not result.steps:
        print(f"Incident {args.incident_id} has nothing applied to undo.")
    print(result.outcome)
    return 0 if result.outcome == "ROLLED_BACK" else 1


def add_commands(sub: Any) -> None:
    """``investigate``, ``show``, ``report``, ``pending``, ``approve`` and ``rollback``, on ``responder``'s
    subcommands."""
    p = sub.add_parser(
        "investigate",
        help="run the investigator agent on one alert (CloudWatch alarm or project alert JSON) and store the diagnosis",
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
    p.add_argument(
        "--transcript",
        action="store_true",
        help="also print each agent's transcript: every model turn (its words, tool calls, tokens), each tool "
        "result (cut), the nudges, the watchdog's notices, the submission and the end",
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

    p = sub.add_parser(
        "rollback",
        help="undo what an ended incident left applied (fenced: never another incident's change), with your credentials",
        description="For a change an execution left unverified (stopped, timed out): puts back each step's recorded "
        "prior state, newest first, only while nobody has leased the resource since and it is still what the step "
        "left. Refuses while the incident's execution still runs. Reads INCIDENT_STATE_TABLE.",
    )
    p.add_argument("incident_id")
    p.add_argument("--reason", help="why (recorded in the ledger)")
    p.add_argument("--yes", action="store_true", help="roll back without asking")
    p.set_defaults(handler=_cmd_rollback)
