"""PROPOSING: deterministic guardrails on a remediation proposal, applied after the model, whatever it said.

An action survives only if its type is allowed, it remedies a fault the diagnosis contains, it is not
a duplicate, its ``target_resource`` names what its parameters change, that is the incident's own
function, role, security group, NACL, alias, KMS key or event source mapping, and it restores exactly
the recorded baseline: concurrency, timeout and memory equal to the baseline's (a lower value is no
restore either), statements only from the baseline document (never from the current policy, which is
what an attacker could have changed), managed policies the baseline attached, egress rules from the
baseline, NACL removals only of entries the baseline lacks, an alias recorded in the baseline pointed
back at the version it had then, the key the function's configuration names and the baseline recorded
Enabled, a mapping of the function's recorded Enabled in the baseline, a secret the baseline recorded
available (named by the function's environment) whose deletion is scheduled now, the visibility timeout
the baseline recorded on a queue one of the function's own recorded mappings reads, and ephemeral storage
equal to the baseline's while it is below it now. Ground truth is read here from the account and the
baseline table, never taken from the model or the tool results it saw. Risk and approval are set here by
policy; so are rejections: anything the model put in ``rejected_actions`` is dropped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from incident_responder.account.state import FunctionConfiguration
from incident_responder.actions.lookup import _key
from incident_responder.actions.registry import RISK_FOR_ACTION
from incident_responder.core.aws import AwsClients
from incident_responder.core.contracts import RejectedAction, RemediationAction, RemediationProposal
from incident_responder.guardrails.checks import check_action


def _identity(action: RemediationAction) -> str:
    """What an action does, ignoring the model's prose: two actions with the same identity are duplicates."""
    return _key({"type": str(action.action_type), "parameters": action.parameters})


def apply_guardrails(
    proposal: RemediationProposal,
    current: FunctionConfiguration,
    baseline: FunctionConfiguration,
    diagnosed_faults: Iterable[str],
    clients: AwsClients | None = None,
    qualifier: str | None = None,
    not_restorable: Mapping[str, str] | None = None,
) -> RemediationProposal:
    """The proposal with only surviving actions; rejected ones in ``rejected_actions`` with reasons.

    ``diagnosed_faults``: the fault types of the diagnosis the proposal answers. ``clients``: see
    :func:`check_action` (without them a rollback's version is judged by the baseline alone); so is ``qualifier``.
    """
    diagnosed = {str(f) for f in diagnosed_faults}
    kept: list[RemediationAction] = []
    rejected: list[RejectedAction] = []  # what the model put there is dropped: only this function rejects
    seen: dict[str, int] = {}
    for number, action in enumerate(proposal.actions, start=1):
        risk = RISK_FOR_ACTION.get(action.action_type, "high")
        action = action.model_copy(update={"risk_level": risk, "requires_approval": risk != "low"})
        reasons = []
        if str(action.fault_type) not in diagnosed:
            listed = ", ".join(sorted(diagnosed)) or "no faults"
            reasons.append(f"fault {action.fault_type} is not in the diagnosis ({listed})")
        identity = _identity(action)
        if identity in seen:
            reasons.append(f"duplicates action {seen[identity]}")
        else:
            reasons += check_action(action, current, baseline, clients, qualifier, not_restorable)
            seen[identity] = number
        if reasons:
            # Constructed: an action whose parameters never validated is still reported, never raised.
            rejected.append(RejectedAction.model_construct(action=action, reasons=reasons))
        else:
            kept.append(action)
    # Instances, not dumps: pydantic does not re-validate them, so a malformed action is reported as it came.
    return RemediationProposal.model_validate(
        {
            **proposal.model_dump(mode="json", exclude={"actions", "rejected_actions"}),
            "actions": kept,
            "rejected_actions": rejected,
        }
    )
