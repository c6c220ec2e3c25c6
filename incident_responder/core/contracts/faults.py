"""INVESTIGATING to REMEDIATING: the fault types, the action types, which action remedies which fault, in what order."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

# What an action could break if it were wrong (each action type's risk: incident_responder.actions).
RiskLevel = Literal["low", "medium", "high"]


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
    HANDLER_MISCONFIGURED = "handler_misconfigured"
    RUNTIME_MISCONFIGURED = "runtime_misconfigured"
    LAYERS_CHANGED = "layers_changed"
    CODE_PACKAGE_INVALID = "code_package_invalid"
    VPC_MISCONFIGURED = "vpc_misconfigured"
    VPC_CAPACITY_EXHAUSTED = "vpc_capacity_exhausted"
    DNS_FAILURE = "dns_failure"
    KMS_UNAVAILABLE = "kms_unavailable"
    EVENT_SOURCE_FAILING = "event_source_failing"
    KAFKA_ACCESS_FAILED = "kafka_access_failed"
    KMS_KEY_MISSING = "kms_key_missing"
    FILE_SYSTEM_UNAVAILABLE = "file_system_unavailable"
    SNAPSTART_FAILURE = "snapstart_failure"
    FUNCTION_NOT_READY = "function_not_ready"
    RATE_LIMITED = "rate_limited"
    INVOKE_PERMISSION_LOST = "invoke_permission_lost"
    ASYNC_CONFIG_CHANGED = "async_config_changed"
    DEAD_LETTER_MISCONFIGURED = "dead_letter_misconfigured"
    ENVIRONMENT_UPDATE_REJECTED = "environment_update_rejected"
    CALLER_NOT_AUTHORIZED = "caller_not_authorized"
    INVOKE_REQUEST_REJECTED = "invoke_request_rejected"
    LAMBDA_SERVICE_ERROR = "lambda_service_error"
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
    RESTORE_HANDLER = "restore_handler"
    RESTORE_RUNTIME = "restore_runtime"
    RESTORE_LAYERS = "restore_layers"
    RESTORE_VPC_CONFIGURATION = "restore_vpc_configuration"
    RESTORE_INVOKE_PERMISSION = "restore_invoke_permission"
    RESTORE_EVENT_INVOKE_CONFIG = "restore_event_invoke_config"
    RESTORE_DEAD_LETTER_CONFIG = "restore_dead_letter_config"


# -- one record per fault type -------------------------------------------------------------------------
@dataclass(frozen=True)
class FaultRecord:
    """Everything the responder keeps about one fault type, in one place; the tables below are built from it."""

    fault_type: FaultType
    action: (
        ActionType | None
    )  # what fixes it (None: no action of the responder can: the proposal names it for a person)
    advice: str  # what fixes it, said to a person (the offline investigator's remediation advice)
    # What a verified evidence pointer (its tool, field and value) must show to support this fault (a regular
    # expression, case-insensitive); None: any verified pointer (a fault no action fixes changes nothing).
    signs: str | None = None
    # The function's own logs establish it: an error they report that names one of its catalogue entries is the
    # fault (no configuration can bear it out: AWS itself, a quota, the caller, the code). False: the configuration
    # must (a log line alone is only a gap).
    from_logs: bool = False


# In the order faults are fixed: access first (the role, then the key that decrypts its environment; nothing
# works without them), then capacity and delivery, network, the code that runs, the function's own limits, and
# where its failed events go; then the faults a person fixes.
FAULTS: tuple[FaultRecord, ...] = (
    FaultRecord(
        FaultType.PERMISSION_LOSS,
        ActionType.RESTORE_IAM_POLICY,
        "restore the execution role's policies from the baseline",
        r"accessdenied|access denied|not authorized|\brole\b|role\.|iam|polic",
    ),
    FaultRecord(
        FaultType.KMS_KEY_DISABLED,
        ActionType.ENABLE_KMS_KEY,
        "re-enable the customer-managed KMS key that encrypts the environment",
        r"kms|key_state",
    ),
    FaultRecord(
        FaultType.INVOKE_PERMISSION_LOST,
        ActionType.RESTORE_INVOKE_PERMISSION,
        "put back the function's resource-based policy statement its caller invokes it under, from the baseline",
        r"invoke_permissions|permission|polic|principal|invocations",
    ),
    FaultRecord(
        FaultType.DEPENDENCY_MISSING,
        ActionType.RESTORE_SECRET,
        "cancel the secret's scheduled deletion (RestoreSecret)",
        r"secret|parameter|\bssm\b|scheduled.?for.?deletion|deleted|\bexists\b|resourcenotfound|not.?found",
    ),
    FaultRecord(
        FaultType.THROTTLING,
        ActionType.UPDATE_CONCURRENCY,
        "restore the function's reserved concurrency from the baseline",
        r"concurren|throttl",
    ),
    FaultRecord(
        FaultType.EVENT_SOURCE_DISABLED,
        ActionType.ENABLE_EVENT_SOURCE_MAPPING,
        "re-enable the function's event source mapping, as in the baseline",
        r"event.?source|mapping",
    ),
    FaultRecord(
        FaultType.EVENT_SOURCE_MISCONFIGURED,
        ActionType.RESTORE_QUEUE_ATTRIBUTES,
        "restore the source queue's visibility timeout from the baseline",
        r"visibility|queue|receive|event.?source|mapping",
    ),
    FaultRecord(
        FaultType.NETWORK_BLOCK,
        ActionType.RESTORE_NETWORK_EGRESS,
        "restore the security group egress and NACL entries from the baseline",
        r"network|egress|nacl|security.?group|subnet|connect ?timeout|etimedout|unreach",
    ),
    FaultRecord(
        FaultType.VPC_MISCONFIGURED,
        ActionType.RESTORE_VPC_CONFIGURATION,
        "restore the function's VPC subnets and security groups from the baseline",
        r"subnet|security.?group|vpc|network|route|connect ?timeout|etimedout|invalid(subnet|securitygroup)",
    ),
    FaultRecord(
        FaultType.DEPLOYMENT_REGRESSION,
        ActionType.ROLLBACK_ALIAS,
        "roll the alias back to the baseline version",
        r"alias|function_version|code_sha256|\bversion\b|deploy",
    ),
    FaultRecord(
        FaultType.RUNTIME_MISCONFIGURED,
        ActionType.RESTORE_RUNTIME,
        "restore the function's runtime setting from the baseline",
        r"runtime|bootstrap|entrypoint",
    ),
    FaultRecord(
        FaultType.HANDLER_MISCONFIGURED,
        ActionType.RESTORE_HANDLER,
        "restore the function's handler setting from the baseline",
        r"handler",
    ),
    FaultRecord(
        FaultType.LAYERS_CHANGED,
        ActionType.RESTORE_LAYERS,
        "put the function's layers back to the baseline's layer versions",
        r"layer|extension|import|init_report|phase: init",
    ),
    FaultRecord(
        FaultType.TIMEOUT,
        ActionType.UPDATE_FUNCTION_CONFIGURATION,
        "restore the function timeout from the baseline",
        r"(?<!connect)timeout|timed out",
    ),
    FaultRecord(
        FaultType.MEMORY_EXHAUSTION,
        ActionType.UPDATE_FUNCTION_CONFIGURATION,
        "restore the function memory size from the baseline",
        r"memory|signal: killed",
    ),
    FaultRecord(
        FaultType.STORAGE_EXHAUSTION,
        ActionType.UPDATE_FUNCTION_CONFIGURATION,
        "restore the function's ephemeral storage (/tmp) from the baseline",
        r"ephemeral|storage|no space left|enospc|/tmp",
    ),
    # Where an asynchronously invoked function's failed events go: fixed last, as they change no invocation's fate.
    FaultRecord(
        FaultType.ASYNC_CONFIG_CHANGED,
        ActionType.RESTORE_EVENT_INVOKE_CONFIG,
        "restore the function's asynchronous invocation retries, maximum event age and on-failure destination from "
        "the baseline",
        r"async|retry|event_age|on_failure|destination|dropped",
    ),
    FaultRecord(
        FaultType.DEAD_LETTER_MISCONFIGURED,
        ActionType.RESTORE_DEAD_LETTER_CONFIG,
        "restore the function's dead-letter queue from the baseline",
        r"dead.?letter",
    ),
    # A key policy, another function's load, code that writes to its own trigger and a removed environment
    # variable's value (the baseline keeps names and digests only) are a person's changes.
    FaultRecord(
        FaultType.KMS_ACCESS_DENIED,
        None,
        "no automated action: a person restores the key policy statement or grant that lets the role decrypt",
    ),
    FaultRecord(
        FaultType.KMS_KEY_MISSING,
        None,
        "no automated action: the key is gone and cannot be restored; a person configures the function with a key "
        "that exists (or the AWS managed key) and redeploys what it encrypted",
    ),
    FaultRecord(
        FaultType.KMS_UNAVAILABLE,
        None,
        "no automated action: AWS KMS throttles or cannot reach the key; a person retries with backoff, spreads or "
        "caches the key's use, or asks for a higher KMS request quota",
        from_logs=True,
    ),
    FaultRecord(
        FaultType.EVENT_SOURCE_FAILING,
        None,
        "no automated action: a person fixes the function's error on the batches, or removes the records it cannot "
        "process (a dead-letter queue or on-failure destination; for streams, bisect failing batches and cap the "
        "retries and the record age)",
    ),
    FaultRecord(
        FaultType.KAFKA_ACCESS_FAILED,
        None,
        "no automated action: a person fixes what the Kafka mapping's result or state reason names: the cluster's "
        "ACLs, the sign-in credentials or certificates, the role's permissions, or the mapping's or function's "
        "configuration",
    ),
    FaultRecord(
        FaultType.FILE_SYSTEM_UNAVAILABLE,
        None,
        "no automated action: a person checks the EFS file system, its access point and mount targets, the "
        "network path to them (NFS, TCP port 2049) and the file system's throughput",
    ),
    FaultRecord(
        FaultType.SNAPSTART_FAILURE,
        None,
        "no automated action: a person makes the function's after-restore hooks finish within 10 seconds and "
        "checks what they reach over the network, then publishes a new version",
    ),
    FaultRecord(
        FaultType.FUNCTION_NOT_READY,
        None,
        "no automated action: Lambda is preparing the function version; a person waits until its state is Active, "
        "then invokes it again (callers retry)",
    ),
    FaultRecord(
        FaultType.RATE_LIMITED,
        None,
        "no automated action: the callers exceed a Lambda rate quota; a person has them retry after "
        "retryAfterSeconds with backoff, spreads the requests, or asks for a higher quota where it is adjustable",
    ),
    FaultRecord(
        FaultType.INVOKE_REQUEST_REJECTED,
        None,
        "no automated action: Lambda refuses the caller's request before the function runs; a person has the caller "
        "send a JSON body (content type application/json) within the invocation payload quota, or pass a large "
        "payload by reference (an S3 object)",
        from_logs=True,
    ),
    FaultRecord(
        FaultType.LAMBDA_SERVICE_ERROR,
        None,
        "no automated action: the Lambda service failed internally (ServiceException); callers retry with backoff "
        "(the AWS SDKs retry server errors), and a person checks the AWS Health Dashboard for Lambda in the Region "
        "and contacts AWS Support if it persists",
        from_logs=True,
    ),
    FaultRecord(
        FaultType.CALLER_NOT_AUTHORIZED,
        None,
        "no automated action: a person grants the caller lambda:InvokeFunction on the function (the AWSLambdaRole "
        "managed policy, or a statement naming the function's ARN); a caller in another account also needs a "
        "statement of the function's resource-based policy",
    ),
    FaultRecord(
        FaultType.ACCOUNT_CONCURRENCY_EXHAUSTED,
        None,
        "no automated action: a person reserves concurrency for this function, caps the function using the "
        "account's concurrency, or asks for a higher account limit",
    ),
    FaultRecord(
        FaultType.RECURSIVE_LOOP,
        None,
        "no automated action: a person fixes the code or configuration that sends the function's output to its "
        "own trigger",
    ),
    FaultRecord(
        FaultType.CONFIGURATION_DRIFT,
        None,
        "no automated action: a person restores the environment variable's value (the baseline keeps names and "
        "digests, never values)",
    ),
    FaultRecord(
        FaultType.ENVIRONMENT_UPDATE_REJECTED,
        None,
        "no automated action: a deploy's code went live while Lambda refused its environment update; a person keeps "
        "the variables within 4 KB (moves large values to Parameter Store or Secrets Manager, read at run time) and "
        "applies the update again, or deploys the previous code",
    ),
    # The deployment package itself (its files, its entry point): the baseline keeps no package to put back.
    FaultRecord(
        FaultType.CODE_PACKAGE_INVALID,
        None,
        "no automated action: a person fixes the deployment package (file permissions 644 and 755, the handler's file "
        "or bootstrap at its root) and deploys it again",
        from_logs=True,
    ),
    FaultRecord(
        FaultType.VPC_CAPACITY_EXHAUSTED,
        None,
        "no automated action: a person frees or adds IP addresses in the function's subnets (or adds subnets with "
        "free addresses to its VpcConfig), or requests a higher network interface quota for the VPC (Service "
        "Quotas); Lambda retries setting up the function's network interfaces on the next invocation",
    ),
    FaultRecord(
        FaultType.DNS_FAILURE,
        None,
        "no automated action: a person turns DNS resolution back on in the function's VPC (enableDnsSupport) or "
        "repairs the DNS servers its DHCP options name; when DNS is healthy, the code keeps fewer concurrent DNS "
        "lookups over TCP (Lambda supports 20) or uses a resolver library with EDNS",
    ),
    FaultRecord(
        FaultType.APPLICATION_ERROR,
        None,
        "fix the function's code (no automated action): a person must change and deploy it",
    ),
    FaultRecord(
        FaultType.DEPENDENCY_THROTTLING,
        None,
        "no automated action: a person checks the downstream resource's capacity, other writers to it, and the "
        "function's retries and backoff",
    ),
    FaultRecord(FaultType.UNKNOWN, None, ""),
)
FAULT_RECORDS: dict[FaultType, FaultRecord] = {record.fault_type: record for record in FAULTS}
# Order in which faults are fixed (those an action fixes).
FAULT_PRIORITY = [r.fault_type for r in FAULTS if r.action is not None]
ACTION_FOR_FAULT: dict[FaultType, ActionType] = {r.fault_type: a for r in FAULTS if (a := r.action) is not None}
# Faults no action of the responder can fix: the proposal names them for a person.
UNRESOLVABLE_FAULTS = {r.fault_type for r in FAULTS if r.action is None}
