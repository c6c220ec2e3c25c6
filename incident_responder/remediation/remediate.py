"""REMEDIATING and ROLLING_BACK: apply approved actions, recording how to undo each; undo them.

:func:`apply` runs only actions a person (or the approval policy) approved: their digest must be the
event's and the approval's, and the decision "approve". Before each action it records the exact prior
state the action is about to change in the undo ledger (``remediation#<incident_id>#<execution_order>``
in the incident-state table, written once, conditionally), then applies it. Actions run in
``execution_order`` and the first failure stops the rest: the result says FAILED with the step and the
AWS error, and the state machine rolls back. Guardrails run again on each action before it changes
anything (defence in depth: the account may have moved since the proposal).

A retried task (Step Functions retries the Lambda) repeats nothing: a step already ``applied`` is
skipped; a step ``recorded`` (its change may or may not have happened) is applied again, which every
action here tolerates, and its prior state is never overwritten with the post-apply one. An alias, a
key, an event source mapping, a secret or a queue already in the state the action wants is not written
again; a mapping Lambda is still moving (Enabling, Disabling, Updating) is waited for, as Lambda refuses
updates then, and is recorded as the state it is moving to. A restored secret's undo schedules its
deletion again (Secrets Manager has no other way back), with the recovery window recorded when
DescribeSecret tells it and its minimum of 7 days otherwise; its ledger entry says which.

:func:`apply` first takes the function's lease (:mod:`incident_responder.remediation.lease`): while another
incident remediates the same function, it raises ``FunctionLeaseHeldError`` before writing anything, and
the state machine waits. After each step it reads back what the step left (``after``); a step the API
refused, with the live state still its prior, is ``failed``: nothing to undo.

:func:`rollback` reads the ledger and, newest first, puts back the recorded prior state of each step this
incident applied, only while the live state is still what the step left (compare-and-swap): whatever
changed since (another incident's fix, a person) is left as it is and the rollback fails, so operators
are alarmed. It reads the live state again after each undo and checks it equals the prior state, and
frees the function at the end. One failure does not stop the others. A ledger head item
(``remediation#<incident_id>``) lists the steps, so a rollback finds them without a scan. No ledger item
has a ``status`` attribute: the sweep scans that attribute for incidents.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from botocore.exceptions import ClientError
from pydantic import BaseModel, Field, ValidationError

from incident_responder.account.baseline import load_baseline
from incident_responder.account.state import read_function_configuration, read_queue_url, read_reserved_concurrency
from incident_responder.core.aws import AwsClients
from incident_responder.core.contracts import (
    ActionType,
    ApprovalDecision,
    EnableEventSourceMappingParams,
    EnableKmsKeyParams,
    Incident,
    RemediationAction,
    RestoreIamPolicyParams,
    RestoreNetworkEgressParams,
    RestoreQueueAttributesParams,
    RestoreSecretParams,
    RollbackAliasParams,
    UpdateConcurrencyParams,
    UpdateFunctionConfigurationParams,
    incident_from_event,
)
from incident_responder.core.contracts import actions_digest as digest_of
from incident_responder.investigation.diagnostics import AWS_ERRORS, describe_error
from incident_responder.proposal.guardrails import check_action
from incident_responder.remediation import lease as function_lease

LEDGER_PREFIX = "remediation#"
# recorded: the prior state is kept, the change may or may not have happened; applied: it happened and
# ``after`` is what it left; failed: the API refused and the live state is still the prior one.
Progress = Literal["recorded", "applied", "failed", "undone", "undo_failed"]


# -- errors (class names are the ASL's error names) -------------------------------------------------
class InvalidRemediationInputError(ValueError):
    """The event is not what the state machine should pass (malformed actions, approval, operation)."""


class ApprovalMismatchError(ValueError):
    """The actions are not the ones approved (digest differs) or the decision is not "approve": nothing applied."""


class LedgerConflictError(RuntimeError):
    """The incident's ledger holds other actions, or actions already rolled back: nothing applied."""


# -- results ----------------------------------------------------------------------------------------
class ApplyStep(BaseModel):
    execution_order: int
    action_type: str
    target_resource: str
    status: Literal["applied", "already_applied", "failed", "not_attempted"]
    detail: str = ""
    error: str | None = None


class ApplyResult(BaseModel):
    outcome: Literal["APPLIED", "FAILED"]
    steps: list[ApplyStep] = Field(default_factory=list)
    failed_step: int | None = None
    error: str | None = None
    finished_at: str

    @property
    def applied(self) -> list[ApplyStep]:
        return [s for s in self.steps if s.status in ("applied", "already_applied")]


class UndoStep(BaseModel):
    execution_order: int
    action_type: str
    target_resource: str
    status: Literal["undone", "not_applied", "undo_failed"]
    detail: str = ""
    error: str | None = None


class RollbackResult(BaseModel):
    outcome: Literal["ROLLED_BACK", "ROLLBACK_FAILED"]
    steps: list[UndoStep] = Field(default_factory=list)
    error: str | None = None


class LedgerEntry(BaseModel):
    execution_order: int
    action: RemediationAction
    prior: dict[str, Any]
    progress: Progress
    after: dict[str, Any] | None = None  # the live state this step left, read right after it ran
    recorded_at: str
    applied_at: str | None = None
    undone_at: str | None = None
    error: str | None = None


# -- helpers ----------------------------------------------------------------------------------------
def _now() -> datetime:
    return datetime.now(UTC)


def _iso(moment: datetime) -> str:
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _code(exc: Exception) -> str | None:
    return exc.response.get("Error", {}).get("Code") if isinstance(exc, ClientError) else None


def _incident(incident: Incident | dict[str, Any]) -> Incident:
    return incident if isinstance(incident, Incident) else incident_from_event({"incident": incident})


