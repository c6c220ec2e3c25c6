"""The action registry: every action type is one module with every part, and every table keyed by fault type or
action type covers its whole enum (a new type or fault missing from one fails here, not in production)."""

from __future__ import annotations

import inspect

import pytest
from pydantic import BaseModel

from incident_responder.actions.base import Action
from incident_responder.actions.change import _Change
from incident_responder.actions.registry import (
    ACTIONS,
    CHANGES,
    LOOKUP_FOR_FAULT,
    REMEDIATION_TOOLS,
    RISK_FOR_ACTION,
)
from incident_responder.agent.evidence import FAULT_SIGNS
from incident_responder.agent.offline.diagnosis import ORDER, REMEDIATION
from incident_responder.core.contracts import (
    ACTION_FOR_FAULT,
    FAULT_PRIORITY,
    PARAMETERS_FOR_ACTION,
    UNRESOLVABLE_FAULTS,
    ActionType,
    FaultType,
)
from incident_responder.lab.template import load_template

CHANGE_METHODS = ("resources", "satisfied", "capture", "apply", "restore")


def test_every_action_type_is_registered_once_under_its_own_name():
    assert set(ACTIONS) == set(ActionType)
    assert all(action.action_type == action_type for action_type, action in ACTIONS.items())
    assert len({type(a) for a in ACTIONS.values()}) == len(ActionType)


@pytest.mark.parametrize("action_type", sorted(ActionType))
def test_each_action_has_every_part(action_type):
    action = ACTIONS[action_type]
    assert isinstance(action, Action) and not inspect.isabstract(type(action))
    assert action.fixes, f"{action_type} fixes no fault (the contract's ACTION_FOR_FAULT)"
    assert action.risk in ("low", "medium", "high")
    assert action.approval in ("policy", "access", "person")
    assert (action.approval == "person") == bool(action.person_reason)
    assert action.iam_writes and all(":" in w for w in action.iam_writes)
    assert issubclass(action.lookup_model, BaseModel) and "actions" in action.lookup_model.model_fields
    assert action.lookup_description and action.lookup_tool.startswith("get_")
    assert action.parameters_model is PARAMETERS_FOR_ACTION[action_type]
    # The change implements each method itself: the base's would raise NotImplementedError mid-remediation.
    assert isinstance(action.change, _Change)
    missing = [m for m in CHANGE_METHODS if getattr(type(action.change), m) is getattr(_Change, m)]
    assert not missing, f"{action_type}'s change does not implement {missing}"


def test_an_action_missing_a_part_cannot_be_made():
    class Incomplete(Action):
        action_type = ActionType.UPDATE_CONCURRENCY

        def lookup(self, clients, lambda_name):  # no guardrail, drift_paths or verify
            raise AssertionError

    with pytest.raises(TypeError, match="abstract"):
        Incomplete()


def test_every_table_keyed_by_action_type_covers_the_enum():
    assert set(PARAMETERS_FOR_ACTION) == set(ActionType)
    assert set(RISK_FOR_ACTION) == set(ActionType) == set(CHANGES)
    assert len(REMEDIATION_TOOLS) == len(ActionType)  # one lookup tool each, none shared
    assert set(ACTION_FOR_FAULT.values()) == set(ActionType)  # every action fixes something


def test_every_table_keyed_by_fault_type_covers_the_enum():
    fixed = set(ACTION_FOR_FAULT)
    assert fixed | set(UNRESOLVABLE_FAULTS) == set(FaultType) and not fixed & set(UNRESOLVABLE_FAULTS)
    assert set(FAULT_PRIORITY) == fixed
    assert set(FAULT_SIGNS) == {str(f) for f in fixed}
    assert set(LOOKUP_FOR_FAULT) == {str(f) for f in fixed}
    assert set(REMEDIATION) | {"unknown"} == {str(f) for f in FaultType}
    assert set(ORDER) == {str(f) for f in FaultType}


def _actions_of(statement: dict) -> set[str]:
    found = statement["Action"]
    return {found} if isinstance(found, str) else set(found)


def test_the_remediate_role_allows_exactly_the_writes_the_action_types_make():
    """What each action type's change calls (iam_writes) is what the remediate role allows, and what its denies keep
    off the responder's own resources: an action type added without its IAM writes fails here, not on AWS."""
    template = load_template()
    role = template["Resources"]["RemediateFunction"]
    flat = [s for p in role["Properties"]["Policies"] if isinstance(p, dict) for s in p.get("Statement", [])]
    allowed = set().union(*(_actions_of(s) for s in flat if s["Effect"] == "Allow"))
    writes = set().union(*(a.iam_writes for a in ACTIONS.values()))
    assert writes <= allowed, f"the remediate role does not allow {sorted(writes - allowed)}"
    reads = {a for a in allowed if a.split(":")[1].startswith(("Get", "List", "Describe"))}
    others = allowed - writes - reads
    # Beyond reads and the action types' writes: the ledger and leases (DynamoDB), the lifecycle's executions, and
    # the member accounts' remediation role (member-account.yaml: the same statements, the same denies).
    assert {a.split(":")[0] for a in others} <= {"dynamodb", "states", "sts"}, sorted(others)
    assert [a for a in others if a.startswith("sts:")] == ["sts:AssumeRole"]


def test_each_fault_type_has_one_record_with_what_a_person_and_the_catalogue_need():
    from incident_responder.catalogue.queries import modes_by_fault_type
    from incident_responder.core.contracts import FAULT_RECORDS, FAULTS

    assert [r.fault_type for r in FAULTS].count(FaultType.UNKNOWN) == 1
    assert set(FAULT_RECORDS) == set(FaultType) and len(FAULTS) == len(FaultType)
    catalogued = modes_by_fault_type()
    for record in FAULTS:
        if record.fault_type == FaultType.UNKNOWN:
            continue
        assert record.advice, record.fault_type
        assert catalogued.get(str(record.fault_type)), f"no catalogue entry diagnoses {record.fault_type}"
        # A fault an action fixes needs its own evidence; one no action fixes takes any verified pointer.
        assert (record.signs is not None) == (record.action is not None), record.fault_type
