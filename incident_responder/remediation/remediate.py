"""REMEDIATING and ROLLING_BACK: apply approved actions, recording how to undo each; undo them.

:func:`apply` runs only actions a person (or the approval policy) approved: their digest must be the
event's and the approval's, and the decision "approve". Before each action it records the exact prior
state the action is about to change in the undo ledger (``remediation#<incident_id>#<execution_order>``
in the incident-state table, written once, conditionally), then applies it. Actions run in
``execution_order`` and the first failure stops the rest: the result says FAILED with the step and the
AWS error, and the state machine rolls back. Guardrails run again on each action before it changes
anything (defence in depth: the account may have moved since the proposal).

A retried task (Step Functions retries the Lambda) repeats nothing: a step already ``applied`` is
skipped; a step ``recorded`` (its change may or may not have happened) is applied again, which every
action here tolerates, and its prior state is never overwritten with the post-apply one. An alias, a
key, an event source mapping, a secret or a queue already in the state the action wants is not written
again; a mapping Lambda is still moving (Enabling, Disabling, Updating) is waited for, as Lambda refuses
updates then, and is recorded as the state it is moving to. A restored secret's undo schedules its
deletion again (Secrets Manager has no other way back), with the recovery window recorded when
DescribeSecret tells it and its minimum of 7 days otherwise; its ledger entry says which.

:func:`apply` first takes the lease of every resource the actions change, in one fixed order
(:mod:`incident_responder.remediation.lease`): while another live incident holds one, it raises
``ResourceLeaseHeldError`` before writing anything, and the state machine waits. Every write checks its
fencing token just before it. A step whose resource is already in the state it sets (another incident or a
person fixed it) is ``already_restored``: nothing written, nothing to undo, and the rest proceed. After each
step it reads back what the step left (``after``); a step the API refused, with the live state still its prior,
is ``failed``: nothing to undo.

:func:`rollback` reads the ledger and, newest first, puts back the recorded prior state of each step this
incident applied, only while the resource's fence is still the step's token (nobody leased it since) and the
live state is still what the step left (compare-and-swap): whatever changed since (another incident's fix, a
person) is left as it is and the rollback fails, so operators are alarmed. It reads the live state again after
each undo and checks it equals the prior state, and frees the resources at the end (:func:`release` frees them
after a verified fix). One failure does not stop the others. A ledger head item (``remediation#<incident_id>``)
lists the steps and the resources, so a rollback finds them without a scan. No ledger item has a ``status``
attribute: the sweep scans that attribute for incidents.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from pydantic import ValidationError

from incident_responder.account.baseline import load_baseline
from incident_responder.account.errors import AWS_ERRORS, describe_error
from incident_responder.account.state import read_function_configuration
from incident_responder.actions.change import _Change, _now
from incident_responder.actions.registry import ACTIONS, sections_for
from incident_responder.core.aws import AwsClients
from incident_responder.core.contracts import (
    ApprovalDecision,
    Incident,
    RemediationAction,
    actions_digest,
    incident_from_event,
)
from incident_responder.core.encoding import canonical, iso
from incident_responder.core.members import member_of
from incident_responder.guardrails.checks import check_action
from incident_responder.remediation import lease as leases
from incident_responder.remediation.errors import (
    ApprovalMismatchError,
    InvalidRemediationInputError,
    LedgerConflictError,
)
from incident_responder.remediation.ledger import Ledger, LedgerEntry
from incident_responder.remediation.results import ApplyOutcome, ApplyResult, RollbackResult, UndoOutcome

__all__ = ["ApplyOutcome", "ApplyResult", "RollbackResult", "UndoOutcome", "apply", "release", "rollback"]


def _incident(incident: Incident | dict[str, Any]) -> Incident:
    return incident if isinstance(incident, Incident) else incident_from_event({"incident": incident})


def parse_actions(actions: Any) -> list[RemediationAction]:
    """Validated actions in execution order; malformed ones are an input error, never a KeyError."""
    if not isinstance(actions, list):
        raise InvalidRemediationInputError("actions must be a list of remediation actions")
    try:
        parsed = [a if isinstance(a, RemediationAction) else RemediationAction.model_validate(a) for a in actions]
    except ValidationError as exc:
        raise InvalidRemediationInputError(f"not remediation actions: {exc.errors()[:3]}") from exc
    orders = [a.execution_order for a in parsed]
    if any(o < 1 for o in orders) or len(set(orders)) != len(orders):
        raise InvalidRemediationInputError(f"execution_order must be unique and 1 or more, got {orders}")
    return sorted(parsed, key=lambda a: a.execution_order)


def _approval(approval: Any) -> ApprovalDecision:
    if approval is None:
        raise ApprovalMismatchError("no approval was given for these actions")
    try:
        return approval if isinstance(approval, ApprovalDecision) else ApprovalDecision.model_validate(approval)
    except ValidationError as exc:
        raise InvalidRemediationInputError(f"not an approval decision: {exc.errors()[:3]}") from exc


def check_approval(actions: list[RemediationAction], digest: str | None, approval: ApprovalDecision) -> str:
    """The digest of ``actions`` when the event's digest and the approval both match it; else raise."""
    computed = actions_digest(actions)
    if approval.decision != "approve":
        raise ApprovalMismatchError(f"the decision was {approval.decision!r}, not approve")
    if digest != computed:
        raise ApprovalMismatchError(f"the actions' digest {computed} is not the event's actions_digest {digest}")
    if approval.actions_digest != computed:
        raise ApprovalMismatchError(
            f"the actions' digest {computed} is not the approved digest {approval.actions_digest}"
        )
    return computed