def parse_actions(actions: Any) -> list[RemediationAction]:
    """Validated actions in execution order; malformed ones are an input error, never a KeyError."""
    if not isinstance(actions, list):
        raise InvalidRemediationInputError("actions must be a list of remediation actions")
    try:
        parsed = [a if isinstance(a, RemediationAction) else RemediationAction.model_validate(a) for a in actions]
    except ValidationError as exc:
        raise InvalidRemediationInputError(f"not remediation actions: {exc.errors()[:3]}") from exc
    orders = [a.execution_order for a in parsed]
    if any(o < 1 for o in orders) or len(set(orders)) != len(orders):
        raise InvalidRemediationInputError(f"execution_order must be unique and 1 or more, got {orders}")
    return sorted(parsed, key=lambda a: a.execution_order)


def _approval(approval: Any) -> ApprovalDecision:
    if approval is None:
        raise ApprovalMismatchError("no approval was given for these actions")
    try:
        return approval if isinstance(approval, ApprovalDecision) else ApprovalDecision.model_validate(approval)
    except ValidationError as exc:
        raise InvalidRemediationInputError(f"not an approval decision: {exc.errors()[:3]}") from exc


def check_approval(actions: list[RemediationAction], digest: str | None, approval: ApprovalDecision) -> str:
    """The digest of ``actions`` when the event's digest and the approval both match it; else raise."""
    computed = digest_of(actions)
    if approval.decision != "approve":
        raise ApprovalMismatchError(f"the decision was {approval.decision!r}, not approve")
    if digest != computed:
        raise ApprovalMismatchError(f"the actions' digest {computed} is not the event's actions_digest {digest}")
    if approval.actions_digest != computed:
        raise ApprovalMismatchError(
            f"the actions' digest {computed} is not the approved digest {approval.actions_digest}"
        )
    return computed


# -- what each action type changes, and how it is put back --------------------------------------------
# capture() reads the live state of exactly what the action changes, in a comparable shape: it is the
# prior state recorded before applying, and read again after an undo it must equal that record.
class _Change:
    def capture(self, clients: AwsClients, p: Any) -> dict[str, Any]:
        raise NotImplementedError

    def apply(self, clients: AwsClients, p: Any) -> str:
        raise NotImplementedError

    def restore(self, clients: AwsClients, p: Any, prior: dict[str, Any]) -> str | None:
        """Put ``prior`` back; may say how (the undo step's detail), else None."""
        raise NotImplementedError

    def comparable(self, state: dict[str, Any]) -> dict[str, Any]:
        """What of a captured state compare-and-swap compares (default: all of it). A capture may carry facts for
        the record that an undo cannot reproduce exactly (a secret's deletion date)."""
        return state


class _IamPolicy(_Change):
    def capture(self, clients: AwsClients, p: RestoreIamPolicyParams) -> dict[str, Any]:
        iam = clients.get("iam")
        if p.attach_policy_arn is not None:
            attached = [
                a["PolicyArn"]
                for page in iam.get_paginator("list_attached_role_policies").paginate(RoleName=p.role_name)
                for a in page["AttachedPolicies"]
            ]
            return {
                "role_name": p.role_name,
                "policy_arn": p.attach_policy_arn,
                "attached": p.attach_policy_arn in attached,
            }
        try:
            document = iam.get_role_policy(RoleName=p.role_name, PolicyName=p.policy_name)["PolicyDocument"]
        except ClientError as exc:
            if _code(exc) != "NoSuchEntity":
                raise
            return {"role_name": p.role_name, "policy_name": p.policy_name, "absent": True, "policy_document": None}
        return {"role_name": p.role_name, "policy_name": p.policy_name, "absent": False, "policy_document": document}

    def apply(self, clients: AwsClients, p: RestoreIamPolicyParams) -> str:
        iam = clients.get("iam")
        if p.attach_policy_arn is not None:
            iam.attach_role_policy(RoleName=p.role_name, PolicyArn=p.attach_policy_arn)
            return f"attached {p.attach_policy_arn} to role {p.role_name}"
        iam.put_role_policy(
            RoleName=p.role_name, PolicyName=p.policy_name, PolicyDocument=json.dumps(p.policy_document)
        )
        return f"put inline policy {p.policy_name} on role {p.role_name}"

    def restore(self, clients: AwsClients, p: RestoreIamPolicyParams, prior: dict[str, Any]) -> None:
        iam = clients.get("iam")
        try:
            if "attached" in prior:
                if prior["attached"]:
                    iam.attach_role_policy(RoleName=p.role_name, PolicyArn=prior["policy_arn"])
                else:
                    iam.detach_role_policy(RoleName=p.role_name, PolicyArn=prior["policy_arn"])
            elif prior["absent"]:
                iam.delete_role_policy(RoleName=p.role_name, PolicyName=prior["policy_name"])
            else:
                iam.put_role_policy(
                    RoleName=p.role_name,
                    PolicyName=prior["policy_name"],
                    PolicyDocument=json.dumps(prior["policy_document"]),
                )
        except ClientError as exc:
            if _code(exc) != "NoSuchEntity":  # already detached or deleted: that is the prior state
                raise


class _Concurrency(_Change):
    def capture(self, clients: AwsClients, p: UpdateConcurrencyParams) -> dict[str, Any]:
        return {
            "function_name": p.function_name,
            "reserved_concurrent_executions": read_reserved_concurrency(clients, p.function_name),
        }

    def apply(self, clients: AwsClients, p: UpdateConcurrencyParams) -> str:
        return self._set(clients, p.function_name, p.reserved_concurrent_executions)

    def restore(self, clients: AwsClients, p: UpdateConcurrencyParams, prior: dict[str, Any]) -> None:
        self._set(clients, p.function_name, prior["reserved_concurrent_executions"])

    @staticmethod
    def _set(clients: AwsClients, function_name: str, value: int | None) -> str:
        lam = clients.get("lambda")
        if value is None:
            lam.delete_function_concurrency(FunctionName=function_name)
            return f"removed the reserved concurrency of {function_name}"
        lam.put_function_concurrency(FunctionName=function_name, ReservedConcurrentExecutions=value)
        return f"set the reserved concurrency of {function_name} to {value}"


