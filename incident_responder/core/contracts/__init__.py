"""The project's data contracts: incident, evidence, diagnosis, remediation actions, review, approval, token usage.

One name per concept: these enums and models are what the ASL, DynamoDB items, tools and docs use.
Invalid values are rejected here, by the models, never left to prose. Every name is re-exported here, loaded
at once (:func:`build_all` finds the contracts among the classes defined): import them from this package.

base        the base of every contract (validators built on first use) and build_all
faults      fault types, action types, one record per fault type (what fixes it, its evidence signs, its advice)
incident    the incident as the alert described it, and how a handler reads it from its event
evidence    an evidence pointer: one claim's grounding in a tool result
diagnosis   what the investigating agent concluded; severity, confidence and risk scales
usage       the tokens an agent's run used
parameters  the parameters of each action type
actions     a remediation action, a rejected action, the proposal that orders them
submission  what the proposer model submits (actions typed per action type)
verdicts    the critic's verdict on each action, and what it submits
approval    who approved which actions, and the digest of exactly those actions
history     a function's past incidents as the responder recorded them (memory)
"""

from incident_responder.core.contracts.actions import (
    HandoverStep,
    RejectedAction,
    RemediationAction,
    RemediationProposal,
)
from incident_responder.core.contracts.approval import ApprovalChannel, ApprovalDecision, actions_digest
from incident_responder.core.contracts.base import Contract, build_all
from incident_responder.core.contracts.diagnosis import Confidence, Diagnosis, RemediationAdvice, Severity
from incident_responder.core.contracts.evidence import EvidencePointer
from incident_responder.core.contracts.faults import (
    ACTION_FOR_FAULT,
    FAULT_PRIORITY,
    FAULT_RECORDS,
    FAULTS,
    UNRESOLVABLE_FAULTS,
    ActionType,
    FaultRecord,
    FaultType,
    RiskLevel,
)
from incident_responder.core.contracts.history import HISTORY_KEPT, PastAction, PastIncident
from incident_responder.core.contracts.incident import (
    ACCOUNT_RE,
    ALERT_TEXT_FIELDS,
    FACT_FIELDS,
    INCIDENT_ID_PATTERN,
    QUALIFIER_RE,
    REGION_NAME_RE,
    Incident,
    incident_facts,
    incident_from_event,
)
from incident_responder.core.contracts.parameters import (
    PARAMETERS_FOR_ACTION,
    QUEUE_ARN_PATTERN,
    SECRET_ARN_PATTERN,
    EnableEventSourceMappingParams,
    EnableKmsKeyParams,
    NaclEntry,
    RestoreIamPolicyParams,
    RestoreInvokePermissionParams,
    RestoreNetworkEgressParams,
    RestoreQueueAttributesParams,
    RestoreSecretParams,
    RollbackAliasParams,
    UpdateConcurrencyParams,
    UpdateFunctionConfigurationParams,
)
from incident_responder.core.contracts.submission import (
    PROPOSED_FOR_ACTION,
    ProposalSubmission,
    ProposedAction,
    proposed,
    submission_for,
)
from incident_responder.core.contracts.usage import TokenUsage
from incident_responder.core.contracts.verdicts import VERDICT_STRICTNESS, ActionVerdict, ReviewSubmission, Verdict

__all__ = [
    "HISTORY_KEPT",
    "PastAction",
    "PastIncident",
    "ACTION_FOR_FAULT",
    "FAULTS",
    "FAULT_RECORDS",
    "ACCOUNT_RE",
    "ALERT_TEXT_FIELDS",
    "FACT_FIELDS",
    "FAULT_PRIORITY",
    "INCIDENT_ID_PATTERN",
    "PARAMETERS_FOR_ACTION",
    "QUALIFIER_RE",
    "REGION_NAME_RE",
    "QUEUE_ARN_PATTERN",
    "SECRET_ARN_PATTERN",
    "UNRESOLVABLE_FAULTS",
    "VERDICT_STRICTNESS",
    "ActionType",
    "FaultRecord",
    "ActionVerdict",
    "ApprovalChannel",
    "ApprovalDecision",
    "Confidence",
    "Contract",
    "Diagnosis",
    "EnableEventSourceMappingParams",
    "EnableKmsKeyParams",
    "EvidencePointer",
    "FaultType",
    "Incident",
    "NaclEntry",
    "ProposalSubmission",
    "submission_for",
    "PROPOSED_FOR_ACTION",
    "ProposedAction",
    "proposed",
    "HandoverStep",
    "RejectedAction",
    "RemediationAction",
    "RemediationProposal",
    "RemediationAdvice",
    "RestoreIamPolicyParams",
    "RestoreInvokePermissionParams",
    "RestoreNetworkEgressParams",
    "RestoreQueueAttributesParams",
    "RestoreSecretParams",
    "ReviewSubmission",
    "RiskLevel",
    "RollbackAliasParams",
    "Severity",
    "TokenUsage",
    "UpdateConcurrencyParams",
    "UpdateFunctionConfigurationParams",
    "Verdict",
    "actions_digest",
    "build_all",
    "incident_facts",
    "incident_from_event",
]
