"""restore_event_invoke_config: a function's asynchronous invocation configuration put back to the baseline's: its
retries, its events' maximum age and its on-failure destination (catalogue entry async-events-dropped).

Everything about it: its restore lookup (the remediation MCP tool), its change (capture, apply, undo), its
guardrail, where its difference shows and how verification judges it (:mod:`incident_responder.actions.base`).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from incident_responder.account.baseline import Baseline
from incident_responder.account.state import FunctionConfiguration, read_event_invoke_config
from incident_responder.actions.base import Action, Restoration
from incident_responder.actions.change import _Change
from incident_responder.actions.lookup import ACTIONS_DESCRIPTION, NOT_RESTORABLE_DESCRIPTION, _lookup
from incident_responder.actions.targets import _other_function, _target_reason
from incident_responder.core.aws import AwsClients
from incident_responder.core.contracts import ActionType, FaultType, ProposedAction, proposed
from incident_responder.core.contracts.parameters import RestoreEventInvokeConfigParams

# The baseline's fields this action restores, and the parameter each is restored by.
FIELDS = {
    "async_retry_attempts": "maximum_retry_attempts",
    "async_max_event_age": "maximum_event_age_in_seconds",
    "async_on_failure": "on_failure_destination",
}


def _settings(configuration: FunctionConfiguration) -> dict[str, Any]:
    return {name: getattr(configuration, name) for name in FIELDS}


class EventInvokeRestoreInfo(BaseModel):
    function_name: str
    current: dict[str, Any] = Field(default_factory=dict, description="the settings that differ, as they are now")
    baseline: dict[str, Any] = Field(default_factory=dict, description="the same settings as the baseline recorded")
    baseline_captured_at: str | None = None
    drifted: bool = False
    actions: list[ProposedAction] = Field(default_factory=list, description=ACTIONS_DESCRIPTION)
    not_restorable: list[str] = Field(default_factory=list, description=NOT_RESTORABLE_DESCRIPTION)
    error: str | None = None


def get_event_invoke_restore_info(clients: AwsClients, lambda_name: str) -> EventInvokeRestoreInfo:
    return _lookup(
        EventInvokeRestoreInfo, clients, lambda_name, _event_invoke_restore_info, RestoreEventInvokeConfig.sections
    )


def _event_invoke_restore_info(name: str, current: FunctionConfiguration, baseline: Baseline) -> EventInvokeRestoreInfo:
    now, before = _settings(current), _settings(baseline.configuration)
    changed = [field for field in FIELDS if now[field] != before[field]]
    actions = []
    # A baseline without a configuration (Lambda's defaults) has nothing this action puts back.
    if changed and before["async_retry_attempts"] is not None:
        actions.append(
            proposed(
                fault_type=FaultType.ASYNC_CONFIG_CHANGED,
                action_type=ActionType.RESTORE_EVENT_INVOKE_CONFIG,
                target_resource=baseline.function_arn or name,
                parameters=RestoreEventInvokeConfigParams(
                    function_name=name, **{FIELDS[field]: value for field, value in before.items()}
                ),
                reasoning="; ".join(f"{field} {now[field]} -> baseline {before[field]}" for field in changed),
            )
        )
    return EventInvokeRestoreInfo(
        function_name=name,
        current={field: now[field] for field in changed},
        baseline={field: before[field] for field in changed},
        baseline_captured_at=baseline.captured_at,
        drifted=bool(changed),
        actions=actions,
    )


# -- the change: capture, apply, undo ----------------------------------------------------------------


def _wanted(p: RestoreEventInvokeConfigParams) -> dict[str, Any]:
    return {
        "maximum_retry_attempts": p.maximum_retry_attempts,
        "maximum_event_age_in_seconds": p.maximum_event_age_in_seconds,
        "on_failure_destination": p.on_failure_destination,
    }


class _EventInvokeConfig(_Change):
    def resources(self, p: RestoreEventInvokeConfigParams) -> list[str]:
        return [f"function:{p.function_name}"]

    def satisfied(self, p: RestoreEventInvokeConfigParams, state: dict[str, Any]) -> bool:
        return state["exists"] and all(state[key] == value for key, value in _wanted(p).items())

    def capture(self, clients: AwsClients, p: RestoreEventInvokeConfigParams) -> dict[str, Any]:
        config = read_event_invoke_config(clients, p.function_name)
        destinations = config.get("DestinationConfig") or {}
        return {
            "function_name": p.function_name,
            "exists": bool(config),
            "maximum_retry_attempts": config.get("MaximumRetryAttempts"),
            "maximum_event_age_in_seconds": config.get("MaximumEventAgeInSeconds"),
            "on_failure_destination": (destinations.get("OnFailure") or {}).get("Destination") or None,
            "on_success_destination": (destinations.get("OnSuccess") or {}).get("Destination") or None,
        }

    def apply(self, clients: AwsClients, p: RestoreEventInvokeConfigParams) -> str:
        # The on-success destination stays as it is: a put removes every setting it leaves out.
        success = self.capture(clients, p)["on_success_destination"]
        self._put(clients, {**_wanted(p), "function_name": p.function_name, "on_success_destination": success})
        return (
            f"set the asynchronous invocation of {p.function_name} to {p.maximum_retry_attempts} retries, a maximum "
            f"event age of {p.maximum_event_age_in_seconds} s and on-failure destination {p.on_failure_destination}"
        )

    def restore(self, clients: AwsClients, p: RestoreEventInvokeConfigParams, prior: dict[str, Any]) -> None:
        if prior["exists"]:
            self._put(clients, prior)
        else:
            clients.get("lambda").delete_function_event_invoke_config(FunctionName=p.function_name)

    @staticmethod
    def _put(clients: AwsClients, state: dict[str, Any]) -> None:
        destinations = {
            key: {"Destination": state[field]}
            for key, field in (("OnFailure", "on_failure_destination"), ("OnSuccess", "on_success_destination"))
            if state.get(field)
        }
        settings = {
            key: state[field]
            for key, field in (
                ("MaximumRetryAttempts", "maximum_retry_attempts"),
                ("MaximumEventAgeInSeconds", "maximum_event_age_in_seconds"),
            )
            if state.get(field) is not None
        }
        clients.get("lambda").put_function_event_invoke_config(
            FunctionName=state["function_name"],
            **settings,
            **({"DestinationConfig": destinations} if destinations else {}),
        )


# -- the guardrail ----------------------------------------------------------------------------------


def _check_event_invoke(
    p: RestoreEventInvokeConfigParams, current: FunctionConfiguration, baseline: FunctionConfiguration
) -> list[str]:
    reasons = _other_function(p.function_name, current)
    before = _settings(baseline)
    if before["async_retry_attempts"] is None:
        return [*reasons, "the baseline recorded no asynchronous invocation configuration: there is none to restore"]
    given = _wanted(p)
    for field, parameter in FIELDS.items():
        # A destination (or any setting) the baseline did not have is never set: exactly the baseline's.
        if given[parameter] != before[field]:
            reasons.append(f"{parameter} {given[parameter]} must equal the baseline's {before[field]}")
    if not reasons and _settings(current) == before:
        reasons.append("the asynchronous invocation configuration already equals the baseline: nothing to restore")
    return reasons


# -- the action ------------------------------------------------------------------------------------


class RestoreEventInvokeConfig(Action):
    """A function's asynchronous invocation retries, maximum event age and on-failure destination put back to the
    baseline's. Low risk, but it decides where the function's failed events (their payloads) are sent: a change of
    what the function reaches, approved as access is."""

    action_type = ActionType.RESTORE_EVENT_INVOKE_CONFIG
    risk = "low"
    approval = "access"
    # Delete: the undo, when the function had no configuration before.
    iam_writes = frozenset({"lambda:PutFunctionEventInvokeConfig", "lambda:DeleteFunctionEventInvokeConfig"})
    no_drift = {
        FaultType.ASYNC_CONFIG_CHANGED: ("drifted", "the asynchronous invocation configuration already matches"),
    }
    lookup_tool = "get_event_invoke_restore_info"
    sections = ("async",)
    lookup_model = EventInvokeRestoreInfo
    lookup_description = (
        "The function's asynchronous invocation retries, maximum event age and on-failure destination against the "
        "baseline's, and the restore that puts them back."
    )
    change = _EventInvokeConfig()

    def lookup(self, clients, lambda_name):
        return get_event_invoke_restore_info(clients, lambda_name)

    def guardrail(self, action, p, current, baseline, clients):
        return _target_reason(action, "the function", "function", [p.function_name]) + _check_event_invoke(
            p, current, baseline
        )

    def drift_paths(self, p, current):
        return list(FIELDS)

    def verify(self, p, current, baseline):
        return Restoration(prefixes=list(FIELDS))
