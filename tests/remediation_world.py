"""The sample account REMEDIATING tests share: one onboarded data-processor in a fresh lab, put back to its
baseline between tests; faults injected by chaos; the remediation lookups' ready-made actions, approvals for
exactly them, the apply driver, the undo ledger's items and a counter of the AWS writes made."""

from __future__ import annotations

import io
import json
import uuid
import zipfile
from collections import Counter
from contextlib import contextmanager
from datetime import UTC, datetime
from types import SimpleNamespace

import pytest

from chaos import FaultInjector
from incident_responder.account.baseline import Baseline, record_baseline
from incident_responder.account.drift import diff_configurations
from incident_responder.account.state import read_function_configuration
from incident_responder.actions.concurrency import get_concurrency_restore_info
from incident_responder.actions.function_configuration import get_function_config_restore_info
from incident_responder.actions.iam import get_iam_restore_info
from incident_responder.actions.network import egress_grants, get_network_restore_info
from incident_responder.core.contracts import (
    ApprovalDecision,
    Incident,
    ProposalSubmission,
    RemediationAction,
    actions_digest,
)
from incident_responder.lab.account.data_processor import create_sample_account
from incident_responder.lab.account.resources import create_table
from incident_responder.remediation import remediate
from incident_responder.remediation.verify import verify
from incident_responder.state import keys

FN = "data-processor"
TABLE = "incident-state"
ROLE = "data-processor-role"
RESOURCE = f"function:{FN}"  # the lease of the function's configuration and concurrency


@contextmanager
def lab_account(lab, clients, state_dir):
    """A fresh lab with the sample onboarded and the incident-state table, this process pointed at it."""
    with pytest.MonkeyPatch.context() as mp:
        lab.reset()
        for key, value in lab.env.items():
            mp.setenv(key, value)
        for key in ("AWS_PROFILE", "BASELINE_TABLE"):
            mp.delenv(key, raising=False)
        mp.setenv("RESPONDER_CHAOS_STATE_DIR", str(state_dir))
        sample = create_sample_account(clients)
        baseline = record_baseline(clients, sample.function_name)
        create_table(clients, "IncidentStateTable", TABLE)
        yield SimpleNamespace(sample=sample, baseline=baseline, clients=clients, lab=lab)


def restore_baseline(clients, baseline: Baseline, record: bool = True, now=None) -> None:
    """Put the function's account state back to ``baseline`` (whatever a test changed) and re-record it
    (``record``: unless the recorded baseline is known to be that one still). ``now``: the state as last read,
    when the caller knows it (then the result is not read back either)."""
    base, known = baseline.configuration, now is not None
    now = now or read_function_configuration(clients, baseline.function_name)
    iam, lam, ec2 = clients.get("iam"), clients.get("lambda"), clients.get("ec2")
    role = base.role.role_name
    for name, document in base.role.inline_policies.items():
        if now.role.inline_policies.get(name) != document:
            iam.put_role_policy(RoleName=role, PolicyName=name, PolicyDocument=json.dumps(document))
    for name in set(now.role.inline_policies) - set(base.role.inline_policies):
        iam.delete_role_policy(RoleName=role, PolicyName=name)
    for arn in set(now.role.attached_policy_arns) - set(base.role.attached_policy_arns):
        iam.detach_role_policy(RoleName=role, PolicyArn=arn)
    for arn in set(base.role.attached_policy_arns) - set(now.role.attached_policy_arns):
        iam.attach_role_policy(RoleName=role, PolicyArn=arn)
    if now.reserved_concurrency != base.reserved_concurrency:
        if base.reserved_concurrency is None:
            lam.delete_function_concurrency(FunctionName=base.function_name)
        else:
            lam.put_function_concurrency(
                FunctionName=base.function_name, ReservedConcurrentExecutions=base.reserved_concurrency
            )
    if (now.timeout, now.memory_size) != (base.timeout, base.memory_size):
        lam.update_function_configuration(
            FunctionName=base.function_name, Timeout=base.timeout, MemorySize=base.memory_size
        )
    groups = {g.group_id: g.egress_rules for g in now.network.security_groups}
    for group in base.network.security_groups:
        have, want = egress_grants(groups.get(group.group_id, [])), egress_grants(group.egress_rules)
        if set(have) - set(want):
            ec2.revoke_security_group_egress(
                GroupId=group.group_id, IpPermissions=[g for k, g in have.items() if k not in want]
            )
        if set(want) - set(have):
            ec2.authorize_security_group_egress(
                GroupId=group.group_id, IpPermissions=[g for k, g in want.items() if k not in have]
            )
    acls = {s.network_acl_id: s.entries for s in now.network.subnets}
    for subnet in base.network.subnets:
        have = {(e["RuleNumber"], e["Egress"]): e for e in acls.get(subnet.network_acl_id, [])}
        want = {(e["RuleNumber"], e["Egress"]): e for e in subnet.entries}
        for rule, egress in set(have) - set(want):
            ec2.delete_network_acl_entry(NetworkAclId=subnet.network_acl_id, RuleNumber=rule, Egress=egress)
        for key, entry in want.items():
            if have.get(key) != entry:
                fields = {k: v for k, v in entry.items() if k not in ("RuleNumber", "Egress")}
                call = ec2.replace_network_acl_entry if key in have else ec2.create_network_acl_entry
                call(NetworkAclId=subnet.network_acl_id, RuleNumber=key[0], Egress=key[1], **fields)
    if not known:
        assert diff_configurations(base, read_function_configuration(clients, baseline.function_name)) == []
    if record:
        record_baseline(clients, baseline.function_name)


