"""Every stage: read the account around a Lambda function (read-only), and its recorded baseline and drift.

names                  which function a name or ARN means (refused before any AWS call), a role's name
errors                 the exceptions raised here (ASL error names), one line for an AWS failure
state                  the function's configuration as read: everything a baseline records and drift compares
role                   the execution role and its policy documents
keys                   the environment's KMS key, its state, and whether the role may decrypt with it
network                the security groups' egress rules and the subnets' network ACLs
event_sources          the event source mappings and their queues' settings
environment            what the environment names: values as digests, secrets by ARN
iam_policy             a small IAM policy evaluator (explicit Deny wins, else some Allow must match)
vetting                what a baseline may never bring back
baseline               the recorded known-good configuration: record, tag onboarded resources, load
drift                  differences against the baseline, and when each appeared
scope                  what the MCP tools may answer for: onboarded functions only
log_records            one log event read by its structure (runtime, SDK and platform errors)
log_window             a window of log events: errors grouped, invocations summed, repeats folded
compact                a tool result serialized without the fields left at their default
readings               what the signal tools share: GetMetricData, AWS times and figures
metrics                get_function_metrics: the function's metrics and the account's concurrency
changes                get_recent_changes: CloudTrail's writes, the function's versions and aliases
dependencies           get_dependencies: the state of what the function depends on
queue_dependencies     its event source mappings' queues and the other queues it uses
resource_dependencies  the secrets, parameters, keys and tables it uses
"""

from incident_responder.core.exports import lazy_exports

__all__ = [
    "AWS_ERRORS",
    "AccountConcurrency",
    "AliasInfo",
    "AliasState",
    "Baseline",
    "BaselineNotFoundError",
    "ChangeEvent",
    "Compact",
    "Dependencies",
    "Difference",
    "EndRecord",
    "ErrorRecord",
    "EventSourceMappingState",
    "FoldedEvent",
    "FoldedWindow",
    "FunctionConfiguration",
    "FunctionHistory",
    "FunctionMetrics",
    "InvalidFunctionNameError",
    "InvocationSummary",
    "KeyDependency",
    "KmsKeyState",
    "LAMBDA_NAME_PATTERN",
    "LogErrorSummary",
    "MappingDependency",
    "MetricSeries",
    "NetworkState",
    "NotRestorable",
    "ONBOARDED_TAG",
    "OnboardedScope",
    "OutOfScopeError",
    "ParameterDependency",
    "QueueDependency",
    "QueueState",
    "RecentChanges",
    "ReportRecord",
    "RoleState",
    "SecretDependency",
    "SecretState",
    "SecurityGroupEgress",
    "StartRecord",
    "SubnetNetworkAcl",
    "TableDependency",
    "TopFunction",
    "VersionInfo",
    "action_service",
    "administrator_policy",
    "aws_error_category",
    "baseline_table_name",
    "broad_grants",
    "classify_error_type",
    "configuration_from",
    "date_differences",
    "describe_error",
    "diff_configurations",
    "event_source_mapping_arn",
    "fold",
    "fold_key",
    "function_name_of",
    "is_allowed",
    "key_policy_lets_role_decrypt",
    "load_baseline",
    "managed_policy_documents",
    "normalize_message",
    "onboarded_arn",
    "parse_event",
    "queue_url_of",
    "read_aliases",
    "read_dependencies",
    "read_event_source_mappings",
    "read_function_configuration",
    "read_function_metrics",
    "read_kms_keys",
    "read_network",
    "read_queue_url",
    "read_queue_visibility_timeout",
    "read_recent_changes",
    "read_reserved_concurrency",
    "read_role",
    "read_secrets",
    "record_baseline",
    "refusals",
    "role_name_of",
    "role_policy_documents",
    "service_error_code",
    "statement_applies",
    "statement_services",
    "statements",
    "stream_version",
    "summarize",
    "tag_onboarded",
    "value_digest",
    "vet",
]
__getattr__ = lazy_exports(
    __name__,
    {
        "names": ["LAMBDA_NAME_PATTERN", "function_name_of", "role_name_of"],
        "errors": [
            "AWS_ERRORS",
            "BaselineNotFoundError",
            "InvalidFunctionNameError",
            "OutOfScopeError",
            "describe_error",
        ],
        "state": [
            "AliasState",
            "FunctionConfiguration",
            "configuration_from",
            "read_aliases",
            "read_function_configuration",
            "read_reserved_concurrency",
        ],
        "role": ["RoleState", "managed_policy_documents", "read_role", "role_policy_documents"],
        "keys": ["KmsKeyState", "key_policy_lets_role_decrypt", "read_kms_keys"],
        "network": ["NetworkState", "SecurityGroupEgress", "SubnetNetworkAcl", "read_network"],
        "event_sources": [
            "EventSourceMappingState",
            "queue_url_of",
            "read_event_source_mappings",
            "read_queue_url",
            "read_queue_visibility_timeout",
        ],
        "environment": ["SecretState", "read_secrets", "value_digest"],
        "iam_policy": ["action_service", "is_allowed", "statement_applies", "statement_services", "statements"],
        "vetting": ["NotRestorable", "administrator_policy", "broad_grants", "refusals", "vet"],
        "baseline": [
            "Baseline",
            "ONBOARDED_TAG",
            "baseline_table_name",
            "event_source_mapping_arn",
            "load_baseline",
            "onboarded_arn",
            "record_baseline",
            "tag_onboarded",
        ],
        "drift": ["Difference", "date_differences", "diff_configurations"],
        "scope": ["OnboardedScope"],
        "log_records": [
            "EndRecord",
            "ErrorRecord",
            "ReportRecord",
            "StartRecord",
            "aws_error_category",
            "classify_error_type",
            "parse_event",
            "service_error_code",
        ],
        "log_window": [
            "FoldedEvent",
            "FoldedWindow",
            "InvocationSummary",
            "LogErrorSummary",
            "fold",
            "fold_key",
            "normalize_message",
            "stream_version",
            "summarize",
        ],
        "compact": ["Compact"],
        "metrics": ["AccountConcurrency", "FunctionMetrics", "MetricSeries", "TopFunction", "read_function_metrics"],
        "changes": [
            "AliasInfo",
            "ChangeEvent",
            "FunctionHistory",
            "RecentChanges",
            "VersionInfo",
            "read_recent_changes",
        ],
        "dependencies": ["Dependencies", "read_dependencies"],
        "queue_dependencies": ["MappingDependency", "QueueDependency", "QueueState"],
        "resource_dependencies": ["KeyDependency", "ParameterDependency", "SecretDependency", "TableDependency"],
    },
)
