"""PROPOSING: what the proposer model submits, its actions typed per action type, and the proposal it becomes."""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from typing import TYPE_CHECKING, Annotated, Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, create_model

from incident_responder.core.contracts.actions import (
    MAX_HANDOVER_STEPS,
    HandoverStep,
    RemediationAction,
    RemediationProposal,
)
from incident_responder.core.contracts.base import Contract
from incident_responder.core.contracts.diagnosis import Confidence
from incident_responder.core.contracts.faults import ACTION_FOR_FAULT, ActionType, FaultType
from incident_responder.core.contracts.parameters import PARAMETERS_FOR_ACTION


# -- what the proposer model submits ----------------------------------------------------------------
# The model-facing shape of an action: its parameters typed per action type, published to the model as
# a union discriminated by ``action_type``, so a hosted model sees every parameter name it must give.
# It has no risk_level, requires_approval, execution_order or rejected_actions: deterministic code sets those.
class _ProposedAction(Contract):
    model_config = ConfigDict(extra="forbid")

    fault_type: FaultType = Field(description="the diagnosed fault this action remedies")
    target_resource: str = Field(min_length=1, max_length=2048, description="ARN or id of what the action changes")
    reasoning: str = Field(default="", max_length=2000, description="why, in one or two sentences")
    if TYPE_CHECKING:  # each action type's own model adds them (typed by its parameters model)
        action_type: ActionType
        parameters: BaseModel


def _proposed(action_type: ActionType) -> type[_ProposedAction]:
    """``Proposed<ActionType>``: the action with its parameters typed by the action type's model."""
    name = "Proposed" + "".join(word.title() for word in action_type.value.split("_"))
    fixes = tuple(fault for fault, action in ACTION_FOR_FAULT.items() if action == action_type)
    fields: dict[str, Any] = {
        # Only the faults it remedies: the schema each variant publishes stays small as fault types are added.
        "fault_type": (
            Literal[fixes],
            Field(description="the diagnosed fault this action remedies (others: unresolvable_faults)"),
        ),
        "action_type": (Literal[action_type], ...),
        "parameters": (PARAMETERS_FOR_ACTION[action_type], ...),
    }
    return create_model(name, __base__=_ProposedAction, __module__=__name__, **fields)


# One model per action type, built from the parameters table: a new action type needs no class here.
PROPOSED_FOR_ACTION: dict[ActionType, type[_ProposedAction]] = {t: _proposed(t) for t in PARAMETERS_FOR_ACTION}
if TYPE_CHECKING:  # to a type checker, any of them
    ProposedAction = _ProposedAction
else:
    ProposedAction = Annotated[
        Union[tuple(PROPOSED_FOR_ACTION.values())],  # noqa: UP007 - a union built from a table
        Field(discriminator="action_type"),
    ]


def proposed(
    *, action_type: ActionType, fault_type: FaultType, target_resource: str, parameters: BaseModel, reasoning: str = ""
) -> _ProposedAction:
    """A ready-made action as a restore lookup offers it (typed and validated like the model's own)."""
    return PROPOSED_FOR_ACTION[action_type](
        fault_type=fault_type,
        action_type=action_type,
        target_resource=target_resource,
        parameters=parameters,
        reasoning=reasoning,
    )


class ProposalSubmission(Contract):
    """The ``submit_proposal`` arguments: typed actions, and the faults no action can fix."""

    model_config = ConfigDict(extra="forbid")

    actions: list[ProposedAction] = Field(default_factory=list)
    confidence: Confidence = "medium"
    chain_of_thought: str = Field(default="", max_length=4000)
    unresolvable_faults: list[FaultType] = Field(default_factory=list)
    handover: list[HandoverStep] = Field(
        default_factory=list,
        max_length=MAX_HANDOVER_STEPS,
        description="what a person does for the unresolvable faults, each step citing the runbook it follows",
    )

    def to_proposal(self, incident_id: str) -> RemediationProposal:
        """The stored shape; risk, approval and order are left to deterministic code."""
        return RemediationProposal(
            incident_id=incident_id,
            actions=[
                RemediationAction(
                    fault_type=a.fault_type,
                    action_type=a.action_type,
                    target_resource=a.target_resource,
                    parameters=a.parameters.model_dump(mode="json"),
                    reasoning=a.reasoning,
                )
                for a in self.actions
            ],
            confidence=self.confidence,
            chain_of_thought=self.chain_of_thought,
            unresolvable_faults=self.unresolvable_faults,
            handover=self.handover,
        )


def submission_for(faults: Iterable[Any] | None) -> type[ProposalSubmission]:
    """:class:`ProposalSubmission` whose actions are only the action types that fix these faults (the diagnosed
    ones): the schema published to the proposer model stays the size of the incident, not of the action registry.
    Every action type when ``faults`` is None; none (an empty list of actions) when no fault it names has one."""
    if faults is None:
        return ProposalSubmission
    fixable = {ACTION_FOR_FAULT[FaultType(str(f))] for f in faults if str(f) in set(ACTION_FOR_FAULT)}
    return _submission_of(tuple(t for t in PROPOSED_FOR_ACTION if t in fixable))


@lru_cache(maxsize=256)
def _submission_of(types: tuple[ActionType, ...]) -> type[ProposalSubmission]:
    if len(types) == len(PROPOSED_FOR_ACTION):
        return ProposalSubmission
    if not types:
        empty: Any = Field(default_factory=list, max_length=0, description="no diagnosed fault has an action: none")
        return create_model(
            "ProposalSubmission", __base__=ProposalSubmission, __module__=__name__, actions=(list[Any], empty)
        )
    variants = tuple(PROPOSED_FOR_ACTION[t] for t in types)
    item: Any = (
        variants[0] if len(variants) == 1 else Annotated[Union[variants], Field(discriminator="action_type")]  # noqa: UP007 - a union from a table
    )
    return create_model(
        "ProposalSubmission",
        __base__=ProposalSubmission,
        __module__=__name__,
        actions=(list[item], Field(default_factory=list)),
    )
