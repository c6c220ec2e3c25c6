"""The chaos kinds' registry is complete: each kind has its module, its parameters (the scenario format's model),
its fault type, the workloads it applies to (and its refusal of the others), its slots, inject and restore; the
registry's kinds are those the scenarios, the design and the docs name; the scenario schema, FAULT_TYPE_OF_KIND
and the command line come from it; and chaos imports nothing of the lab."""

from __future__ import annotations

import argparse
import ast
import inspect
import re
from pathlib import Path
from typing import Any, get_args

import pytest
import yaml

from chaos.kinds import FAULT_TYPE_OF_KIND, KIND_CLASSES, KINDS, SAMPLE_WORKLOADS, Fault, _registry, kind_of_slot
from chaos.kinds.base import ChaosKind, KindParameters, kind_name
from incident_responder.core.contracts import FaultType

REPO = Path(__file__).resolve().parents[2]
# The design's list of fault kinds (chaos and scenarios), in its order.
DESIGN_KINDS = [
    "iam_revoke",
    "throttle",
    "network_block",
    "timeout",
    "memory",
    "bad_deploy",
    "kms_disable",
    "esm_disable",
    "downstream_throttle",
    "env_var_removed",
    "secret_scheduled_for_deletion",
    "queue_visibility",
    "ephemeral_storage",
    "kms_revoke",
    "noisy_neighbor",
    "recursive_loop",
]


@pytest.mark.parametrize("name", list(KINDS))
def test_each_kind_has_everything_in_its_own_module(name):
    kind = KINDS[name]
    cls = type(kind)
    assert cls.__module__ == f"chaos.kinds.{name}" and (REPO / "chaos" / "kinds" / f"{name}.py").is_file()
    assert issubclass(kind.parameters, KindParameters) and kind.parameters.__module__ == cls.__module__
    assert kind_name(kind.parameters) == name == kind.name
    assert isinstance(kind.fault_type, FaultType)
    assert not inspect.isabstract(cls)
    assert cls.inject is not ChaosKind.inject and cls.restore is not ChaosKind.restore
    assert kind.workloads and kind.workloads <= SAMPLE_WORKLOADS
    # A kind that leaves out a sample workload says what it refuses it for (its tests check the words).
    assert (kind.refusal is None) == (kind.workloads == SAMPLE_WORKLOADS)
    assert kind.slots and all(kind_of_slot(f"{prefix}.x") is not None for prefix in kind.slots)
    assert kind.help
    names = kind.parameter_names()
    assert set(kind.defaults) <= set(names) and set(kind.argument_help) <= set(names)
    fault = kind.parameters.model_validate({"kind": name, **kind.example})  # its example is a valid fault
    assert fault.kind == name


def test_a_kind_without_inject_or_restore_fails_when_the_registry_is_built():
    class Broken(ChaosKind[Any]):
        parameters = KINDS["timeout"].parameters

        def inject(self, target, params):
            return []

    with pytest.raises(TypeError, match="restore"):
        _registry((Broken,))


def test_every_module_in_kinds_is_registered():
    modules = {p.stem for p in (REPO / "chaos" / "kinds").glob("*.py")} - {"__init__", "base"}
    assert modules == set(KINDS) and len(KIND_CLASSES) == len(KINDS)


def test_the_registry_names_the_kinds_the_design_the_scenarios_and_the_docs_name():
    from incident_responder.catalogue.queries import MODES_BY_ID

    assert list(KINDS)[: len(DESIGN_KINDS)] == DESIGN_KINDS
    # Every other kind reproduces a failure catalogue entry and is named after it, producing its fault type.
    for name in list(KINDS)[len(DESIGN_KINDS) :]:
        mode = MODES_BY_ID.get(name.replace("_", "-"))
        assert mode is not None, f"{name} is named after no failure catalogue entry"
        assert mode.fault_type == KINDS[name].fault_type, f"{name} produces another fault than {mode.id} names"
        assert KINDS[name].parameter_names() == list(KINDS[name].defaults), f"{name}: every parameter has a default"
    used = {
        fault["kind"]
        for path in (REPO / "scenarios").rglob("*.yaml")
        for fault in yaml.safe_load(path.read_text()).get("faults") or []
    }
    assert used == set(KINDS)
    lab_doc = (REPO / "docs" / "lab.md").read_text()
    assert {m for m in re.findall(r"responder chaos (?:--function \S+ )?(\w+)", lab_doc)} - {
        "apply",
        "status",
        "restore",
    } == set(DESIGN_KINDS)
    # The catalogue kinds are listed with their entries on the generated failure catalogue page.
    catalogue_doc = (REPO / "docs" / "failure-catalogue.md").read_text()
    listed = set(re.findall(r"`- kind: (\w+)`", catalogue_doc))
    assert set(KINDS) - set(DESIGN_KINDS) <= listed <= set(KINDS)


def test_the_scenario_schema_and_the_fault_types_come_from_the_registry():
    from incident_responder.lab.scenario import FAULT_TYPE_OF_KIND as lab_table
    from incident_responder.lab.scenario import Fault as lab_fault

    assert lab_fault is Fault and lab_table is FAULT_TYPE_OF_KIND
    members = get_args(get_args(Fault)[0])
    assert members == tuple(kind.parameters for kind in KINDS.values())
    assert {name: kind.fault_type for name, kind in KINDS.items()} == FAULT_TYPE_OF_KIND


def test_the_sample_workloads_are_the_labs():
    from incident_responder.lab.workloads.selection import WORKLOADS

    assert set(WORKLOADS) == SAMPLE_WORKLOADS


@pytest.mark.parametrize("name", list(KINDS))
def test_the_command_line_has_each_kind_with_its_parameters(name):
    from chaos.cli import add_arguments

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    kind = KINDS[name]
    argv = [name]
    for field, value in kind.example.items():
        argv += ["--" + field.replace("_", "-"), str(value)]
    args = parser.parse_args(argv)
    assert args.fault == name
    assert {field: getattr(args, field) for field in kind.example} == dict(kind.example)
    for field in kind.defaults:  # left out: the kind's default
        assert getattr(parser.parse_args([name]), field) == kind.defaults[field]


def test_a_direct_call_takes_positional_keyword_and_default_parameters():
    timeout, iam = KINDS["timeout"], KINDS["iam_revoke"]
    assert timeout.parameters_of(3).seconds == 3 and timeout.parameters_of(seconds=4).seconds == 4
    assert timeout.parameters_of().seconds == 1 and iam.parameters_of().target == "s3"
    assert timeout.parameters_of(0).seconds == 0  # not validated here: the kind's own check says what is wrong
    with pytest.raises(TypeError, match="needs its parameter 'name'"):
        KINDS["env_var_removed"].parameters_of()
    with pytest.raises(TypeError, match="no parameter 'mb'"):
        timeout.parameters_of(mb=1)


def test_chaos_imports_nothing_of_the_lab():
    """The layering: production code at the bottom, chaos above it (operators run it against real AWS), the lab on
    top (it applies scenarios with chaos)."""
    found = []
    for path in sorted((REPO / "chaos").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            found += [f"{path.relative_to(REPO)}: {n}" for n in names if n.startswith("incident_responder.lab")]
    assert found == []
