"""The state machine's error names and the exceptions the handlers raise are one list.

A Lambda function that raises reports the exception's class name as its error type, and a task's ``Retry`` and
``Catch`` match that name. Every class meant to reach the state machine inherits
:class:`~incident_responder.core.errors.StateMachineError`; the ASL names each of them, or this file says why not.
"""

from __future__ import annotations

import ast
import importlib
import json
import pkgutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import handlers
from incident_responder.approval.decision import REJECTED_ERROR
from incident_responder.core.errors import StateMachineError

REPO = Path(__file__).resolve().parents[2]
ASL = REPO / "statemachine" / "incident_lifecycle.asl.json"
# Where the deployed functions' code lives (the lab is not deployed).
PRODUCTION = [REPO / "incident_responder", REPO / "handlers"]
LAB = REPO / "incident_responder" / "lab"

# Errors AWS names: Step Functions' own and the service integrations' (a class name cannot hold a dot).
AWS_ERROR_PREFIXES = ("States.", "Lambda.", "DynamoDB.")
# ASL names that no exception carries: the approval page fails the task token with this error (SendTaskFailure).
NOT_AN_EXCEPTION = {REJECTED_ERROR}
# State machine errors the ASL does not name on purpose: the catch-all (States.ALL) of every task that can
# raise one routes it where it belongs, and no Retry may retry it.
NOT_NAMED_BY_THE_ASL = {
    # Run proposer agent -> PROPOSAL_FAILED; Apply actions (raised before any action is applied) and
    # Verify fix -> ROLLING_BACK: a function never onboarded has nothing to compare with.
    "BaselineNotFoundError",
    # Wait for approval -> ERROR: the review cannot be shown to a person.
    "InvalidApprovalRequestError",
    # Verify fix -> ROLLING_BACK: an applied fix that cannot be verified is undone.
    "InvalidVerificationInputError",
    # Run critic agent -> ERROR, where its named errors go too.
    "ProposalUnavailableError",
}


def error_names(node: Any) -> set[str]:
    """Every name in an ``ErrorEquals`` anywhere in ``node``: states, Parallel branches, Map processors."""
    found: set[str] = set()
    if isinstance(node, dict):
        found.update(node.get("ErrorEquals", []))
        for value in node.values():
            found |= error_names(value)
    elif isinstance(node, list):
        for item in node:
            found |= error_names(item)
    return found


def asl_exception_names() -> set[str]:
    names = error_names(json.loads(ASL.read_text()))
    return {n for n in names if not n.startswith(AWS_ERROR_PREFIXES)} - NOT_AN_EXCEPTION


def _subclasses(cls: type) -> Iterator[type]:
    direct: list[type] = cls.__subclasses__()
    for sub in direct:
        yield sub
        yield from _subclasses(sub)


def state_machine_errors() -> dict[str, type]:
    """Every production subclass of the marker, by class name: the handlers and every package's errors module
    loaded first, so each class is defined."""
    for module in pkgutil.iter_modules(handlers.__path__):
        importlib.import_module(f"handlers.{module.name}")
    for path in sorted((REPO / "incident_responder").glob("*/errors.py")):
        importlib.import_module(f"incident_responder.{path.parent.name}.errors")
    found: dict[str, type] = {}
    for cls in _subclasses(StateMachineError):
        if cls.__module__.startswith(("incident_responder.", "handlers.")) and not cls.__module__.startswith(
            "incident_responder.lab."
        ):
            assert found.setdefault(cls.__name__, cls) is cls, f"two state machine errors named {cls.__name__}"
    return found


def production_trees() -> Iterator[tuple[Path, ast.Module]]:
    for root in PRODUCTION:
        for path in sorted(root.rglob("*.py")):
            if LAB not in path.parents:
                yield path, ast.parse(path.read_text(), filename=str(path))


