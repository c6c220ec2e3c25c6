"""The lab's patches of moto's internals (incident_responder/lab/moto_patches/): pinned to the moto they were
verified against, and each applied once however often the lab starts."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from incident_responder.lab.moto_patches import pinned
from incident_responder.lab.moto_patches.errors import UntestedMotoError

REPO = Path(__file__).resolve().parents[2]


def test_the_pin_in_pyproject_is_the_version_the_patches_were_verified_against():
    pins = re.findall(r'"moto\[server\]==([^"]+)"', (REPO / "pyproject.toml").read_text())
    assert pins == [pinned.TESTED_MOTO_VERSION]


def test_the_installed_moto_is_the_pinned_one():
    assert pinned.installed_moto_version() == pinned.TESTED_MOTO_VERSION


def test_another_moto_is_refused_naming_both_versions_and_the_way_out(monkeypatch):
    monkeypatch.setattr(pinned, "installed_moto_version", lambda: "9.9.9")
    applied = []
    monkeypatch.setattr(pinned, "PATCHES", ((lambda: applied.append(True), "a patch"),))
    with pytest.raises(UntestedMotoError) as refused:
        pinned.apply()
    message = str(refused.value)
    assert "9.9.9" in message and pinned.TESTED_MOTO_VERSION in message
    assert "make install" in message and "pin" in message
    assert applied == []  # nothing patched


def test_every_patch_says_in_one_line_why():
    assert pinned.PATCHES
    for patch, reason in pinned.PATCHES:
        assert callable(patch)
        assert reason.strip() and "\n" not in reason


def _patched() -> dict[str, object]:
    """What the patches replace, as they stand."""
    from moto import backends
    from moto.awslambda import urls
    from moto.awslambda.models import LambdaFunction
    from moto.cloudwatch.models import MetricDatumBase
    from moto.core.responses import BaseResponse
    from moto.dynamodb.models import DynamoDBBackend
    from moto.iam.models import Role
    from moto.stepfunctions.parser.asl.eval import states, variable_store
    from moto.stepfunctions.parser.asl.eval.event.event_manager import EventManager
    from moto.stepfunctions.parser.asl.jsonata import jsonata as moto_jsonata
    from moto.stepfunctions.parser.asl.utils import boto_client
    from moto.stepfunctions.parser.backend.execution import BaseExecutionWorkerCommunication
    from moto.stepfunctions.parser.backend.execution_worker import ExecutionWorker
    from moto.stepfunctions.parser.models import StepFunctionsParserBackend
    from moto.stepfunctions.responses import StepFunctionResponse

    found: dict[str, object] = {
        "MetricDatumBase.filter": MetricDatumBase.filter,
        "Role.put_policy": Role.put_policy,
        "BaseResponse.call_action": BaseResponse.call_action,
        "backends.list_of_moto_modules": backends.list_of_moto_modules,
        "LambdaFunction.update_configuration": LambdaFunction.update_configuration,
        "lambda url_paths": dict(urls.url_paths),
        "jsonata._eval_jsonata": moto_jsonata._eval_jsonata,
        "jsonata.eval_jsonata_expression": moto_jsonata.eval_jsonata_expression,
        "states.encode": states.encode_jsonata_variable_declarations,
        "variable_store.encode": variable_store.encode_jsonata_variable_declarations,
        "StepFunctionResponse.send_task_failure": StepFunctionResponse.send_task_failure,
        "_validate_definition": StepFunctionsParserBackend.__dict__["_validate_definition"],
        "ExecutionWorker._get_evaluation_entrypoint": ExecutionWorker._get_evaluation_entrypoint,
        "EventManager.add_event": EventManager.add_event,
        "terminated": BaseExecutionWorkerCommunication.terminated,
        "boto_client_for": boto_client.boto_client_for,
    }
    for name in ("put_item", "update_item", "delete_item", "transact_write_items"):
        found[f"DynamoDBBackend.{name}"] = getattr(DynamoDBBackend, name)
    for name, module in sys.modules.items():
        if name.startswith("moto.stepfunctions.parser") and hasattr(module, "boto_client_for"):
            found[f"{name}.boto_client_for"] = module.boto_client_for
    return found


def test_each_patch_is_applied_once_however_often_the_lab_applies_them():
    pinned.apply()
    first = _patched()
    pinned.apply()
    for patch, _reason in pinned.PATCHES:
        patch()  # each on its own too
    again = _patched()
    assert again.keys() == first.keys()
    changed = [name for name in first if again[name] is not first[name] and again[name] != first[name]]
    assert changed == []


def test_applied_patches_replace_what_they_patch():
    from moto.cloudwatch.models import MetricDatumBase
    from moto.stepfunctions.parser.asl.utils import boto_client

    pinned.apply()
    assert getattr(MetricDatumBase.filter, "_lab_by_name", False)
    assert hasattr(boto_client.boto_client_for, "_lab_creates")
    # Every moto module that imported the client factory by name uses the shared one.
    holders = [
        module.boto_client_for
        for name, module in sys.modules.items()
        if name.startswith("moto.stepfunctions.parser") and hasattr(module, "boto_client_for")
    ]
    assert holders and all(holder is boto_client.boto_client_for for holder in holders)
