"""restore_vpc_configuration: a function's VPC subnets and security groups put back to the baseline's (catalogue
entries invalid-subnet-or-security-group and no-route-to-internet, when the function was moved to subnets or
groups that no longer exist or lead nowhere out).

Everything about it: its restore lookup (the remediation MCP tool), its change (capture, apply, undo), its
guardrail, where its difference shows and how verification judges it (:mod:`incident_responder.actions.base`).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from incident_responder.account.baseline import Baseline
from incident_responder.account.state import FunctionConfiguration
from incident_responder.actions.base import Action, Restoration
from incident_responder.actions.change import _Change
from incident_responder.actions.lookup import ACTIONS_DESCRIPTION, NOT_RESTORABLE_DESCRIPTION, _lookup
from incident_responder.actions.targets import _other_function, _target_reason
from incident_responder.core.aws import AwsClients
from incident_responder.core.contracts import ActionType, FaultType, ProposedAction, proposed
from incident_responder.core.contracts.parameters import RestoreVpcConfigurationParams


def _ids(configuration: FunctionConfiguration) -> tuple[list[str], list[str]]:
    """(subnet ids, security group ids) of a recorded or current configuration, those EC2 no longer knows
    included (a current VpcConfig may name deleted ones)."""
    network = configuration.network
    subnets = [s.subnet_id for s in network.subnets] + [m for m in network.missing if m.startswith("subnet-")]
    groups = [g.group_id for g in network.security_groups] + [m for m in network.missing if m.startswith("sg-")]
    return subnets, groups


class VpcRestoreInfo(BaseModel):
    function_name: str
    vpc_config_differs: bool = Field(default=False, description="the VpcConfig's ids differ from the baseline's")
    current_subnet_ids: list[str] = Field(default_factory=list)
    current_security_group_ids: list[str] = Field(default_factory=list)
    baseline_subnet_ids: list[str] = Field(default_factory=list)
    baseline_security_group_ids: list[str] = Field(default_factory=list)
    baseline_captured_at: str | None = None
    actions: list[ProposedAction] = Field(default_factory=list, description=ACTIONS_DESCRIPTION)
    not_restorable: list[str] = Field(default_factory=list, description=NOT_RESTORABLE_DESCRIPTION)
    error: str | None = None


def get_vpc_restore_info(clients: AwsClients, lambda_name: str) -> VpcRestoreInfo:
    return _lookup(VpcRestoreInfo, clients, lambda_name, _vpc_restore_info, RestoreVpcConfiguration.sections)


def _vpc_restore_info(name: str, current: FunctionConfiguration, baseline: Baseline) -> VpcRestoreInfo:
    subnets, groups = _ids(current)
    base_subnets, base_groups = _ids(baseline.configuration)
    actions, not_restorable = [], []
    differs = (sorted(subnets), sorted(groups)) != (sorted(base_subnets), sorted(base_groups))
    if not baseline.configuration.network.in_vpc:
        not_restorable.append("the baseline did not record the function in a VPC")
    elif baseline.configuration.network.missing:
        missing = baseline.configuration.network.missing
        not_restorable.append(f"the baseline names ids that did not exist when recorded: {missing}")
    elif differs:
        actions.append(
            proposed(
                fault_type=FaultType.VPC_MISCONFIGURED,
                action_type=ActionType.RESTORE_VPC_CONFIGURATION,
                target_resource=baseline.function_arn or name,
                parameters=RestoreVpcConfigurationParams(
                    function_name=name, subnet_ids=base_subnets, security_group_ids=base_groups
                ),
                reasoning=f"VpcConfig subnets {subnets} groups {groups} -> baseline {base_subnets} {base_groups}",
            )
        )
    return VpcRestoreInfo(
        function_name=name,
        vpc_config_differs=differs,
        current_subnet_ids=subnets,
        current_security_group_ids=groups,
        baseline_subnet_ids=base_subnets,
        baseline_security_group_ids=base_groups,
        baseline_captured_at=baseline.captured_at,
        actions=actions,
        not_restorable=not_restorable,
    )


# -- the change: capture, apply, undo ----------------------------------------------------------------


class _VpcConfiguration(_Change):
    def resources(self, p: RestoreVpcConfigurationParams) -> list[str]:
        return [f"function:{p.function_name}"]

    def satisfied(self, p: RestoreVpcConfigurationParams, state: dict[str, Any]) -> bool:
        return (sorted(state["subnet_ids"]), sorted(state["security_group_ids"])) == (
            sorted(p.subnet_ids),
            sorted(p.security_group_ids),
        )

    def capture(self, clients: AwsClients, p: RestoreVpcConfigurationParams) -> dict[str, Any]:
        config = clients.get("lambda").get_function_configuration(FunctionName=p.function_name)
        vpc = config.get("VpcConfig") or {}
        return {
            "function_name": p.function_name,
            "subnet_ids": list(vpc.get("SubnetIds") or []),
            "security_group_ids": list(vpc.get("SecurityGroupIds") or []),
        }

    def apply(self, clients: AwsClients, p: RestoreVpcConfigurationParams) -> str:
        self._set(clients, p.function_name, p.subnet_ids, p.security_group_ids)
        return f"set the VpcConfig of {p.function_name} to subnets {p.subnet_ids}, groups {p.security_group_ids}"

    def restore(self, clients: AwsClients, p: RestoreVpcConfigurationParams, prior: dict[str, Any]) -> None:
        self._set(clients, p.function_name, prior["subnet_ids"], prior["security_group_ids"])

    @staticmethod
    def _set(clients: AwsClients, function_name: str, subnets: list[str], groups: list[str]) -> None:
        lam = clients.get("lambda")
        waiter = {"FunctionName": function_name, "WaiterConfig": {"Delay": 2, "MaxAttempts": 60}}
        # Lambda applies configuration asynchronously (new network interfaces) and refuses a change while another
        # is pending.
        lam.get_waiter("function_updated").wait(**waiter)
        lam.update_function_configuration(
            FunctionName=function_name, VpcConfig={"SubnetIds": subnets, "SecurityGroupIds": groups}
        )
        lam.get_waiter("function_updated").wait(**waiter)


# -- the guardrail ----------------------------------------------------------------------------------


def _check_vpc(
    p: RestoreVpcConfigurationParams,
    current: FunctionConfiguration,
    baseline: FunctionConfiguration,
    clients: AwsClients | None,
) -> list[str]:
    reasons = _other_function(p.function_name, current)
    base_subnets, base_groups = _ids(baseline)
    if not baseline.network.in_vpc:
        return [*reasons, "the baseline did not record the function in a VPC: there is no VpcConfig to restore"]
    if sorted(p.subnet_ids) != sorted(base_subnets) or sorted(p.security_group_ids) != sorted(base_groups):
        reasons.append(
            f"subnets {p.subnet_ids} and groups {p.security_group_ids} must be exactly the baseline's "
            f"({base_subnets}, {base_groups})"
        )
        return reasons
    subnets, groups = _ids(current)
    if (sorted(subnets), sorted(groups)) == (sorted(base_subnets), sorted(base_groups)):
        reasons.append("the VpcConfig already equals the baseline: nothing to restore")
    # The baseline's ids must still exist, in the function's account (EC2 answers only for its own).
    if clients is None:
        return [*reasons, "the baseline's subnets and groups cannot be checked to exist (no account to ask)"]
    ec2 = clients.get("ec2")
    found_subnets = ec2.describe_subnets(Filters=[{"Name": "subnet-id", "Values": list(p.subnet_ids)}])["Subnets"]
    found_groups = ec2.describe_security_groups(Filters=[{"Name": "group-id", "Values": list(p.security_group_ids)}])[
        "SecurityGroups"
    ]
    gone = sorted(set(p.subnet_ids) - {s["SubnetId"] for s in found_subnets}) + sorted(
        set(p.security_group_ids) - {g["GroupId"] for g in found_groups}
    )
    if gone:
        reasons.append(f"the baseline's {gone} no longer exist: a person must choose the function's network")
    vpcs = {s.get("VpcId") for s in found_subnets} | {g.get("VpcId") for g in found_groups}
    if len(vpcs) > 1:
        reasons.append(f"the baseline's subnets and groups are in different VPCs ({sorted(map(str, vpcs))})")
    return reasons


# -- the action ------------------------------------------------------------------------------------


class RestoreVpcConfiguration(Action):
    """A function's VPC subnets and security groups put back to the baseline's. Medium risk, approved as an access
    change: it changes what the function may reach (its network path); only the baseline's ids, which must still
    exist."""

    action_type = ActionType.RESTORE_VPC_CONFIGURATION
    risk = "medium"
    approval = "access"
    iam_writes = frozenset({"lambda:UpdateFunctionConfiguration"})
    no_drift = {
        FaultType.VPC_MISCONFIGURED: ("vpc_config_differs", "the VpcConfig already equals the baseline"),
    }
    lookup_tool = "get_vpc_restore_info"
    sections = ("network",)
    lookup_model = VpcRestoreInfo
    lookup_description = (
        "The function's VPC subnets and security groups against the baseline's, and the restore that puts them back."
    )
    change = _VpcConfiguration()

    def lookup(self, clients, lambda_name):
        return get_vpc_restore_info(clients, lambda_name)

    def guardrail(self, action, p, current, baseline, clients):
        return _target_reason(action, "the function", "function", [p.function_name]) + _check_vpc(
            p, current, baseline, clients
        )

    def drift_paths(self, p, current):
        return ["network.subnets", "network.security_groups", "network.missing"]

    def verify(self, p, current, baseline):
        return Restoration(prefixes=["network.subnets", "network.security_groups", "network.missing"])
