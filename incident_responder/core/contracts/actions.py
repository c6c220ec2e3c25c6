"""PROPOSAL_READY to REMEDIATING: a remediation action, a rejected one, and the proposal that orders them."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

from incident_responder.core.contracts.base import Contract
from incident_responder.core.contracts.diagnosis import Confidence
from incident_responder.core.contracts.faults import ACTION_FOR_FAULT, FAULT_PRIORITY, ActionType, FaultType, RiskLevel
from incident_responder.core.contracts.incident import INCIDENT_ID_PATTERN
from incident_responder.core.contracts.parameters import PARAMETERS_FOR_ACTION


class RemediationAction(Contract):
    model_config = ConfigDict(extra="forbid")

    fault_type: FaultType
    action_type: ActionType
    target_resource: str = Field(min_length=1, description="ARN or id of what the action changes")
    parameters: dict
    risk_level: RiskLevel = "medium"
    requires_approval: bool = True
    reasoning: str = Field(default="", max_length=2000)
    execution_order: int = 0

    @model_validator(mode="after")
    def _parameters_match_action_type(self) -> RemediationAction:
        model = PARAMETERS_FOR_ACTION[self.action_type]
        # Nulls are kept: for update_concurrency a null reservation is the instruction to delete it.
        self.parameters = model.model_validate(self.parameters).model_dump(mode="json")
        if self.fault_type in ACTION_FOR_FAULT and ACTION_FOR_FAULT[self.fault_type] != self.action_type:
            raise ValueError(f"{self.action_type.value} does not remedy {self.fault_type.value}")
        if self.fault_type not in ACTION_FOR_FAULT:
            raise ValueError(f"{self.fault_type.value} has no automated action; list it in unresolvable_faults")
        return self

    def typed_parameters(self) -> BaseModel:
        return PARAMETERS_FOR_ACTION[self.action_type].model_validate(self.parameters)


# How a hand-over step cites the runbook it follows (incident_responder/memory/runbooks.py: Runbook.citation).
RUNBOOK_CITATION = r"^runbook:(function|mode)/[A-Za-z0-9_-]{1,64}@[0-9a-f]{64}$"
MAX_HANDOVER_STEPS = 12


class HandoverStep(Contract):
    """A step a person takes for a fault no action fixes. A runbook it cites guides the step; it authorises
    nothing (the guardrails and the approval policy never read hand-over steps)."""

    model_config = ConfigDict(extra="forbid")

    fault_type: FaultType
    text: str = Field(min_length=1, max_length=300)
    runbook: str | None = Field(
        default=None, pattern=RUNBOOK_CITATION, description="the runbook it follows: runbook:<scope>@<digest>"
    )


class RejectedAction(Contract):
    action: RemediationAction
    reasons: list[str]


class RemediationProposal(Contract):
    """What the proposer proposes; the validator orders actions by fault priority and numbers them."""

    model_config = ConfigDict(extra="forbid")

    incident_id: str = Field(pattern=INCIDENT_ID_PATTERN)
    actions: list[RemediationAction] = Field(default_factory=list)
    confidence: Confidence = "medium"
    chain_of_thought: str = Field(default="", max_length=4000)
    unresolvable_faults: list[FaultType] = Field(default_factory=list)
    handover: list[HandoverStep] = Field(default_factory=list, max_length=MAX_HANDOVER_STEPS)
    rejected_actions: list[RejectedAction] = Field(default_factory=list, description="set by the guardrails")

    @model_validator(mode="after")
    def _order(self) -> RemediationProposal:
        ordered = sorted(self.actions, key=lambda a: FAULT_PRIORITY.index(a.fault_type))
        self.actions = [a.model_copy(update={"execution_order": i + 1}) for i, a in enumerate(ordered)]
        return self
