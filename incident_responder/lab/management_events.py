"""SERVING the lab's trail: which calls CloudTrail records as management events, who made them, what they name."""

from __future__ import annotations

import os
import re
from typing import Any
from urllib.parse import urlsplit

from incident_responder.lab.environment import LAB_ACCOUNT_ID

# -- the trail: the management events CloudTrail would record ------------------------------------------------
# Who a call's access key id belongs to: the longest matching prefix wins, else DEFAULT_CALLER. A value is the
# principal after "arn:aws:iam::<account>:" ("user/NAME") or "arn:aws:sts::<account>:" ("assumed-role/ROLE/SESSION").
CALLERS: dict[str, str] = {"AKIACHAOS": "user/chaos"}
DEFAULT_CALLER = "user/lab-operator"  # the lab's own credentials (lab_environment): whoever runs the lab

# Reads, and the data events CloudTrail records only when a trail asks for them (and the lab never does).
_READ_PREFIXES = (
    "Get",
    "List",
    "Describe",
    "Lookup",
    "Receive",
    "Search",
    "Query",
    "Scan",
    "BatchGet",
    "Head",
    "Select",
    "Filter",
    "Test",
    "Simulate",
    "Validate",
    "Check",
    "Estimate",
    "Generate",
    "Encrypt",
    "Decrypt",
    "ReEncrypt",
    "Sign",
    "Verify",
    "Invoke",
    "Send",
    "Poll",
    "Assume",
    "Preview",
)
_DATA_OPERATIONS = frozenset(
    {
        "PutMetricData",
        "PutLogEvents",
        "CreateLogStream",
        "PutItem",
        "UpdateItem",
        "DeleteItem",
        "BatchWriteItem",
        "TransactWriteItems",
        "TransactGetItems",
        "ExecuteStatement",
        "BatchExecuteStatement",
        "ExecuteTransaction",
        "DeleteMessage",
        "DeleteMessageBatch",
        "ChangeMessageVisibility",
        "ChangeMessageVisibilityBatch",
        "Publish",
        "PublishBatch",
        "PutObject",
        "DeleteObject",
        "DeleteObjects",
        "CopyObject",
        "CreateMultipartUpload",
        "UploadPart",
        "UploadPartCopy",
        "CompleteMultipartUpload",
        "AbortMultipartUpload",
        "PutObjectTagging",
        "PutObjectAcl",
        "RestoreObject",
        "StartExecution",
        "StartSyncExecution",
        "StopExecution",
        "PutEvents",
        "PutRecord",
        "PutRecords",
        "PutTraceSegments",
        "PutTelemetryRecords",
    }
)


def is_management_write(service: str, operation: str) -> bool:
    """Whether CloudTrail records ``operation`` as a management write event (what the lab's trail keeps)."""
    return operation not in _DATA_OPERATIONS and not operation.startswith(_READ_PREFIXES)


# Lambda's events are named with the API version of their path, a few with a revision: UpdateFunctionConfiguration
# at /2015-03-31/... is UpdateFunctionConfiguration20150331v2.
_LAMBDA_V2 = frozenset({"UpdateFunctionConfiguration", "UpdateFunctionCode", "AddPermission", "RemovePermission"})
_API_VERSION_PATH = re.compile(r"^/(\d{4})-(\d\d)-(\d\d)/")

# A parameter naming a resource (in the request, or the response of a call that creates it) -> its CloudTrail type.
_RESOURCE_PARAMETERS = {
    "FunctionName": "AWS::Lambda::Function",
    "UUID": "AWS::Lambda::EventSourceMapping",
    "RoleName": "AWS::IAM::Role",
    "PolicyArn": "AWS::IAM::Policy",
    "UserName": "AWS::IAM::User",
    "KeyId": "AWS::KMS::Key",
    "QueueUrl": "AWS::SQS::Queue",
    "SecretId": "AWS::SecretsManager::Secret",
    "GroupId": "AWS::EC2::SecurityGroup",
    "NetworkAclId": "AWS::EC2::NetworkAcl",
    "SubnetId": "AWS::EC2::Subnet",
    "VpcId": "AWS::EC2::VPC",
    "TableName": "AWS::DynamoDB::Table",
    "logGroupName": "AWS::Logs::LogGroup",
    "TopicArn": "AWS::SNS::Topic",
    "stateMachineArn": "AWS::StepFunctions::StateMachine",
    "Bucket": "AWS::S3::Bucket",
}
_SERVICE_NAME_PARAMETERS = {"ssm": "AWS::SSM::Parameter", "secretsmanager": "AWS::SecretsManager::Secret"}


def _account_of(access_key_id: str) -> str:
    if account := os.environ.get("MOTO_ACCOUNT_ID"):
        return account
    return access_key_id if re.fullmatch(r"\d{12}", access_key_id or "") else LAB_ACCOUNT_ID


def _identity(access_key_id: str, account: str) -> tuple[dict[str, Any], str]:
    """CloudTrail's userIdentity for a call signed with ``access_key_id``, and the event's Username."""
    prefix = max((p for p in CALLERS if access_key_id.startswith(p)), key=len, default=None)
    principal = CALLERS[prefix] if prefix is not None else DEFAULT_CALLER
    if principal.startswith("assumed-role/"):
        _, role, session = (principal.split("/", 2) + [""])[:3]
        arn = f"arn:aws:sts::{account}:{principal}"
        identity = {
            "type": "AssumedRole",
            "principalId": f"AROA{account}:{session}",
            "arn": arn,
            "accountId": account,
            "accessKeyId": access_key_id,
            "sessionContext": {"sessionIssuer": {"type": "Role", "arn": f"arn:aws:iam::{account}:role/{role}"}},
        }
        return identity, session or role
    name = principal.rsplit("/", 1)[-1]
    identity = {
        "type": "IAMUser",
        "principalId": f"AIDA{account}{name.upper()}"[:21],
        "arn": f"arn:aws:iam::{account}:{principal}",
        "accountId": account,
        "accessKeyId": access_key_id,
        "userName": name,
    }
    return identity, name


def _queue_arn(url: str, region: str, account: str) -> str | None:
    parts = urlsplit(url)
    segments = [s for s in parts.path.split("/") if s]
    if len(segments) != 2:
        return None
    host = parts.hostname or ""
    found = re.match(r"^(?:sqs\.)?([a-z]{2}(?:-gov)?-[a-z]+-\d)\.", host)
    return f"arn:aws:sqs:{found.group(1) if found else region}:{segments[0] or account}:{segments[1]}"
