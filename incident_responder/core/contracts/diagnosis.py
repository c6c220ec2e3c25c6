"""DIAGNOSED: what the investigating agent concluded, every claim pointing at tool output."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field, model_validator

from incident_responder.core.contracts.base import Contract
from incident_responder.core.contracts.evidence import EvidencePointer
from incident_responder.core.contracts.faults import FaultType, RiskLevel

Severity = Literal["critical", "high", "medium", "low"]
Confidence = Literal["high", "medium", "low"]


class RemediationAdvice(Contract):
    """Free-text advice in a diagnosis, for a person; never executed (a :class:`RemediationAction` is).

    A diagnosis keeps it in ``remediation_plan``, the field name stored diagnoses and the model's tool
    schema already use."""

    model_config = ConfigDict(extra="forbid")

    action: str = Field(min_length=3, max_length=300)
    details: str = Field(default="", max_length=2000)
    evidence_basis: list[int] = Field(default_factory=list, description="indices into Diagnosis.evidence")
    risk_level: RiskLevel = "medium"
    requires_approval: bool = True


class Diagnosis(Contract):
    """What the investigating agent concluded, every claim pointing at tool output."""

    model_config = ConfigDict(extra="forbid")

    root_cause: str = Field(min_length=10, max_length=2000)
    fault_types: list[FaultType] = Field(min_length=1)
    failure_modes: list[str] = Field(
        default_factory=list,
        max_length=20,
        description="for each fault, the id of the AWS failure catalogue entry it matched (as the tools name it)",
    )
    affected_resources: list[str] = Field(default_factory=list)
    severity: Severity
    confidence: Confidence
    evidence: list[EvidencePointer] = Field(default_factory=list)
    remediation_plan: list[RemediationAdvice] = Field(default_factory=list)
    investigation_gaps: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _basis_in_range(self) -> Diagnosis:
        for n, step in enumerate(self.remediation_plan):
            bad = [i for i in step.evidence_basis if not 0 <= i < len(self.evidence)]
            if bad:
                raise ValueError(
                    f"remediation_plan[{n}].evidence_basis has indices {bad} outside evidence[0..{len(self.evidence) - 1}]"
                )
        return self

    @model_validator(mode="after")
    def _unique_fault_types(self) -> Diagnosis:
        self.fault_types = list(dict.fromkeys(self.fault_types))
        self.failure_modes = list(dict.fromkeys(self.failure_modes))
        return self
