"""The scenario file: how an incident is reproduced, evaluated and benchmarked.

The format is fixed by the project design (keep it stable); see ``scenarios/`` for examples::

    name: s3-policy-revoked
    faults:
      - kind: iam_revoke
        target: s3
    workload: {function: data-processor, invocations: 3, log_lines: [], app_error: null}
    # optional: the function's healthy configuration, applied before it is onboarded
    #   workload: {setup: {reserved_concurrency: null, timeout: 30, memory: 512}}
    expect: {status: REMEDIATED, fault_types: [permission_loss], actions: [restore_iam_policy],
             failure_modes: [iam-permission-lost]}  # failure_modes: optional, checked when given
    # optional: the caller's own monitoring alerts instead of the function's alarms (a project alert, published to
    # the stack's incident topic for the workload's function; {account} and {region} are the lab's)
    #   alert: {error_type: ServiceException, error_message: "..."}
    # optional: runbooks stored before it runs (as `responder runbook set` stores them), one scope each
    #   runbooks: [{mode: eni-limit-reached, text: "1. ..."}, {function: data-processor, text: "- ..."}]
    #   expect: {handover_cites_runbook: true}  # a hand-over step cites one of them (unset: not checked)
    # optional: how the closed loop is driven after PROPOSAL_READY (defaults shown)
    #   lifecycle: {approval: auto, replay_approval: false, remediation_failure: null,
    #               reinject_during_verifying: false}
    # optional: incidents of the same function run through the lifecycle first, each to the end it names (the
    # function's past, as its history records it); faults they leave are restored before this one's are applied
    #   earlier: [{faults: [{kind: memory, mb: 128}], status: REMEDIATED, lifecycle: {...}}]
    #   expect: {fewer_investigation_turns: true}  # fewer investigator turns and tokens than the first earlier one
    # optional: stack parameters it runs with (the lab redeploys for them, and back after)
    #   parameters: {AutoApprove: low, RecurrenceHours: 24}
    #   expect: {approved_by: person}  # person: the approval page; policy: AutoApprove (unset: not checked)

``expect.status`` is the final status: REMEDIATED when the incident had automatable actions,
PROPOSAL_READY when it had none.

A broken file raises :class:`ScenarioError` naming the file and the offending field.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

# The faults' models and the fault type of each kind come from chaos's registry (chaos/kinds/: a module per kind).
from chaos.kinds import FAULT_TYPE_OF_KIND as FAULT_TYPE_OF_KIND
from chaos.kinds import Fault
from chaos.scenario import DEFAULT_FUNCTION, ScenarioError, invalid, read_mapping
from incident_responder.catalogue.queries import MODES_BY_ID
from incident_responder.core.contracts import ACCOUNT_RE, REGION_NAME_RE, ActionType, FaultType
from incident_responder.core.status import TERMINAL_STATUSES, Status

# A scenario's name names its files (eval's OUT/<name>/, a cassette DIR/<name>.json): a file name, never a path.
SCENARIO_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
NAME_RULE = (
    "a scenario name is 1-100 letters, digits, '.', '_' and '-', starting with a letter or digit "
    "(it names the scenario's files: no path)"
)


def _scenario_name(name: str) -> str:
    if not SCENARIO_NAME.fullmatch(name):
        raise ValueError(NAME_RULE)
    return name


ScenarioName = Annotated[str, AfterValidator(_scenario_name)]


def path_of(folder: Path, name: str, suffix: str = "") -> Path:
    """``folder``/<name><suffix>: a scenario's file or folder (its report, its cassette). A name that is no scenario
    name, or a path that would leave ``folder``, is refused (ScenarioError), whatever gave the name."""
    path = folder / f"{name}{suffix}"
    if not SCENARIO_NAME.fullmatch(name) or os.path.normpath(path.parent) != os.path.normpath(folder):
        raise ScenarioError(f"{folder}: {name[:100]!r} is not a scenario name: {NAME_RULE}")
    return path


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Setup(_Strict):
    """The function's healthy configuration, applied before onboarding (so it is the baseline).

    Only the fields given are applied; ``reserved_concurrency: null`` means no reservation, as most
    Lambda functions have.
    """

    reserved_concurrency: int | None = Field(default=None, ge=0, le=1000)
    timeout: int | None = Field(default=None, ge=1, le=900)
    memory: int | None = Field(default=None, ge=128, le=10240)


class Workload(_Strict):
    # One of the lab's sample workloads: data-processor, orders-api, queue-consumer.
    function: str = Field(default=DEFAULT_FUNCTION, pattern=r"^[A-Za-z0-9_-]{1,64}$")
    invocations: int = Field(default=3, ge=1, le=100)
    log_lines: list[str] = Field(default_factory=list)
    app_error: str | None = None
    setup: Setup | None = None
    # A member account and Region of the lab's organisation (lab/organisation.py: LAB_ORGANISATION), whose own
    # data-processor this is; none: the central account's.
    account: str | None = Field(default=None, pattern=rf"^{ACCOUNT_RE}$")
    region: str | None = Field(default=None, pattern=rf"^{REGION_NAME_RE}$")

    @model_validator(mode="after")
    def _a_member_of_the_lab(self) -> Workload:
        if (self.account is None) != (self.region is None):
            raise ValueError("account and region name a member account's workload together: give both or neither")
        if self.account is not None:
            from incident_responder.core.members import Member
            from incident_responder.lab.organisation import LAB_ORGANISATION

            listed = ", ".join(str(m) for m in LAB_ORGANISATION.members)
            if Member(self.account, str(self.region)) not in LAB_ORGANISATION.members:
                raise ValueError(f"{self.account}:{self.region} is not a member of the lab's organisation ({listed})")
            if self.function != DEFAULT_FUNCTION:
                raise ValueError(f"a member account runs the sample {DEFAULT_FUNCTION} only, not {self.function}")
        return self


class Alert(_Strict):
    """The alert a caller's own monitoring publishes (the project alert JSON, ``intake.shapes.ProjectAlert``): the
    error the caller saw, which the function's own logs and metrics never show. The lab publishes it to the stack's
    incident topic for the workload's function after the burst, and the incident starts from it; the function's own
    alarms are evaluated but not sent. Its text is the caller's, untrusted: the account must bear it out.

    ``{account}`` and ``{region}`` in the message stand for the lab account's id and Region (an ARN the caller names).
    """

    error_type: str = Field(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9_.:-]+$")
    error_message: str | None = Field(default=None, min_length=1, max_length=2000)


Approver = Literal["auto", "reject", "none"]


def _terminal(status: Status) -> Status:
    if status not in TERMINAL_STATUSES:
        raise ValueError(f"{status} is not a status an incident ends in ({', '.join(sorted(TERMINAL_STATUSES))})")
    return status


class Expect(_Strict):
    status: Status = Status.PROPOSAL_READY
    fault_types: list[FaultType] = Field(default_factory=list)
    actions: list[ActionType] = Field(default_factory=list)
    failure_modes: list[str] | None = Field(
        default=None, description="exact set of failure catalogue entries the diagnosis names (unset: not checked)"
    )
    handover_cites_runbook: bool | None = Field(
        default=None,
        description="whether a hand-over step cites one of the scenario's runbooks, exactly (unset: not checked)",
    )
    approved_by: Literal["person", "policy"] | None = Field(
        default=None,
        description="who approved the actions: a person (the approval page) or the AutoApprove policy (unset: not "
        "checked; any other end than an approval fails it)",
    )
    fewer_investigation_turns: bool | None = Field(
        default=None,
        description="the investigation took fewer model turns and fewer tokens than the first earlier incident's "
        "(true), or not (false); unset: not checked",
    )

    @field_validator("failure_modes")
    @classmethod
    def _catalogue_ids(cls, modes: list[str] | None) -> list[str] | None:
        unknown = [m for m in modes or [] if m not in MODES_BY_ID]
        if unknown:
            raise ValueError(f"not entries of the failure catalogue (docs/failure-catalogue.md): {unknown}")
        return modes

    @field_validator("status")
    @classmethod
    def _an_end(cls, status: Status) -> Status:
        return _terminal(status)


class RemediationFailure(_Strict):
    """An AWS API call the remediate function makes that the lab answers with an error (``times`` times)."""

    operation: str = Field(pattern=r"^[A-Z][A-Za-z0-9]+$", description="e.g. PutFunctionConcurrency")
    times: int = Field(default=1, ge=1, le=100)
    code: str = Field(default="ServiceException", pattern=r"^[A-Za-z.]+$")


class Lifecycle(_Strict):
    """How the lab drives the closed loop after PROPOSAL_READY."""

    approval: Approver | None = Field(
        default=None,
        description="auto: the person approves the link; reject: rejects it; none: nobody answers (expiry). "
        "Unset: what `responder eval --approval` says (auto by default).",
    )
    replay_approval: bool = Field(default=False, description="post the used approval link again: it must be refused")
    remediation_failure: RemediationFailure | None = None
    reinject_during_verifying: bool = Field(default=False, description="the faults come back before verification")


class ScenarioRunbook(_Strict):
    """A runbook the scenario attaches before it runs: for a function or for a catalogue entry (``mode``)."""

    function: str | None = None
    mode: str | None = None
    text: str = Field(min_length=1)

    @model_validator(mode="after")
    def _one_scope(self) -> ScenarioRunbook:
        from incident_responder.memory.runbooks import check_text

        if (self.function is None) == (self.mode is None):
            raise ValueError("a runbook names exactly one of function and mode")
        self.scope()  # a function name Lambda accepts, or a catalogue entry's id
        check_text(self.text.encode())  # what `responder runbook set` would refuse, refused here
        return self

    def scope(self):
        from incident_responder.memory.runbooks import function_scope, mode_scope

        return function_scope(self.function) if self.function is not None else mode_scope(str(self.mode))

    @property
    def citation(self) -> str:
        from incident_responder.memory.runbooks import digest_of

        return f"runbook:{self.scope()}@{digest_of(self.text.encode())}"


class EarlierIncident(_Strict):
    """An incident of the scenario's function before its own: its faults, how its loop is driven, and the end it must
    reach (a past that did not happen as written fails the scenario)."""

    faults: list[Fault] = Field(min_length=1)
    lifecycle: Lifecycle = Field(default_factory=Lifecycle)
    status: Status

    @field_validator("status")
    @classmethod
    def _an_end(cls, status: Status) -> Status:
        return _terminal(status)


class StackParameters(_Strict):
    """The stack parameters a scenario may run with (template.yaml's names and bounds); the rest keep the lab's. Only
    those of functions the lab redeploys (not of its function URLs, which keep the environment they started with)."""

    AutoApprove: Literal["none", "low"] | None = None  # noqa: N815 - the template's parameter names
    RecurrenceHours: int | None = Field(default=None, ge=1, le=720)  # noqa: N815

    def given(self) -> dict[str, str]:
        """The parameters set, as the stack takes them (strings)."""
        return {key: str(value) for key, value in self.model_dump(exclude_none=True).items()}


class Scenario(_Strict):
    name: ScenarioName
    faults: list[Fault] = Field(default_factory=list)
    workload: Workload = Field(default_factory=Workload)
    alert: Alert | None = None
    runbooks: list[ScenarioRunbook] = Field(default_factory=list, max_length=8)
    earlier: list[EarlierIncident] = Field(default_factory=list, max_length=3)
    parameters: StackParameters = Field(default_factory=StackParameters)
    lifecycle: Lifecycle = Field(default_factory=Lifecycle)
    expect: Expect = Field(default_factory=Expect)

    @model_validator(mode="after")
    def _a_past_to_compare(self) -> Scenario:
        if self.expect.fewer_investigation_turns is not None and not self.earlier:
            raise ValueError("expect.fewer_investigation_turns compares with an earlier incident: give one (earlier)")
        return self

    def as_earlier(self, index: int) -> Scenario:
        """The ``index``-th earlier incident as a scenario of its own: this one's workload, its faults and loop."""
        past = self.earlier[index]
        return Scenario(
            name=f"{self.name}.earlier-{index + 1}"[:100],
            faults=past.faults,
            workload=self.workload,
            parameters=self.parameters,
            lifecycle=past.lifecycle,
            expect=Expect(status=past.status),
        )


def load_scenario(path: str | Path) -> Scenario:
    path = Path(path)
    data = read_mapping(path)
    try:
        return Scenario.model_validate(data)
    except ValidationError as exc:
        raise invalid(path, exc) from exc