class _FunctionConfiguration(_Change):
    # The ledger records EphemeralStorage as its size in MB; the API takes and returns {"Size": MB}.
    FIELDS = (("timeout", "Timeout"), ("memory_size", "MemorySize"), ("ephemeral_storage", "EphemeralStorage"))

    def capture(self, clients: AwsClients, p: UpdateFunctionConfigurationParams) -> dict[str, Any]:
        config = clients.get("lambda").get_function_configuration(FunctionName=p.function_name)
        config = {**config, "EphemeralStorage": (config.get("EphemeralStorage") or {}).get("Size", 512)}
        # Only what the action changes: a field it leaves alone is not its to put back.
        return {"function_name": p.function_name} | {
            api: config[api] for field, api in self.FIELDS if getattr(p, field) is not None
        }

    def apply(self, clients: AwsClients, p: UpdateFunctionConfigurationParams) -> str:
        changes = {api: getattr(p, field) for field, api in self.FIELDS if getattr(p, field) is not None}
        self._update(clients, p.function_name, changes)
        return f"set {', '.join(f'{k} {v}' for k, v in changes.items())} on {p.function_name}"

    def restore(self, clients: AwsClients, p: UpdateFunctionConfigurationParams, prior: dict[str, Any]) -> None:
        self._update(clients, p.function_name, {api: prior[api] for _, api in self.FIELDS if api in prior})

    @staticmethod
    def _update(clients: AwsClients, function_name: str, changes: dict[str, Any]) -> None:
        lam = clients.get("lambda")
        waiter = {"FunctionName": function_name, "WaiterConfig": {"Delay": 2, "MaxAttempts": 30}}
        # Lambda applies configuration asynchronously and refuses a change while another is pending.
        lam.get_waiter("function_updated").wait(**waiter)
        if "EphemeralStorage" in changes:
            changes = {**changes, "EphemeralStorage": {"Size": changes["EphemeralStorage"]}}
        lam.update_function_configuration(FunctionName=function_name, **changes)
        lam.get_waiter("function_updated").wait(**waiter)


# Security-group rules compared one grant at a time (protocol, ports, one range or group): EC2 merges
# and splits IpPermissions as it likes, so whole rules do not compare.
_GRANTS = (("IpRanges", "CidrIp"), ("Ipv6Ranges", "CidrIpv6"), ("PrefixListIds", "PrefixListId"))


