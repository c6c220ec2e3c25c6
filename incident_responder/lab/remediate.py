"""Apply a proposal's surviving actions: the lab's (and the evaluation's) check that they really fix things.

The product only proposes; this module exists so the lab can score proposals on the end state:
apply, re-invoke the workload, check it is healthy again.
"""

from __future__ import annotations

import json
from typing import Any

from incident_responder.aws import AwsClients
from incident_responder.contracts import (
    RemediationProposal,
    RestoreIamPolicyParams,
    RestoreNetworkEgressParams,
    UpdateConcurrencyParams,
    UpdateFunctionConfigurationParams,
)


def apply_proposal(clients: AwsClients, proposal: RemediationProposal | dict[str, Any]) -> list[str]:
    """Apply every action, in execution order; returns what was done."""
    if isinstance(proposal, dict):
        proposal = RemediationProposal.model_validate(proposal)
    done = []
    for action in sorted(proposal.actions, key=lambda a: a.execution_order):
        p = action.typed_parameters()
        if isinstance(p, RestoreIamPolicyParams):
            iam = clients.get("iam")
            if p.attach_policy_arn:
                iam.attach_role_policy(RoleName=p.role_name, PolicyArn=p.attach_policy_arn)
            else:
                iam.put_role_policy(
                    RoleName=p.role_name, PolicyName=p.policy_name, PolicyDocument=json.dumps(p.policy_document)
                )
        elif isinstance(p, UpdateConcurrencyParams):
            lam = clients.get("lambda")
            if p.reserved_concurrent_executions is None:
                lam.delete_function_concurrency(FunctionName=p.function_name)
            else:
                lam.put_function_concurrency(
                    FunctionName=p.function_name, ReservedConcurrentExecutions=p.reserved_concurrent_executions
                )
        elif isinstance(p, RestoreNetworkEgressParams):
            ec2 = clients.get("ec2")
            if p.ip_permissions:
                ec2.authorize_security_group_egress(GroupId=p.security_group_id, IpPermissions=p.ip_permissions)
            for entry in p.remove_nacl_entries:
                ec2.delete_network_acl_entry(
                    NetworkAclId=entry.network_acl_id, RuleNumber=entry.rule_number, Egress=entry.egress
                )
        elif isinstance(p, UpdateFunctionConfigurationParams):
            changes = {k: v for k, v in (("Timeout", p.timeout), ("MemorySize", p.memory_size)) if v is not None}
            lam = clients.get("lambda")
            lam.update_function_configuration(FunctionName=p.function_name, **changes)
            lam.get_waiter("function_updated").wait(
                FunctionName=p.function_name, WaiterConfig={"Delay": 2, "MaxAttempts": 60}
            )
        done.append(f"{action.execution_order}. {action.action_type.value} on {action.target_resource}")
    return done
