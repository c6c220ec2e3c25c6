"""Verification's configuration check judges only what it knows how to judge: an action type without a check is
never reported as restored (the guardrails refuse an unknown type; verify must too)."""

from __future__ import annotations

from pydantic import BaseModel

from incident_responder.account.network import NetworkState
from incident_responder.account.role import RoleState
from incident_responder.account.state import FunctionConfiguration
from incident_responder.core.contracts import RemediationAction
from incident_responder.core.contracts import parameters as contract_parameters
from incident_responder.remediation.verify import configuration_check

CONFIGURATION = FunctionConfiguration(
    function_name="data-processor",
    role=RoleState(role_name="data-processor-role", role_arn="arn:aws:iam::123456789012:role/data-processor-role"),
    reserved_concurrency=None,
    timeout=30,
    memory_size=512,
    network=NetworkState(in_vpc=False),
)


class WidgetParams(BaseModel):
    widget: str


def test_an_action_type_verify_has_no_check_for_is_not_verified(monkeypatch):
    monkeypatch.setitem(contract_parameters.PARAMETERS_FOR_ACTION, "restore_widget", WidgetParams)
    action = RemediationAction.model_construct(
        execution_order=1,
        fault_type="unknown",
        action_type="restore_widget",
        target_resource="arn:aws:lambda:us-east-1:123456789012:function:data-processor",
        parameters={"widget": "w-1"},
    )
    restored, detail = configuration_check(action, CONFIGURATION, CONFIGURATION)
    assert restored is False
    assert "restore_widget" in detail
