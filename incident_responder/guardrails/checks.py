"""PROPOSING and REMEDIATING: the checks one action must pass, whatever the model said.

Its target is in this account and Region, it restores exactly the recorded baseline (per action type: its
module's ``guardrail``, :mod:`incident_responder.actions`), the value it restores differs from the baseline now,
and it reaches what runs behind the alias or version the alarm named.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from incident_responder.account.drift import diff_configurations
from incident_responder.account.state import FunctionConfiguration
from incident_responder.account.vetting import refusals
from incident_responder.actions.registry import ACTIONS
from incident_responder.core.aws import AwsClients
from incident_responder.core.contracts import (
    ActionType,
    RemediationAction,
    RestoreIamPolicyParams,
    RollbackAliasParams,
    UpdateFunctionConfigurationParams,
)

ALLOWED_ACTIONS = set(ACTIONS)


def check_action(
    action: RemediationAction,
    current: FunctionConfiguration,
    baseline: FunctionConfiguration,
    clients: AwsClients | None = None,
    qualifier: str | None = None,
    not_restorable: Mapping[str, str] | None = None,
    already_restored: bool = False,
) -> list[str]:
    """Reasons to reject the action; empty when it may be proposed. Never raises on model output.

    Whatever the baseline holds, an action that would grant wildcard or administrator access, set concurrency
    to 0 or go below the timeout and memory floors is refused (:mod:`incident_responder.account.vetting`), as
    is one restoring a value ``not_restorable`` (the baseline's own verdicts, by path) names.

    With ``clients``, a rollback's target version is also read from the account: it must still hold the
    code the baseline recorded (a function re-created since onboarding numbers its versions again).
    AWS errors of that read propagate. ``qualifier``: the alias or version the incident's alarm named; an
    action must reach what runs behind it (:func:`_check_qualifier`).

    ``already_restored``: remediate found what the action changes already in the state it sets (another incident
    or a person restored it). The action must still restore exactly the baseline on the incident's own resources,
    but needs no difference left to restore: remediate then writes nothing and says so.
    """
    home = _check_home(action, current, clients)
    if home:
        return home
    reasons = refusals(action, not_restorable) + _check(action, current, baseline, clients)
    if already_restored:
        return [r for r in reasons if not r.endswith(NOTHING_TO_RESTORE)] or _check_qualifier(
            action, current, qualifier
        )
    return reasons or _check_drift(action, current, baseline) or _check_qualifier(action, current, qualifier)


# How the checks end a reason that says only that the live state is the baseline already.
NOTHING_TO_RESTORE = "nothing to restore"


def drift_paths(params: Any, current: FunctionConfiguration) -> list[str]:
    """Where, in drift's terms, the difference an action restores must show (see drift.diff_configurations)."""
    for action in ACTIONS.values():
        if isinstance(params, action.parameters_model):
            return action.drift_paths(params, current)
    return []


def _check_drift(
    action: RemediationAction, current: FunctionConfiguration, baseline: FunctionConfiguration
) -> list[str]:
    """Evidence for a change comes from the account: the value it restores must differ from the baseline now.

    A log line or an alarm's text (which anyone who can make the function fail can write) may explain a
    diagnosis; it never justifies a change by itself."""
    params = action.typed_parameters()
    if isinstance(params, RestoreIamPolicyParams) and params.attach_policy_arn is not None:
        if params.attach_policy_arn in current.role.attached_policy_arns:
            return [f"{params.attach_policy_arn} is attached now: no difference from the baseline supports this"]
        return []
    paths = drift_paths(params, current)
    drifted = [d.path for d in diff_configurations(baseline, current)]
    if any(d == p or d.startswith(p + ".") for p in paths for d in drifted):
        return []
    return [
        f"no difference between the account and its baseline supports this ({', '.join(paths) or 'nothing'} "
        "equal the baseline): text in logs or alarms never justifies a change by itself"
    ]


def _check_home(action: RemediationAction, current: FunctionConfiguration, clients: AwsClients | None) -> list[str]:
    """A target given as an ARN must be in this partition and account (the function's role's) and, for a regional
    service, this Region (the clients'): names are compared further on, and a person is shown the ARN."""
    target = action.target_resource
    if not target.startswith("arn:"):
        return []
    parts = target.split(":")
    home = current.role.role_arn.split(":")
    if len(parts) < 6 or len(home) < 6:
        return [f"target_resource {target[:200]} is not an ARN of this account"]
    region = clients.get("lambda").meta.region_name if clients is not None else None
    said = []
    if parts[1] != home[1]:
        said.append(f"partition {parts[1]}, not this partition {home[1]}")
    if parts[4] != home[4]:
        said.append(f"account {parts[4]}, not this account {home[4]}")
    if parts[3] and region and parts[3] != region:
        said.append(f"Region {parts[3]}, not this Region {region}")
    return [f"target_resource {target[:200]} names {'; '.join(said)}"] if said else []


def _check_qualifier(action: RemediationAction, current: FunctionConfiguration, qualifier: str | None) -> list[str]:
    """An alarm on an alias or version is about the version that runs behind it: rolling back another alias,
    or changing $LATEST's settings when a published version runs (its settings cannot change), fixes nothing."""
    if not qualifier:
        return []
    params = action.typed_parameters()
    version = qualifier == "$LATEST" or qualifier.isdigit()  # an alias name is never all digits
    routes = {a.name: a.function_version for a in current.aliases}
    runs = qualifier if version else routes.get(qualifier)
    named = f"the alarm named {'version' if version else 'alias'} {qualifier}"
    if isinstance(params, RollbackAliasParams):
        if not version and params.alias_name != qualifier:
            return [f"{named}: rolling back alias {params.alias_name} does not change what fails behind it"]
        routes_to = routes.get(params.alias_name)
        if version and routes_to != qualifier:
            return [
                f"{named}, and alias {params.alias_name} routes to {routes_to}: rolling it back fixes nothing there"
            ]
    if isinstance(params, UpdateFunctionConfigurationParams) and runs not in (None, "$LATEST"):
        return [
            f"{named}, which runs published version {runs}: a published version's settings cannot change, so "
            "changing $LATEST's does not reach it; publish a version with the baseline's settings and point the "
            "alias at it (a person's decision)"
        ]
    return []


def _check(
    action: RemediationAction,
    current: FunctionConfiguration,
    baseline: FunctionConfiguration,
    clients: AwsClients | None = None,
) -> list[str]:
    if action.action_type not in ALLOWED_ACTIONS:
        return [f"action type {action.action_type} is not allowed"]
    parameters = action.parameters if isinstance(action.parameters, dict) else {}
    if action.action_type == ActionType.ROLLBACK_ALIAS and str(parameters.get("function_version")).upper() == "$LATEST":
        return ["$LATEST is never a rollback target: an alias goes back to its baseline's published version"]
    try:
        params = action.typed_parameters()
    except (ValidationError, TypeError, KeyError) as exc:
        return [f"parameters do not match {action.action_type}: {str(exc)[:300]}"]
    return ACTIONS[action.action_type].guardrail(action, params, current, baseline, clients)
