"""restore_layers: a function's layers put back to the baseline's layer version ARNs (catalogue entries
import-module-error, when a layer the code imports from was removed, and extension-crash-at-init, when a layer that
crashes was added or changed).

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
from incident_responder.core.contracts.parameters import RestoreLayersParams


class LayersRestoreInfo(BaseModel):
    function_name: str
    current_layers: list[str] | None = None
    baseline_layers: list[str] | None = Field(default=None, description="None: the baseline did not record them")
    baseline_captured_at: str | None = None
    actions: list[ProposedAction] = Field(default_factory=list, description=ACTIONS_DESCRIPTION)
    not_restorable: list[str] = Field(default_factory=list, description=NOT_RESTORABLE_DESCRIPTION)
    error: str | None = None


def get_layers_restore_info(clients: AwsClients, lambda_name: str) -> LayersRestoreInfo:
    return _lookup(LayersRestoreInfo, clients, lambda_name, _layers_restore_info, RestoreLayers.sections)


def _layers_restore_info(name: str, current: FunctionConfiguration, baseline: Baseline) -> LayersRestoreInfo:
    now, before = current.layers, baseline.configuration.layers
    actions = []
    if before is not None and now != before:
        actions.append(
            proposed(
                fault_type=FaultType.LAYERS_CHANGED,
                action_type=ActionType.RESTORE_LAYERS,
                target_resource=baseline.function_arn or name,
                parameters=RestoreLayersParams(function_name=name, layers=list(before)),
                reasoning=f"layers {now} -> baseline {before}",
            )
        )
    return LayersRestoreInfo(
        function_name=name,
        current_layers=now,
        baseline_layers=before,
        baseline_captured_at=baseline.captured_at,
        actions=actions,
    )


# -- the change: capture, apply, undo ----------------------------------------------------------------


class _Layers(_Change):
    def resources(self, p: RestoreLayersParams) -> list[str]:
        return [f"function:{p.function_name}"]

    def satisfied(self, p: RestoreLayersParams, state: dict[str, Any]) -> bool:
        return state["layers"] == p.layers

    def capture(self, clients: AwsClients, p: RestoreLayersParams) -> dict[str, Any]:
        config = clients.get("lambda").get_function_configuration(FunctionName=p.function_name)
        return {"function_name": p.function_name, "layers": [layer["Arn"] for layer in config.get("Layers") or []]}

    def apply(self, clients: AwsClients, p: RestoreLayersParams) -> str:
        self._set(clients, p.function_name, p.layers)
        return f"set the layers of {p.function_name} to {p.layers or 'none'}"

    def restore(self, clients: AwsClients, p: RestoreLayersParams, prior: dict[str, Any]) -> None:
        self._set(clients, p.function_name, prior["layers"])

    @staticmethod
    def _set(clients: AwsClients, function_name: str, layers: list[str]) -> None:
        lam = clients.get("lambda")
        waiter = {"FunctionName": function_name, "WaiterConfig": {"Delay": 2, "MaxAttempts": 30}}
        # Lambda applies configuration asynchronously and refuses a change while another is pending.
        lam.get_waiter("function_updated").wait(**waiter)
        lam.update_function_configuration(FunctionName=function_name, Layers=list(layers))
        lam.get_waiter("function_updated").wait(**waiter)


# -- the guardrail ----------------------------------------------------------------------------------


def _check_layers(p: RestoreLayersParams, current: FunctionConfiguration, baseline: FunctionConfiguration) -> list[str]:
    reasons = _other_function(p.function_name, current)
    if baseline.layers is None:
        reasons.append("the baseline did not record the layers: there is no value to restore")
        return reasons
    # Layers are code that runs with the function's role: never one the baseline did not have.
    unknown = [arn for arn in p.layers if arn not in baseline.layers]
    if unknown:
        reasons.append(f"layer {unknown[0]} is not one the baseline recorded")
    elif p.layers != baseline.layers:
        reasons.append(f"layers {p.layers} must equal the baseline's {baseline.layers}, in its order")
    elif current.layers == baseline.layers:
        reasons.append("the layers already equal the baseline: nothing to restore")
    return reasons


# -- the action ------------------------------------------------------------------------------------


class RestoreLayers(Action):
    """A function's layers put back to the baseline's layer versions. Medium risk: layers are code that runs with
    the function's role (a layer version is immutable, so the baseline's ARN is the very code recorded working);
    the guardrail refuses any layer the baseline did not have."""

    action_type = ActionType.RESTORE_LAYERS
    risk = "medium"
    iam_writes = frozenset({"lambda:UpdateFunctionConfiguration"})
    # The lookup's field that shows a fault already at the baseline (the offline critic's no-op check).
    no_drift = {
        FaultType.LAYERS_CHANGED: ("current_layers", "the layers already equal the baseline"),
    }
    lookup_tool = "get_layers_restore_info"
    sections = ()
    lookup_model = LayersRestoreInfo
    lookup_description = "The function's layer versions against the baseline's, and the restore that puts them back."
    change = _Layers()

    def lookup(self, clients, lambda_name):
        return get_layers_restore_info(clients, lambda_name)

    def guardrail(self, action, p, current, baseline, clients):
        return _target_reason(action, "the function", "function", [p.function_name]) + _check_layers(
            p, current, baseline
        )

    def drift_paths(self, p, current):
        return ["layers"]

    def verify(self, p, current, baseline):
        return Restoration(prefixes=["layers"])
