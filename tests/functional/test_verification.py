"""VERIFYING against the lab: applied actions checked against the baseline, health from a real invocation
burst of the sample workload (the lab's probe) or from CloudWatch metrics (the deployed probe).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from incident_responder.lab.workloads.data_processor import DataProcessor
from incident_responder.remediation.errors import InvalidVerificationInputError
from incident_responder.remediation.health import (
    HealthReport,
    burst_probe,
    cloudwatch_probe,
    health_probe,
    set_health_probe,
)
from incident_responder.remediation.remediate import ApplyResult
from tests.remediation_world import (
    applied,
    at_baseline,
    inject,
    lambda_context,
    module_account,
    new_incident,
    put_metrics,
    restore_actions,
    run_apply,
    run_verify,
)

APP_ERROR = "KeyError: 'order_id'"


account = module_account()


@pytest.fixture
def env(account, monkeypatch, tmp_path):
    yield at_baseline(account, monkeypatch, tmp_path)
    set_health_probe(None)


def lab_probe(app_error: str | None = None, invocations: int = 3):
    """The lab's probe: a real burst of the sample workload, each invocation's outcome reported."""
    return burst_probe(
        lambda clients, name: DataProcessor(clients, name).invoke(invocations, app_error=app_error).invocations,
        source="lab_burst",
    )


def test_restored_and_healthy_is_verified(env):
    clients = env.clients
    incident, actions, result = applied(
        clients,
        ("iam_revoke", {"target": "s3"}),
        ("throttle", {"reserved_concurrency": 0}),
        kinds=("iam", "concurrency"),
    )
    out = run_verify(clients, incident, actions, result, ["permission_loss", "throttling"], lab_probe())
    assert out.outcome == "VERIFIED" and out.needs_person == []
    assert [(c.execution_order, c.fault_type, c.configuration, c.health) for c in out.checks] == [
        (1, "permission_loss", "restored", "healthy"),
        (2, "throttling", "restored", "healthy"),
    ]
    assert out.summary == (
        "Verified: 2 applied action(s) (restore_iam_policy, update_concurrency) left the configuration at the "
        "baseline and data-processor is healthy (3 invocations, 0 errors, 0 throttles)."
    )
    assert set(out.model_dump(mode="json")) == {"outcome", "checks", "needs_person", "summary"}
    assert set(out.model_dump(mode="json")["checks"][0]) == {
        "execution_order",
        "fault_type",
        "action_type",
        "configuration",
        "health",
        "detail",
    }


def test_a_fault_back_again_is_not_fixed(env):
    clients = env.clients
    incident, actions, result = applied(clients, ("throttle", {"reserved_concurrency": 0}), kinds=("concurrency",))
    inject(clients, ("throttle", {"reserved_concurrency": 1}))  # someone, or the fault, puts it back
    out = run_verify(clients, incident, actions, result, ["throttling"], lab_probe())
    assert out.outcome == "NOT_FIXED"
    (check,) = out.checks
    assert (check.configuration, check.health) == ("differs", "unhealthy")
    assert "reserved_concurrency: baseline 10, now 1" in check.detail
    assert "2 of 3 invocations still show it (TooManyRequestsException)" in check.detail
    assert out.summary.startswith("Not fixed: step 1 update_concurrency left the configuration differing")


def test_configuration_restored_but_the_fault_still_seen_is_not_fixed(env):
    clients = env.clients
    inject(clients, ("network_block", {}))
    incident = new_incident()
    # Only the security group's egress is restored; the NACL deny is left in place.
    actions = [a for a in restore_actions(clients, "network") if a.parameters["security_group_id"]]
    result = run_apply(clients, incident, actions)
    out = run_verify(clients, incident, actions, result, ["network_block"], lab_probe())
    (check,) = out.checks
    assert (out.outcome, check.configuration, check.health) == ("NOT_FIXED", "restored", "unhealthy")
    assert "ConnectTimeoutError" in check.detail and "network_block is still seen" in out.summary


@pytest.mark.parametrize("diagnosed", [["permission_loss", "application_error"], ["permission_loss"]])
def test_an_application_bug_left_is_for_a_person_not_a_failed_fix(env, diagnosed):
    clients = env.clients
    incident, actions, result = applied(clients, ("iam_revoke", {"target": "s3"}), kinds=("iam",))
    out = run_verify(clients, incident, actions, result, diagnosed, lab_probe(app_error=APP_ERROR))
    assert out.outcome == "VERIFIED"
    (check,) = out.checks
    assert (check.configuration, check.health) == ("restored", "healthy")
    (person,) = out.needs_person
    assert person.fault_type == "application_error" and "3 invocation(s) still fail" in person.detail
    assert "KeyError" in person.detail
    assert out.summary.endswith("; a person is needed for application_error.")


def test_what_was_diagnosed_but_not_actioned_and_other_faults_seen_go_to_a_person(env):
    clients = env.clients
    incident, actions, result = applied(
        clients, ("throttle", {"reserved_concurrency": 0}), ("timeout", {"seconds": 1}), kinds=("concurrency",)
    )
    out = run_verify(clients, incident, actions, result, ["throttling", "unknown"], lab_probe())
    assert out.outcome == "VERIFIED"
    assert [(n.fault_type, n.detail) for n in out.needs_person] == [
        ("unknown", "diagnosed, but no action was applied for it"),
        ("timeout", "3 invocation(s) show it, but it was not diagnosed"),
    ]


# -- the deployed probe: AWS/Lambda metrics since the apply ---------------------------------------------


def test_the_cloudwatch_probe_counts_only_whole_minutes_after_the_apply(env):
    clients = env.clients
    fn = env.sample.function_name
    # Two hours back, read as of 10 minutes after the change: out of the way of the lab's own traffic.
    since = (datetime.now(UTC) - timedelta(hours=2)).replace(second=30, microsecond=0)
    now = since + timedelta(minutes=10)
    put_metrics(clients, fn, since - timedelta(minutes=2), Invocations=9, Errors=9)  # before the fix
    put_metrics(clients, fn, since + timedelta(seconds=10), Invocations=4, Errors=4)  # same minute: not counted
    put_metrics(clients, fn, since + timedelta(minutes=2), Invocations=5, Errors=1, Throttles=2)
    put_metrics(clients, fn, since + timedelta(minutes=4), Invocations=3)
    put_metrics(clients, fn, since + timedelta(minutes=9), Invocations=7, Errors=7)  # not yet fully reported
    report = cloudwatch_probe(clients, fn, since, now=now)
    assert (report.source, report.invocations, report.errors, report.throttles) == ("cloudwatch_metrics", 8, 1, 2)
    assert report.samples is None and report.pending_until is None
    # Each whole minute from the first after the change to the last Lambda has finished reporting (timeout + 1 min).
    lag = timedelta(seconds=clients.get("lambda").get_function_configuration(FunctionName=fn)["Timeout"] + 60)
    first = since.replace(second=0) + timedelta(minutes=1)
    assert [p.start for p in report.periods] == [
        first + timedelta(minutes=i) for i in range(((now - lag).replace(second=0) - first) // timedelta(minutes=1))
    ]
    assert [(p.invocations, p.errors) for p in report.periods[:4]] == [(0, 0), (5, 1), (0, 0), (3, 0)]
    quiet = cloudwatch_probe(clients, fn, since - timedelta(minutes=40), now=since - timedelta(minutes=20))
    assert quiet.no_traffic and quiet.pending_until is None  # whole minutes reported, no datapoint: no traffic
    early = cloudwatch_probe(clients, fn, since, now=since + timedelta(minutes=1))
    assert early.no_traffic and early.pending_until == first + timedelta(minutes=1) + lag  # not yet known


def test_verification_from_metrics_alone(env):
    clients = env.clients
    incident, actions, result = applied(
        clients, ("throttle", {"reserved_concurrency": 0}), ("timeout", {"seconds": 1}), kinds=("concurrency", "config")
    )
    faults = ["throttling", "timeout"]

    def report(**figures) -> HealthReport:
        return HealthReport(source="cloudwatch_metrics", **figures)

    out = run_verify(clients, incident, actions, result, faults, report())
    assert out.outcome == "VERIFIED" and {c.health for c in out.checks} == {"no_traffic"}
    assert "had no traffic to judge" in out.summary
    out = run_verify(clients, incident, actions, result, faults, report(invocations=5, throttles=2))
    assert out.outcome == "NOT_FIXED" and [c.health for c in out.checks] == ["unhealthy", "healthy"]
    out = run_verify(clients, incident, actions, result, faults, report(invocations=5, errors=5))
    assert out.outcome == "NOT_FIXED" and [c.health for c in out.checks] == ["healthy", "unhealthy"]
    # Metrics cannot tell errors apart: with an application error diagnosed they are taken for it.
    out = run_verify(
        clients, incident, actions, result, [*faults, "application_error"], report(invocations=5, errors=5)
    )
    assert out.outcome == "VERIFIED" and [n.fault_type for n in out.needs_person] == ["application_error"]


# -- the handler and the lab's probe seam ----------------------------------------------------------------
@pytest.mark.filterwarnings("ignore:No application metrics to publish")
def test_the_verify_handler_uses_the_probe_the_lab_sets(env, monkeypatch, capsys):
    from handlers import verify as handler_module

    monkeypatch.setenv("BASELINE_TABLE", "incident-baselines")
    clients = env.clients
    incident, actions, result = applied(clients, ("memory", {"mb": 128}), kinds=("config",))
    assert health_probe() is cloudwatch_probe
    set_health_probe(lab_probe())
    event = {
        "incident": incident.model_dump(mode="json"),
        "actions": [a.model_dump(mode="json") for a in actions],
        "remediation": result.model_dump(mode="json"),
        "fault_types": ["memory_exhaustion"],
    }
    out = handler_module.handler(event, lambda_context("verify"))
    assert out["outcome"] == "VERIFIED" and out["checks"][0]["health"] == "healthy"
    assert "(3 invocations, 0 errors, 0 throttles)" in out["summary"]
    assert any('"Verified"' in line for line in capsys.readouterr().out.splitlines())
    failed = ApplyResult(outcome="FAILED", failed_step=1, error="x", finished_at=result.finished_at)
    for bad in (
        {**event, "remediation": failed.model_dump(mode="json")},
        {key: value for key, value in event.items() if key != "remediation"},
        {**event, "fault_types": ["gremlins"]},
        {**event, "actions": [{"action_type": "nope"}]},
    ):
        with pytest.raises(InvalidVerificationInputError):
            handler_module.handler(bad, lambda_context("verify"))