# -- apply ------------------------------------------------------------------------------------------
def _outcome(action: RemediationAction, status: str, detail: str = "", error: str | None = None) -> ApplyOutcome:
    return ApplyOutcome(
        execution_order=action.execution_order,
        action_type=action.action_type.value,
        target_resource=action.target_resource,
        status=status,
        detail=detail,
        error=error,
    )


def _read_after(change: _Change, clients: AwsClients, params: Any) -> dict[str, Any] | None:
    """What a step left, read back at once: a rollback undoes it only while the live state still is this."""
    try:
        return change.capture(clients, params)
    except AWS_ERRORS:
        return None  # unknown: a rollback then leaves the resource alone unless it is at its prior state


def _note_failure(
    ledger: Ledger, change: _Change, clients: AwsClients, params: Any, entry: LedgerEntry, error: str
) -> None:
    """A failed step changed nothing if the live state is still its prior; else it left something to undo."""
    after = _read_after(change, clients, params)
    if after is not None and canonical(change.comparable(after)) == canonical(change.comparable(entry.prior)):
        ledger.mark(entry.execution_order, "failed", error=error)
    else:
        ledger.note_error(entry.execution_order, error, after)


def _refuse_another_ledger(
    incident: Incident, actions: list[RemediationAction], entries: dict[int, LedgerEntry | None]
) -> None:
    """A step already rolled back, or recorded for another action, is a :class:`LedgerConflictError`."""
    for order, entry in entries.items():
        if entry is not None and entry.progress in ("undone", "undo_failed"):
            raise LedgerConflictError(f"step {order} of incident {incident.incident_id} was already rolled back")
        action = next(a for a in actions if a.execution_order == order)
        if entry is not None and actions_digest([entry.action]) != actions_digest([action]):
            raise LedgerConflictError(f"step {order} of incident {incident.incident_id} recorded another action")


