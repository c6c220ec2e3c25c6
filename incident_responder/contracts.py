"""The project's data contracts: incident, evidence, diagnosis, token usage.

One name per concept: these enums and models are what the ASL, DynamoDB items, tools and docs use.
Invalid values are rejected here, by the models, never left to prose.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

INCIDENT_ID_PATTERN = r"^[A-Za-z0-9_-]{1,80}$"  # also a valid Step Functions execution name


class FaultType(StrEnum):
    PERMISSION_LOSS = "permission_loss"
    THROTTLING = "throttling"
    NETWORK_BLOCK = "network_block"
    TIMEOUT = "timeout"
    MEMORY_EXHAUSTION = "memory_exhaustion"
    APPLICATION_ERROR = "application_error"
    UNKNOWN = "unknown"


class ActionType(StrEnum):
    RESTORE_IAM_POLICY = "restore_iam_policy"
    UPDATE_CONCURRENCY = "update_concurrency"
    RESTORE_NETWORK_EGRESS = "restore_network_egress"
    UPDATE_FUNCTION_CONFIGURATION = "update_function_configuration"


Severity = Literal["critical", "high", "medium", "low"]
Confidence = Literal["high", "medium", "low"]
RiskLevel = Literal["low", "medium", "high"]


class Incident(BaseModel):
    """A failing function as the alert described it; the input of an investigation."""

    model_config = ConfigDict(extra="forbid")

    incident_id: str = Field(pattern=INCIDENT_ID_PATTERN)
    function_name: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")
    source: Literal["cloudwatch_alarm", "alert"]
    detected_at: str = Field(description="ISO 8601 time the alert fired")
    alarm_name: str | None = None
    metric_name: str | None = Field(default=None, description="e.g. Errors, Throttles, IncomingLogEvents")
    namespace: str | None = None
    reason: str | None = Field(default=None, max_length=2000, description="the alarm's NewStateReason")
    error_type: str | None = Field(default=None, max_length=200)
    error_message: str | None = Field(default=None, max_length=2000)
    region: str | None = None
    account_id: str | None = None


class EvidencePointer(BaseModel):
    """One claim's grounding: where in which tool result the supporting value is."""

    model_config = ConfigDict(extra="forbid")

    tool: str = Field(min_length=1, description="name of a tool called in this investigation")
    field: str = Field(
        min_length=1,
        description="path into that tool's result, e.g. differences[0].path, events[*].message, Timeout",
    )
    value: str = Field(min_length=1, description="the value found there (for text, an exact excerpt)")
    interpretation: str = Field(min_length=1, max_length=1000, description="what this shows")
    verified: bool = Field(default=False, description="set by mechanical verification, never by the model")


class RemediationStep(BaseModel):
    model_config = ConfigDict(extra="forbid")

    action: str = Field(min_length=3, max_length=300)
    details: str = Field(default="", max_length=2000)
    evidence_basis: list[int] = Field(default_factory=list, description="indices into Diagnosis.evidence")
    risk_level: RiskLevel = "medium"
    requires_approval: bool = True


class Diagnosis(BaseModel):
    """What the investigating agent concluded, every claim pointing at tool output."""

    model_config = ConfigDict(extra="forbid")

    root_cause: str = Field(min_length=10, max_length=2000)
    fault_types: list[FaultType] = Field(min_length=1)
    affected_resources: list[str] = Field(default_factory=list)
    severity: Severity
    confidence: Confidence
    evidence: list[EvidencePointer] = Field(default_factory=list)
    remediation_plan: list[RemediationStep] = Field(default_factory=list)
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
        return self


class TokenUsage(BaseModel):
    """Tokens accounted from the parts (Bedrock's input count already includes cache reads and writes)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def add(self, usage: dict | None) -> TokenUsage:
        if not usage:
            return self
        details = usage.get("input_token_details") or {}
        return TokenUsage(
            input_tokens=self.input_tokens + int(usage.get("input_tokens") or 0),
            output_tokens=self.output_tokens + int(usage.get("output_tokens") or 0),
            cache_read_tokens=self.cache_read_tokens + int(details.get("cache_read") or 0),
            cache_write_tokens=self.cache_write_tokens + int(details.get("cache_creation") or 0),
        )