def free_functions(clients) -> None:
    """Drop every function lease a test's incidents left held (a test applies without verifying or rolling back)."""
    ddb = clients.get("dynamodb")
    for page in ddb.get_paginator("scan").paginate(TableName=TABLE, ProjectionExpression="incident_id"):
        for item in page["Items"]:
            if item["incident_id"]["S"].startswith(keys.LEASE_PREFIX):
                ddb.delete_item(TableName=TABLE, Key=item)


def new_incident() -> Incident:
    return Incident(
        incident_id=f"inc-{uuid.uuid4().hex[:12]}",
        function_name=FN,
        source="alert",
        detected_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )


def inject(clients, *faults: tuple[str, dict]) -> None:
    chaos = FaultInjector.for_function(FN, clients=clients)
    for kind, params in faults:
        getattr(chaos, kind)(**params)


LOOKUPS = {
    "iam": get_iam_restore_info,
    "concurrency": get_concurrency_restore_info,
    "network": get_network_restore_info,
    "config": get_function_config_restore_info,
}


def restore_actions(clients, *kinds: str) -> list[RemediationAction]:
    """The remediation server's ready-made actions for ``kinds``, ordered and numbered as a proposal."""
    submitted = [a for kind in kinds for a in LOOKUPS[kind](clients, FN).actions]
    return ProposalSubmission(actions=submitted).to_proposal("i-1").actions


def approval(actions, **overrides) -> ApprovalDecision:
    return ApprovalDecision(
        **{
            "decision": "approve",
            "decided_by": "alice@example.com",
            "decided_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "channel": "cli",
            "actions_digest": actions_digest(actions),
            **overrides,
        }
    )


def run_apply(clients, incident, chosen, **overrides):
    """Apply ``chosen`` as approved; ``overrides`` replace any of apply's arguments (actions too)."""
    kwargs = {
        "table": TABLE,
        "incident": incident,
        "actions": chosen,
        "actions_digest": actions_digest(chosen),
        "approval": approval(chosen),
        "ttl_days": 7,
    }
    return remediate.apply(clients, **{**kwargs, **overrides})


def ledger_item(clients, incident, order: int) -> dict:
    key = {"incident_id": {"S": keys.ledger_step(incident.incident_id, order)}}
    return clients.get("dynamodb").get_item(TableName=TABLE, Key=key, ConsistentRead=True).get("Item")


def prior(clients, incident, order: int) -> dict:
    return json.loads(ledger_item(clients, incident, order)["prior_json"]["S"])


