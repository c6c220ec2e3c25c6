"""A published version that restores from a SnapStart snapshot, as the lab's Lambda reports and invokes it
(snapstart-activate.html, snapstart-troubleshooting.html): SnapStart ApplyOn and OptimizationStatus, the version's
State, and what Invoke answers when the version cannot restore."""

from __future__ import annotations

import pytest

from chaos import FaultInjector
from chaos.errors import ChaosError
from incident_responder.account.baseline import record_baseline
from incident_responder.account.drift import diff_configurations
from incident_responder.account.state import read_function_configuration
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


def test_an_inactive_snapstart_version_is_not_invoked_and_the_tool_shows_it(clients, consumer):
    before = read_function_configuration(clients, FN)
    chaos = FaultInjector.for_function(FN, clients=clients)
    chaos.snapstart_not_ready()
    chaos.snapstart_not_ready()  # again: nothing more changes
    lam = clients.get("lambda")
    assert [v["Version"] for v in lam.list_versions_by_function(FunctionName=FN)["Versions"]] == ["$LATEST", "1"]
    outcomes = burst(clients)
    assert {(i.error_type, i.error_message) for i in outcomes} == {
        (
            "SnapStartNotReadyException",
            "Lambda is initializing your function. It will be ready to invoke once your function state becomes ACTIVE.",
        )
    }
    assert not any(i.reached or i.logged for i in outcomes)
    tool = diagnostics.get_lambda_config(clients, FN)
    assert tool.State is None  # $LATEST is Active: the version the mapping invokes is not
    assert tool.EventSourceMappings[0].Qualifier == "1"
    [version] = tool.InvokedVersions
    assert (version.Version, version.State, version.SnapStart) == (
        "1",
        "Inactive",
        "PublishedVersions (OptimizationStatus On)",
    )
    chaos.restore()
    assert diff_configurations(before, read_function_configuration(clients, FN)) == []
    assert [v["Version"] for v in lam.list_versions_by_function(FunctionName=FN)["Versions"]] == ["$LATEST"]
    assert diagnostics.get_lambda_config(clients, FN).InvokedVersions == []
    assert {i.status for i in burst(clients)} == {"succeeded"}


@pytest.mark.parametrize("function", ["orders-api", "data-processor"])
def test_a_function_snapstart_cannot_serve_is_refused_unchanged(clients, sample, function):
    from incident_responder.lab.account.orders_api import create_orders_api

    if function == "orders-api":
        create_orders_api(clients)
    before = read_function_configuration(clients, function)
    with pytest.raises(ChaosError):
        FaultInjector.for_function(function, clients=clients).snapstart_not_ready()
    assert diff_configurations(before, read_function_configuration(clients, function)) == []


def test_a_snapstart_version_whose_restore_times_out_fails_every_batch_with_nothing_logged(clients, consumer):
    before = read_function_configuration(clients, FN)
    chaos = FaultInjector.for_function(FN, clients=clients)
    chaos.snapstart_restore_timeout()
    result = workload_for(clients, FN).invoke(2, notify=False)
    assert {(i.error_type, i.error_message) for i in result.invocations} == {
        ("SnapStartTimeoutException", "Lambda couldn't restore the snapshot within the timeout limit.")
    }
    assert all(i.reached and not i.logged for i in result.invocations)  # counted, an error, no log line
    [version] = diagnostics.get_lambda_config(clients, FN).InvokedVersions
    assert (version.State, version.SnapStart) == (None, "PublishedVersions (OptimizationStatus On)")  # Active
    chaos.restore()
    assert diff_configurations(before, read_function_configuration(clients, FN)) == []
    assert {i.status for i in burst(clients)} == {"succeeded"}
