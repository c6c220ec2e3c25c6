"""One contract every action type keeps, against the lab, parametrized over the action registry: a fault injected
(the corpus's scenario for it) -> the type's lookup offers the restore -> the guardrails pass it -> its change
applies it (its prior state captured first) -> verification finds the configuration at the baseline -> the undo
puts back exactly the prior state, compared as compare-and-swap compares it -> verification sees the fault again.

A new action type is picked up here with no test of its own to write, once the corpus has a scenario for it."""

from __future__ import annotations

from pathlib import Path

import pytest

from incident_responder.account.baseline import load_baseline
from incident_responder.account.state import read_function_configuration
from incident_responder.actions.registry import ACTIONS
from incident_responder.core.contracts import ActionType, ProposalSubmission
from incident_responder.guardrails.checks import check_action
from incident_responder.lab.pipeline.startup import LabPipeline
from incident_responder.lab.scenario import Scenario, load_scenario
from incident_responder.remediation.verify import configuration_check

REPO = Path(__file__).parents[2]
pytestmark = pytest.mark.slow


def scenario_for(action_type: ActionType) -> Scenario:
    """The corpus's first scenario with one fault that this action type alone fixes, and no setup of its own."""
    for path in sorted((REPO / "scenarios").rglob("*.yaml")):
        scenario = load_scenario(path)
        if (
            len(scenario.faults) == 1
            and list(scenario.expect.actions) == [action_type]
            and not scenario.workload.setup
            and scenario.lifecycle.approval is None
        ):
            return scenario
    raise AssertionError(f"no scenario in scenarios/ has {action_type} alone: add one")


@pytest.fixture(scope="module")
def pipeline(lab):
    with LabPipeline.start(lab=lab, workers=False) as running:
        yield running


@pytest.mark.parametrize("action_type", sorted(ActionType))
def test_each_action_type_keeps_the_contract(pipeline, action_type):
    action_kind = ACTIONS[action_type]
    scenario = scenario_for(action_type)
    function = scenario.workload.function
    clients = pipeline.clients
    pipeline.inject(scenario)
    try:
        # The lookup offers the restore, ready to copy.
        offered = [a for a in action_kind.lookup(clients, function).actions if a.action_type == action_type]
        assert offered, f"{action_type}: the lookup offers nothing after {scenario.name}"
        (action, *_) = ProposalSubmission(actions=offered[:1]).to_proposal("contract").actions
        baseline = load_baseline(clients, function)
        current = read_function_configuration(clients, function)
        # The guardrails pass it: the incident's own resource, exactly the baseline, a difference to restore.
        reasons = check_action(action, current, baseline.configuration, clients, None, baseline.not_restorable_paths())
        assert reasons == [], reasons
        assert not configuration_check(action, current, baseline.configuration)[0]

        change, p = action_kind.change, action.typed_parameters()
        prior = change.capture(clients, p)
        assert not change.satisfied(p, prior)
        assert set(change.resources(p)), "the change leases nothing"
        change.apply(clients, p)
        after = change.capture(clients, p)
        assert change.satisfied(p, after)
        restored, detail = configuration_check(
            action, read_function_configuration(clients, function), baseline.configuration
        )
        assert restored, detail
        # Applied again, it is already restored: the guardrails say so rather than write twice.
        again = check_action(action, read_function_configuration(clients, function), baseline.configuration, clients)
        assert again and all("nothing to restore" in r or "no difference" in r for r in again), again

        # Compare-and-swap: the undo is made only while the live state is what the apply left...
        assert change.comparable(change.capture(clients, p)) == change.comparable(after)
        change.restore(clients, p, prior)
        # ...and leaves exactly the prior state, the fault with it.
        assert change.comparable(change.capture(clients, p)) == change.comparable(prior)
        assert not configuration_check(action, read_function_configuration(clients, function), baseline.configuration)[
            0
        ]
    finally:
        pipeline.restore(function)