def _name(node: ast.expr | None) -> str | None:
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def raised_names() -> set[str]:
    """Class names production code raises. Besides ``raise Name(...)``, a class counts as raised where
    it is built (``return McpConnectionError(...)``: a classifier whose caller raises the result) or handed over to
    be built (``missing=DiagnosisUnavailableError``, a table of classes such as the model errors')."""
    found: set[str] = set()
    for _, tree in production_trees():
        for node in ast.walk(tree):
            names: list[str | None] = []
            if isinstance(node, ast.Raise):
                names.append(_name(node.exc))
            elif isinstance(node, ast.Call):
                names.append(_name(node.func))
                names.extend(_name(keyword.value) for keyword in node.keywords)
            elif isinstance(node, ast.Dict):
                names.extend(_name(value) for value in node.values if isinstance(value, ast.Name))
            found.update(name for name in names if name)
    return found


def test_error_names_are_found_in_parallel_branches_and_map_processors():
    definition = {
        "States": {
            "Both": {
                "Type": "Parallel",
                "Branches": [{"States": {"A": {"Type": "Task", "Retry": [{"ErrorEquals": ["InBranchError"]}]}}}],
                "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "X"}],
            },
            "Each": {
                "Type": "Map",
                "ItemProcessor": {"States": {"B": {"Type": "Task", "Catch": [{"ErrorEquals": ["InMapError"]}]}}},
            },
        }
    }
    assert error_names(definition) == {"InBranchError", "States.ALL", "InMapError"}


def test_the_asl_names_only_aws_errors_rejection_and_state_machine_errors():
    names = error_names(json.loads(ASL.read_text()))
    dotted = {n for n in names if "." in n and not n.startswith(AWS_ERROR_PREFIXES)}
    assert not dotted, f"error names of an AWS service this test does not know: {sorted(dotted)}"
    assert names >= NOT_AN_EXCEPTION, "the ASL no longer catches the rejection the approval page sends"
    assert not NOT_AN_EXCEPTION & set(state_machine_errors()), "an exception class carries a non-exception name"


def test_the_asl_error_names_are_the_state_machine_errors():
    asl = asl_exception_names()
    classes = set(state_machine_errors())
    unknown = asl - classes
    assert not unknown, (
        f"the ASL names errors no StateMachineError subclass carries (a renamed class, or one that lacks the "
        f"marker): {sorted(unknown)}"
    )
    unnamed = classes - asl - NOT_NAMED_BY_THE_ASL
    assert not unnamed, (
        f"state machine errors no Retry or Catch names: {sorted(unnamed)}; name them in the ASL, or add them to "
        "NOT_NAMED_BY_THE_ASL with the state that routes them"
    )


def test_the_allow_list_holds_only_state_machine_errors_the_asl_does_not_name():
    classes = set(state_machine_errors())
    assert classes >= NOT_NAMED_BY_THE_ASL, f"not state machine errors: {sorted(NOT_NAMED_BY_THE_ASL - classes)}"
    named = NOT_NAMED_BY_THE_ASL & asl_exception_names()
    assert not named, f"the ASL names these now; drop them from NOT_NAMED_BY_THE_ASL: {sorted(named)}"


def test_each_state_machine_error_is_raised_by_production_code():
    classes = state_machine_errors()
    raised = raised_names()

    def is_raised(cls: type) -> bool:
        return cls.__name__ in raised or any(sub.__name__ in raised for sub in _subclasses(cls))

    never = sorted(name for name, cls in classes.items() if not is_raised(cls))
    assert not never, f"state machine errors nothing in incident_responder/ or handlers/ raises: {never}"


def test_every_marker_subclass_in_the_source_is_collected():
    """A class defined in a module neither a handler nor an errors module imports would escape the walk."""
    classes = state_machine_errors()
    markers = {"StateMachineError", *classes}
    defined = {
        node.name
        for _, tree in production_trees()
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef) and any(_name(base) in markers for base in node.bases)
    }
    assert defined <= set(classes), f"not loaded by the handlers or an errors module: {sorted(defined - set(classes))}"
