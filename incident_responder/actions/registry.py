"""Every action type, one module each, and the tables derived from them: nothing else lists action types.

Adding an action type: its parameters model in core/contracts (the model's contract), its fault in the contract's
ACTION_FOR_FAULT, a module here with its :class:`~incident_responder.actions.base.Action`, and a line below.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from incident_responder.actions.alias import RollbackAlias
from incident_responder.actions.base import Action
from incident_responder.actions.concurrency import UpdateConcurrency
from incident_responder.actions.dead_letter import RestoreDeadLetterConfig
from incident_responder.actions.event_invoke_config import RestoreEventInvokeConfig
from incident_responder.actions.event_source_mapping import EnableEventSourceMapping
from incident_responder.actions.function_configuration import UpdateFunctionConfiguration
from incident_responder.actions.handler import RestoreHandler
from incident_responder.actions.iam import RestoreIamPolicy
from incident_responder.actions.invoke_permission import RestoreInvokePermission
from incident_responder.actions.kms import EnableKmsKey
from incident_responder.actions.layers import RestoreLayers
from incident_responder.actions.network import RestoreNetworkEgress
from incident_responder.actions.queue import RestoreQueueAttributes
from incident_responder.actions.runtime import RestoreRuntime
from incident_responder.actions.secret import RestoreSecret
from incident_responder.actions.vpc import RestoreVpcConfiguration
from incident_responder.core.contracts import ACTION_FOR_FAULT, ActionType, RiskLevel

ACTIONS: dict[ActionType, Action] = {
    action.action_type: action
    for action in (
        RestoreIamPolicy(),
        UpdateConcurrency(),
        RestoreNetworkEgress(),
        UpdateFunctionConfiguration(),
        RollbackAlias(),
        EnableKmsKey(),
        EnableEventSourceMapping(),
        RestoreSecret(),
        RestoreQueueAttributes(),
        RestoreHandler(),
        RestoreRuntime(),
        RestoreLayers(),
        RestoreVpcConfiguration(),
        RestoreInvokePermission(),
        RestoreEventInvokeConfig(),
        RestoreDeadLetterConfig(),
    )
}
# Set by policy, never by the model: what an action could break if it were wrong (each module says why).
RISK_FOR_ACTION: dict[ActionType, RiskLevel] = {t: a.risk for t, a in ACTIONS.items()}
# Changes to what the function may access or reach: a person approves them unless the deployment opts in.
ACCESS_ACTIONS = frozenset(t for t, a in ACTIONS.items() if a.approval == "access")
# Always a person, whatever the deployment opts into, and why.
PERSON_ONLY_ACTIONS = {t: a.person_reason or "" for t, a in ACTIONS.items() if a.approval == "person"}
# The remediation MCP tool that computes each fault's restore.
LOOKUP_FOR_FAULT: dict[str, str] = {str(f): ACTIONS[a].lookup_tool for f, a in ACTION_FOR_FAULT.items()}
# The lookup field that shows each fault already at the baseline, and what that means.
NO_DRIFT: dict[str, tuple[str, str]] = {str(f): entry for a in ACTIONS.values() for f, entry in a.no_drift.items()}
# Every lookup tool the remediation MCP server offers.
REMEDIATION_TOOLS = frozenset(action.lookup_tool for action in ACTIONS.values())


def lookups_for(faults: Iterable[Any] | None) -> frozenset[str]:
    """The remediation lookups for these faults (every one when None): what an agent after the investigation
    (the proposer, the critic) is given. Each tool bound is described to the model in every turn, so a lookup for
    a fault nobody diagnosed or proposed for would only cost tokens (and could not be used for anything)."""
    if faults is None:
        return REMEDIATION_TOOLS
    return frozenset(LOOKUP_FOR_FAULT[str(f)] for f in faults if str(f) in LOOKUP_FOR_FAULT)


def sections_for(action_types: Iterable[Any], qualifier: str | None = None) -> frozenset[str]:
    """The parts of the configuration that judging these action types reads (each type's ``sections``), and the
    aliases when the alarm named an alias or version (the guardrails check what runs behind it)."""
    wanted = {section for t in action_types if (found := ACTIONS.get(t)) is not None for section in found.sections}
    return frozenset(wanted | ({"aliases"} if qualifier else set()))


def lookup_order(faults: Iterable[Any]) -> tuple[str, ...]:
    """The lookups for these faults, each once, in the faults' order (what an agent reads first)."""
    return tuple(dict.fromkeys(LOOKUP_FOR_FAULT[str(f)] for f in faults if str(f) in LOOKUP_FOR_FAULT))


# The change each action type makes (what the remediate step applies and undoes), by action type.
CHANGES = {t: a.change for t, a in ACTIONS.items()}


def ready_actions(faults: list[str], results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The lookups' ready-made actions for these faults, in the order the lookups answered (a failed lookup's,
    or one that reports an error, none)."""
    actions: list[dict[str, Any]] = []
    for entry in results:
        answer = entry.get("result")
        if entry.get("tool") in REMEDIATION_TOOLS and isinstance(answer, dict) and not answer.get("error"):
            actions += [a for a in answer.get("actions") or [] if isinstance(a, dict) and a.get("fault_type") in faults]
    return actions