@contextmanager
def counting(clients, *services: str):
    """Counts the API operations made through ``clients`` (e.g. ``calls["PutFunctionConcurrency"]``)."""
    calls: Counter[str] = Counter()

    def count(model, **_):
        calls[model.name] += 1

    for service in services:
        clients.get(service).meta.events.register("before-call", count)
    try:
        yield calls
    finally:
        for service in services:
            clients.get(service).meta.events.unregister("before-call", count)


WRITES = {
    "PutRolePolicy",
    "DeleteRolePolicy",
    "AttachRolePolicy",
    "DetachRolePolicy",
    "PutFunctionConcurrency",
    "DeleteFunctionConcurrency",
    "UpdateFunctionConfiguration",
    "AuthorizeSecurityGroupEgress",
    "RevokeSecurityGroupEgress",
    "CreateNetworkAclEntry",
    "ReplaceNetworkAclEntry",
    "DeleteNetworkAclEntry",
}


def writes(calls: Counter) -> dict[str, int]:
    return {name: n for name, n in calls.items() if name in WRITES}


def lambda_context(name: str) -> SimpleNamespace:
    return SimpleNamespace(
        function_name=name,
        memory_limit_in_mb=256,
        invoked_function_arn=f"arn:aws:lambda:us-east-1:123456789012:function:{name}",
        aws_request_id="req-1",
        get_remaining_time_in_millis=lambda: 60_000,
    )


def applied(clients, *faults, kinds):
    """Inject ``faults``, then apply the restore actions of ``kinds``: (incident, actions, apply result)."""
    inject(clients, *faults)
    actions = restore_actions(clients, *kinds)
    incident = new_incident()
    result = run_apply(clients, incident, actions)
    assert result.outcome == "APPLIED", result.error
    return incident, actions, result


def run_verify(clients, incident, actions, result, faults, health):
    return verify(
        clients,
        incident=incident,
        actions=actions,
        remediation=result.model_dump(mode="json"),
        fault_types=faults,
        health=health,
    )


def put_metrics(clients, function_name: str, at: datetime, **values: float) -> None:
    clients.get("cloudwatch").put_metric_data(
        Namespace="AWS/Lambda",
        MetricData=[
            {
                "MetricName": name,
                "Value": value,
                "Unit": "Count",
                "Timestamp": at,
                "Dimensions": [{"Name": "FunctionName", "Value": function_name}],
            }
            for name, value in values.items()
        ],
    )


TWIN = "report-builder"  # another onboarded function with data-processor's execution role


def twin_function(clients, reserved_concurrency: int | None = None) -> str:
    lam = clients.get("lambda")
    if TWIN not in {f["FunctionName"] for f in lam.list_functions()["Functions"]}:
        code = io.BytesIO()
        with zipfile.ZipFile(code, "w") as archive:
            archive.writestr("app.py", "def handler(event, context):\n    return event\n")
        lam.create_function(
            FunctionName=TWIN,
            Runtime="python3.12",
            Role=clients.get("iam").get_role(RoleName=ROLE)["Role"]["Arn"],
            Handler="app.handler",
            Code={"ZipFile": code.getvalue()},
            Timeout=30,
            MemorySize=256,
        )
        if reserved_concurrency is not None:
            lam.put_function_concurrency(FunctionName=TWIN, ReservedConcurrentExecutions=reserved_concurrency)
        record_baseline(clients, TWIN)
    return TWIN


def module_account():
    """The fixture of a test module's own account: ``account = module_account()`` in the module."""

    @pytest.fixture(scope="module")
    def account(lab, _lab_clients, tmp_path_factory):
        with lab_account(lab, _lab_clients, tmp_path_factory.mktemp("chaos")) as ready:
            yield ready

    return account


def at_baseline(account, monkeypatch, tmp_path):
    """The module's account back at its baseline, with fresh chaos state and no lease left held."""
    monkeypatch.setenv("RESPONDER_CHAOS_STATE_DIR", str(tmp_path / "chaos"))
    restore_baseline(account.clients, account.baseline)
    free_functions(account.clients)
    return account
