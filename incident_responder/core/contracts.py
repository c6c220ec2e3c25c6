"""The project's data contracts: incident, evidence, diagnosis, token usage.

One name per concept: these enums and models are what the ASL, DynamoDB items, tools and docs use.
Invalid values are rejected here, by the models, never left to prose.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

# A Lambda qualifier: $LATEST, a version number or an alias name (in ARNs, alarm dimensions and tool arguments).
QUALIFIER_RE = r"\$LATEST|[A-Za-z0-9_-]{1,128}"

INCIDENT_ID_PATTERN = r"^[A-Za-z0-9_-]{1,80}$"  # also a valid Step Functions execution name


class Contract(BaseModel):
    """The base of every contract. Validators are built on first use (``defer_build``), not at import:
    each Lambda function builds only the contracts it reads (ingest reads the incident, not the proposal).
    :func:`build_all` builds them all at once, before a SnapStart snapshot."""

    model_config = ConfigDict(defer_build=True)


class FaultType(StrEnum):
    PERMISSION_LOSS = "permission_loss"
    THROTTLING = "throttling"
    NETWORK_BLOCK = "network_block"
    TIMEOUT = "timeout"
    MEMORY_EXHAUSTION = "memory_exhaustion"
    APPLICATION_ERROR = "application_error"
    DEPLOYMENT_REGRESSION = "deployment_regression"
    KMS_KEY_DISABLED = "kms_key_disabled"
    EVENT_SOURCE_DISABLED = "event_source_disabled"
    DEPENDENCY_THROTTLING = "dependency_throttling"
    # From AWS's failure catalogue (docs/failure-catalogue.md).
    CONFIGURATION_DRIFT = "configuration_drift"
    DEPENDENCY_MISSING = "dependency_missing"
    EVENT_SOURCE_MISCONFIGURED = "event_source_misconfigured"
    STORAGE_EXHAUSTION = "storage_exhaustion"
    KMS_ACCESS_DENIED = "kms_access_denied"
    ACCOUNT_CONCURRENCY_EXHAUSTED = "account_concurrency_exhausted"
    RECURSIVE_LOOP = "recursive_loop"
    UNKNOWN = "unknown"


class ActionType(StrEnum):
    RESTORE_IAM_POLICY = "restore_iam_policy"
    UPDATE_CONCURRENCY = "update_concurrency"
    RESTORE_NETWORK_EGRESS = "restore_network_egress"
    UPDATE_FUNCTION_CONFIGURATION = "update_function_configuration"
    ROLLBACK_ALIAS = "rollback_alias"
    ENABLE_KMS_KEY = "enable_kms_key"
    ENABLE_EVENT_SOURCE_MAPPING = "enable_event_source_mapping"
    RESTORE_SECRET = "restore_secret"
    RESTORE_QUEUE_ATTRIBUTES = "restore_queue_attributes"


Severity = Literal["critical", "high", "medium", "low"]
Confidence = Literal["high", "medium", "low"]
RiskLevel = Literal["low", "medium", "high"]


class Incident(Contract):
    """A failing function as the alert described it; the input of an investigation."""

    model_config = ConfigDict(extra="forbid")

    incident_id: str = Field(pattern=INCIDENT_ID_PATTERN)
    function_name: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")
    qualifier: str | None = Field(
        default=None,
        pattern=rf"^({QUALIFIER_RE})$",
        description="the alias or version the alarm named (Lambda's Resource or ExecutedVersion dimension)",
    )
    source: Literal["cloudwatch_alarm", "alert"]
    detected_at: str = Field(description="ISO 8601 time the alert fired")
    resolved_from: str | None = Field(
        default=None,
        max_length=500,
        description="how the function was found when the alert did not name it (e.g. a queue's event source mapping)",
    )
    alarm_name: str | None = None
    metric_name: str | None = Field(default=None, description="e.g. Errors, Throttles, IncomingLogEvents")
    namespace: str | None = None
    reason: str | None = Field(default=None, max_length=2000, description="the alarm's NewStateReason")
    error_type: str | None = Field(default=None, max_length=200)
    error_message: str | None = Field(default=None, max_length=2000)
    region: str | None = None
    account_id: str | None = None


# Text that came in with the alert: written by whoever named the alarm or raised the alert, or by the
# failing code itself (an error message). The agents see it quoted as untrusted data, never as the incident.
ALERT_TEXT_FIELDS = ("alarm_name", "reason", "error_type", "error_message")


def incident_facts(incident: Incident) -> tuple[dict, dict]:
    """(structural fields, alert text) of an incident, for the agents' first message."""
    data = incident.model_dump(mode="json", exclude_none=True)
    text = {k: data.pop(k) for k in ALERT_TEXT_FIELDS if k in data}
    return data, text


