"""PROPOSING: what the proposer model submits, its actions typed per action type, and the proposal it becomes."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field

from incident_responder.core.contracts.actions import RemediationAction, RemediationProposal
from incident_responder.core.contracts.base import Contract
from incident_responder.core.contracts.diagnosis import Confidence
from incident_responder.core.contracts.faults import ActionType, FaultType
from incident_responder.core.contracts.parameters import (
    EnableEventSourceMappingParams,
    EnableKmsKeyParams,
    RestoreIamPolicyParams,
    RestoreNetworkEgressParams,
    RestoreQueueAttributesParams,
    RestoreSecretParams,
    RollbackAliasParams,
    UpdateConcurrencyParams,
    UpdateFunctionConfigurationParams,
)


# -- what the proposer model submits ----------------------------------------------------------------
# The model-facing shape of an action: its parameters typed per action type, published to the model as
# a union discriminated by ``action_type``, so a hosted model sees every parameter name it must give.
# It has no risk_level, requires_approval, execution_order or rejected_actions: deterministic code sets those.
class _ProposedAction(Contract):
    model_config = ConfigDict(extra="forbid")

    fault_type: FaultType = Field(description="the diagnosed fault this action remedies")
    target_resource: str = Field(min_length=1, max_length=2048, description="ARN or id of what the action changes")
    reasoning: str = Field(default="", max_length=2000, description="why, in one or two sentences")


class ProposedRestoreIamPolicy(_ProposedAction):
    action_type: Literal[ActionType.RESTORE_IAM_POLICY]
    parameters: RestoreIamPolicyParams


class ProposedUpdateConcurrency(_ProposedAction):
    action_type: Literal[ActionType.UPDATE_CONCURRENCY]
    parameters: UpdateConcurrencyParams


class ProposedRestoreNetworkEgress(_ProposedAction):
    action_type: Literal[ActionType.RESTORE_NETWORK_EGRESS]
    parameters: RestoreNetworkEgressParams


class ProposedUpdateFunctionConfiguration(_ProposedAction):
    action_type: Literal[ActionType.UPDATE_FUNCTION_CONFIGURATION]
    parameters: UpdateFunctionConfigurationParams


class ProposedRollbackAlias(_ProposedAction):
    action_type: Literal[ActionType.ROLLBACK_ALIAS]
    parameters: RollbackAliasParams


class ProposedEnableKmsKey(_ProposedAction):
    action_type: Literal[ActionType.ENABLE_KMS_KEY]
    parameters: EnableKmsKeyParams


class ProposedEnableEventSourceMapping(_ProposedAction):
    action_type: Literal[ActionType.ENABLE_EVENT_SOURCE_MAPPING]
    parameters: EnableEventSourceMappingParams


class ProposedRestoreSecret(_ProposedAction):
    action_type: Literal[ActionType.RESTORE_SECRET]
    parameters: RestoreSecretParams


class ProposedRestoreQueueAttributes(_ProposedAction):
    action_type: Literal[ActionType.RESTORE_QUEUE_ATTRIBUTES]
    parameters: RestoreQueueAttributesParams


ProposedAction = Annotated[
    ProposedRestoreIamPolicy
    | ProposedUpdateConcurrency
    | ProposedRestoreNetworkEgress
    | ProposedUpdateFunctionConfiguration
    | ProposedRollbackAlias
    | ProposedEnableKmsKey
    | ProposedEnableEventSourceMapping
    | ProposedRestoreSecret
    | ProposedRestoreQueueAttributes,
    Field(discriminator="action_type"),
]


class ProposalSubmission(Contract):
    """The ``submit_proposal`` arguments: typed actions, and the faults no action can fix."""

    model_config = ConfigDict(extra="forbid")

    actions: list[ProposedAction] = Field(default_factory=list)
    confidence: Confidence = "medium"
    chain_of_thought: str = Field(default="", max_length=4000)
    unresolvable_faults: list[FaultType] = Field(default_factory=list)

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
        )
