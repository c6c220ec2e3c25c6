"""PROPOSING and REVIEWING: how every restore lookup runs: read the function and its baseline, compare, offer.

Each lookup compares the current configuration with the baseline and says exactly what would put it back, and
returns it as ``actions``: validated actions in the shape ``submit_proposal`` takes, so a model copies them
instead of rebuilding parameters. Errors come back in an ``error`` field.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from incident_responder.account.baseline import load_baseline
from incident_responder.account.errors import AWS_ERRORS, BaselineNotFoundError, describe_error
from incident_responder.account.names import function_name_of
from incident_responder.account.state import configuration_from
from incident_responder.account.vetting import refusals
from incident_responder.core.aws import AwsClients

ACTIONS_DESCRIPTION = "ready-made actions for submit_proposal: copy them, adding your own reasoning"
NOT_RESTORABLE_DESCRIPTION = (
    "restores the responder will not make, with why (the baseline's value grants wildcard or administrator access, "
    "stops the function or is below a floor): name them for a person instead of proposing them"
)


def _key(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _lookup(
    model: type[BaseModel],
    clients: AwsClients,
    lambda_name: str,
    compute: Callable[..., Any],
    sections: tuple[str, ...],
) -> Any:
    """Read the baseline and the current configuration, then ``compute``; failures become ``error``. ``sections``:
    the parts of the configuration (account.state.SECTIONS) the lookup compares, read with calls of their own; the
    others are not read (the baseline's values stand in, so they never differ): a lookup reads what it restores."""
    name = function_name_of(lambda_name)
    try:
        raw = clients.get("lambda").get_function_configuration(FunctionName=name)  # a function gone says so first
        baseline = load_baseline(clients, name)
        current = configuration_from(clients, raw, sections, baseline.configuration)
    except BaselineNotFoundError as exc:
        return model(function_name=name, error=str(exc))
    except AWS_ERRORS as exc:
        return model(function_name=name, error=describe_error(exc))
    info = compute(name, current, baseline)
    # Never offered: a restore of a value the baseline's vetting refuses (the guardrails would refuse it too).
    offered, refused, not_restorable = [], [], baseline.not_restorable_paths()
    for action in info.actions:
        reasons = refusals(action, not_restorable)
        if reasons:
            refused.append(f"{action.action_type.value} on {action.target_resource}: {'; '.join(reasons)}")
        else:
            offered.append(action)
    return info.model_copy(update={"actions": offered, "not_restorable": refused}) if refused else info
