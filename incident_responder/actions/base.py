"""What every action type is made of (:class:`Action`): an abstract base, so a type missing a part fails in the tests
(tests/unit/test_actions.py builds every registered type), never in production.

Facts (class attributes): ``action_type``, ``risk``, who approves (``approval``), the IAM writes its change makes
(``iam_writes``: the remediate role must allow them, a template test compares), and its restore lookup's tool
(``lookup_tool``, with its result model and description). The faults it fixes come from the contract's
ACTION_FOR_FAULT (the model's submission is checked against it at the tool).

Parts (methods): ``lookup`` (what the remediation MCP tool returns), ``guardrail`` (the action restores exactly the
baseline, on the incident's own resources), ``drift_paths`` (where the difference it restores shows),
``verify`` (is what it targets back at the baseline) and ``change`` (capture, apply and undo, fenced by the
remediate step: :class:`~incident_responder.actions.change._Change`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from pydantic import BaseModel

from incident_responder.account.state import FunctionConfiguration
from incident_responder.actions.change import _Change
from incident_responder.core.aws import AwsClients
from incident_responder.core.contracts import (
    ACTION_FOR_FAULT,
    PARAMETERS_FOR_ACTION,
    ActionType,
    FaultType,
    RemediationAction,
    RiskLevel,
)

# Who approves: "policy" (the review policy and AutoApprove decide by risk), "access" (a change to what the
# function may reach: a person unless the deployment sets AutoApproveIamAndNetwork), "person" (always a person:
# ``person_reason`` says why).
Approval = Literal["policy", "access", "person"]


@dataclass
class Restoration:
    """What verification compares for one action: baseline paths whose differences count (``prefixes``), what
    it found wrong by itself (``problems``) and what it names (``targets``); ``verdict`` ends the check at once."""

    prefixes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    targets: list[str] = field(default_factory=list)
    verdict: tuple[bool, str] | None = None


class Action(ABC):
    action_type: ClassVar[ActionType]
    risk: ClassVar[RiskLevel]
    approval: ClassVar[Approval] = "policy"
    person_reason: ClassVar[str | None] = None
    iam_writes: ClassVar[frozenset[str]]
    lookup_tool: ClassVar[str]
    # The parts of the configuration (account.state.SECTIONS) the action restores, read with calls of their own
    # (what GetFunctionConfiguration gives is always read): its lookup, the guardrails, the apply and verification
    # read these and take the rest from the baseline, so a reader reads what it judges.
    sections: ClassVar[tuple[str, ...]]
    lookup_model: ClassVar[type[BaseModel]]
    lookup_description: ClassVar[str]
    # For each fault it fixes: the lookup result's field that shows the fault already at the baseline, and what
    # that means (the offline critic rejects a no-op pointing at it).
    no_drift: ClassVar[dict[FaultType, tuple[str, str]]]
    change: ClassVar[_Change]

    @property
    def parameters_model(self) -> type[BaseModel]:
        """The parameters the model submits for this type (the contract's, core/contracts/parameters.py)."""
        return PARAMETERS_FOR_ACTION[self.action_type]

    @property
    def fixes(self) -> tuple[FaultType, ...]:
        """The fault types this action fixes (the contract's ACTION_FOR_FAULT, read backwards)."""
        return tuple(fault for fault, action in ACTION_FOR_FAULT.items() if action == self.action_type)

    @abstractmethod
    def lookup(self, clients: AwsClients, lambda_name: str) -> BaseModel:
        """What the remediation MCP tool returns: the differences from the baseline and the ready-made restores."""

    @abstractmethod
    def guardrail(
        self,
        action: RemediationAction,
        p: Any,
        current: FunctionConfiguration,
        baseline: FunctionConfiguration,
        clients: AwsClients | None,
    ) -> list[str]:
        """Reasons to refuse: a target other than what ``p`` changes, or anything but exactly the baseline."""

    @abstractmethod
    def drift_paths(self, p: Any, current: FunctionConfiguration) -> list[str]:
        """Where, in drift's terms, the difference this action restores must show (account.drift)."""

    @abstractmethod
    def verify(self, p: Any, current: FunctionConfiguration, baseline: FunctionConfiguration) -> Restoration:
        """What verification compares after the apply (see remediation.verify.configuration_check)."""
