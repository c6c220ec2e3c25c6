"""VERIFYING: is what the actions changed back at the baseline, and is the function healthy again?

For every applied action two checks: its configuration (``restored`` when what it targets equals the
function's recorded baseline now, else ``differs``) and the health of the fault it remedied, from a
health probe. VERIFIED unless a configuration differs or an actioned fault is still seen (NOT_FIXED,
and the state machine rolls back). What no action could fix goes to ``needs_person`` instead of
failing the verification: a bug in the function's own code (diagnosed, or the only failure left once
every actioned configuration is restored), a diagnosed fault nothing was applied for, or another
fault seen now.

The configuration of a rolled-back alias is restored when it routes to its baseline version with the
recorded code hash, of a key when its state is the baseline's Enabled, of an event source mapping when
it is Enabled or Enabling: Lambda reports Enabling for the seconds it takes to resume polling, and the
action has done all it can; a mapping stuck there shows as a queue that keeps ageing, not here. A secret
is restored when it exists and is no longer scheduled for deletion, a queue when its visibility timeout is
the baseline's, ephemeral storage when it is the baseline's size.
Failures of the function's own code count against a rolled-back deployment unless an application
error was diagnosed as well (the baseline version's own bug, which the rollback cannot fix).

The deployed probe reads the function's ``AWS/Lambda`` metrics of the whole minutes after the apply that Lambda
has finished reporting; before the first is, the health is not yet known (:class:`HealthNotYetKnownError`, never a
verdict), and after an IAM change the first minute may hold an error or so while the change propagates. It cannot
tell an application's exception from an infrastructure failure; a probe that sees each invocation can
(:func:`~incident_responder.remediation.health.burst_probe`; the lab sets one with
:func:`~incident_responder.remediation.health.set_health_probe` that invokes its sample workload).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from incident_responder.account.baseline import load_baseline
from incident_responder.account.drift import diff_configurations
from incident_responder.account.state import FunctionConfiguration, read_function_configuration
from incident_responder.actions.registry import ACTIONS, sections_for
from incident_responder.core.aws import AwsClients
from incident_responder.core.contracts import (
    ActionType,
    FaultType,
    Incident,
    RemediationAction,
    incident_from_event,
)
from incident_responder.remediation.errors import (
    HealthNotYetKnownError,
    InvalidRemediationInputError,
    InvalidVerificationInputError,
)
from incident_responder.remediation.health import HealthProbe, HealthReport, health_probe, symptom_of
from incident_responder.remediation.remediate import ApplyResult, parse_actions

Health = Literal["healthy", "unhealthy", "no_traffic"]

# IAM is eventually consistent: "the change must be replicated across IAM, which can take some time"
# (docs.aws.amazon.com/IAM/latest/UserGuide/troubleshoot_general.html, "Changes that I make are not always immediately
# visible"), so an invocation just after a restored grant may still be denied. That many errors in the first whole
# minute after an IAM change, beside successes, are taken for the propagation; any more, or any later, count.
IAM_SETTLING_ERRORS = 1


# -- results ----------------------------------------------------------------------------------------
class VerifyCheck(BaseModel):
    execution_order: int
    fault_type: str
    action_type: str
    configuration: Literal["restored", "differs"]
    health: Health
    detail: str


class NeedsPerson(BaseModel):
    fault_type: str
    detail: str


class VerifyResult(BaseModel):
    outcome: Literal["VERIFIED", "NOT_FIXED"]
    checks: list[VerifyCheck] = Field(default_factory=list)
    needs_person: list[NeedsPerson] = Field(default_factory=list)
    summary: str


# -- configuration ----------------------------------------------------------------------------------
def _under(path: str, prefixes: list[str]) -> bool:
    return any(path == p or path.startswith(p + ".") for p in prefixes)


def configuration_check(
    action: RemediationAction, current: FunctionConfiguration, baseline: FunctionConfiguration
) -> tuple[bool, str]:
    """(restored, detail): whether what ``action`` targets equals the baseline now (its action type's ``verify``)."""
    found = ACTIONS.get(action.action_type)
    if found is None:
        # The guardrails refuse an action type they do not know; so does verification: never "restored" unchecked.
        return False, f"no configuration check for action type {action.action_type}: not verified"
    restoration = found.verify(action.typed_parameters(), current, baseline)
    if restoration.verdict is not None:
        return restoration.verdict
    prefixes, problems, targets = restoration.prefixes, list(restoration.problems), restoration.targets
    differences = [d for d in diff_configurations(baseline, current) if _under(d.path, prefixes)]
    problems += [f"{d.path}: baseline {_short(d.baseline)}, now {_short(d.current)}" for d in differences]
    if problems:
        return False, "differs from the baseline: " + "; ".join(problems)
    return True, f"{', '.join(targets + prefixes)} as in the baseline"


def _short(value: Any, limit: int = 120) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


# -- verify -----------------------------------------------------------------------------------------
def _fault_health(
    fault: FaultType, report: HealthReport, app_error_diagnosed: bool, settling: int = 0
) -> tuple[Health, str]:
    if report.no_traffic:
        return "no_traffic", "no invocations since the apply"
    if report.samples is not None:
        if fault == FaultType.DEPLOYMENT_REGRESSION:
            # The regression's symptom is the function's own exception.
            seen = [s for s in report.samples if s.status != "succeeded" and symptom_of(s) is None]
            if seen and app_error_diagnosed:
                return "healthy", (
                    f"{len(seen)} failure(s) left are taken for the diagnosed application error ({report.figures()})"
                )
        else:
            seen = [s for s in report.samples if symptom_of(s) == fault]
        if seen:
            kinds = sorted({s.error_type or s.status for s in seen})
            return "unhealthy", f"{len(seen)} of {len(report.samples)} invocations still show it ({', '.join(kinds)})"
        return "healthy", f"no invocation shows it ({report.figures()})"
    # Metrics only: errors cannot be told apart, throttles can.
    if fault == FaultType.THROTTLING:
        if report.throttles:
            return "unhealthy", f"still throttled ({report.figures()})"
        return "healthy", f"no throttles ({report.figures()})"
    if report.errors and app_error_diagnosed:
        return "healthy", f"errors remain, taken for the diagnosed application error ({report.figures()})"
    if report.errors > settling:
        return "unhealthy", f"the function still fails ({report.figures()})"
    if settling:
        return "healthy", (
            f"{settling} error{'s' if settling > 1 else ''} in the first minute after the IAM change, taken for its "
            f"propagation, none after ({report.figures()})"
        )
    return "healthy", f"no errors ({report.figures()})"


def _parse(
    incident: Incident | dict[str, Any], actions: Any, remediation: Any, fault_types: Any
) -> tuple[Incident, list[RemediationAction], ApplyResult, list[FaultType]]:
    incident = incident if isinstance(incident, Incident) else incident_from_event({"incident": incident})
    try:
        parsed_actions = parse_actions(actions)
    except InvalidRemediationInputError as exc:
        raise InvalidVerificationInputError(str(exc)) from exc
    try:
        applied = remediation if isinstance(remediation, ApplyResult) else ApplyResult.model_validate(remediation)
        faults = [FaultType(f) for f in (fault_types or [])]
    except (ValidationError, ValueError) as exc:
        raise InvalidVerificationInputError(f"not a remediation result and fault types: {exc}") from exc
    if applied.outcome != "APPLIED":
        raise InvalidVerificationInputError(f"only an APPLIED remediation is verified, not {applied.outcome}")
    return incident, parsed_actions, applied, faults


def verify(
    clients: AwsClients,
    *,
    incident: Incident | dict[str, Any],
    actions: list[RemediationAction] | list[dict[str, Any]],
    remediation: ApplyResult | dict[str, Any],
    fault_types: Iterable[str],
    baseline_table: str | None = None,
    health: HealthProbe | HealthReport | None = None,
    wait: Callable[[datetime], bool] | None = None,
) -> VerifyResult:
    """Check every applied action's configuration against the baseline, and the function's health.

    ``health``: a probe (default: the one :func:`~incident_responder.remediation.health.set_health_probe` set,
    else CloudWatch metrics) or a report already taken. A probe that cannot tell yet says until when: ``wait``
    (:func:`~incident_responder.remediation.health.waiting_within`) may wait for that moment once, else
    :class:`HealthNotYetKnownError` (the state machine verifies again later). AWS errors reading the configuration
    or metrics propagate (the task retries).
    """
    incident, actions, applied, faults = _parse(incident, actions, remediation, fault_types)
    done = {s.execution_order for s in applied.applied}
    checked = [a for a in actions if a.execution_order in done]
    baseline = load_baseline(clients, incident.function_name, baseline_table).configuration
    # What the applied actions restored is read again; the rest is the baseline's (never a difference they own).
    sections = sections_for(a.action_type for a in checked)
    current = read_function_configuration(clients, incident.function_name, sections, baseline)
    if isinstance(health, HealthReport):
        report = health
    else:
        since = datetime.fromisoformat(applied.finished_at.replace("Z", "+00:00"))
        probe = health or health_probe()
        report = probe(clients, incident.function_name, since)
        # Waiting here for a moment the probe names (within this invocation's time) spares a whole retry.
        if report.pending_until is not None and wait is not None and wait(report.pending_until):
            report = probe(clients, incident.function_name, since)
    if report.pending_until is not None:
        raise HealthNotYetKnownError(
            f"the health of {incident.function_name} is not yet known: CloudWatch will have reported the first whole "
            f"minute after the change by {report.pending_until.isoformat(timespec='seconds')}"
        )
    app_error = FaultType.APPLICATION_ERROR in faults
    iam_changed = any(a.action_type == ActionType.RESTORE_IAM_POLICY for a in checked)
    settling = report.settling_errors(IAM_SETTLING_ERRORS) if iam_changed else 0

    checks = []
    for action in checked:
        restored, config_detail = configuration_check(action, current, baseline)
        state, health_detail = _fault_health(action.fault_type, report, app_error, settling)
        checks.append(
            VerifyCheck(
                execution_order=action.execution_order,
                fault_type=action.fault_type.value,
                action_type=action.action_type.value,
                configuration="restored" if restored else "differs",
                health=state,
                detail=f"{config_detail}; {health_detail}",
            )
        )
    all_restored = all(c.configuration == "restored" for c in checks)
    needs = _needs_person(faults, checked, report, app_error, all_restored)
    fixed = all_restored and all(c.health != "unhealthy" for c in checks)
    return VerifyResult(
        outcome="VERIFIED" if fixed else "NOT_FIXED",
        checks=checks,
        needs_person=needs,
        summary=_summary(incident.function_name, fixed, checks, needs, report),
    )


def _needs_person(
    faults: list[FaultType],
    checked: list[RemediationAction],
    report: HealthReport,
    app_error: bool,
    all_restored: bool,
) -> list[NeedsPerson]:
    actioned = {a.fault_type for a in checked}
    samples = report.samples or []
    own = [s for s in samples if s.status != "succeeded" and symptom_of(s) is None]
    own_kinds = ", ".join(sorted({s.error_type or s.status for s in own}))
    needs = []
    if app_error:
        seen = f"{len(own)} invocation(s) still fail with it ({own_kinds})" if own else "not reproduced by the check"
        needs.append(
            NeedsPerson(
                fault_type=FaultType.APPLICATION_ERROR.value,
                detail=f"a bug in the function's own code, which no automated action fixes: {seen}",
            )
        )
    elif own and all_restored and FaultType.DEPLOYMENT_REGRESSION not in actioned:
        # (after a rollback the function's own failures are the regression's: its check reports them)
        needs.append(
            NeedsPerson(
                fault_type=FaultType.APPLICATION_ERROR.value,
                detail=f"with every actioned configuration restored, {len(own)} invocation(s) still fail with "
                f"the function's own exception ({own_kinds})",
            )
        )
    for fault in faults:
        if fault not in actioned and fault != FaultType.APPLICATION_ERROR:
            needs.append(NeedsPerson(fault_type=fault.value, detail="diagnosed, but no action was applied for it"))
    others: dict[FaultType, int] = {}
    for sample in samples:
        shown = symptom_of(sample)
        if shown is not None and shown not in actioned and shown not in faults:
            others[shown] = others.get(shown, 0) + 1
    for shown, count in others.items():
        needs.append(
            NeedsPerson(fault_type=shown.value, detail=f"{count} invocation(s) show it, but it was not diagnosed")
        )
    return needs


def _summary(
    function_name: str, fixed: bool, checks: list[VerifyCheck], needs: list[NeedsPerson], report: HealthReport
) -> str:
    people = ""
    if needs:
        people = "; a person is needed for " + ", ".join(dict.fromkeys(n.fault_type for n in needs))
    if fixed:
        state = "had no traffic to judge" if report.no_traffic else "is healthy"
        actions = ", ".join(c.action_type for c in checks) or "no actions"
        return (
            f"Verified: {len(checks)} applied action(s) ({actions}) left the configuration at the baseline "
            f"and {function_name} {state} ({report.figures()}){people}."
        )
    problems = [
        f"step {c.execution_order} {c.action_type} left the configuration differing from the baseline"
        for c in checks
        if c.configuration == "differs"
    ] + [f"{c.fault_type} is still seen" for c in checks if c.health == "unhealthy"]
    return f"Not fixed: {', '.join(dict.fromkeys(problems))} ({report.figures()}){people}."