def apply(
    clients: AwsClients,
    *,
    table: str,
    incident: Incident | dict[str, Any],
    actions: list[RemediationAction] | list[dict[str, Any]] | None,  # None: an input error (parse_actions)
    actions_digest: str | None,
    approval: ApprovalDecision | dict[str, Any] | None,
    ttl_days: int,
    baseline_table: str | None = None,
    execution_arn: str | None = None,
) -> ApplyResult:
    """Apply approved actions in order, recording how to undo each; stop at the first failure.

    Raises only for bad input (:class:`InvalidRemediationInputError`, ``InvalidIncidentError``), actions
    that are not the approved ones (:class:`ApprovalMismatchError`) or a ledger of other actions
    (:class:`LedgerConflictError`) or a resource another live incident holds (:class:`ResourceLeaseHeldError`),
    always before anything is applied. An AWS failure of an action is an outcome (FAILED), not an exception;
    ledger (DynamoDB) failures raise, so the task is retried. ``execution_arn``: the execution the leases are
    tied to (they never lapse while it runs).
    """
    incident = _incident(incident)
    actions = parse_actions(actions)
    decision = _approval(approval)
    digest = check_approval(actions, actions_digest, decision)
    ledger = Ledger(clients, table, incident.incident_id, ttl_days)
    entries = {a.execution_order: ledger.get(a.execution_order) for a in actions}
    _refuse_another_ledger(incident, actions, entries)
    resources = resources_of(actions, clients)
    tokens: dict[str, int] = {}
    if actions:
        # The head first: it names the resources, so every end (release, rollback, reconcile) can give them back.
        ledger.open(digest, [a.execution_order for a in actions], decision, resources)
        # One incident at a time per resource: raises, before anything is written, while another holds one.
        tokens = leases.take_all(clients, table, resources, incident.incident_id, execution_arn)

    # The guardrails' ground truth, read before anything changes (a function never onboarded raises here).
    baseline, not_restorable = None, {}
    if any(entry is None for entry in entries.values()):
        recorded = load_baseline(clients, incident.function_name, baseline_table)
        baseline, not_restorable = recorded.configuration, recorded.not_restorable_paths()
    steps: list[ApplyOutcome] = []
    failed: ApplyOutcome | None = None
    for action in actions:
        if failed is not None:
            steps.append(_outcome(action, "not_attempted", "an earlier step failed"))
            continue
        entry = entries[action.execution_order]
        if entry is not None and entry.progress == "applied":
            steps.append(_outcome(action, "already_applied", f"applied at {entry.applied_at}"))
            continue
        change = ACTIONS[action.action_type].change
        params = action.typed_parameters()
        fences = {leased(clients, r): tokens[leased(clients, r)] for r in change.resources(params)}
        try:
            if entry is None:
                # Guardrails judge a step before it first changes anything; a recorded step passed them then,
                # and its half-done change would now look like "nothing to restore". A step already restored
                # (by another incident, a person) is still judged a restore of the baseline, then skipped.
                assert baseline is not None
                sections = sections_for([action.action_type], incident.qualifier)
                current = read_function_configuration(clients, incident.function_name, sections, baseline)
                judge = partial(check_action, action, current, baseline, clients, incident.qualifier, not_restorable)
                reasons, live = judge(), None
                # Refused only for having nothing left to restore: already restored, if the live state says so.
                if reasons and not judge(already_restored=True):
                    live = change.capture(clients, params)
                    if change.satisfied(params, live):
                        steps.append(_outcome(action, "already_restored", "already as this action sets it: unchanged"))
                        continue
                if reasons:
                    failed = _outcome(action, "failed", error="refused by the guardrails: " + "; ".join(reasons))
                    steps.append(failed)
                    continue
                entry = ledger.record(action, live if live is not None else change.capture(clients, params), fences)
            for resource, token in fences.items():  # the write's fencing token: still this incident's lease
                leases.check(clients, table, resource, incident.incident_id, token)
            detail = change.apply(clients, params)
        except (leases.FencedError, *AWS_ERRORS) as exc:
            error = str(exc) if isinstance(exc, leases.FencedError) else describe_error(exc)
            failed = _outcome(action, "failed", error=error)
            steps.append(failed)
            if entry is not None:
                _note_failure(ledger, change, clients, params, entry, error)
            continue
        ledger.mark(action.execution_order, "applied", after=_read_after(change, clients, params), fences=fences)
        steps.append(_outcome(action, "applied", detail))
    if failed is not None:
        return ApplyResult(
            outcome="FAILED",
            steps=steps,
            failed_step=failed.execution_order,
            error=f"step {failed.execution_order} ({failed.action_type}): {failed.error}",
            finished_at=iso(_now()),
            resources=resources,
        )
    return ApplyResult(outcome="APPLIED", steps=steps, finished_at=iso(_now()), resources=resources)


def resources_of(actions: list[RemediationAction], clients: AwsClients | None = None) -> list[str]:
    """Every resource the actions change, sorted: the order their leases are taken in (a member account's named with
    its account and Region: :func:`leased`)."""
    changed = {r for a in actions for r in ACTIONS[a.action_type].change.resources(a.typed_parameters())}
    return sorted(leased(clients, r) for r in changed)


def leased(clients: AwsClients | None, resource: str) -> str:
    """The name a resource's lease goes by: ``role:NAME`` in the deployment's own account and Region,
    ``ACCOUNT:REGION/role:NAME`` in a member's (the same name there is another resource)."""
    member = member_of(clients) if clients is not None else None
    return resource if member is None else f"{member}/{resource}"


def release(clients: AwsClients, *, table: str, incident: Incident | dict[str, Any]) -> list[str]:
    """Give back the leases of every resource the incident's ledger names that it still holds; those it did."""
    incident = _incident(incident)
    head = Ledger(clients, table, incident.incident_id).head()
    return leases.release_all(clients, table, head["resources"] if head else [], incident.incident_id)


