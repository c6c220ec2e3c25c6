"""An alarm on an alias or version (Lambda's Resource or ExecutedVersion dimension) is about what runs behind it:
the diagnostics read that version's settings, the offline model asks for them, and the guardrails keep only the
actions that reach it. Against the lab's orders-api: versions 1 and 2, alias live on 1 (tests/wider_account.py).
"""

from __future__ import annotations

import pytest
from langchain_core.messages import HumanMessage

from incident_responder.agent.offline import Observations
from incident_responder.agent.offline.model import next_calls
from incident_responder.core.contracts import Incident
from incident_responder.investigation import diagnostics
from incident_responder.investigation.investigator import incident_message
from tests.fakes import guard
from tests.wider_account import ORDERS, build_wider_account, rollback


@pytest.fixture
def world(clients):
    return build_wider_account(clients)


def restore_timeout(seconds: int) -> dict:
    return {
        "fault_type": "timeout",
        "action_type": "update_function_configuration",
        "target_resource": ORDERS,
        "parameters": {"function_name": ORDERS, "timeout": seconds},
    }


def test_config_and_drift_read_the_version_the_alias_runs(world):
    baseline_timeout = diagnostics.get_lambda_config(world.clients, ORDERS).Timeout
    world.clients.get("lambda").update_function_configuration(FunctionName=ORDERS, Timeout=1)  # $LATEST only

    latest = diagnostics.get_config_drift(world.clients, ORDERS)
    assert [d.path for d in latest.differences] == ["timeout"] and latest.qualifier is None
    live = diagnostics.get_config_drift(world.clients, ORDERS, "live")
    assert (live.qualifier, live.version, live.drifted) == ("live", "1", False)  # version 1 still has its timeout

    config = diagnostics.get_lambda_config(world.clients, ORDERS, "live")
    assert (config.Qualifier, config.Version, config.Timeout) == ("live", "1", baseline_timeout)
    assert diagnostics.get_lambda_config(world.clients, ORDERS).Timeout == 1
    missing = diagnostics.get_config_drift(world.clients, ORDERS, "no-such-alias")
    assert missing.error and missing.qualifier == "no-such-alias"


def test_the_offline_model_asks_for_the_alias_it_was_alarmed_on():
    incident = Incident(
        incident_id="orders-api-20261124T114327-0123456789",
        function_name=ORDERS,
        qualifier="live",
        source="cloudwatch_alarm",
        detected_at="2026-11-24T11:43:27.123+0000",
        alarm_name="orders-api-live-errors",
        metric_name="Throttles",
    )
    obs = Observations([HumanMessage(incident_message(incident))])
    tools = {"get_lambda_config", "get_config_drift", "get_recent_logs", "submit_diagnosis"}
    (call,) = [c for c in next_calls(obs, tools) if c["name"] == "get_lambda_config"]
    assert call["args"] == {"lambda_name": ORDERS, "qualifier": "live"}
    unqualified = Observations([HumanMessage(incident_message(incident.model_copy(update={"qualifier": None})))])
    assert all("qualifier" not in c["args"] for c in next_calls(unqualified, tools))


def test_a_rollback_must_be_of_the_alias_or_version_the_alarm_named(world):
    world.move_alias("2")
    assert guard(world.clients, rollback("1"), function=ORDERS, qualifier="live").actions
    assert guard(world.clients, rollback("1"), function=ORDERS, qualifier="2").actions  # live routes to 2
    (other,) = guard(world.clients, rollback("1"), function=ORDERS, qualifier="beta").rejected_actions
    assert "the alarm named alias beta: rolling back alias live does not change what fails" in other.reasons[0]
    (stale,) = guard(world.clients, rollback("1"), function=ORDERS, qualifier="1").rejected_actions
    assert "the alarm named version 1, and alias live routes to 2" in stale.reasons[0]


def test_latest_settings_are_not_a_fix_for_a_published_version(world):
    baseline_timeout = diagnostics.get_lambda_config(world.clients, ORDERS).Timeout
    world.clients.get("lambda").update_function_configuration(FunctionName=ORDERS, Timeout=1)
    assert guard(world.clients, restore_timeout(baseline_timeout), function=ORDERS).actions
    assert guard(world.clients, restore_timeout(baseline_timeout), function=ORDERS, qualifier="$LATEST").actions
    checked = guard(world.clients, restore_timeout(baseline_timeout), function=ORDERS, qualifier="live")
    (refused,) = checked.rejected_actions
    assert "the alarm named alias live, which runs published version 1" in refused.reasons[0]
