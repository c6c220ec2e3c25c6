"""The seven kinds from AWS's failure catalogue: chaos changes what it says and restores exactly what was there,
and the lab's workloads then show only what AWS would show (the runtime's lines, the service's answers, metrics,
the alarm), never the injected kind."""

from __future__ import annotations

import json

import pytest

from chaos import FaultInjector
from incident_responder.account.baseline import record_baseline
from incident_responder.account.drift import diff_configurations
from incident_responder.account.state import read_function_configuration
from incident_responder.lab.account.orders_api import create_orders_api
from incident_responder.lab.account.queue_consumer import create_queue_consumer
from incident_responder.lab.workloads.selection import workload_for

CASES = [
    ("data-processor", "env_var_removed", {"name": "INPUT_BUCKET"}, "environment.INPUT_BUCKET"),
    ("data-processor", "ephemeral_storage", {"mb": 512}, "ephemeral_storage"),
    ("orders-api", "secret_scheduled_for_deletion", {}, "secrets."),
    ("orders-api", "kms_revoke", {}, "kms_keys."),
    ("queue-consumer", "queue_visibility", {"seconds": 1}, "event_source_mappings."),
    ("queue-consumer", "recursive_loop", {}, "environment.RESULTS_QUEUE_URL"),
]
KINDS = [
    "env_var_removed",
    "secret_scheduled_for_deletion",
    "queue_visibility",
    "ephemeral_storage",
    "kms_revoke",
    "noisy_neighbor",
    "recursive_loop",
]


@pytest.fixture
def workloads(clients, sample):
    orders, consumer = create_orders_api(clients), create_queue_consumer(clients)
    for name in (orders.function_name, consumer.function_name):
        record_baseline(clients, name)
    return orders, consumer


def injector(clients, function: str) -> FaultInjector:
    return FaultInjector.for_function(function, clients=clients)


def logged(clients, function: str) -> str:
    events = clients.get("logs").filter_log_events(logGroupName=f"/aws/lambda/{function}", interleaved=True)
    return "\n".join(e["message"] for e in events["events"])


def metric_total(clients, namespace: str, name: str, dims: dict[str, str]) -> float:
    from datetime import UTC, datetime, timedelta

    now = datetime.now(UTC)
    points = clients.get("cloudwatch").get_metric_statistics(
        Namespace=namespace,
        MetricName=name,
        Dimensions=[{"Name": k, "Value": v} for k, v in dims.items()],
        StartTime=now - timedelta(hours=1),
        EndTime=now + timedelta(minutes=10),
        Period=3600,
        Statistics=["Sum"],
    )["Datapoints"]
    return sum(p["Sum"] for p in points)


def test_every_kind_the_scenario_format_names_is_a_chaos_fault():
    from chaos.kinds import KINDS as REGISTRY
    from incident_responder.lab.scenario import Scenario

    for kind in KINDS:
        params = {"name": "X"} if kind == "env_var_removed" else {}
        params |= {"seconds": 1} if kind == "queue_visibility" else {}
        params |= {"mb": 512} if kind == "ephemeral_storage" else {}
        scenario = Scenario.model_validate({"name": "s", "faults": [{"kind": kind, **params}]})
        assert scenario.faults[0].kind in REGISTRY


def test_fault_drifts_is_idempotent_and_restores_exactly(clients, workloads, subtests):
    # One account for every case: each restores exactly, so the next starts from the baseline again.
    for function, kind, params, path in CASES:
        with subtests.test(f"{function}-{kind}"):
            before = read_function_configuration(clients, function)
            getattr(injector(clients, function), kind)(**params)
            after = read_function_configuration(clients, function)
            drifted = [d.path for d in diff_configurations(before, after)]
            assert any(p.startswith(path) for p in drifted), drifted
            getattr(injector(clients, function), kind)(**params)  # again: nothing more changes
            assert read_function_configuration(clients, function) == after
            injector(clients, function).restore()
            assert diff_configurations(before, read_function_configuration(clients, function)) == []


def test_env_var_removed_fails_at_init_as_the_python_runtime_prints_it(clients, workloads):
    injector(clients, "data-processor").env_var_removed("INPUT_BUCKET")
    burst = workload_for(clients, "data-processor").invoke(2, notify=False)
    assert {(i.status, i.error_type, i.error_message) for i in burst.invocations} == {
        ("failed", "KeyError", "'INPUT_BUCKET'")
    }
    lines = logged(clients, "data-processor")
    assert "[ERROR] KeyError: 'INPUT_BUCKET'\nTraceback (most recent call last):" in lines
    assert 'in <module>\n    BUCKET = os.environ["INPUT_BUCKET"]' in lines
    assert "env_var_removed" not in lines and "chaos" not in lines


