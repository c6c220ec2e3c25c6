"""Safe when incidents overlap: a property test (hypothesis) against the lab.

Each example breaks two functions that share one execution role (data-processor and report-builder: the role's
policy, each one's reservation, data-processor's timeout), opens two or three incidents on them with the restores
the remediation lookups offer, and runs an interleaving of what their executions and the world may do: apply (or
its retry after a crashed worker), verify (REMEDIATED, resources freed) or fail to verify (rolled back), a lease's
time running out, an execution stopped or crashed (reconcile hands its change over), an operator's `responder
rollback` of a stopped one, and the fault coming back. Executions are ids here whose liveness the example decides
(the real DescribeExecution check is in test_remediate.py). After each example, as the issue asks:

- no verified change of one incident is undone by another;
- every change in the account is in a ledger, with its prior and its fencing token;
- every unverified change left behind has an operator alarm;
- no lease is held by an ended execution.

``OVERLAP_EXAMPLES`` sets the number of examples (8 under `make test`, 60 under `make corpus`; 200 were run while
building it).
"""

from __future__ import annotations

import contextlib
import json
import os
import uuid
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import event as hypothesis_event
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from incident_responder.actions.concurrency import get_concurrency_restore_info
from incident_responder.actions.function_configuration import get_function_config_restore_info
from incident_responder.actions.iam import get_iam_restore_info
from incident_responder.actions.registry import CHANGES
from incident_responder.core.contracts import Incident, ProposalSubmission
from incident_responder.core.encoding import canonical
from incident_responder.remediation import lease as leases
from incident_responder.remediation import remediate
from incident_responder.remediation.errors import ResourceLeaseHeldError
from incident_responder.remediation.handover import hand_over
from incident_responder.remediation.ledger import Ledger
from incident_responder.state import keys
from tests.properties import lab_property
from tests.remediation_world import (
    FN,
    ROLE,
    TABLE,
    free_functions,
    lab_account,
    restore_baseline,
    run_apply,
    twin_function,
)


def event(text: str) -> None:
    """What happened, in the statistics of a property run (``--hypothesis-show-statistics``); nothing outside one."""
    with contextlib.suppress(InvalidArgument):
        hypothesis_event(text)


EXAMPLES = int(os.environ.get("OVERLAP_EXAMPLES", "8"))  # make test; make corpus draws 60
FAULTS = ("role", "throttle", "throttle_twin", "timeout")


@pytest.fixture(scope="module")
def world(lab, _lab_clients, tmp_path_factory):
    with lab_account(lab, _lab_clients, tmp_path_factory.mktemp("chaos")) as ready:
        twin = twin_function(ready.clients, reserved_concurrency=5)
        yield SimpleNamespace(**vars(ready), twin=twin)


# -- the world's resources, as values that compare ------------------------------------------------------
def values(world) -> dict[str, Any]:
    lam, iam = world.clients.get("lambda"), world.clients.get("iam")
    out: dict[str, Any] = {}
    out[f"role:{ROLE}"] = canonical(
        {
            n: iam.get_role_policy(RoleName=ROLE, PolicyName=n)["PolicyDocument"]
            for n in iam.list_role_policies(RoleName=ROLE)["PolicyNames"]
        }
    )
    for fn in (FN, world.twin):
        config = lam.get_function_configuration(FunctionName=fn)
        reserved = lam.get_function_concurrency(FunctionName=fn).get("ReservedConcurrentExecutions")
        out[f"function:{fn}"] = (reserved, config["Timeout"], config["MemorySize"])
    return out


def break_(world, fault: str) -> None:
    lam, iam = world.clients.get("lambda"), world.clients.get("iam")
    if fault == "role":
        if "s3-access" in iam.list_role_policies(RoleName=ROLE)["PolicyNames"]:
            iam.delete_role_policy(RoleName=ROLE, PolicyName="s3-access")
    elif fault == "throttle":
        lam.put_function_concurrency(FunctionName=FN, ReservedConcurrentExecutions=0)
    elif fault == "throttle_twin":
        lam.put_function_concurrency(FunctionName=world.twin, ReservedConcurrentExecutions=0)
    else:
        lam.update_function_configuration(FunctionName=FN, Timeout=1)