class InvalidIncidentError(ValueError):
    """What the state machine passed is not an incident (an ASL error name: goes to ERROR, no retry)."""


def incident_from_event(event: dict) -> Incident:
    """The incident in a handler's event (``{"incident": {...}}`` or the incident itself)."""
    from pydantic import ValidationError

    try:
        return Incident.model_validate(event.get("incident", event) if isinstance(event, dict) else event)
    except ValidationError as exc:
        raise InvalidIncidentError(f"not an incident: {exc.errors()[:3]}") from exc


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


class RemediationStep(Contract):
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


class TokenUsage(Contract):
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


# -- remediation ----------------------------------------------------------------------------------
# Order in which faults are fixed: access first (the role, then the key that decrypts its environment;
# nothing works without them), then capacity and delivery, network, the code that runs, and finally
# the function's own limits.
FAULT_PRIORITY = [
    FaultType.PERMISSION_LOSS,
    FaultType.KMS_KEY_DISABLED,
    FaultType.DEPENDENCY_MISSING,
    FaultType.THROTTLING,
    FaultType.EVENT_SOURCE_DISABLED,
    FaultType.EVENT_SOURCE_MISCONFIGURED,
    FaultType.NETWORK_BLOCK,
    FaultType.DEPLOYMENT_REGRESSION,
    FaultType.TIMEOUT,
    FaultType.MEMORY_EXHAUSTION,
    FaultType.STORAGE_EXHAUSTION,
]
ACTION_FOR_FAULT = {
    FaultType.PERMISSION_LOSS: ActionType.RESTORE_IAM_POLICY,
    FaultType.KMS_KEY_DISABLED: ActionType.ENABLE_KMS_KEY,
    FaultType.THROTTLING: ActionType.UPDATE_CONCURRENCY,
    FaultType.EVENT_SOURCE_DISABLED: ActionType.ENABLE_EVENT_SOURCE_MAPPING,
    FaultType.NETWORK_BLOCK: ActionType.RESTORE_NETWORK_EGRESS,
    FaultType.DEPLOYMENT_REGRESSION: ActionType.ROLLBACK_ALIAS,
    FaultType.TIMEOUT: ActionType.UPDATE_FUNCTION_CONFIGURATION,
    FaultType.MEMORY_EXHAUSTION: ActionType.UPDATE_FUNCTION_CONFIGURATION,
    FaultType.DEPENDENCY_MISSING: ActionType.RESTORE_SECRET,
    FaultType.EVENT_SOURCE_MISCONFIGURED: ActionType.RESTORE_QUEUE_ATTRIBUTES,
    FaultType.STORAGE_EXHAUSTION: ActionType.UPDATE_FUNCTION_CONFIGURATION,
}
# Faults no action of the responder can fix: the proposal names them for a person. A removed environment
# variable's value is not in the baseline (names and digests only); a key policy, another function's load,
# and code that writes to its own trigger are a person's changes.
UNRESOLVABLE_FAULTS = {
    FaultType.APPLICATION_ERROR,
    FaultType.DEPENDENCY_THROTTLING,
    FaultType.CONFIGURATION_DRIFT,
    FaultType.KMS_ACCESS_DENIED,
    FaultType.ACCOUNT_CONCURRENCY_EXHAUSTED,
    FaultType.RECURSIVE_LOOP,
    FaultType.UNKNOWN,
}


class RestoreIamPolicyParams(Contract):
    """PutRolePolicy (``policy_document``) or AttachRolePolicy (``attach_policy_arn``) on the role."""

    model_config = ConfigDict(extra="forbid")
    role_name: str = Field(min_length=1, max_length=64)
    policy_name: str | None = Field(default=None, max_length=128)
    policy_document: dict | None = None
    attach_policy_arn: str | None = None

    @model_validator(mode="after")
    def _one_change(self) -> RestoreIamPolicyParams:
        inline = self.policy_name is not None and self.policy_document is not None
        if inline == (self.attach_policy_arn is not None):
            raise ValueError("give either policy_name + policy_document, or attach_policy_arn")
        return self


