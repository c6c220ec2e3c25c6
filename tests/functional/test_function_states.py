"""A function's State, StateReasonCode and LastUpdateStatus as the lab's Lambda sets them (functions-states.html):
Inactive with the reason's code when it fails to recreate an idle function's network interfaces, Pending while it
creates or restores them, Active again once it can; and get_lambda_config shows them only when not routine."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from chaos import FaultInjector
from chaos.errors import ChaosError
from chaos.lambda_service import hold
from chaos.target import FaultTarget
from incident_responder.investigation import diagnostics
from incident_responder.lab.workloads.selection import workload_for

FN = "data-processor"


def burst(clients, invocations: int = 2):
    return workload_for(clients, FN).invoke(invocations, notify=False).invocations


def state(clients) -> tuple[str | None, str | None]:
    config = clients.get("lambda").get_function_configuration(FunctionName=FN)
    return config.get("State"), config.get("StateReasonCode")


def test_a_healthy_function_is_active_and_the_tool_leaves_the_routine_state_out(clients, sample):
    assert {i.status for i in burst(clients)} == {"succeeded"}
    config = clients.get("lambda").get_function_configuration(FunctionName=FN)
    assert (config["State"], config["LastUpdateStatus"]) == ("Active", "Successful")
    assert "StateReasonCode" not in config
    tool = diagnostics.get_lambda_config(clients, FN)
    assert (tool.State, tool.StateReasonCode, tool.LastUpdateStatus) == (None, None, None)


def test_interfaces_lambda_may_not_create_leave_the_function_inactive_until_it_can(clients, sample):
    chaos = FaultInjector.for_function(FN, clients=clients)
    chaos.vpc_permissions_missing()
    assert {i.error_type for i in burst(clients)} == {"EC2AccessDeniedException"}
    assert state(clients) == ("Inactive", "InsufficientRolePermissions")
    tool = diagnostics.get_lambda_config(clients, FN)
    assert (tool.State, tool.StateReasonCode) == ("Inactive", "InsufficientRolePermissions")
    chaos.restore()
    assert {i.status for i in burst(clients)} == {"succeeded"}
    assert state(clients) == ("Active", None)


def test_a_full_subnet_leaves_the_function_inactive_with_its_code(clients, sample):
    chaos = FaultInjector.for_function(FN, clients=clients)
    chaos.subnet_out_of_addresses()
    assert {i.error_type for i in burst(clients)} == {"SubnetIPAddressLimitReachedException"}
    assert state(clients) == ("Inactive", "SubnetOutOfIPAddresses")
    chaos.restore()
    burst(clients)
    assert state(clients) == ("Active", None)


def test_the_lab_route_refuses_what_it_does_not_know(clients, sample, lab):
    def post(body: dict) -> int:
        request = urllib.request.Request(
            lab.endpoint_url + "/moto-api/lab/lambda-service",
            data=json.dumps(body).encode(),
            method="POST",
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status
        except urllib.error.HTTPError as exc:
            return exc.code

    assert post({"function_name": FN, "condition": "on_fire"}) == 400
    assert post({"function_name": "no-such-function", "condition": None}) == 404
    assert state(clients) == ("Active", None)


def test_an_endpoint_without_the_lab_route_is_refused(clients, sample, tmp_path):
    class Elsewhere:
        endpoint_url = "http://127.0.0.1:9"  # nothing listens: as an AWS endpoint, it has no lab route

    target = FaultTarget(Elsewhere(), FN, store=None)  # type: ignore[arg-type]
    with pytest.raises(ChaosError, match="only the lab"):
        hold(target, "ec2_throttled")


def test_a_pending_function_is_not_invoked_and_says_so(clients, sample):
    chaos = FaultInjector.for_function(FN, clients=clients)
    chaos.function_pending()
    config = clients.get("lambda").get_function_configuration(FunctionName=FN)
    assert (config["State"], config["StateReason"], config["StateReasonCode"]) == (
        "Pending",
        "The function is being created.",
        "Creating",
    )
    outcomes = burst(clients)
    assert {i.error_type for i in outcomes} == {"ResourceConflictException"}
    assert outcomes[0].error_message.endswith("The function is currently in the following state: Pending")
    assert not any(i.reached or i.logged for i in outcomes)
    assert state(clients) == ("Pending", "Creating")  # it stays Pending
    chaos.restore()
    assert state(clients) == ("Active", None)
    assert {i.status for i in burst(clients)} == {"succeeded"}


def test_a_reclaimed_vpc_connection_fails_then_is_restored_slowly(clients, sample):
    chaos = FaultInjector.for_function(FN, clients=clients)
    chaos.vpc_connection_not_ready()
    assert state(clients) == ("Inactive", "Idle")
    assert {i.error_type for i in burst(clients)} == {"ResourceNotReadyException"}
    assert state(clients) == ("Pending", "Restoring")
    assert {i.error_type for i in burst(clients)} == {"ENINotReadyException"}
    chaos.restore()
    assert {i.status for i in burst(clients)} == {"succeeded"}
    assert state(clients) == ("Active", None)


def test_ec2_throttling_lambda_leaves_the_function_inactive_with_ec2_request_limit_exceeded(clients, sample):
    chaos = FaultInjector.for_function(FN, clients=clients)
    chaos.ec2_throttled_during_setup()
    assert state(clients) == ("Active", None)  # nothing shows before Lambda sets the interfaces up again
    outcomes = burst(clients)
    assert {i.error_type for i in outcomes} == {"EC2ThrottledException"}
    assert all(i.reached and not i.logged for i in outcomes)
    assert state(clients) == ("Inactive", "EC2RequestLimitExceeded")
    chaos.restore()
    assert {i.status for i in burst(clients)} == {"succeeded"}
    assert state(clients) == ("Active", None)
