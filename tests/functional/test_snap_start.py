"""A published version that restores from a SnapStart snapshot, as the lab's Lambda reports and invokes it
(snapstart-activate.html, snapstart-troubleshooting.html): SnapStart ApplyOn and OptimizationStatus, the version's
State, and what Invoke answers when the version cannot restore."""

from __future__ import annotations

import pytest

from incident_responder.account.baseline import record_baseline
from incident_responder.investigation import diagnostics
from incident_responder.lab.account.queue_consumer import create_queue_consumer
from incident_responder.lab.workloads.selection import workload_for

FN = "queue-consumer"


@pytest.fixture
def consumer(clients, sample):
    create_queue_consumer(clients)
    record_baseline(clients, FN)
    return FN


def burst(clients, invocations: int = 2):
    return workload_for(clients, FN).invoke(invocations, notify=False).invocations


def test_lambda_reports_snapstart_on_for_a_version_published_with_it_and_off_for_latest(clients, consumer):
    lam = clients.get("lambda")
    assert lam.get_function_configuration(FunctionName=FN)["SnapStart"] == {
        "ApplyOn": "None",
        "OptimizationStatus": "Off",
    }
    lam.update_function_configuration(FunctionName=FN, SnapStart={"ApplyOn": "PublishedVersions"})
    version = lam.publish_version(FunctionName=FN)["Version"]
    assert lam.get_function_configuration(FunctionName=FN)["SnapStart"]["OptimizationStatus"] == "Off"
    published = lam.get_function_configuration(FunctionName=FN, Qualifier=version)
    assert published["SnapStart"] == {"ApplyOn": "PublishedVersions", "OptimizationStatus": "On"}
    assert published["State"] == "Active"
    lam.update_function_configuration(FunctionName=FN, SnapStart={"ApplyOn": "None"})
    # A published version keeps its own setting.
    assert lam.get_function_configuration(FunctionName=FN, Qualifier=version)["SnapStart"]["OptimizationStatus"] == "On"


def test_the_tool_shows_the_snapstart_version_a_mapping_invokes(clients, consumer):
    lam = clients.get("lambda")
    assert diagnostics.get_lambda_config(clients, FN).InvokedVersions == []
    lam.update_function_configuration(FunctionName=FN, SnapStart={"ApplyOn": "PublishedVersions"})
    version = lam.publish_version(FunctionName=FN)["Version"]
    [mapping] = lam.list_event_source_mappings(FunctionName=FN)["EventSourceMappings"]
    lam.update_event_source_mapping(UUID=mapping["UUID"], FunctionName=f"{FN}:{version}")
    tool = diagnostics.get_lambda_config(clients, FN)
    assert tool.EventSourceMappings[0].Qualifier == version
    assert [(v.Version, v.State, v.SnapStart) for v in tool.InvokedVersions] == [
        (version, None, "PublishedVersions (OptimizationStatus On)")
    ]
    assert {i.status for i in burst(clients)} == {"succeeded"}  # it restores: the batches run