def restores(world, fn: str) -> list:
    """What the remediation server offers for ``fn`` now, numbered as a proposal."""
    offered = [
        a
        for lookup in (get_iam_restore_info, get_concurrency_restore_info, get_function_config_restore_info)
        for a in lookup(world.clients, fn).actions
    ]
    return ProposalSubmission(actions=offered).to_proposal("p").actions if offered else []


# -- the examples ---------------------------------------------------------------------------------------
@st.composite
def example(draw):
    """Faults, two or three incidents each with its own course (apply, perhaps its lease's time running out and a
    retried apply, then verified, not fixed, or stopped and perhaps rolled back by an operator), and one
    interleaving of those courses with the faults coming back."""
    faults = draw(st.lists(st.sampled_from(FAULTS), min_size=1, max_size=4, unique=True))
    functions = draw(st.lists(st.sampled_from([FN, "twin"]), min_size=2, max_size=3))
    courses = []
    for _ in functions:
        course = ["apply"] + draw(st.sampled_from([[], ["lapse"], ["lapse", "apply"], ["apply"]]))
        course += draw(
            st.sampled_from([["verify"], ["verify"], ["not_fixed"], ["stop"], ["stop", "operator_rollback"]])
        )
        courses.append(course)
    world_events = draw(st.lists(st.sampled_from(FAULTS), max_size=3))
    queues = [list(c) for c in courses] + [[("recur", f) for f in world_events]]
    ops = []
    picks = draw(st.lists(st.integers(0, len(queues) - 1), min_size=sum(map(len, queues)), max_size=40))
    for pick in picks + [q for q in range(len(queues)) for _ in queues[q]]:
        if queues[pick]:
            step = queues[pick].pop(0)
            ops.append(step if isinstance(step, tuple) else (step, pick, faults[0]))
    return SimpleNamespace(faults=faults, functions=functions, ops=[o if len(o) == 3 else (o[0], 0, o[1]) for o in ops])


