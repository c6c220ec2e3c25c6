"""PROPOSING and REMEDIATING: the parameters of each action type, validated per type."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, model_validator

from incident_responder.core.contracts.base import Contract
from incident_responder.core.contracts.faults import ActionType


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


class RestoreHandlerParams(Contract):
    """UpdateFunctionConfiguration Handler back to the baseline's (``file.method``, as the runtime reads it)."""

    model_config = ConfigDict(extra="forbid")
    function_name: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")
    handler: str = Field(pattern=r"^[^\s]{1,128}$", description="the handler setting the baseline recorded")


class RestoreRuntimeParams(Contract):
    """UpdateFunctionConfiguration Runtime back to the baseline's (the identifier: python3.12, nodejs20.x...)."""

    model_config = ConfigDict(extra="forbid")
    function_name: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")
    runtime: str = Field(pattern=r"^[a-z][a-z0-9.]{1,31}$", description="the runtime the baseline recorded")


LAYER_VERSION_ARN_PATTERN = r"^arn:aws[a-zA-Z-]*:lambda:[a-z0-9-]+:\d{12}:layer:[A-Za-z0-9_-]{1,140}:[0-9]{1,9}$"


class RestoreLayersParams(Contract):
    """UpdateFunctionConfiguration Layers back to the baseline's layer version ARNs, in its order."""

    model_config = ConfigDict(extra="forbid")
    function_name: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")
    layers: list[Annotated[str, Field(pattern=LAYER_VERSION_ARN_PATTERN)]] = Field(
        max_length=5, description="the layer version ARNs the baseline recorded, in order (empty: no layers)"
    )


class RestoreVpcConfigurationParams(Contract):
    """UpdateFunctionConfiguration VpcConfig (subnets and security groups) back to the baseline's."""

    model_config = ConfigDict(extra="forbid")
    function_name: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")
    subnet_ids: list[str] = Field(
        min_length=1, max_length=16, description="the subnet ids the baseline recorded (subnet-...)"
    )
    security_group_ids: list[str] = Field(
        min_length=1, max_length=5, description="the security group ids the baseline recorded (sg-...)"
    )


class RestoreInvokePermissionParams(Contract):
    """AddPermission: a statement of the function's resource-based policy the baseline recorded, put back (who may
    invoke the function or its alias, under the conditions it was granted with)."""

    model_config = ConfigDict(extra="forbid")
    function_name: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")
    qualifier: str | None = Field(
        default=None, pattern=r"^[A-Za-z0-9_-]{1,128}$", description="the alias or version (None: the function)"
    )
    statement_id: str = Field(pattern=r"^[A-Za-z0-9_-]{1,100}$")
    action: str = Field(default="lambda:InvokeFunction", pattern=r"^lambda:[A-Za-z]{1,64}$")
    principal: str = Field(pattern=r"^[^\s]{1,256}$", description="the service, account or ARN granted")
    source_arn: str | None = Field(default=None, pattern=r"^arn:[^\s]{1,1024}$")
    source_account: str | None = Field(default=None, pattern=r"^\d{12}$")
    principal_org_id: str | None = Field(default=None, pattern=r"^o-[a-z0-9]{10,32}$")


# Where Lambda sends an asynchronous invocation's failed event: an SQS queue or SNS topic (a dead-letter queue), or
# also a function, an event bus or an S3 bucket (an on-failure destination).
DESTINATION_ARN_PATTERN = r"^arn:aws[a-zA-Z-]*:(sqs|sns|lambda|events|s3):[a-z0-9-]*:\d{0,12}:[A-Za-z0-9_./:$-]{1,256}$"
DEAD_LETTER_ARN_PATTERN = r"^arn:aws[a-zA-Z-]*:(sqs|sns):[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,256}$"


class RestoreEventInvokeConfigParams(Contract):
    """PutFunctionEventInvokeConfig back to the baseline's retries, maximum event age and on-failure destination
    (the on-success destination is kept as it is)."""

    model_config = ConfigDict(extra="forbid")
    function_name: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")
    maximum_retry_attempts: int | None = Field(default=None, ge=0, le=2, description="as the baseline recorded")
    maximum_event_age_in_seconds: int | None = Field(
        default=None, ge=60, le=21600, description="as the baseline recorded"
    )
    on_failure_destination: str | None = Field(
        default=None, pattern=DESTINATION_ARN_PATTERN, description="as the baseline recorded (None: none)"
    )


class RestoreDeadLetterConfigParams(Contract):
    """UpdateFunctionConfiguration DeadLetterConfig.TargetArn back to the baseline's queue or topic."""

    model_config = ConfigDict(extra="forbid")
    function_name: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")
    target_arn: str = Field(pattern=DEAD_LETTER_ARN_PATTERN, description="the dead-letter queue the baseline recorded")


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
    ActionType.RESTORE_HANDLER: RestoreHandlerParams,
    ActionType.RESTORE_RUNTIME: RestoreRuntimeParams,
    ActionType.RESTORE_LAYERS: RestoreLayersParams,
    ActionType.RESTORE_VPC_CONFIGURATION: RestoreVpcConfigurationParams,
    ActionType.RESTORE_INVOKE_PERMISSION: RestoreInvokePermissionParams,
    ActionType.RESTORE_EVENT_INVOKE_CONFIG: RestoreEventInvokeConfigParams,
    ActionType.RESTORE_DEAD_LETTER_CONFIG: RestoreDeadLetterConfigParams,
}