def egress_grants(permissions: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """One IpPermission per grant, keyed by what it allows (descriptions do not count)."""
    out = {}
    for rule in permissions:
        protocol = str(rule.get("IpProtocol", "-1")).lower()
        base: dict[str, Any] = {"IpProtocol": protocol}
        if protocol != "-1":
            base |= {k: rule[k] for k in ("FromPort", "ToPort") if rule.get(k) is not None}
        items = [(field, key, item) for field, key in _GRANTS for item in rule.get(field) or []]
        items += [("UserIdGroupPairs", "GroupId", pair) for pair in rule.get("UserIdGroupPairs") or []]
        for field, key, item in items:
            kept = {k: v for k, v in item.items() if k in (key, "Description", "UserId")}
            identity = _canonical({**base, field: item.get(key)})
            out[identity] = {**base, field: [kept]}
    return out


class _NetworkEgress(_Change):
    def capture(self, clients: AwsClients, p: RestoreNetworkEgressParams) -> dict[str, Any]:
        ec2 = clients.get("ec2")
        prior: dict[str, Any] = {"security_group_id": p.security_group_id, "already_present": [], "nacl_entries": []}
        if p.ip_permissions:
            present = self._current_grants(clients, p.security_group_id)
            wanted = egress_grants(p.ip_permissions)
            prior["already_present"] = [wanted[k] for k in sorted(wanted) if k in present]
        entries = []
        for acl_id in sorted({e.network_acl_id for e in p.remove_nacl_entries}):
            acl = ec2.describe_network_acls(NetworkAclIds=[acl_id])["NetworkAcls"][0]
            for entry in p.remove_nacl_entries:
                found = self._entry(acl, entry.rule_number, entry.egress) if entry.network_acl_id == acl_id else None
                if found is not None:  # an entry already gone is nothing to recreate
                    entries.append({"NetworkAclId": acl_id, **found})
        prior["nacl_entries"] = sorted(entries, key=lambda e: (e["NetworkAclId"], e["Egress"], e["RuleNumber"]))
        return prior

    def apply(self, clients: AwsClients, p: RestoreNetworkEgressParams) -> str:
        ec2 = clients.get("ec2")
        done = []
        if p.ip_permissions:
            present = self._current_grants(clients, p.security_group_id)
            missing = [g for k, g in egress_grants(p.ip_permissions).items() if k not in present]
            if missing:
                try:
                    ec2.authorize_security_group_egress(GroupId=p.security_group_id, IpPermissions=missing)
                except ClientError as exc:
                    if _code(exc) != "InvalidPermission.Duplicate":
                        raise
            done.append(f"authorized {len(missing)} egress grant(s) on {p.security_group_id}")
        for entry in p.remove_nacl_entries:
            acl = ec2.describe_network_acls(NetworkAclIds=[entry.network_acl_id])["NetworkAcls"][0]
            if self._entry(acl, entry.rule_number, entry.egress) is not None:
                ec2.delete_network_acl_entry(
                    NetworkAclId=entry.network_acl_id, RuleNumber=entry.rule_number, Egress=entry.egress
                )
            done.append(
                f"removed NACL {entry.network_acl_id} {'egress' if entry.egress else 'ingress'} rule {entry.rule_number}"
            )
        return "; ".join(done)

    def restore(self, clients: AwsClients, p: RestoreNetworkEgressParams, prior: dict[str, Any]) -> None:
        ec2 = clients.get("ec2")
        if p.ip_permissions:
            present = self._current_grants(clients, p.security_group_id)
            keep = set(egress_grants(prior["already_present"]))
            added = [g for k, g in egress_grants(p.ip_permissions).items() if k in present and k not in keep]
            if added:
                try:
                    ec2.revoke_security_group_egress(GroupId=p.security_group_id, IpPermissions=added)
                except ClientError as exc:
                    if _code(exc) != "InvalidPermission.NotFound":
                        raise
        for entry in prior["nacl_entries"]:
            acl = ec2.describe_network_acls(NetworkAclIds=[entry["NetworkAclId"]])["NetworkAcls"][0]
            now = self._entry(acl, entry["RuleNumber"], entry["Egress"])
            if now is not None and _canonical({"NetworkAclId": entry["NetworkAclId"], **now}) == _canonical(entry):
                continue
            fields = {
                k: entry[k]
                for k in ("Protocol", "RuleAction", "CidrBlock", "Ipv6CidrBlock", "PortRange", "IcmpTypeCode")
                if entry.get(k) is not None
            }
            call = ec2.create_network_acl_entry if now is None else ec2.replace_network_acl_entry
            call(NetworkAclId=entry["NetworkAclId"], RuleNumber=entry["RuleNumber"], Egress=entry["Egress"], **fields)

    @staticmethod
    def _current_grants(clients: AwsClients, group_id: str | None) -> dict[str, dict[str, Any]]:
        group = clients.get("ec2").describe_security_groups(GroupIds=[group_id])["SecurityGroups"][0]
        return egress_grants(group.get("IpPermissionsEgress", []))

    @staticmethod
    def _entry(acl: dict[str, Any], rule_number: int, egress: bool) -> dict[str, Any] | None:
        return next(
            (e for e in acl.get("Entries", []) if e["RuleNumber"] == rule_number and bool(e.get("Egress")) == egress),
            None,
        )


class _AliasVersion(_Change):
    """UpdateAlias FunctionVersion (weighted routing, which the baseline does not record, is left as it is)."""

    def capture(self, clients: AwsClients, p: RollbackAliasParams) -> dict[str, Any]:
        alias = clients.get("lambda").get_alias(FunctionName=p.function_name, Name=p.alias_name)
        return {
            "function_name": p.function_name,
            "alias_name": p.alias_name,
            "function_version": alias["FunctionVersion"],
        }

    def apply(self, clients: AwsClients, p: RollbackAliasParams) -> str:
        return self._point(clients, p, p.function_version)

    def restore(self, clients: AwsClients, p: RollbackAliasParams, prior: dict[str, Any]) -> None:
        self._point(clients, p, prior["function_version"])

    def _point(self, clients: AwsClients, p: RollbackAliasParams, version: str) -> str:
        what = f"alias {p.alias_name} of {p.function_name}"
        if self.capture(clients, p)["function_version"] == version:
            return f"{what} already routes to version {version}"
        clients.get("lambda").update_alias(FunctionName=p.function_name, Name=p.alias_name, FunctionVersion=version)
        return f"pointed {what} at version {version}"


def _key_id(key_arn: str) -> str:
    # KMS takes the id or the ARN for Enable/DisableKey; some emulators only the id.
    return key_arn.rsplit("/", 1)[-1]


class _KmsKey(_Change):
    def capture(self, clients: AwsClients, p: EnableKmsKeyParams) -> dict[str, Any]:
        metadata = clients.get("kms").describe_key(KeyId=_key_id(p.key_arn))["KeyMetadata"]
        return {"key_arn": p.key_arn, "key_state": metadata["KeyState"]}

    def apply(self, clients: AwsClients, p: EnableKmsKeyParams) -> str:
        if self.capture(clients, p)["key_state"] == "Enabled":
            return f"key {p.key_arn} is already enabled"
        clients.get("kms").enable_key(KeyId=_key_id(p.key_arn))
        return f"enabled key {p.key_arn}"

    def restore(self, clients: AwsClients, p: EnableKmsKeyParams, prior: dict[str, Any]) -> None:
        state = self.capture(clients, p)["key_state"]
        if state == prior["key_state"]:
            return
        # Only the two states EnableKey moves between; any other is left for the read-back to report.
        if prior["key_state"] == "Disabled":
            clients.get("kms").disable_key(KeyId=_key_id(p.key_arn))
        elif prior["key_state"] == "Enabled":
            clients.get("kms").enable_key(KeyId=_key_id(p.key_arn))


# Lambda moves a mapping through these for a few seconds and refuses an update meanwhile
# (ResourceInUseException); Enabling / Disabling are recorded as where they lead.
_MAPPING_TRANSITIONS = ("Creating", "Enabling", "Disabling", "Updating")
_MAPPING_SETTLED = {"Enabling": "Enabled", "Disabling": "Disabled"}
MAPPING_WAIT = {"delay": 2.0, "attempts": 30}
_sleep = time.sleep


class _EventSourceMapping(_Change):
    def capture(self, clients: AwsClients, p: EnableEventSourceMappingParams) -> dict[str, Any]:
        state = clients.get("lambda").get_event_source_mapping(UUID=p.uuid)["State"]
        return {"uuid": p.uuid, "state": _MAPPING_SETTLED.get(state, state)}

    def apply(self, clients: AwsClients, p: EnableEventSourceMappingParams) -> str:
        return self._set(clients, p, True)

    def restore(self, clients: AwsClients, p: EnableEventSourceMappingParams, prior: dict[str, Any]) -> None:
        if prior["state"] in ("Enabled", "Disabled"):
            self._set(clients, p, prior["state"] == "Enabled")

    def _set(self, clients: AwsClients, p: EnableEventSourceMappingParams, enabled: bool) -> str:
        lam = clients.get("lambda")
        wanted = "Enabled" if enabled else "Disabled"
        state = lam.get_event_source_mapping(UUID=p.uuid)["State"]
        for _ in range(int(MAPPING_WAIT["attempts"])):
            if _MAPPING_SETTLED.get(state, state) == wanted:
                return f"event source mapping {p.uuid} is already {state}"
            if state not in _MAPPING_TRANSITIONS:
                break
            _sleep(MAPPING_WAIT["delay"])
            state = lam.get_event_source_mapping(UUID=p.uuid)["State"]
        lam.update_event_source_mapping(UUID=p.uuid, Enabled=enabled)
        return f"{'enabled' if enabled else 'disabled'} event source mapping {p.uuid} of {p.function_name}"


# Secrets Manager's bounds on RecoveryWindowInDays.
SECRET_RECOVERY_DAYS = (7, 30)
# How far apart LastChangedDate and DeletedDate may be from a whole number of days and still be read as the
# DeleteSecret request and the window it gave (Secrets Manager stamps both from the one request).
_WINDOW_TOLERANCE = timedelta(minutes=2)


def _when(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, str):
        try:
            return _when(datetime.fromisoformat(value.replace("Z", "+00:00")))
        except ValueError:
            return None
    return None


def recovery_window_days(described: dict[str, Any]) -> int | None:
    """The RecoveryWindowInDays a scheduled deletion was requested with, when DescribeSecret tells it: DeletedDate
    (when it will be deleted) a whole number of days, within Secrets Manager's bounds, after LastChangedDate (the
    DeleteSecret request). None when it cannot be told (the secret changed otherwise since, or is not scheduled).

    >>> recovery_window_days({"DeletedDate": "2026-12-01T10:00:00Z", "LastChangedDate": "2026-11-21T10:00:00Z"})
    10
    >>> recovery_window_days({"DeletedDate": "2026-12-01T10:00:00Z", "LastChangedDate": "2026-11-01T08:00:00Z"})
    """
    deleted, changed = _when(described.get("DeletedDate")), _when(described.get("LastChangedDate"))
    if deleted is None or changed is None or deleted <= changed:
        return None
    days = round((deleted - changed) / timedelta(days=1))
    if not SECRET_RECOVERY_DAYS[0] <= days <= SECRET_RECOVERY_DAYS[1]:
        return None
    return days if abs(deleted - changed - timedelta(days=days)) <= _WINDOW_TOLERANCE else None


class _Secret(_Change):
    """RestoreSecret: cancel a scheduled deletion. Its undo schedules the deletion again (DeleteSecret), with the
    recovery window it had when that can be told, else Secrets Manager's minimum of 7 days; the ledger's prior
    state says which (``undo``). The new deletion date cannot be the recorded one: compare-and-swap compares
    whether the secret exists and is scheduled for deletion, not when."""

    COMPARED = ("secret_arn", "exists", "scheduled_for_deletion")

    def capture(self, clients: AwsClients, p: RestoreSecretParams) -> dict[str, Any]:
        try:
            described = clients.get("secretsmanager").describe_secret(SecretId=p.secret_arn)
        except ClientError as exc:
            if _code(exc) != "ResourceNotFoundException":
                raise
            return {"secret_arn": p.secret_arn, "exists": False, "scheduled_for_deletion": False}
        deleted = _when(described.get("DeletedDate"))
        state: dict[str, Any] = {"secret_arn": p.secret_arn, "exists": True, "scheduled_for_deletion": bool(deleted)}
        if deleted is not None:
            window = recovery_window_days(described)
            state |= {
                "deletion_date": _iso(deleted),
                "recovery_window_days": window,
                "undo": (
                    f"DeleteSecret RecoveryWindowInDays={window}: the window this deletion was scheduled with "
                    "(DeletedDate - LastChangedDate)"
                    if window is not None
                    else f"DeleteSecret RecoveryWindowInDays={SECRET_RECOVERY_DAYS[0]} (Secrets Manager's minimum): the "
                    f"window this deletion was scheduled with cannot be told from DescribeSecret, so the deletion is "
                    f"scheduled {SECRET_RECOVERY_DAYS[0]} days after the undo, not on {_iso(deleted)}"
                ),
            }
        return state

    def comparable(self, state: dict[str, Any]) -> dict[str, Any]:
        return {k: state.get(k) for k in self.COMPARED}

    def apply(self, clients: AwsClients, p: RestoreSecretParams) -> str:
        state = self.capture(clients, p)
        if state["exists"] and not state["scheduled_for_deletion"]:
            return f"secret {p.secret_arn} is not scheduled for deletion (already restored)"
        clients.get("secretsmanager").restore_secret(SecretId=p.secret_arn)
        return f"cancelled the scheduled deletion of secret {p.secret_arn}"

    def restore(self, clients: AwsClients, p: RestoreSecretParams, prior: dict[str, Any]) -> str | None:
        live = self.capture(clients, p)
        if not prior.get("scheduled_for_deletion") or live["scheduled_for_deletion"] or not live["exists"]:
            return None  # nothing this undo can do; the read-back reports any difference
        window = prior.get("recovery_window_days") or SECRET_RECOVERY_DAYS[0]
        clients.get("secretsmanager").delete_secret(SecretId=p.secret_arn, RecoveryWindowInDays=window)
        how = "its recorded window" if prior.get("recovery_window_days") else "the minimum: its window was not known"
        return f"scheduled the deletion of secret {p.secret_arn} again, in {window} days ({how})"


class _QueueVisibility(_Change):
    """SetQueueAttributes VisibilityTimeout on the queue a mapping of the function reads."""

    _url = staticmethod(read_queue_url)

    def capture(self, clients: AwsClients, p: RestoreQueueAttributesParams) -> dict[str, Any]:
        sqs = clients.get("sqs")
        attributes = sqs.get_queue_attributes(
            QueueUrl=self._url(clients, p.queue_arn), AttributeNames=["VisibilityTimeout"]
        )["Attributes"]
        return {"queue_arn": p.queue_arn, "visibility_timeout": int(attributes["VisibilityTimeout"])}

    def apply(self, clients: AwsClients, p: RestoreQueueAttributesParams) -> str:
        return self._set(clients, p, p.visibility_timeout)

    def restore(self, clients: AwsClients, p: RestoreQueueAttributesParams, prior: dict[str, Any]) -> None:
        self._set(clients, p, prior["visibility_timeout"])

    def _set(self, clients: AwsClients, p: RestoreQueueAttributesParams, seconds: int) -> str:
        if self.capture(clients, p)["visibility_timeout"] == seconds:
            return f"the visibility timeout of {p.queue_arn} is already {seconds} s"
        clients.get("sqs").set_queue_attributes(
            QueueUrl=self._url(clients, p.queue_arn), Attributes={"VisibilityTimeout": str(seconds)}
        )
        return f"set the visibility timeout of {p.queue_arn} to {seconds} s"


CHANGES: dict[ActionType, _Change] = {
    ActionType.RESTORE_IAM_POLICY: _IamPolicy(),
    ActionType.UPDATE_CONCURRENCY: _Concurrency(),
    ActionType.RESTORE_NETWORK_EGRESS: _NetworkEgress(),
    ActionType.UPDATE_FUNCTION_CONFIGURATION: _FunctionConfiguration(),
    ActionType.ROLLBACK_ALIAS: _AliasVersion(),
    ActionType.ENABLE_KMS_KEY: _KmsKey(),
    ActionType.ENABLE_EVENT_SOURCE_MAPPING: _EventSourceMapping(),
    ActionType.RESTORE_SECRET: _Secret(),
    ActionType.RESTORE_QUEUE_ATTRIBUTES: _QueueVisibility(),
}


def capture_prior(clients: AwsClients, action: RemediationAction) -> dict[str, Any]:
    """The live state of exactly what ``action`` changes, as the ledger records it."""
    return CHANGES[action.action_type].capture(clients, action.typed_parameters())


# -- the ledger ---------------------------------------------------------------------------------------
class Ledger:
    """The undo ledger of one incident in the incident-state table."""

    def __init__(self, clients: AwsClients, table: str, incident_id: str, ttl_days: int = 7):
        self.ddb = clients.get("dynamodb")
        self.table = table
        self.incident_id = incident_id
        self.ttl_days = ttl_days

    def head_key(self) -> dict[str, Any]:
        return {"incident_id": {"S": f"{LEDGER_PREFIX}{self.incident_id}"}}

    def key(self, order: int) -> dict[str, Any]:
        return {"incident_id": {"S": f"{LEDGER_PREFIX}{self.incident_id}#{order}"}}

    def _expires_at(self) -> dict[str, str]:
        return {"N": str(int(_now().timestamp()) + self.ttl_days * 86400)}

    def open(self, digest: str, orders: list[int], approval: ApprovalDecision) -> None:
        """Write the head item once; a retry with the same actions reuses it, other actions conflict."""
        item = {
            **self.head_key(),
            "actions_digest": {"S": digest},
            "execution_orders": {"L": [{"N": str(o)} for o in orders]},
            "approved_by": {"S": approval.decided_by},
            "approval_channel": {"S": approval.channel},
            "created_at": {"S": _iso(_now())},
            "expires_at": self._expires_at(),
        }
        try:
            self.ddb.put_item(TableName=self.table, Item=item, ConditionExpression="attribute_not_exists(incident_id)")
        except ClientError as exc:
            if _code(exc) != "ConditionalCheckFailedException":
                raise
            head = self.head()
            if head is None or head["actions_digest"] != digest:
                raise LedgerConflictError(
                    f"incident {self.incident_id} already has remediation ledger for other actions "
                    f"({head and head['actions_digest']}); refusing to apply {digest}"
                ) from None

    def head(self) -> dict[str, Any] | None:
        item = self.ddb.get_item(TableName=self.table, Key=self.head_key(), ConsistentRead=True).get("Item")
        if not item:
            return None
        return {
            "actions_digest": item["actions_digest"]["S"],
            "execution_orders": [int(o["N"]) for o in item.get("execution_orders", {}).get("L", [])],
        }

    def get(self, order: int) -> LedgerEntry | None:
        item = self.ddb.get_item(TableName=self.table, Key=self.key(order), ConsistentRead=True).get("Item")
        if not item:
            return None
        text = {k: v["S"] for k, v in item.items() if "S" in v}
        return LedgerEntry(
            execution_order=order,
            action=RemediationAction.model_validate_json(text["action_json"]),
            prior=json.loads(text["prior_json"]),
            progress=text["progress"],
            after=json.loads(text["after_json"]) if "after_json" in text else None,
            recorded_at=text["recorded_at"],
            applied_at=text.get("applied_at"),
            undone_at=text.get("undone_at"),
            error=text.get("error"),
        )

    def entries(self, head: dict[str, Any] | None = None) -> list[LedgerEntry]:
        """Every step the head lists (``head``: already read, else read now); none without a head."""
        head = head if head is not None else self.head()
        if head is None:
            return []
        return [e for e in (self.get(o) for o in head["execution_orders"]) if e is not None]

    def record(self, action: RemediationAction, prior: dict[str, Any]) -> LedgerEntry:
        """Record the prior state once; if a concurrent attempt recorded first, its record stands."""
        recorded_at = _iso(_now())
        item = {
            **self.key(action.execution_order),
            "action_json": {"S": action.model_dump_json()},
            "prior_json": {"S": json.dumps(prior, sort_keys=True)},
            "progress": {"S": "recorded"},
            "recorded_at": {"S": recorded_at},
            "expires_at": self._expires_at(),
        }
        try:
            self.ddb.put_item(TableName=self.table, Item=item, ConditionExpression="attribute_not_exists(incident_id)")
        except ClientError as exc:
            if _code(exc) != "ConditionalCheckFailedException":
                raise
            existing = self.get(action.execution_order)
            if existing is not None:
                return existing
            raise
        return LedgerEntry(
            execution_order=action.execution_order,
            action=action,
            prior=prior,
            progress="recorded",
            recorded_at=recorded_at,
        )

    def mark(
        self, order: int, progress: Progress, *, error: str | None = None, after: dict[str, Any] | None = None
    ) -> None:
        stamp = {"applied": "applied_at", "undone": "undone_at"}.get(progress)
        sets = ["progress = :progress"]
        values: dict[str, Any] = {":progress": {"S": progress}}
        if stamp:
            sets.append(f"{stamp} = :at")
            values[":at"] = {"S": _iso(_now())}
        if after is not None:
            sets.append("after_json = :after")
            values[":after"] = {"S": json.dumps(after, sort_keys=True)}
        if error is not None:
            sets.append("#error = :error")
            values[":error"] = {"S": error[:1000]}
        update = "SET " + ", ".join(sets) + ("" if error is not None else " REMOVE #error")
        self.ddb.update_item(
            TableName=self.table,
            Key=self.key(order),
            UpdateExpression=update,
            ConditionExpression="attribute_exists(incident_id)",
            ExpressionAttributeNames={"#error": "error"},
            ExpressionAttributeValues=values,
        )

    def note_error(self, order: int, error: str, after: dict[str, Any] | None = None) -> None:
        """The step's progress stays as it was (its change may have happened); the error is kept, and what
        the step left when it could be read."""
        sets, values = ["#error = :error"], {":error": {"S": error[:1000]}}
        if after is not None:
            sets.append("after_json = :after")
            values[":after"] = {"S": json.dumps(after, sort_keys=True)}
        self.ddb.update_item(
            TableName=self.table,
            Key=self.key(order),
            UpdateExpression="SET " + ", ".join(sets),
            ConditionExpression="attribute_exists(incident_id)",
            ExpressionAttributeNames={"#error": "error"},
            ExpressionAttributeValues=values,
        )

    def note_rollback(self, reason: str) -> None:
        self.ddb.update_item(
            TableName=self.table,
            Key=self.head_key(),
            UpdateExpression="SET rollback_reason = :reason, rollback_at = :at",
            ExpressionAttributeValues={":reason": {"S": (reason or "")[:1000]}, ":at": {"S": _iso(_now())}},
        )


# -- apply ------------------------------------------------------------------------------------------
def _step(action: RemediationAction, status: str, detail: str = "", error: str | None = None) -> ApplyStep:
    return ApplyStep(
        execution_order=action.execution_order,
        action_type=action.action_type.value,
        target_resource=action.target_resource,
        status=status,
        detail=detail,
        error=error,
    )


def _read_after(change: _Change, clients: AwsClients, params: Any) -> dict[str, Any] | None:
    """What a step left, read back at once: a rollback undoes it only while the live state still is this."""
    try:
        return change.capture(clients, params)
    except AWS_ERRORS:
        return None  # unknown: a rollback then leaves the resource alone unless it is at its prior state


def _note_failure(
    ledger: Ledger, change: _Change, clients: AwsClients, params: Any, entry: LedgerEntry, error: str
) -> None:
    """A failed step changed nothing if the live state is still its prior; else it left something to undo."""
    after = _read_after(change, clients, params)
    if after is not None and _canonical(change.comparable(after)) == _canonical(change.comparable(entry.prior)):
        ledger.mark(entry.execution_order, "failed", error=error)
    else:
        ledger.note_error(entry.execution_order, error, after)


def apply(
    clients: AwsClients,
    *,
    table: str,
    incident: Incident | dict[str, Any],
    actions: list[RemediationAction] | list[dict[str, Any]],
    actions_digest: str | None,
    approval: ApprovalDecision | dict[str, Any] | None,
    ttl_days: int,
    baseline_table: str | None = None,
) -> ApplyResult:
    """Apply approved actions in order, recording how to undo each; stop at the first failure.

    Raises only for bad input (:class:`InvalidRemediationInputError`, ``InvalidIncidentError``), actions
    that are not the approved ones (:class:`ApprovalMismatchError`) or a ledger of other actions
    (:class:`LedgerConflictError`), always before anything is applied. An AWS failure of an action is
    an outcome (FAILED), not an exception; ledger (DynamoDB) failures raise, so the task is retried.
    """
    incident = _incident(incident)
    actions = parse_actions(actions)
    decision = _approval(approval)
    digest = check_approval(actions, actions_digest, decision)
    ledger = Ledger(clients, table, incident.incident_id, ttl_days)
    entries = {a.execution_order: ledger.get(a.execution_order) for a in actions}
    for order, entry in entries.items():
        if entry is not None and entry.progress in ("undone", "undo_failed"):
            raise LedgerConflictError(f"step {order} of incident {incident.incident_id} was already rolled back")
        action = next(a for a in actions if a.execution_order == order)
        if entry is not None and digest_of([entry.action]) != digest_of([action]):
            raise LedgerConflictError(f"step {order} of incident {incident.incident_id} recorded another action")
    if actions:
        # One remediation at a time per function: raises, before anything is written, while another holds it.
        function_lease.take(clients, table, incident.function_name, incident.incident_id)
        ledger.open(digest, [a.execution_order for a in actions], decision)

    # The guardrails' ground truth, read before anything changes (a function never onboarded raises here).
    baseline, not_restorable = None, {}
    if any(entry is None for entry in entries.values()):
        recorded = load_baseline(clients, incident.function_name, baseline_table)
        baseline, not_restorable = recorded.configuration, recorded.not_restorable_paths()
    steps: list[ApplyStep] = []
    failed: ApplyStep | None = None
    for action in actions:
        if failed is not None:
            steps.append(_step(action, "not_attempted", "an earlier step failed"))
            continue
        entry = entries[action.execution_order]
        if entry is not None and entry.progress == "applied":
            steps.append(_step(action, "already_applied", f"applied at {entry.applied_at}"))
            continue
        change = CHANGES[action.action_type]
        params = action.typed_parameters()
        try:
            if entry is None:
                # Guardrails judge a step before it first changes anything; a recorded step passed them then,
                # and its half-done change would now look like "nothing to restore".
                assert baseline is not None
                current = read_function_configuration(clients, incident.function_name)
                reasons = check_action(action, current, baseline, clients, incident.qualifier, not_restorable)
                if reasons:
                    failed = _step(action, "failed", error="refused by the guardrails: " + "; ".join(reasons))
                    steps.append(failed)
                    continue
                entry = ledger.record(action, change.capture(clients, params))
            detail = change.apply(clients, params)
        except AWS_ERRORS as exc:
            failed = _step(action, "failed", error=describe_error(exc))
            steps.append(failed)
            if entry is not None:
                _note_failure(ledger, change, clients, params, entry, failed.error or "")
            continue
        ledger.mark(action.execution_order, "applied", after=_read_after(change, clients, params))
        steps.append(_step(action, "applied", detail))
    if failed is not None:
        return ApplyResult(
            outcome="FAILED",
            steps=steps,
            failed_step=failed.execution_order,
            error=f"step {failed.execution_order} ({failed.action_type}): {failed.error}",
            finished_at=_iso(_now()),
        )
    return ApplyResult(outcome="APPLIED", steps=steps, finished_at=_iso(_now()))


# -- rollback ---------------------------------------------------------------------------------------
def _differences(prior: dict[str, Any], live: dict[str, Any]) -> str:
    keys = sorted(k for k in set(prior) | set(live) if _canonical(prior.get(k)) != _canonical(live.get(k)))
    return ", ".join(
        f"{k}: expected {_canonical(prior.get(k))[:200]}, found {_canonical(live.get(k))[:200]}" for k in keys
    )


def rollback(
    clients: AwsClients, *, table: str, incident: Incident | dict[str, Any], reason: str = ""
) -> RollbackResult:
    """Put back the recorded prior state of every step this incident applied, newest first; then free the function.

    Compare-and-swap: a step is undone only while the live state is still what it left (``after``). A step
    the API refused changed nothing and is ``not_applied``; a resource changed since (another incident's
    fix, a person) is left as it is and reported ``undo_failed``, as is one whose change cannot be told
    apart, so that operators are alarmed instead of the change being overwritten. After each undo the live
    state is read again and must equal the prior. One failure does not stop the others.
    """
    incident = _incident(incident)
    ledger = Ledger(clients, table, incident.incident_id)
    head = ledger.head()
    if head is None:
        function_lease.release(clients, table, incident.function_name, incident.incident_id)
        return RollbackResult(outcome="ROLLED_BACK")
    ledger.note_rollback(reason)
    entries = ledger.entries(head)
    steps = [_undo(clients, ledger, entry) for entry in sorted(entries, key=lambda e: e.execution_order, reverse=True)]
    function_lease.release(clients, table, incident.function_name, incident.incident_id)
    failures = [s for s in steps if s.status == "undo_failed"]
    if failures:
        return RollbackResult(
            outcome="ROLLBACK_FAILED",
            steps=steps,
            error="; ".join(f"step {s.execution_order} ({s.action_type}): {s.error}" for s in failures),
        )
    return RollbackResult(outcome="ROLLED_BACK", steps=steps)


def _undo(clients: AwsClients, ledger: Ledger, entry: LedgerEntry) -> UndoStep:
    action = entry.action
    step = {
        "execution_order": entry.execution_order,
        "action_type": action.action_type.value,
        "target_resource": action.target_resource,
    }
    if entry.progress == "undone":
        return UndoStep(**step, status="undone", detail=f"undone at {entry.undone_at}")
    if entry.progress == "failed":
        return UndoStep(**step, status="not_applied", detail=f"never applied ({entry.error or 'refused'})")
    change = CHANGES[action.action_type]
    params = action.typed_parameters()
    error = None
    prior = change.comparable(entry.prior)
    try:
        live = change.comparable(change.capture(clients, params))
        if _canonical(live) == _canonical(prior):
            detail = "already in its recorded prior state"
        elif entry.after is None:
            detail = ""
            error = (
                "cannot tell whether this incident changed it (its step did not finish), and it is no longer in "
                f"its recorded prior state ({_differences(prior, live)}): left as it is"
            )
        elif _canonical(live) != _canonical(after := change.comparable(entry.after)):
            detail = ""
            error = (
                "changed since this incident set it, by someone else or another incident "
                f"({_differences(after, live)}): left as it is"
            )
        else:
            said = change.restore(clients, params, entry.prior)
            live = change.comparable(change.capture(clients, params))
            detail = f"restored the recorded prior state: {said}" if said else "restored the recorded prior state"
            if _canonical(live) != _canonical(prior):
                error = "the live state does not equal the recorded prior state after the undo: " + _differences(
                    prior, live
                )
    except AWS_ERRORS as exc:
        error = describe_error(exc)
    if error is None:
        ledger.mark(entry.execution_order, "undone")
        return UndoStep(**step, status="undone", detail=detail)
    ledger.mark(entry.execution_order, "undo_failed", error=error)
    return UndoStep(**step, status="undo_failed", error=error)