def test_ephemeral_storage_below_what_it_writes_is_no_space_left(clients, workloads):
    injector(clients, "data-processor").ephemeral_storage(512)
    burst = workload_for(clients, "data-processor").invoke(2, notify=False)
    assert {i.error_type for i in burst.invocations} == {"OSError"}
    assert "[ERROR] OSError: [Errno 28] No space left on device" in logged(clients, "data-processor")
    injector(clients, "data-processor").restore()
    assert workload_for(clients, "data-processor").invoke(2, notify=False).healthy


def test_a_secret_scheduled_for_deletion_fails_get_secret_value(clients, workloads):
    orders, _ = workloads
    injector(clients, "orders-api").secret_scheduled_for_deletion()
    assert clients.get("secretsmanager").describe_secret(SecretId=orders.secret_arn).get("DeletedDate")
    burst = workload_for(clients, "orders-api").invoke(2, notify=False)
    assert {(i.error_type, i.error_message) for i in burst.invocations} == {
        (
            "InvalidRequestException",
            "You can't perform this operation on the secret because it was marked for deletion.",
        )
    }
    injector(clients, "orders-api").restore()
    assert not clients.get("secretsmanager").describe_secret(SecretId=orders.secret_arn).get("DeletedDate")


def test_kms_revoke_fails_every_invoke_in_the_service_and_logs_nothing(clients, workloads):
    orders, _ = workloads
    injector(clients, "orders-api").kms_revoke()
    key = clients.get("kms").describe_key(KeyId=orders.kms_key_id)["KeyMetadata"]
    assert key["KeyState"] == "Enabled"  # the key stays enabled: only its policy changed
    burst = workload_for(clients, "orders-api").invoke(2, notify=False)
    assert {i.error_type for i in burst.invocations} == {"KMSAccessDeniedException"}
    assert all(not i.logged for i in burst.invocations)
    message = burst.invocations[0].error_message
    assert message.startswith("Lambda was unable to decrypt the environment variables because KMS access was denied.")
    assert "kms:Decrypt" in message and orders.kms_key_arn in message
    assert logged(clients, "orders-api") == ""


def test_noisy_neighbor_throttles_a_function_without_a_reservation_with_its_settings_untouched(clients, workloads):
    lam = clients.get("lambda")
    lam.delete_function_concurrency(FunctionName="data-processor")
    record_baseline(clients, "data-processor")
    before = read_function_configuration(clients, "data-processor")
    lines = injector(clients, "data-processor").noisy_neighbor()
    assert "data-processor-neighbor" in lines[0]
    assert diff_configurations(before, read_function_configuration(clients, "data-processor")) == []
    burst = workload_for(clients, "data-processor").invoke(3, notify=False)
    assert {(i.status, i.error_type) for i in burst.invocations} == {("throttled", "TooManyRequestsException")}
    assert metric_total(clients, "AWS/Lambda", "Throttles", {"FunctionName": "data-processor"}) == 3
    # A function with its own reservation is not throttled by the neighbour.
    assert workload_for(clients, "orders-api").invoke(2, notify=False).healthy
    injector(clients, "data-processor").restore()
    assert workload_for(clients, "data-processor").invoke(2, notify=False).healthy
    with pytest.raises(lam.exceptions.ResourceNotFoundException):
        lam.get_function(FunctionName="data-processor-neighbor")


def test_queue_visibility_below_a_batch_redelivers_to_the_dead_letter_queue(clients, workloads):
    _, consumer = workloads
    injector(clients, "queue-consumer").queue_visibility(1)
    burst = workload_for(clients, "queue-consumer").invoke(2)
    assert burst.invocations and all(i.status == "succeeded" for i in burst.invocations)
    depth = clients.get("sqs").get_queue_attributes(
        QueueUrl=consumer.dead_letter_queue_url, AttributeNames=["ApproximateNumberOfMessages"]
    )["Attributes"]["ApproximateNumberOfMessages"]
    assert int(depth) == 20
    alarm = json.loads(json.dumps(burst.alert))
    assert alarm["AlarmName"] == "queue-consumer-dlq-depth"
    assert alarm["Trigger"]["MetricName"] == "ApproximateNumberOfMessagesVisible"


def test_recursive_loop_is_stopped_by_lambda_and_alarms_on_its_metric(clients, workloads):
    _, consumer = workloads
    injector(clients, "queue-consumer").recursive_loop()
    burst = workload_for(clients, "queue-consumer").invoke(2)
    assert all(i.status == "succeeded" for i in burst.invocations)
    assert metric_total(clients, "AWS/Lambda", "RecursiveInvocationsDropped", {"FunctionName": "queue-consumer"}) == 20
    assert burst.alert["AlarmName"] == "queue-consumer-recursive-loop"
    assert "Error" not in logged(clients, "queue-consumer")
