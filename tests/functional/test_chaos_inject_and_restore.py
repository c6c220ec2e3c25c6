"""Chaos's new kinds (bad_deploy, kms_disable, esm_disable, downstream_throttle, iam_revoke dynamodb / sqs) and
the existing kinds on the new workloads: each changes what it says, is idempotent, and restore puts back exactly
what was there; a kind that does not apply says so and changes nothing."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from chaos import ChaosError, FaultInjector
from chaos.kinds import KINDS, SAMPLE_WORKLOADS
from incident_responder.account.baseline import record_baseline
from incident_responder.account.drift import diff_configurations
from incident_responder.account.state import read_function_configuration
from incident_responder.investigation.diagnostics import get_config_drift
from incident_responder.lab.account.orders_api import create_orders_api
from incident_responder.lab.account.queue_consumer import create_queue_consumer
from incident_responder.lab.runtimes import NodeRuntime, read_handler_source, thrown_error
from incident_responder.lab.workloads.orders_api import table_write_load

CASES = [
    ("orders-api", "bad_deploy", {}),
    ("orders-api", "bad_deploy", {"error": "RangeError: Invalid time value"}),
    ("orders-api", "nodejs_unexpected_exit", {}),
    ("queue-consumer", "invalid_entrypoint", {}),
    ("queue-consumer", "code_upload_rejected", {}),
    ("orders-api", "kms_disable", {}),
    ("orders-api", "kms_key_pending_deletion", {}),
    ("orders-api", "iam_revoke", {"target": "dynamodb"}),
    ("orders-api", "throttle", {"reserved_concurrency": 0}),
    ("orders-api", "timeout", {"seconds": 1}),
    ("orders-api", "memory", {"mb": 128}),
    ("queue-consumer", "esm_disable", {}),
    ("queue-consumer", "iam_revoke", {"target": "sqs"}),
    ("queue-consumer", "iam_revoke", {"target": "cloudwatch"}),
    ("queue-consumer", "throttle", {"reserved_concurrency": 1}),  # it had none: restore removes it again
    ("queue-consumer", "memory", {"mb": 128}),
]


@pytest.fixture
def workloads(clients, sample):
    orders, consumer = create_orders_api(clients), create_queue_consumer(clients)
    for name in (orders.function_name, consumer.function_name):
        record_baseline(clients, name)
    return orders, consumer


def injector(clients, function: str) -> FaultInjector:
    return FaultInjector.for_function(function, clients=clients)


def test_fault_changes_state_is_idempotent_and_restores_exactly(clients, workloads, subtests):
    # One account for every case: each restores exactly, so the next starts from the baseline again (and a
    # case that did not would fail its own drift check, and the next case's).
    for function, kind, params in CASES:
        with subtests.test(f"{function}-{kind}-{params}"):
            before = read_function_configuration(clients, function)
            getattr(injector(clients, function), kind)(**params)
            after_once = read_function_configuration(clients, function)
            assert diff_configurations(before, after_once), "the fault changed nothing"
            snapshot = dict(injector(clients, function).store.slots)

            getattr(injector(clients, function), kind)(**params)  # again, from a new process's point of view
            assert read_function_configuration(clients, function) == after_once
            assert injector(clients, function).store.slots == snapshot

            injector(clients, function).restore()
            assert diff_configurations(before, read_function_configuration(clients, function)) == []
            assert injector(clients, function).store.slots == {}
            assert not get_config_drift(clients, function).drifted


def test_bad_deploy_publishes_a_throwing_version_and_rollback_keeps_it(clients, workloads):
    orders, _ = workloads
    lam = clients.get("lambda")
    lines = injector(clients, "orders-api").bad_deploy("TypeError: x is not a function")
    assert lines[-1] == "alias live: version 1 -> 2"
    assert injector(clients, "orders-api").store.slots == {"alias.live": {"function_version": "1"}}
    assert lam.get_alias(FunctionName="orders-api", Name="live")["FunctionVersion"] == "2"
    code = read_handler_source(clients, "orders-api", "live", {})
    error = thrown_error(code, NodeRuntime())
    assert (code.version, error.error_type, error.message) == ("2", "TypeError", "x is not a function")
    drift = {
        d.path
        for d in diff_configurations(orders_baseline(clients), read_function_configuration(clients, "orders-api"))
    }
    assert drift == {"aliases.live.function_version", "aliases.live.code_sha256"}

    injector(clients, "orders-api").restore()
    assert lam.get_alias(FunctionName="orders-api", Name="live")["FunctionVersion"] == "1"
    versions = [v["Version"] for v in lam.list_versions_by_function(FunctionName="orders-api")["Versions"]]
    assert "2" in versions  # a rollback moves the alias; the bad version stays published


def orders_baseline(clients):
    from incident_responder.account.baseline import load_baseline

    return load_baseline(clients, "orders-api").configuration


def test_kms_disable_and_esm_disable_record_their_slots(clients, workloads):
    orders, consumer = workloads
    injector(clients, "orders-api").kms_disable()
    assert injector(clients, "orders-api").store.slots == {f"kms.{orders.kms_key_id}": "Enabled"}
    assert clients.get("kms").describe_key(KeyId=orders.kms_key_arn)["KeyMetadata"]["KeyState"] == "Disabled"
    injector(clients, "queue-consumer").esm_disable()
    assert injector(clients, "queue-consumer").store.slots == {f"esm.{consumer.event_source_mapping_uuid}": "Enabled"}
    mapping = clients.get("lambda").get_event_source_mapping(UUID=consumer.event_source_mapping_uuid)
    assert mapping["State"] == "Disabled"
    injector(clients, "orders-api").restore()
    injector(clients, "queue-consumer").restore()
    assert clients.get("kms").describe_key(KeyId=orders.kms_key_arn)["KeyMetadata"]["KeyState"] == "Enabled"
    assert clients.get("lambda").get_event_source_mapping(UUID=consumer.event_source_mapping_uuid)["State"] == "Enabled"


def test_downstream_throttle_changes_the_table_load_not_the_function(clients, workloads):
    before = read_function_configuration(clients, "orders-api")
    assert table_write_load(clients, "orders-api-orders") is None
    injector(clients, "orders-api").downstream_throttle()
    assert read_function_configuration(clients, "orders-api") == before
    assert table_write_load(clients, "orders-api-orders") == 20  # four times its 5 provisioned units
    slots = dict(injector(clients, "orders-api").store.slots)
    assert slots == {"load.orders-api-orders": {"consumed_write_capacity_units": 0.0}}
    injector(clients, "orders-api").downstream_throttle()
    assert injector(clients, "orders-api").store.slots == slots
    assert table_write_load(clients, "orders-api-orders") == 20

    injector(clients, "orders-api").restore()
    assert table_write_load(clients, "orders-api-orders") == 0
    assert injector(clients, "orders-api").store.slots == {}
    # Injected again right after restore: the newest datapoint is the overload again.
    injector(clients, "orders-api").downstream_throttle()
    assert table_write_load(clients, "orders-api-orders") == 20
    injector(clients, "orders-api").restore()


def test_downstream_throttle_finds_the_table_without_the_role_grant(clients, workloads):
    chaos = injector(clients, "orders-api")
    chaos.iam_revoke("dynamodb")  # the table is then named only by the environment
    chaos.downstream_throttle()
    assert "load.orders-api-orders" in chaos.store.slots
    chaos.restore()


def test_downstream_throttle_needs_provisioned_capacity(clients, workloads):
    clients.get("dynamodb").update_table(TableName="orders-api-orders", BillingMode="PAY_PER_REQUEST")
    with pytest.raises(ChaosError, match="on-demand"):
        injector(clients, "orders-api").downstream_throttle()
    assert injector(clients, "orders-api").store.slots == {}


# Each kind on each sample workload it does not apply to (the registry says which, and what it says).
REFUSALS = [
    (function, name, kind.refusal)
    for name, kind in KINDS.items()
    for function in sorted(SAMPLE_WORKLOADS - kind.workloads)
]


def test_kinds_that_do_not_apply_change_nothing(clients, workloads, subtests):
    # One account for every refusal (each one changing nothing is what is checked, case by case): an account per
    # case cost more than the rest of the file.
    assert REFUSALS
    for function, kind, message in REFUSALS:
        with subtests.test(f"{function}-{kind}"):
            before = read_function_configuration(clients, function)
            with pytest.raises(ChaosError, match=message):
                injector(clients, function).inject(kind, **KINDS[kind].example)
            assert read_function_configuration(clients, function) == before
            assert injector(clients, function).store.slots == {}
            assert injector(clients, function).store.faults == []


def test_stacked_new_and_old_faults_restore_to_the_first_original(clients, workloads):
    before = read_function_configuration(clients, "orders-api")
    chaos = injector(clients, "orders-api")
    chaos.bad_deploy()
    chaos.bad_deploy("Error: another regression")
    chaos.kms_disable()
    chaos.iam_revoke("both")
    chaos.iam_revoke("dynamodb")
    chaos.throttle(1)
    chaos.timeout(2)
    chaos.downstream_throttle()
    assert clients.get("lambda").get_alias(FunctionName="orders-api", Name="live")["FunctionVersion"] == "3"
    chaos.restore()
    assert diff_configurations(before, read_function_configuration(clients, "orders-api")) == []
    assert table_write_load(clients, "orders-api-orders") == 0


def _cli(*args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "chaos", *args], env=env, capture_output=True, text=True, timeout=60)


def test_cli_help_lists_the_new_kinds(lab_env):
    out = _cli("--help", env=lab_env)
    for word in ("bad_deploy", "kms_disable", "esm_disable", "downstream_throttle", "dynamodb", "sqs"):
        assert word in out.stdout


def test_cli_round_trip_with_new_kinds(clients, workloads, lab_env, tmp_path):
    before = read_function_configuration(clients, "orders-api")
    deployed = _cli("--function", "orders-api", "bad_deploy", "--error", "TypeError: boom", env=lab_env)
    assert deployed.returncode == 0, deployed.stderr
    assert "alias live: version 1 -> 2" in deployed.stdout
    scenario = tmp_path / "s.yaml"
    scenario.write_text(
        "name: t\nfaults:\n  - kind: kms_disable\n  - kind: downstream_throttle\n  - kind: iam_revoke\n"
        "    target: dynamodb\nworkload:\n  function: orders-api\n"
    )
    applied = _cli("apply", str(scenario), env=lab_env)
    assert applied.returncode == 0, applied.stderr
    status = json.loads(_cli("--function", "orders-api", "status", env=lab_env).stdout)
    assert {s.split(".")[0] for s in status["slots"]} == {"alias", "kms", "load", "iam"}
    restored = _cli("--function", "orders-api", "restore", env=lab_env)
    assert restored.returncode == 0, restored.stderr
    assert diff_configurations(before, read_function_configuration(clients, "orders-api")) == []
    refused = _cli("--function", "data-processor", "kms_disable", env=lab_env)
    assert refused.returncode == 2 and "no customer-managed key" in refused.stderr


# -- the lab pipeline with the three workloads --------------------------------------------------------
@pytest.fixture(scope="module")
def pipeline(lab):
    from incident_responder.lab.pipeline.startup import LabPipeline

    with LabPipeline.start(lab=lab, workers=True, parameters={"RemediationMode": "propose_only"}) as running:
        yield running


def test_pipeline_onboards_all_three_and_probes_each_with_its_own_workload(pipeline):
    from datetime import UTC, datetime

    from incident_responder.account.baseline import load_baseline
    from incident_responder.lab.scenario import Setup
    from incident_responder.lab.workloads.data_processor import DataProcessor
    from incident_responder.lab.workloads.orders_api import OrdersApi
    from incident_responder.lab.workloads.queue_consumer import QueueConsumer

    clients = pipeline.clients
    assert pipeline.workload_names == ["data-processor", "orders-api", "queue-consumer"]
    for name, kind in (("data-processor", DataProcessor), ("orders-api", OrdersApi), ("queue-consumer", QueueConsumer)):
        assert load_baseline(clients, name) is not None
        workload = pipeline.workload(name)
        assert type(workload) is kind and workload.alert_topic_arn == pipeline.stack.output("IncidentTopicArn")
    assert pipeline.workload("queue-consumer").invoke(2, notify=False).healthy

    probe = pipeline.verification_probe()
    report = probe(clients, "queue-consumer", datetime.now(UTC))
    assert (report.invocations, report.errors) == (3, 0)
    injector(clients, "orders-api").kms_disable()
    report = probe(clients, "orders-api", datetime.now(UTC))
    assert report.errors == 3 and {s.error_type for s in report.samples} == {"KMSDisabledException"}
    injector(clients, "orders-api").restore()

    pipeline.set_up("queue-consumer", Setup(reserved_concurrency=5))
    assert load_baseline(clients, "queue-consumer").configuration.reserved_concurrency == 5
    assert load_baseline(clients, "queue-consumer").configuration.event_source_mappings[0].state == "Enabled"


def test_pipeline_runs_a_new_kind_on_a_new_workload(pipeline):
    from incident_responder.lab.scenario import Scenario
    from incident_responder.state.lifecycle import get_incident_state

    # No refresh: each incident is another function's, and the earlier tests left orders-api as onboarded.
    scenario = Scenario.model_validate(
        {"name": "t", "faults": [{"kind": "bad_deploy"}], "workload": {"function": "orders-api", "invocations": 2}}
    )
    record = pipeline.run(scenario, timeout=300)
    assert record.workload == {"invocations": ["failed", "failed"], "alert": "orders-api-errors"}
    assert (
        get_incident_state(pipeline.clients, pipeline.stack.physical["IncidentStateTable"], record.incident_id)[
            "function_name"
        ]
        == "orders-api"
    )
    assert record.execution["terminal"]
    # propose_only applies nothing: the account is as the alert found it (the alias on the new version).
    assert record.end_state["unchanged_since_alert"]
    assert {d["path"] for d in record.end_state["differences_from_baseline"]} >= {"aliases.live.function_version"}


def test_pipeline_follows_a_queue_alarm_to_its_function(pipeline):
    from incident_responder.lab.scenario import Scenario
    from incident_responder.state.lifecycle import get_incident_state

    scenario = Scenario.model_validate(
        {"name": "t", "faults": [{"kind": "esm_disable"}], "workload": {"function": "queue-consumer"}}
    )
    record = pipeline.run(scenario, timeout=300)
    assert record.workload == {"invocations": [], "alert": "queue-consumer-queue-age"}
    assert (
        get_incident_state(pipeline.clients, pipeline.stack.physical["IncidentStateTable"], record.incident_id)[
            "function_name"
        ]
        == "queue-consumer"
    )
    assert record.execution["terminal"] and record.end_state["unchanged_since_alert"]
