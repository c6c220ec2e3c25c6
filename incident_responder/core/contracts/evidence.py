"""INVESTIGATING and REVIEWING: an evidence pointer, one claim's grounding in a tool result."""

from __future__ import annotations

from pydantic import ConfigDict, Field

from incident_responder.core.contracts.base import Contract


class EvidencePointer(Contract):
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
