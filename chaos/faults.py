"""The faults: iam_revoke, throttle, network_block, timeout, memory; and restore.

Each fault reads the function's current state (role from the function, never assumed), records the
original of every slot it is about to change, then changes it. Slots:
``iam.inline.<policy>``, ``iam.attached.<arn>``, ``concurrency``, ``timeout``, ``memory``,
``sg.<group>.egress``, ``nacl.<acl>.egress.<rule>``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from botocore.exceptions import ClientError

from chaos.snapshots import SnapshotStore, default_state_dir
from incident_responder.account_state import (
    function_name_of,
    managed_policy_documents,
    read_network,
    read_reserved_concurrency,
    read_role,
)
from incident_responder.aws import AwsClients
from incident_responder.iam_policy import action_service, statement_services, statements
from incident_responder.lab.scenario import Fault

IAM_TARGET_SERVICES = {"s3": {"s3"}, "cloudwatch": {"logs"}, "both": {"s3", "logs"}}
# Lower than any rule a person would write, so the deny is evaluated first.
NACL_DENY_RULE = 1


class ChaosError(RuntimeError):
    """A fault that cannot be applied to this function (said plainly, nothing half-changed)."""


def _strip_services(statement: dict[str, Any], services: set[str]) -> dict[str, Any] | None:
    """The statement without the actions of ``services``; None if nothing of it remains."""
    if statement.get("Effect") != "Allow":
        return statement
    if "NotAction" in statement:
        return None  # "everything except X" grants the target too: drop it whole
    actions = statement.get("Action", [])
    actions = [actions] if isinstance(actions, str) else list(actions)
    kept = [a for a in actions if action_service(a) not in services and action_service(a) != "*"]
    if len(kept) == len(actions):
        return statement
    if not kept:
        return None
    return {**statement, "Action": kept if len(kept) > 1 else kept[0]}


def _clean_permission(rule: dict[str, Any]) -> dict[str, Any]:
    """An IpPermission as EC2 returns it, reduced to what AuthorizeSecurityGroupEgress accepts."""
    keep = {"IpProtocol", "FromPort", "ToPort", "IpRanges", "Ipv6Ranges", "PrefixListIds", "UserIdGroupPairs"}
    out = {k: v for k, v in rule.items() if k in keep and v not in (None, [])}
    if "UserIdGroupPairs" in out:
        out["UserIdGroupPairs"] = [
            {k: v for k, v in pair.items() if k in ("GroupId", "UserId", "Description")}
            for pair in out["UserIdGroupPairs"]
        ]
    return out


class FaultInjector:
    """Injects faults into one function's account state and restores them."""

    def __init__(self, clients: AwsClients, function_name: str, store: SnapshotStore):
        self.clients = clients
        self.function_name = function_name_of(function_name)
        self.store = store

    @classmethod
    def for_function(
        cls, function_name: str, clients: AwsClients | None = None, state_dir: Path | None = None
    ) -> FaultInjector:
        clients = clients or AwsClients()
        name = function_name_of(function_name)
        arn = clients.get("lambda").get_function_configuration(FunctionName=name)["FunctionArn"]
        store = SnapshotStore.for_target(
            state_dir or default_state_dir(), clients.endpoint_url, arn.split(":")[4], clients.region, name
        )
        return cls(clients, name, store)

    # -- helpers ---------------------------------------------------------------------------------
    @property
    def _lambda(self) -> Any:
        return self.clients.get("lambda")

    def _config(self) -> dict[str, Any]:
        return self._lambda.get_function_configuration(FunctionName=self.function_name)

    def _update_config(self, **changes: Any) -> None:
        self._lambda.update_function_configuration(FunctionName=self.function_name, **changes)
        # Real Lambda applies configuration asynchronously; later changes fail while one is pending.
        self._lambda.get_waiter("function_updated").wait(
            FunctionName=self.function_name, WaiterConfig={"Delay": 2, "MaxAttempts": 60}
        )

    # -- faults ----------------------------------------------------------------------------------
    def apply(self, fault: Fault) -> list[str]:
        """Apply one fault from a scenario file."""
        params = fault.model_dump(exclude={"kind"})
        return getattr(self, fault.kind)(**params)

    def iam_revoke(self, target: str = "s3") -> list[str]:
        """Remove the role's permissions for S3 (``s3``), CloudWatch Logs (``cloudwatch``) or ``both``."""
        if target not in IAM_TARGET_SERVICES:
            raise ChaosError(f"iam_revoke target must be one of {sorted(IAM_TARGET_SERVICES)}, not {target!r}")
        services = IAM_TARGET_SERVICES[target]
        iam = self.clients.get("iam")
        role = read_role(self.clients, self._config()["Role"])
        changes = []
        for name, document in role.inline_policies.items():
            original = statements(document)
            kept = [s for s in (_strip_services(st, services) for st in original) if s is not None]
            if kept == original:
                continue
            self.store.remember(f"iam.inline.{name}", document)
            if kept:
                iam.put_role_policy(
                    RoleName=role.role_name, PolicyName=name, PolicyDocument=json.dumps({**document, "Statement": kept})
                )
                changes.append(f"removed {'/'.join(sorted(services))} actions from inline policy {name}")
            else:
                iam.delete_role_policy(RoleName=role.role_name, PolicyName=name)
                changes.append(f"deleted inline policy {name}")
        # Managed policies cannot be edited: detach those that grant only the target services.
        for arn, document in managed_policy_documents(self.clients, role.attached_policy_arns).items():
            used = set().union(*(statement_services(st) for st in statements(document)))
            if used and used <= services:
                self.store.remember(f"iam.attached.{arn}", True)
                iam.detach_role_policy(RoleName=role.role_name, PolicyArn=arn)
                changes.append(f"detached managed policy {arn}")
        self.store.record_fault({"kind": "iam_revoke", "target": target})
        return changes or [f"role {role.role_name} already grants no {target} permissions"]

    def throttle(self, reserved_concurrency: int = 0) -> list[str]:
        """Set reserved concurrency (0 throttles every invocation, 1 all but one at a time)."""
        if reserved_concurrency < 0:
            raise ChaosError("reserved concurrency must be 0 or more")
        self.store.remember("concurrency", read_reserved_concurrency(self.clients, self.function_name))
        self._lambda.put_function_concurrency(
            FunctionName=self.function_name, ReservedConcurrentExecutions=reserved_concurrency
        )
        self.store.record_fault({"kind": "throttle", "reserved_concurrency": reserved_concurrency})
        return [f"reserved concurrency set to {reserved_concurrency}"]

    def network_block(self) -> list[str]:
        """No egress: remove the security groups' egress rules and deny egress in the subnets' NACLs."""
        network = read_network(self.clients, self._config().get("VpcConfig"))
        if not network.in_vpc:
            raise ChaosError(f"{self.function_name} is not attached to a VPC: there is no egress path to block")
        ec2 = self.clients.get("ec2")
        changes = []
        for group in network.security_groups:
            self.store.remember(f"sg.{group.group_id}.egress", group.egress_rules)
            if group.egress_rules:
                ec2.revoke_security_group_egress(
                    GroupId=group.group_id, IpPermissions=[_clean_permission(r) for r in group.egress_rules]
                )
                changes.append(f"revoked {len(group.egress_rules)} egress rule(s) of {group.group_id}")
        for acl_id, entries in {s.network_acl_id: s.entries for s in network.subnets if s.network_acl_id}.items():
            existing = next((e for e in entries if e.get("Egress") and e["RuleNumber"] == NACL_DENY_RULE), None)
            self.store.remember(f"nacl.{acl_id}.egress.{NACL_DENY_RULE}", existing)
            entry = dict(
                NetworkAclId=acl_id,
                RuleNumber=NACL_DENY_RULE,
                Protocol="-1",
                RuleAction="deny",
                Egress=True,
                CidrBlock="0.0.0.0/0",
            )
            if existing is None:
                ec2.create_network_acl_entry(**entry)
            else:
                ec2.replace_network_acl_entry(**entry)
            changes.append(f"NACL {acl_id}: egress rule {NACL_DENY_RULE} denies all")
        self.store.record_fault({"kind": "network_block"})
        return changes

    def timeout(self, seconds: int = 1) -> list[str]:
        """Lower the function's timeout."""
        if not 1 <= seconds <= 900:
            raise ChaosError("timeout seconds must be between 1 and 900")
        self.store.remember("timeout", self._config()["Timeout"])
        self._update_config(Timeout=seconds)
        self.store.record_fault({"kind": "timeout", "seconds": seconds})
        return [f"timeout set to {seconds} s"]

    def memory(self, mb: int = 128) -> list[str]:
        """Lower the function's memory size."""
        if not 128 <= mb <= 10240:
            raise ChaosError("memory must be between 128 and 10240 MB")
        self.store.remember("memory", self._config()["MemorySize"])
        self._update_config(MemorySize=mb)
        self.store.record_fault({"kind": "memory", "mb": mb})
        return [f"memory size set to {mb} MB"]

    # -- restore ---------------------------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        return {"function": self.function_name, "faults": list(self.store.faults), "slots": dict(self.store.slots)}

    def restore(self) -> list[str]:
        """Put back every recorded original, newest first; each slot is forgotten once restored."""
        done = []
        for slot in reversed(list(self.store.slots)):
            done.append(self._restore_slot(slot, self.store.original(slot)))
            self.store.forget(slot)
        return done or ["nothing to restore"]

    def _restore_slot(self, slot: str, original: Any) -> str:
        kind, _, rest = slot.partition(".")
        if kind == "iam":
            return self._restore_iam(rest, original)
        if kind == "concurrency":
            if original is None:
                self._lambda.delete_function_concurrency(FunctionName=self.function_name)
                return "reserved concurrency removed (none was set)"
            self._lambda.put_function_concurrency(
                FunctionName=self.function_name, ReservedConcurrentExecutions=original
            )
            return f"reserved concurrency restored to {original}"
        if kind == "timeout":
            self._update_config(Timeout=original)
            return f"timeout restored to {original} s"
        if kind == "memory":
            self._update_config(MemorySize=original)
            return f"memory size restored to {original} MB"
        if kind == "sg":
            return self._restore_group(rest.removesuffix(".egress"), original or [])
        if kind == "nacl":
            return self._restore_nacl(rest, original)
        raise ChaosError(f"unknown snapshot slot {slot!r}")

    def _restore_iam(self, rest: str, original: Any) -> str:
        iam = self.clients.get("iam")
        role_name = read_role(self.clients, self._config()["Role"]).role_name
        what, _, name = rest.partition(".")
        if what == "attached":
            iam.attach_role_policy(RoleName=role_name, PolicyArn=name)
            return f"re-attached {name}"
        if original is None:
            try:
                iam.delete_role_policy(RoleName=role_name, PolicyName=name)
            except ClientError as exc:
                if exc.response["Error"]["Code"] != "NoSuchEntity":
                    raise
            return f"inline policy {name} removed (it did not exist)"
        iam.put_role_policy(RoleName=role_name, PolicyName=name, PolicyDocument=json.dumps(original))
        return f"inline policy {name} restored"

    def _restore_group(self, group_id: str, original: list[dict[str, Any]]) -> str:
        ec2 = self.clients.get("ec2")
        current = ec2.describe_security_groups(GroupIds=[group_id])["SecurityGroups"][0].get("IpPermissionsEgress", [])
        if current:
            ec2.revoke_security_group_egress(GroupId=group_id, IpPermissions=[_clean_permission(r) for r in current])
        if original:
            ec2.authorize_security_group_egress(
                GroupId=group_id, IpPermissions=[_clean_permission(r) for r in original]
            )
        return f"egress rules of {group_id} restored ({len(original)})"

    def _restore_nacl(self, rest: str, original: dict[str, Any] | None) -> str:
        acl_id, _, rule = rest.partition(".egress.")
        ec2 = self.clients.get("ec2")
        if original is None:
            ec2.delete_network_acl_entry(NetworkAclId=acl_id, RuleNumber=int(rule), Egress=True)
            return f"NACL {acl_id}: egress rule {rule} removed"
        fields = {
            k: original[k]
            for k in ("Protocol", "RuleAction", "CidrBlock", "Ipv6CidrBlock", "PortRange", "IcmpTypeCode")
            if original.get(k)
        }
        ec2.replace_network_acl_entry(NetworkAclId=acl_id, RuleNumber=int(rule), Egress=True, **fields)
        return f"NACL {acl_id}: egress rule {rule} restored"
