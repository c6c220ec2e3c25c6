"""restore_handler: a function's handler setting put back to the baseline's (catalogue entry handler-not-found).

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
from incident_responder.core.contracts.parameters import RestoreHandlerParams


class HandlerRestoreInfo(BaseModel):
    function_name: str
    current_handler: str | None = None
    baseline_handler: str | None = Field(default=None, description="None: the baseline did not record it")
    baseline_captured_at: str | None = None
    actions: list[ProposedAction] = Field(default_factory=list, description=ACTIONS_DESCRIPTION)
    not_restorable: list[str] = Field(default_factory=list, description=NOT_RESTORABLE_DESCRIPTION)
    error: str | None = None


def get_handler_restore_info(clients: AwsClients, lambda_name: str) -> HandlerRestoreInfo:
    return _lookup(HandlerRestoreInfo, clients, lambda_name, _handler_restore_info, RestoreHandler.sections)


def _handler_restore_info(name: str, current: FunctionConfiguration, baseline: Baseline) -> HandlerRestoreInfo:
    now, before = current.handler, baseline.configuration.handler
    actions = []
    if before is not None and now != before:
        actions.append(
            proposed(
                fault_type=FaultType.HANDLER_MISCONFIGURED,
                action_type=ActionType.RESTORE_HANDLER,
                target_resource=baseline.function_arn or name,
                parameters=RestoreHandlerParams(function_name=name, handler=before),
                reasoning=f"handler {now} -> baseline {before}",
            )
        )
    return HandlerRestoreInfo(
        function_name=name,
        current_handler=now,
        baseline_handler=before,
        baseline_captured_at=baseline.captured_at,
        actions=actions,
    )


# -- the change: capture, apply, undo ----------------------------------------------------------------


class _Handler(_Change):
    def resources(self, p: RestoreHandlerParams) -> list[str]:
        return [f"function:{p.function_name}"]

    def satisfied(self, p: RestoreHandlerParams, state: dict[str, Any]) -> bool:
        return state["handler"] == p.handler

    def capture(self, clients: AwsClients, p: RestoreHandlerParams) -> dict[str, Any]:
        config = clients.get("lambda").get_function_configuration(FunctionName=p.function_name)
        return {"function_name": p.function_name, "handler": config.get("Handler")}

    def apply(self, clients: AwsClients, p: RestoreHandlerParams) -> str:
        self._set(clients, p.function_name, p.handler)
        return f"set the handler of {p.function_name} to {p.handler}"

    def restore(self, clients: AwsClients, p: RestoreHandlerParams, prior: dict[str, Any]) -> None:
        self._set(clients, p.function_name, prior["handler"])

    @staticmethod
    def _set(clients: AwsClients, function_name: str, handler: str) -> None:
        lam = clients.get("lambda")
        waiter = {"FunctionName": function_name, "WaiterConfig": {"Delay": 2, "MaxAttempts": 30}}
        # Lambda applies configuration asynchronously and refuses a change while another is pending.
        lam.get_waiter("function_updated").wait(**waiter)
        lam.update_function_configuration(FunctionName=function_name, Handler=handler)
        lam.get_waiter("function_updated").wait(**waiter)


# -- the guardrail ----------------------------------------------------------------------------------


def _check_handler(
    p: RestoreHandlerParams, current: FunctionConfiguration, baseline: FunctionConfiguration
) -> list[str]:
    reasons = _other_function(p.function_name, current)
    if baseline.handler is None:
        reasons.append("the baseline did not record the handler: there is no value to restore")
    elif p.handler != baseline.handler:
        reasons.append(f"handler {p.handler} must equal the baseline's {baseline.handler}")
    elif current.handler == baseline.handler:
        reasons.append("the handler already equals the baseline: nothing to restore")
    return reasons


# -- the action ------------------------------------------------------------------------------------


class RestoreHandler(Action):
    """A function's handler setting put back to the baseline's. Low risk: the entry point the deployed code was
    recorded working with; the code itself is not changed."""

    action_type = ActionType.RESTORE_HANDLER
    risk = "low"
    iam_writes = frozenset({"lambda:UpdateFunctionConfiguration"})
    # The lookup's field that shows a fault already at the baseline (the offline critic's no-op check).
    no_drift = {
        FaultType.HANDLER_MISCONFIGURED: ("current_handler", "the handler already equals the baseline"),
    }
    lookup_tool = "get_handler_restore_info"
    sections = ()
    lookup_model = HandlerRestoreInfo
    lookup_description = "The function's handler setting against the baseline's, and the restore that puts it back."
    change = _Handler()

    def lookup(self, clients, lambda_name):
        return get_handler_restore_info(clients, lambda_name)

    def guardrail(self, action, p, current, baseline, clients):
        return _target_reason(action, "the function", "function", [p.function_name]) + _check_handler(
            p, current, baseline
        )

    def drift_paths(self, p, current):
        return ["handler"]

    def verify(self, p, current, baseline):
        return Restoration(prefixes=["handler"])