# -- rollback ---------------------------------------------------------------------------------------
def _differences(prior: dict[str, Any], live: dict[str, Any]) -> str:
    keys = sorted(k for k in set(prior) | set(live) if canonical(prior.get(k)) != canonical(live.get(k)))
    return ", ".join(
        f"{k}: expected {canonical(prior.get(k))[:200]}, found {canonical(live.get(k))[:200]}" for k in keys
    )


def rollback(
    clients: AwsClients,
    *,
    table: str,
    incident: Incident | dict[str, Any],
    reason: str = "",
    execution_arn: str | None = None,
) -> RollbackResult:
    """Put back the recorded prior state of every step this incident applied, newest first; then free the function.

    Fenced: a step is undone only while each resource's fence is still the step's token (nobody leased it since:
    another incident's verified fix may equal what this one set). Compare-and-swap: and only while the live
    state is still what it left (``after``). A step
    the API refused changed nothing and is ``not_applied``; a resource changed since (another incident's
    fix, a person) is left as it is and reported ``undo_failed``, as is one whose change cannot be told
    apart, so that operators are alarmed instead of the change being overwritten. After each undo the live
    state is read again and must equal the prior. One failure does not stop the others.
    """
    incident = _incident(incident)
    ledger = Ledger(clients, table, incident.incident_id)
    head = ledger.head()
    if head is None:
        return RollbackResult(outcome="ROLLED_BACK")
    ledger.note_rollback(reason)
    entries = sorted(ledger.entries(head), key=lambda e: e.execution_order, reverse=True)
    steps = [_undo(clients, ledger, entry, table, incident.incident_id, execution_arn) for entry in entries]
    leases.release_all(clients, table, head["resources"], incident.incident_id)
    failures = [s for s in steps if s.status == "undo_failed"]
    if failures:
        return RollbackResult(
            outcome="ROLLBACK_FAILED",
            steps=steps,
            error="; ".join(f"step {s.execution_order} ({s.action_type}): {s.error}" for s in failures),
        )
    return RollbackResult(outcome="ROLLED_BACK", steps=steps)


def _undo(
    clients: AwsClients, ledger: Ledger, entry: LedgerEntry, table: str, incident_id: str, execution_arn: str | None
) -> UndoOutcome:
    action = entry.action
    step = {
        "execution_order": entry.execution_order,
        "action_type": action.action_type.value,
        "target_resource": action.target_resource,
    }
    if entry.progress == "undone":
        return UndoOutcome(**step, status="undone", detail=f"undone at {entry.undone_at}")
    if entry.progress == "failed":
        return UndoOutcome(**step, status="not_applied", detail=f"never applied ({entry.error or 'refused'})")
    change = ACTIONS[action.action_type].change
    params = action.typed_parameters()
    error = None
    prior = change.comparable(entry.prior)
    try:
        for resource, token in entry.fences.items():  # refused, never applied, once another incident leased it
            leases.take_for_undo(clients, table, resource, incident_id, token, execution_arn)
        live = change.comparable(change.capture(clients, params))
        if canonical(live) == canonical(prior):
            detail = "already in its recorded prior state"
        elif entry.after is None:
            detail = ""
            error = (
                "cannot tell whether this incident changed it (its step did not finish), and it is no longer in "
                f"its recorded prior state ({_differences(prior, live)}): left as it is"
            )
        elif canonical(live) != canonical(after := change.comparable(entry.after)):
            detail = ""
            error = (
                "changed since this incident set it, by someone else or another incident "
                f"({_differences(after, live)}): left as it is"
            )
        else:
            said = change.restore(clients, params, entry.prior)
            live = change.comparable(change.capture(clients, params))
            detail = f"restored the recorded prior state: {said}" if said else "restored the recorded prior state"
            if canonical(live) != canonical(prior):
                error = "the live state does not equal the recorded prior state after the undo: " + _differences(
                    prior, live
                )
    except leases.FencedError as exc:
        detail, error = "", f"fenced: {exc}"
    except AWS_ERRORS as exc:
        error = describe_error(exc)
    if error is None:
        ledger.mark(entry.execution_order, "undone")
        return UndoOutcome(**step, status="undone", detail=detail)
    ledger.mark(entry.execution_order, "undo_failed", error=error)
    return UndoOutcome(**step, status="undo_failed", error=error)