class UpdateConcurrencyParams(Contract):
    """PutFunctionConcurrency, or DeleteFunctionConcurrency when ``reserved_concurrent_executions`` is null."""

    model_config = ConfigDict(extra="forbid")
    function_name: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")
    reserved_concurrent_executions: int | None = Field(ge=0)


class NaclEntry(Contract):
    model_config = ConfigDict(extra="forbid")
    network_acl_id: str
    rule_number: int = Field(ge=1, le=32766)
    egress: bool = True


class RestoreNetworkEgressParams(Contract):
    """AuthorizeSecurityGroupEgress of the baseline rules, and/or DeleteNetworkAclEntry of added entries."""

    model_config = ConfigDict(extra="forbid")
    security_group_id: str | None = None
    ip_permissions: list[dict] = Field(default_factory=list, description="EC2 IpPermissions to authorize (egress)")
    remove_nacl_entries: list[NaclEntry] = Field(default_factory=list)

    @model_validator(mode="after")
    def _something(self) -> RestoreNetworkEgressParams:
        if not self.ip_permissions and not self.remove_nacl_entries:
            raise ValueError("nothing to restore: give ip_permissions and/or remove_nacl_entries")
        if self.ip_permissions and not self.security_group_id:
            raise ValueError("ip_permissions need security_group_id")
        return self


class UpdateFunctionConfigurationParams(Contract):
    """UpdateFunctionConfiguration with the baseline Timeout, MemorySize and/or EphemeralStorage.Size."""

    model_config = ConfigDict(extra="forbid")
    function_name: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")
    timeout: int | None = Field(default=None, ge=1, le=900)
    memory_size: int | None = Field(default=None, ge=128, le=10240)
    ephemeral_storage: int | None = Field(default=None, ge=512, le=10240, description="/tmp size in MB")

    @model_validator(mode="after")
    def _something(self) -> UpdateFunctionConfigurationParams:
        if self.timeout is None and self.memory_size is None and self.ephemeral_storage is None:
            raise ValueError("give timeout, memory_size and/or ephemeral_storage")
        return self


class RollbackAliasParams(Contract):
    """UpdateAlias: point the function's alias back at its baseline version."""

    model_config = ConfigDict(extra="forbid")
    function_name: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")
    alias_name: str = Field(pattern=r"^[a-zA-Z0-9_-]*[a-zA-Z_-][a-zA-Z0-9_-]*$", max_length=128)  # not all digits
    function_version: str = Field(pattern=r"^[0-9]{1,10}$", description="a published version, never $LATEST")


class EnableKmsKeyParams(Contract):
    """EnableKey on the customer-managed key the function's configuration names."""

    model_config = ConfigDict(extra="forbid")
    key_arn: str = Field(pattern=r"^arn:aws[a-zA-Z-]*:kms:[a-z0-9-]+:\d{12}:key/[A-Za-z0-9-]{1,128}$")


class EnableEventSourceMappingParams(Contract):
    """UpdateEventSourceMapping Enabled=true on one of the function's own mappings."""

    model_config = ConfigDict(extra="forbid")
    function_name: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")
    uuid: str = Field(pattern=r"^[0-9a-fA-F-]{36}$")


SECRET_ARN_PATTERN = r"^arn:aws[a-zA-Z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:[A-Za-z0-9/_+=.@-]{1,512}$"
QUEUE_ARN_PATTERN = r"^arn:aws[a-zA-Z-]*:sqs:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,80}(\.fifo)?$"


class RestoreSecretParams(Contract):
    """RestoreSecret: cancel the scheduled deletion of a secret the function's configuration names."""

    model_config = ConfigDict(extra="forbid")
    secret_arn: str = Field(pattern=SECRET_ARN_PATTERN)


class RestoreQueueAttributesParams(Contract):
    """SetQueueAttributes VisibilityTimeout back to the baseline's, on the queue the function's mapping reads."""

    model_config = ConfigDict(extra="forbid")
    queue_arn: str = Field(pattern=QUEUE_ARN_PATTERN)
    visibility_timeout: int = Field(ge=0, le=43200, description="seconds, as the baseline recorded")