class Harness:
    """The incidents of one example, what each did, and the invariants checked as it goes."""

    def __init__(self, world, functions: list[str], running: set[str]):
        self.world, self.clients, self.running = world, world.clients, running
        self.incidents: list[SimpleNamespace] = []
        self.verified: dict[str, tuple[str, Any]] = {}  # resource -> (incident, value) while it stands
        for fn in functions:
            fn = world.twin if fn == "twin" else fn
            incident = Incident(
                incident_id=f"inc-{uuid.uuid4().hex[:12]}",
                function_name=fn,
                source="alert",
                detected_at=datetime.now(UTC).isoformat(timespec="seconds"),
            )
            execution = f"arn:aws:states:us-east-1:123456789012:execution:lifecycle:{incident.incident_id}"
            running.add(execution)
            self.incidents.append(
                SimpleNamespace(
                    incident=incident,
                    execution=execution,
                    actions=restores(world, fn),
                    state="new",  # new, applied, remediated, rolled_back, ended
                    alarmed=False,
                )
            )

    def resources(self, one) -> list[str]:
        return remediate.resources_of(one.actions)

    def run(self, op: str, index: int, fault: str) -> None:
        one = self.incidents[index]
        live = one.execution in self.running
        if op == "recur":
            before = values(self.world)
            break_(self.world, fault)
            self._forget_changed(before)
        elif op == "apply" and live and one.state in ("new", "applied") and one.actions:
            before = values(self.world)
            try:
                result = run_apply(self.clients, one.incident, one.actions, execution_arn=one.execution)
            except ResourceLeaseHeldError:
                event("apply waited: a resource was held")
                return
            self._forget_changed(before)
            one.state = "applied" if result.outcome == "APPLIED" else "failed"
            event(f"apply {result.outcome}: {sorted({s.status for s in result.steps})}")
        elif op == "verify" and live and one.state == "applied":
            if all(self._holds(a) for a in one.actions):
                remediate.release(self.clients, table=TABLE, incident=one.incident)
                now = values(self.world)
                for resource in self.resources(one):
                    self.verified[resource] = (one.incident.incident_id, now[resource])
                one.state = "remediated"
                self.running.discard(one.execution)
            else:
                self._rollback(one, "NOT_FIXED")
        elif op == "not_fixed" and live and one.state in ("applied", "failed"):
            self._rollback(one, "NOT_FIXED")
        elif op == "lapse" and live:
            for resource in self.resources(one):
                item = self.clients.get("dynamodb").get_item(TableName=TABLE, Key=leases.lease_key(resource))
                if item.get("Item", {}).get("holder", {}).get("S") == one.incident.incident_id:
                    self.clients.get("dynamodb").update_item(
                        TableName=TABLE,
                        Key=leases.lease_key(resource),
                        UpdateExpression="SET lease_until = :past",
                        ExpressionAttributeValues={":past": {"N": "1"}},
                    )
        elif op == "stop" and live:
            self.end(one, "ABORTED")
        elif op == "operator_rollback" and not live and one.state == "ended":
            self._rollback(one, "an operator's responder rollback")

    def end(self, one, how: str) -> None:
        """The execution ends (stopped, timed out, its worker crashed past its retries): reconcile hands over."""
        self.running.discard(one.execution)
        acting = one.state in ("applied", "failed")
        done = hand_over(
            self.clients,
            table=TABLE,
            incident_id=one.incident.incident_id,
            function_name=one.incident.function_name,
            reason=f"execution {how.lower()}",
            alarm=acting,
            topic_arn=self.world.topic,
        )
        one.alarmed = one.alarmed or done.alarmed
        one.state = "ended"

    def _rollback(self, one, reason: str) -> None:
        before = values(self.world)
        undo = remediate.rollback(
            self.clients,
            table=TABLE,
            incident=one.incident,
            reason=reason,
            execution_arn=one.execution if one.execution in self.running else None,
        )
        after = values(self.world)
        # 1. No verified change of one incident is undone by another.
        for resource, (by, _) in self.verified.items():
            if by != one.incident.incident_id and before[resource] != after[resource]:
                raise AssertionError(f"{one.incident.incident_id}'s rollback undid {by}'s verified {resource}")
        self._forget_changed(before, after)
        if undo.outcome == "ROLLBACK_FAILED":
            one.alarmed = True  # REMEDIATION_FAILED: the state machine alarms the operators
            event("rollback refused or failed: " + ("fenced" if "fenced" in (undo.error or "") else "other"))
        if one.execution in self.running:
            self.running.discard(one.execution)
            one.state = "rolled_back"

    def _holds(self, action) -> bool:
        change = CHANGES[action.action_type]
        params = action.typed_parameters()
        return change.satisfied(params, change.capture(self.clients, params))

    def _forget_changed(self, before: dict[str, Any], after: dict[str, Any] | None = None) -> None:
        """A verified state is over once something else changes that resource (the fault again, another fix)."""
        after = after or values(self.world)
        for resource in [r for r in self.verified if before[r] != after[r]]:
            del self.verified[resource]


def ledger_entries(clients, incident_id: str) -> list:
    return Ledger(clients, TABLE, incident_id).entries()


@lab_property(EXAMPLES)
@given(data=st.data())
def test_overlapping_incidents_never_undo_each_others_verified_fixes(world, data, monkeypatch):
    run_example(world, data.draw(example(), label="example"), monkeypatch)


