"""VERIFYING from CloudWatch metrics (the deployed probe) against the lab's CloudWatch: only whole minutes after
the change that Lambda has finished reporting are judged; before that the health is not yet known; one error in
the first minute after an IAM change (IAM is eventually consistent) is not a failed fix.

Each test writes its datapoints hours in the past, under its own hour, and reads them at a frozen "now", so
that the lab's own traffic in other tests never falls in its window.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from incident_responder.remediation import health
from incident_responder.remediation.errors import HealthNotYetKnownError
from incident_responder.remediation.health import set_health_probe
from incident_responder.remediation.verify import verify
from tests.remediation_world import (
    FN,
    applied,
    at_baseline,
    module_account,
    put_metrics,
)

IAM_FAULTS = (("iam_revoke", {"target": "s3"}),)


account = module_account()


@pytest.fixture
def env(account, monkeypatch, tmp_path):
    yield at_baseline(account, monkeypatch, tmp_path)
    set_health_probe(None)


def frozen_at(monkeypatch, now: datetime) -> None:
    """CloudWatch read as it is at ``now`` (the probe's clock)."""

    class Frozen(datetime):
        @classmethod
        def now(cls, tz=None):  # type: ignore[override]
            return now if tz else now.replace(tzinfo=None)

    monkeypatch.setattr(health, "datetime", Frozen)


def minute(hours_ago: int) -> datetime:
    """A whole minute ``hours_ago`` hours back: the test's own stretch of the function's metrics."""
    return (datetime.now(UTC) - timedelta(hours=hours_ago)).replace(second=0, microsecond=0)


def verify_at(clients, monkeypatch, *, since: datetime, now: datetime, faults, kinds, diagnosed):
    incident, actions, result = applied(clients, *faults, kinds=kinds)
    frozen_at(monkeypatch, now)
    remediation = result.model_copy(update={"finished_at": since.isoformat().replace("+00:00", "Z")})
    return verify(
        clients,
        incident=incident,
        actions=actions,
        remediation=remediation.model_dump(mode="json"),
        fault_types=diagnosed,
    )


def test_a_partial_first_minute_is_not_judged(env, monkeypatch):
    """Metric lag: ten seconds after the first whole minute ended, only its first invocation (still failing while
    the restored grant propagated) has been reported. The fix is not judged on that."""
    m = minute(3)
    since = m + timedelta(seconds=5)
    put_metrics(env.clients, FN, m + timedelta(minutes=1, seconds=2), Invocations=1, Errors=1)
    with pytest.raises(HealthNotYetKnownError, match="not yet known"):
        verify_at(
            env.clients,
            monkeypatch,
            since=since,
            now=m + timedelta(minutes=2, seconds=10),
            faults=IAM_FAULTS,
            kinds=("iam",),
            diagnosed=["permission_loss"],
        )


def test_no_whole_minute_since_the_change_is_not_yet_known(env, monkeypatch):
    m = minute(4)
    with pytest.raises(HealthNotYetKnownError):
        verify_at(
            env.clients,
            monkeypatch,
            since=m + timedelta(seconds=5),
            now=m + timedelta(minutes=1, seconds=30),
            faults=IAM_FAULTS,
            kinds=("iam",),
            diagnosed=["permission_loss"],
        )


@pytest.mark.parametrize(
    ("hours_ago", "first", "later", "outcome"),
    [
        (5, {"Invocations": 10, "Errors": 1}, {"Invocations": 10}, "VERIFIED"),  # one error while IAM propagated
        (6, {"Invocations": 10, "Errors": 2}, {"Invocations": 10}, "NOT_FIXED"),  # more than the bound
        (7, {"Invocations": 1, "Errors": 1}, {"Invocations": 10}, "NOT_FIXED"),  # nothing succeeded in it
        (8, {"Invocations": 10}, {"Invocations": 10, "Errors": 1}, "NOT_FIXED"),  # an error after the first minute
    ],
)
def test_one_error_in_the_first_minute_after_an_iam_restore_is_tolerated(
    env, monkeypatch, hours_ago, first, later, outcome
):
    m = minute(hours_ago)
    put_metrics(env.clients, FN, m + timedelta(minutes=1, seconds=3), **first)
    for k in (2, 3):
        put_metrics(env.clients, FN, m + timedelta(minutes=k, seconds=3), **later)
    out = verify_at(
        env.clients,
        monkeypatch,
        since=m + timedelta(seconds=5),
        now=m + timedelta(minutes=10),
        faults=IAM_FAULTS,
        kinds=("iam",),
        diagnosed=["permission_loss"],
    )
    assert out.outcome == outcome, out.summary
    if outcome == "VERIFIED":
        assert "1 error in the first minute after the IAM change" in out.checks[0].detail


def test_an_error_in_the_first_minute_after_another_change_still_counts(env, monkeypatch):
    m = minute(9)
    put_metrics(env.clients, FN, m + timedelta(minutes=1, seconds=3), Invocations=10, Errors=1)
    put_metrics(env.clients, FN, m + timedelta(minutes=2, seconds=3), Invocations=10)
    out = verify_at(
        env.clients,
        monkeypatch,
        since=m + timedelta(seconds=5),
        now=m + timedelta(minutes=10),
        faults=(("memory", {"mb": 128}),),
        kinds=("config",),
        diagnosed=["memory_exhaustion"],
    )
    assert out.outcome == "NOT_FIXED"


def test_a_wait_for_the_first_whole_minute_within_the_invocation_spares_a_retry(env, monkeypatch):
    m = minute(10)
    put_metrics(env.clients, FN, m + timedelta(minutes=1, seconds=3), Invocations=10)
    waited: list[datetime] = []

    def wait(until: datetime) -> bool:  # as waiting_within would: sleeps until then (here: the clock moves)
        waited.append(until)
        frozen_at(monkeypatch, until)
        return True

    incident, actions, result = applied(env.clients, *IAM_FAULTS, kinds=("iam",))
    frozen_at(monkeypatch, m + timedelta(minutes=1, seconds=30))
    out = verify(
        env.clients,
        incident=incident,
        actions=actions,
        remediation=result.model_copy(update={"finished_at": f"{m + timedelta(seconds=5):%Y-%m-%dT%H:%M:%S}Z"}),
        fault_types=["permission_loss"],
        wait=wait,
    )
    lag = health.reporting_lag(env.clients, FN)
    assert waited == [m + timedelta(minutes=2) + lag]
    assert out.outcome == "VERIFIED" and "(10 invocations, 0 errors, 0 throttles)" in out.summary


def test_waiting_within_a_lambda_invocation_never_outlives_it():
    soon = datetime.now(UTC) + timedelta(milliseconds=50)
    assert health.waiting_within(60_000)(soon) is True and datetime.now(UTC) >= soon
    assert health.waiting_within(60_000)(datetime.now(UTC) + timedelta(seconds=55)) is False  # 10 s kept back


# -- the deployed verify handler with the deployed probe, on the lab's metrics -----------------------------------
@pytest.mark.filterwarnings("ignore:No application metrics to publish")
@pytest.mark.parametrize(
    ("faults", "kinds", "diagnosed", "after", "outcome", "ahead"),
    [
        (IAM_FAULTS, ("iam",), ["permission_loss"], None, "VERIFIED", 0),
        # The fault comes back before the traffic: the lab's workload is throttled, its metrics say so. (Judged a few
        # minutes on, so that the case before, whose traffic is in the minute after now, is not in its window.)
        ((("throttle", {"reserved_concurrency": 0}),), ("concurrency",), ["throttling"], 0, "NOT_FIXED", 5),
    ],
)
def test_the_verify_handler_judges_the_lab_workloads_metrics(
    env, monkeypatch, faults, kinds, diagnosed, after, outcome, ahead
):
    from handlers import verify as handler_module
    from incident_responder.lab.pipeline.incident import metric_verification_probe
    from tests.remediation_world import inject, lambda_context

    monkeypatch.setenv("BASELINE_TABLE", "incident-baselines")
    incident, actions, result = applied(env.clients, *faults, kinds=kinds)
    if after is not None:
        inject(env.clients, ("throttle", {"reserved_concurrency": after}))
    set_health_probe(metric_verification_probe())
    finished = datetime.fromisoformat(result.finished_at.replace("Z", "+00:00")) + timedelta(minutes=ahead)
    event = {
        "incident": incident.model_dump(mode="json"),
        "actions": [a.model_dump(mode="json") for a in actions],
        "remediation": {**result.model_dump(mode="json"), "finished_at": finished.isoformat()},
        "fault_types": diagnosed,
    }
    out = handler_module.handler(event, lambda_context("verify"))
    assert out["outcome"] == outcome, out["summary"]
    if outcome == "VERIFIED":
        assert "(3 invocations, 0 errors, 0 throttles)" in out["summary"]
    else:
        assert "(0 invocations, 0 errors, 3 throttles)" in out["summary"]