PARAMETERS_FOR_ACTION: dict[ActionType, type[BaseModel]] = {
    ActionType.RESTORE_IAM_POLICY: RestoreIamPolicyParams,
    ActionType.UPDATE_CONCURRENCY: UpdateConcurrencyParams,
    ActionType.RESTORE_NETWORK_EGRESS: RestoreNetworkEgressParams,
    ActionType.UPDATE_FUNCTION_CONFIGURATION: UpdateFunctionConfigurationParams,
    ActionType.ROLLBACK_ALIAS: RollbackAliasParams,
    ActionType.ENABLE_KMS_KEY: EnableKmsKeyParams,
    ActionType.ENABLE_EVENT_SOURCE_MAPPING: EnableEventSourceMappingParams,
    ActionType.RESTORE_SECRET: RestoreSecretParams,
    ActionType.RESTORE_QUEUE_ATTRIBUTES: RestoreQueueAttributesParams,
}


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


class RejectedAction(Contract):
    action: RemediationAction
    reasons: list[str]


class RemediationProposal(Contract):
    """What the resolver proposes; the validator orders actions by fault priority and numbers them."""

    model_config = ConfigDict(extra="forbid")

    incident_id: str = Field(pattern=INCIDENT_ID_PATTERN)
    actions: list[RemediationAction] = Field(default_factory=list)
    confidence: Confidence = "medium"
    chain_of_thought: str = Field(default="", max_length=4000)
    unresolvable_faults: list[FaultType] = Field(default_factory=list)
    rejected_actions: list[RejectedAction] = Field(default_factory=list, description="set by the guardrails")

    @model_validator(mode="after")
    def _order(self) -> RemediationProposal:
        ordered = sorted(self.actions, key=lambda a: FAULT_PRIORITY.index(a.fault_type))
        self.actions = [a.model_copy(update={"execution_order": i + 1}) for i, a in enumerate(ordered)]
        return self


# -- what the resolver model submits ----------------------------------------------------------------
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


# -- the closed loop: review, approval -------------------------------------------------------------
class Verdict(StrEnum):
    """The critic's verdict on one action; deterministic policy may only make it stricter."""

    APPROVE = "approve"
    NEEDS_HUMAN = "needs_human"
    REJECT = "reject"


VERDICT_STRICTNESS = {Verdict.APPROVE: 0, Verdict.NEEDS_HUMAN: 1, Verdict.REJECT: 2}


class ActionVerdict(Contract):
    """One action's verdict, naming the action by its ``execution_order``, with reasons citing evidence."""

    model_config = ConfigDict(extra="forbid")

    execution_order: int = Field(ge=1, description="the execution_order of the action judged")
    verdict: Verdict
    reasons: list[str] = Field(min_length=1, max_length=10, description="why, each citing what the evidence shows")
    evidence: list[EvidencePointer] = Field(
        default_factory=list, description="pointers into this review's tool results; 'verified' is set by the system"
    )
    policy: list[str] = Field(default_factory=list, description="set by the system: where policy overrode the critic")


class ReviewSubmission(Contract):
    """The ``submit_review`` arguments: one verdict per proposed action, and a summary."""

    model_config = ConfigDict(extra="forbid")

    verdicts: list[ActionVerdict] = Field(default_factory=list)
    summary: str = Field(default="", max_length=2000)


ApprovalChannel = Literal["auto", "link", "cli"]


class ApprovalDecision(Contract):
    """Who decided on a set of actions, when, through what, and exactly which actions (their digest).

    The output of the approval task (SendTaskSuccess) and of an automatic approval alike.
    """

    model_config = ConfigDict(extra="forbid")

    decision: Literal["approve", "reject"]
    decided_by: str = Field(min_length=1, max_length=512)
    decided_at: str
    channel: ApprovalChannel
    actions_digest: str = Field(pattern=r"^sha256:[0-9a-f]{64}$")
    reason: str | None = Field(default=None, max_length=1000)


def actions_digest(actions: list[RemediationAction] | list[dict]) -> str:
    """The digest a person approves: what each action does (order, type, target, parameters), never its prose.

    >>> actions_digest([]) == actions_digest([])
    True
    """
    import hashlib
    import json

    shown = []
    for action in actions:
        data = action.model_dump(mode="json") if isinstance(action, BaseModel) else action
        shown.append(
            {
                "execution_order": data["execution_order"],
                "fault_type": str(data["fault_type"]),
                "action_type": str(data["action_type"]),
                "target_resource": data["target_resource"],
                "parameters": data["parameters"],
            }
        )
    shown.sort(key=lambda a: a["execution_order"])
    canonical = json.dumps(shown, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()


def build_all() -> None:
    """Build every contract's validator and serializer now (see :class:`Contract`)."""
    pending = list(Contract.__subclasses__())
    while pending:
        model = pending.pop()
        pending.extend(model.__subclasses__())
        model.model_rebuild()