# The interleavings that did harm before leases per resource and fencing tokens, always run.
A, B = 0, 1
KNOWN = {
    # A's execution ends (its lease passes on), the fault comes back, B fixes it the same way and verifies, then an
    # operator rolls A back: A's compare-and-swap passes (the live value is the one A set too).
    "lapsed-lease": (
        [FN, FN],
        ["throttle"],
        [("apply", A), ("lapse", A), ("stop", A), ("recur", A), ("apply", B), ("verify", B), ("operator_rollback", A)],
    ),
    # Two functions sharing one role: B restores the role while A holds it; A's rollback would take B's fix back.
    "shared-role": (
        [FN, "twin"],
        ["role"],
        [("apply", A), ("recur", A), ("apply", B), ("not_fixed", A), ("apply", B), ("verify", B)],
    ),
    # A second incident on a fault the first partly fixed: its first step already restored, the rest proceed.
    "partly-fixed": (
        [FN, FN],
        ["throttle", "timeout"],
        [("apply", A), ("verify", A), ("recur", A), ("apply", B), ("verify", B)],
    ),
}


@pytest.mark.parametrize("name", sorted(KNOWN))
def test_the_interleavings_that_did_harm_do_none(world, monkeypatch, name):
    functions, faults, ops = KNOWN[name]
    fault = faults[0] if name != "partly-fixed" else "timeout"
    run_example(
        world, SimpleNamespace(faults=faults, functions=functions, ops=[(o, i, fault) for o, i in ops]), monkeypatch
    )


def run_example(world, chosen, monkeypatch) -> Harness:
    """Run one example and check the four invariants after it."""
    clients = world.clients
    restore_baseline(clients, world.baseline, record=False)
    clients.get("lambda").put_function_concurrency(FunctionName=world.twin, ReservedConcurrentExecutions=5)
    free_functions(clients)
    running: set[str] = set()
    monkeypatch.setattr(leases, "execution_running", lambda clients, arn: arn in running)
    world.topic = clients.get("sns").create_topic(Name="operator-notifications")["TopicArn"]
    for fault in chosen.faults:
        break_(world, fault)
    faulted = values(world)
    harness = Harness(world, chosen.functions, running)
    for op, index, fault in chosen.ops:
        harness.run(op, index, fault)
        if op == "recur":
            faulted.update(values(world))  # what the world itself set is no one's change
    for one in harness.incidents:  # every execution ends: the rest stop or time out
        if one.execution in running:
            harness.end(one, "TIMED_OUT")

    entries = {o.incident.incident_id: ledger_entries(clients, o.incident.incident_id) for o in harness.incidents}
    # 2. Every change in the account is in a ledger, with its prior and its fencing token.
    now = values(world)
    ledgered = {
        r
        for listed in entries.values()
        for e in listed
        if e.progress != "failed"
        for r in CHANGES[e.action.action_type].resources(e.action.typed_parameters())
    }
    for resource, value in now.items():
        if value != faulted[resource]:
            assert resource in ledgered, f"{resource} changed with no ledger entry for it"
    for listed in entries.values():
        for e in listed:
            assert e.prior, e
            wanted = set(CHANGES[e.action.action_type].resources(e.action.typed_parameters()))
            assert set(e.fences) == wanted and all(t >= 1 for t in e.fences.values()), e
    # 3. Every unverified change left behind has an operator alarm.
    for one in harness.incidents:
        left = [e for e in entries[one.incident.incident_id] if e.progress in ("recorded", "applied", "undo_failed")]
        if left and one.state != "remediated":
            assert one.alarmed, f"{one.incident.incident_id} left {[e.execution_order for e in left]} unalarmed"
    # 4. No lease is held by an ended execution (and every execution has ended).
    ddb = clients.get("dynamodb")
    for page in ddb.get_paginator("scan").paginate(TableName=TABLE):
        for item in page["Items"]:
            if item["incident_id"]["S"].startswith(keys.LEASE_PREFIX):
                assert "holder" not in item, json.dumps(item)
    event(f"ended: {sorted(o.state for o in harness.incidents)}")
    return harness
