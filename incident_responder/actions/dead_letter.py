"""restore_dead_letter_config: a function's dead-letter queue put back to the baseline's (catalogue entry
dead-letter-delivery-failed).

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
from incident_responder.core.contracts.parameters import RestoreDeadLetterConfigParams


class DeadLetterRestoreInfo(BaseModel):
    function_name: str
    current_target_arn: str | None = Field(default=None, description="DeadLetterConfig.TargetArn now (None: none)")
    baseline_target_arn: str | None = Field(default=None, description="None: the baseline had no dead-letter queue")
    baseline_captured_at: str | None = None
    actions: list[ProposedAction] = Field(default_factory=list, description=ACTIONS_DESCRIPTION)
    not_restorable: list[str] = Field(default_factory=list, description=NOT_RESTORABLE_DESCRIPTION)
    error: str | None = None


def get_dead_letter_restore_info(clients: AwsClients, lambda_name: str) -> DeadLetterRestoreInfo:
    return _lookup(
        DeadLetterRestoreInfo, clients, lambda_name, _dead_letter_restore_info, RestoreDeadLetterConfig.sections
    )


def _dead_letter_restore_info(name: str, current: FunctionConfiguration, baseline: Baseline) -> DeadLetterRestoreInfo:
    now, before = current.dead_letter_target, baseline.configuration.dead_letter_target
    actions = []
    if before is not None and now != before:
        actions.append(
            proposed(
                fault_type=FaultType.DEAD_LETTER_MISCONFIGURED,
                action_type=ActionType.RESTORE_DEAD_LETTER_CONFIG,
                target_resource=baseline.function_arn or name,
                parameters=RestoreDeadLetterConfigParams(function_name=name, target_arn=before),
                reasoning=f"dead-letter queue {now} -> baseline {before}",
            )
        )
    return DeadLetterRestoreInfo(
        function_name=name,
        current_target_arn=now,
        baseline_target_arn=before,
        baseline_captured_at=baseline.captured_at,
        actions=actions,
    )


# -- the change: capture, apply, undo ----------------------------------------------------------------


class _DeadLetter(_Change):
    def resources(self, p: RestoreDeadLetterConfigParams) -> list[str]:
        return [f"function:{p.function_name}"]

    def satisfied(self, p: RestoreDeadLetterConfigParams, state: dict[str, Any]) -> bool:
        return state["target_arn"] == p.target_arn

    def capture(self, clients: AwsClients, p: RestoreDeadLetterConfigParams) -> dict[str, Any]:
        config = clients.get("lambda").get_function_configuration(FunctionName=p.function_name)
        return {
            "function_name": p.function_name,
            "target_arn": (config.get("DeadLetterConfig") or {}).get("TargetArn") or None,
        }

    def apply(self, clients: AwsClients, p: RestoreDeadLetterConfigParams) -> str:
        self._set(clients, p.function_name, p.target_arn)
        return f"set the dead-letter queue of {p.function_name} to {p.target_arn}"

    def restore(self, clients: AwsClients, p: RestoreDeadLetterConfigParams, prior: dict[str, Any]) -> None:
        self._set(clients, p.function_name, prior["target_arn"])

    @staticmethod
    def _set(clients: AwsClients, function_name: str, target_arn: str | None) -> None:
        lam = clients.get("lambda")
        waiter = {"FunctionName": function_name, "WaiterConfig": {"Delay": 2, "MaxAttempts": 30}}
        # Lambda applies configuration asynchronously and refuses a change while another is pending.
        lam.get_waiter("function_updated").wait(**waiter)
        # An empty TargetArn removes the dead-letter queue.
        lam.update_function_configuration(FunctionName=function_name, DeadLetterConfig={"TargetArn": target_arn or ""})
        lam.get_waiter("function_updated").wait(**waiter)


# -- the guardrail ----------------------------------------------------------------------------------


def _check_dead_letter(
    p: RestoreDeadLetterConfigParams, current: FunctionConfiguration, baseline: FunctionConfiguration
) -> list[str]:
    reasons = _other_function(p.function_name, current)
    if baseline.dead_letter_target is None:
        reasons.append("the baseline recorded no dead-letter queue: there is none to restore")
    elif p.target_arn != baseline.dead_letter_target:
        # A queue or topic the baseline did not have is never set: the function's failed events would go there.
        reasons.append(f"dead-letter target {p.target_arn} must equal the baseline's {baseline.dead_letter_target}")
    elif current.dead_letter_target == baseline.dead_letter_target:
        reasons.append("the dead-letter queue already equals the baseline: nothing to restore")
    return reasons


# -- the action ------------------------------------------------------------------------------------


class RestoreDeadLetterConfig(Action):
    """A function's dead-letter queue put back to the baseline's. Low risk, but it decides where the function's
    failed events (their payloads) are sent: a change of what the function reaches, approved as access is."""

    action_type = ActionType.RESTORE_DEAD_LETTER_CONFIG
    risk = "low"
    approval = "access"
    iam_writes = frozenset({"lambda:UpdateFunctionConfiguration"})
    no_drift = {
        FaultType.DEAD_LETTER_MISCONFIGURED: (
            "current_target_arn",
            "the dead-letter queue already equals the baseline",
        ),
    }
    lookup_tool = "get_dead_letter_restore_info"
    sections = ()
    lookup_model = DeadLetterRestoreInfo
    lookup_description = "The function's dead-letter queue against the baseline's, and the restore that puts it back."
    change = _DeadLetter()

    def lookup(self, clients, lambda_name):
        return get_dead_letter_restore_info(clients, lambda_name)

    def guardrail(self, action, p, current, baseline, clients):
        return _target_reason(action, "the function", "function", [p.function_name]) + _check_dead_letter(
            p, current, baseline
        )

    def drift_paths(self, p, current):
        return ["dead_letter_target"]

    def verify(self, p, current, baseline):
        return Restoration(prefixes=["dead_letter_target"])
