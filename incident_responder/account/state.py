"""Read-only views of a Lambda function's configuration, IAM role and network path.

One implementation shared by the diagnostics tools, the baseline (which records these views),
the chaos faults (which change them) and the lab workload (which obeys them). Shapes stay close to
the AWS APIs so that a restore can hand them back unchanged.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any
from urllib.parse import unquote

from pydantic import BaseModel, Field

from incident_responder.core.aws import AwsClients
from incident_responder.core.contracts import QUALIFIER_RE, SECRET_ARN_PATTERN

FUNCTION_NAME_RE = r"[A-Za-z0-9_-]{1,64}"
FUNCTION_ARN_RE = (
    r"arn:aws[a-zA-Z-]*:lambda:[a-z]{2}(?:-gov)?-[a-z]+-\d:\d{12}:function:"
    + FUNCTION_NAME_RE
    + rf"(?::(?:{QUALIFIER_RE}))?"
)
# A function name or a function ARN, as Lambda accepts them; anything else never reaches AWS.
LAMBDA_NAME_PATTERN = rf"^(?:{FUNCTION_NAME_RE}|{FUNCTION_ARN_RE})$"


class InvalidFunctionNameError(ValueError):
    """A function name or ARN Lambda would refuse: refused here, before any AWS call."""


def function_name_of(name_or_arn: str) -> str:
    """The bare function name of a name or ARN.

    >>> function_name_of("arn:aws:lambda:us-east-1:123456789012:function:data-processor:prod")
    'data-processor'
    """
    # fullmatch: "$" in a pattern also matches before a trailing newline; no control character gets through.
    if not isinstance(name_or_arn, str) or not re.fullmatch(LAMBDA_NAME_PATTERN, name_or_arn):
        raise InvalidFunctionNameError(
            f"not a Lambda function name or ARN: {name_or_arn!r} (expected 1-64 of A-Z a-z 0-9 _ -, "
            "or arn:aws:lambda:REGION:ACCOUNT:function:NAME)"
        )
    if name_or_arn.startswith("arn:"):
        return name_or_arn.split(":")[6]
    return name_or_arn


def role_name_of(role_arn: str) -> str:
    """``arn:aws:iam::1:role/service-role/x`` -> ``x`` (IAM APIs take the name without path)."""
    return role_arn.rsplit("/", 1)[-1]


class RoleState(BaseModel):
    role_name: str
    role_arn: str
    attached_policy_arns: list[str] = Field(default_factory=list)
    inline_policies: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="inline policy name -> full policy document"
    )


class SecurityGroupEgress(BaseModel):
    group_id: str
    group_name: str | None = None
    vpc_id: str | None = None
    egress_rules: list[dict[str, Any]] = Field(
        default_factory=list, description="IpPermissionsEgress as EC2 returns them"
    )


class SubnetNetworkAcl(BaseModel):
    subnet_id: str
    network_acl_id: str | None = None
    is_default_acl: bool | None = None
    entries: list[dict[str, Any]] = Field(
        default_factory=list, description="NACL entries (ingress and egress), ordered by rule number"
    )


class NetworkState(BaseModel):
    in_vpc: bool
    vpc_id: str | None = None
    security_groups: list[SecurityGroupEgress] = Field(default_factory=list)
    subnets: list[SubnetNetworkAcl] = Field(default_factory=list)


class AliasState(BaseModel):
    """An alias and the published version it routes to (versions are immutable: the code hash names the code)."""

    name: str
    function_version: str
    code_sha256: str | None = Field(default=None, description="CodeSha256 of the version the alias points to")


class KmsKeyState(BaseModel):
    """A customer-managed key the function depends on, and whether KMS will use it."""

    key_arn: str
    key_state: str | None = Field(default=None, description="KMS KeyState: Enabled, Disabled, PendingDeletion, ...")
    used_for: str = Field(default="environment", description="what the function uses the key for")
    role_may_decrypt: bool | None = Field(
        default=None,
        description="whether the key policy (directly, or through the account and the role's own policies) lets "
        "the execution role decrypt with it; None: the key policy could not be read",
    )


class EventSourceMappingState(BaseModel):
    """A queue or stream that invokes the function (an event source mapping)."""

    uuid: str
    event_source_arn: str
    state: str | None = Field(default=None, description="Enabled, Disabled (or Enabling, Disabling, Updating, ...)")
    batch_size: int | None = None
    queue_visibility_timeout: int | None = Field(
        default=None, description="an SQS source's VisibilityTimeout in seconds (None for other sources)"
    )
    dead_letter_queue_arn: str | None = Field(
        default=None, description="where an SQS source sends what failed maxReceiveCount times (its RedrivePolicy)"
    )


class SecretState(BaseModel):
    """A Secrets Manager secret the function's environment names (by ARN)."""

    secret_arn: str
    variable: str = Field(description="the environment variable whose value names it")
    exists: bool = True
    deleted_date: str | None = Field(default=None, description="set while the secret is scheduled for deletion")


class FunctionConfiguration(BaseModel):
    """What the baseline records and drift compares: everything a fault in this project can change."""

    function_name: str
    role: RoleState
    reserved_concurrency: int | None = Field(description="None means no reservation (unreserved pool)")
    timeout: int
    memory_size: int
    network: NetworkState
    # Recorded for baselines taken since these were added; an older baseline compares them as empty.
    aliases: list[AliasState] = Field(default_factory=list)
    kms_keys: list[KmsKeyState] = Field(default_factory=list)
    event_source_mappings: list[EventSourceMappingState] = Field(default_factory=list)
    environment: dict[str, str] = Field(
        default_factory=dict,
        description="environment variable names with a digest of each value (never the value itself)",
    )
    ephemeral_storage: int | None = Field(default=None, description="the /tmp size in MB (EphemeralStorage.Size)")
    secrets: list[SecretState] = Field(default_factory=list)


def read_role(clients: AwsClients, role_arn: str) -> RoleState:
    iam = clients.get("iam")
    name = role_name_of(role_arn)
    attached: list[str] = []
    for page in iam.get_paginator("list_attached_role_policies").paginate(RoleName=name):
        attached.extend(p["PolicyArn"] for p in page["AttachedPolicies"])
    inline: dict[str, dict[str, Any]] = {}
    for page in iam.get_paginator("list_role_policies").paginate(RoleName=name):
        for policy_name in page["PolicyNames"]:
            doc = iam.get_role_policy(RoleName=name, PolicyName=policy_name)["PolicyDocument"]
            inline[policy_name] = doc  # boto3 already URL-decodes and parses the document
    return RoleState(role_name=name, role_arn=role_arn, attached_policy_arns=sorted(attached), inline_policies=inline)


def managed_policy_documents(
    clients: AwsClients, policy_arns: list[str], *, skip_unreadable: bool = False
) -> dict[str, dict[str, Any]]:
    """Default-version documents of attached managed policies, by ARN (``skip_unreadable``: a policy that cannot
    be read is left out instead of raising)."""
    from botocore.exceptions import BotoCoreError, ClientError

    iam = clients.get("iam")
    docs = {}
    for arn in policy_arns:
        try:
            version = iam.get_policy(PolicyArn=arn)["Policy"]["DefaultVersionId"]
            document = iam.get_policy_version(PolicyArn=arn, VersionId=version)["PolicyVersion"]["Document"]
        except (ClientError, BotoCoreError):
            if skip_unreadable:
                continue
            raise
        docs[arn] = json.loads(unquote(document)) if isinstance(document, str) else document
    return docs


def read_reserved_concurrency(clients: AwsClients, function_name: str) -> int | None:
    # GetFunction omits Concurrency when the reservation is 0 in some implementations; this API does not.
    response = clients.get("lambda").get_function_concurrency(FunctionName=function_name)
    return response.get("ReservedConcurrentExecutions")


def _sorted_entries(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(entries, key=lambda e: (bool(e.get("Egress")), int(e.get("RuleNumber", 0))))


def read_network(clients: AwsClients, vpc_config: dict[str, Any] | None) -> NetworkState:
    subnet_ids = list((vpc_config or {}).get("SubnetIds") or [])
    group_ids = list((vpc_config or {}).get("SecurityGroupIds") or [])
    if not subnet_ids and not group_ids:
        return NetworkState(in_vpc=False)
    ec2 = clients.get("ec2")
    groups = []
    vpc_id = None
    if group_ids:
        for group in ec2.describe_security_groups(GroupIds=group_ids)["SecurityGroups"]:
            vpc_id = vpc_id or group.get("VpcId")
            groups.append(
                SecurityGroupEgress(
                    group_id=group["GroupId"],
                    group_name=group.get("GroupName"),
                    vpc_id=group.get("VpcId"),
                    egress_rules=group.get("IpPermissionsEgress", []),
                )
            )
    subnets = []
    if subnet_ids:
        described = {s["SubnetId"]: s for s in ec2.describe_subnets(SubnetIds=subnet_ids)["Subnets"]}
        acls = ec2.describe_network_acls(Filters=[{"Name": "association.subnet-id", "Values": subnet_ids}])
        acl_by_subnet = {}
        for acl in acls["NetworkAcls"]:
            for assoc in acl.get("Associations", []):
                acl_by_subnet[assoc["SubnetId"]] = acl
        for subnet_id in subnet_ids:
            subnet_vpc = described.get(subnet_id, {}).get("VpcId")
            vpc_id = vpc_id or subnet_vpc
            acl = acl_by_subnet.get(subnet_id)
            if acl is None and subnet_vpc:
                # A subnet without an explicit association uses its VPC's default NACL.
                defaults = ec2.describe_network_acls(
                    Filters=[{"Name": "vpc-id", "Values": [subnet_vpc]}, {"Name": "default", "Values": ["true"]}]
                )["NetworkAcls"]
                acl = defaults[0] if defaults else None
            subnets.append(
                SubnetNetworkAcl(
                    subnet_id=subnet_id,
                    network_acl_id=acl["NetworkAclId"] if acl else None,
                    is_default_acl=acl.get("IsDefault") if acl else None,
                    entries=_sorted_entries(acl.get("Entries", [])) if acl else [],
                )
            )
    return NetworkState(in_vpc=True, vpc_id=vpc_id, security_groups=groups, subnets=subnets)


def read_aliases(clients: AwsClients, function_name: str) -> list[AliasState]:
    """The function's aliases with the code hash of the version each routes to (weighted routing not followed)."""
    lam = clients.get("lambda")
    aliases = []
    hashes: dict[str, str | None] = {}
    for page in lam.get_paginator("list_aliases").paginate(FunctionName=function_name):
        for alias in page["Aliases"]:
            version = alias["FunctionVersion"]
            if version not in hashes:
                config = lam.get_function_configuration(FunctionName=function_name, Qualifier=version)
                hashes[version] = config.get("CodeSha256")
            aliases.append(AliasState(name=alias["Name"], function_version=version, code_sha256=hashes[version]))
    return sorted(aliases, key=lambda a: a.name)


def read_kms_keys(clients: AwsClients, config: dict[str, Any], role: RoleState | None = None) -> list[KmsKeyState]:
    """The customer-managed key encrypting the function's environment, with its state (none: AWS-owned key)
    and, given the role, whether the role may decrypt with it."""
    arn = config.get("KMSKeyArn")
    if not arn:
        return []
    kms = clients.get("kms")
    metadata = kms.describe_key(KeyId=arn)["KeyMetadata"]
    may_decrypt = None
    if role is not None:
        from botocore.exceptions import ClientError

        try:
            policy = json.loads(kms.get_key_policy(KeyId=metadata.get("KeyId", arn), PolicyName="default")["Policy"])
        except (ClientError, ValueError):
            policy = None
        if policy is not None:
            may_decrypt = key_policy_lets_role_decrypt(
                policy, metadata.get("Arn", arn), role, role_policy_documents(clients, role)
            )
    return [
        KmsKeyState(key_arn=metadata.get("Arn", arn), key_state=metadata.get("KeyState"), role_may_decrypt=may_decrypt)
    ]


def role_policy_documents(clients: AwsClients, role: RoleState) -> list[dict[str, Any]]:
    """The role's inline documents and the attached managed ones that can be read."""
    return [
        *role.inline_policies.values(),
        *managed_policy_documents(clients, role.attached_policy_arns, skip_unreadable=True).values(),
    ]


def _principals(statement: dict[str, Any]) -> list[str]:
    principal = statement.get("Principal")
    if principal == "*":
        return ["*"]
    if isinstance(principal, dict):
        value = principal.get("AWS", [])
        return [value] if isinstance(value, str) else list(value)
    return []


def key_policy_lets_role_decrypt(
    policy: dict[str, Any], key_arn: str, role: RoleState, role_documents: list[dict[str, Any]]
) -> bool:
    """Whether ``kms:Decrypt`` on the key is allowed for the role, as KMS decides it without conditions: an
    explicit deny (key policy or the role's) refuses; the key policy allows the role itself, or allows the
    account (its root), which delegates to the role's own policies."""
    from incident_responder.account.iam_policy import is_allowed, statement_applies, statements

    account = key_arn.split(":")[4]
    role_principals = {role.role_arn, "*"}
    account_principals = {account, f"arn:aws:iam::{account}:root", f"arn:aws-cn:iam::{account}:root"}
    to_role = to_account = False
    for statement in statements(policy):
        if not statement_applies({**statement, "Resource": "*"}, "kms:Decrypt", key_arn):
            continue
        principals = set(_principals(statement))
        if statement.get("Effect") == "Deny" and principals & (role_principals | account_principals):
            return False
        if statement.get("Effect") == "Allow":
            to_role = to_role or bool(principals & role_principals)
            to_account = to_account or bool(principals & account_principals)
    denied_by_role = any(
        s.get("Effect") == "Deny" and statement_applies(s, "kms:Decrypt", key_arn)
        for d in role_documents
        for s in statements(d)
    )
    if denied_by_role:
        return False
    return to_role or (to_account and is_allowed(role_documents, "kms:Decrypt", key_arn))


def read_event_source_mappings(clients: AwsClients, function_name: str) -> list[EventSourceMappingState]:
    lam = clients.get("lambda")
    mappings = []
    for page in lam.get_paginator("list_event_source_mappings").paginate(FunctionName=function_name):
        for esm in page["EventSourceMappings"]:
            source = esm.get("EventSourceArn", "")
            mappings.append(
                EventSourceMappingState(
                    uuid=esm["UUID"],
                    event_source_arn=source,
                    state=esm.get("State"),
                    batch_size=esm.get("BatchSize"),
                    **_queue_settings(clients, source),
                )
            )
    return sorted(mappings, key=lambda m: m.uuid)


def queue_url_of(queue_arn: str) -> str:
    """``arn:aws:sqs:REGION:ACCOUNT:NAME`` -> the queue URL SQS takes (the standard endpoint's form)."""
    _, partition, _, region, account, name = queue_arn.split(":", 5)
    suffix = "amazonaws.com.cn" if partition == "aws-cn" else "amazonaws.com"
    return f"https://sqs.{region}.{suffix}/{account}/{name}"


def read_queue_url(clients: AwsClients, queue_arn: str) -> str:
    """The URL SQS gives the queue of this ARN (an endpoint's own form: the lab's is not AWS's)."""
    _, _, _, _, account, name = queue_arn.split(":", 5)
    return clients.get("sqs").get_queue_url(QueueName=name, QueueOwnerAWSAccountId=account)["QueueUrl"]


def _queue_attributes(clients: AwsClients, source_arn: str) -> dict[str, str]:
    if ":sqs:" not in source_arn:
        return {}
    from botocore.exceptions import ClientError

    try:
        return (
            clients.get("sqs")
            .get_queue_attributes(
                QueueUrl=read_queue_url(clients, source_arn), AttributeNames=["VisibilityTimeout", "RedrivePolicy"]
            )
            .get("Attributes", {})
        )
    except ClientError:
        return {}


def _queue_settings(clients: AwsClients, source_arn: str) -> dict[str, Any]:
    """An SQS source's VisibilityTimeout and dead-letter queue (None for other sources, or an unreadable queue)."""
    attributes = _queue_attributes(clients, source_arn)
    try:
        redrive = json.loads(attributes.get("RedrivePolicy") or "{}")
    except ValueError:
        redrive = {}
    visibility = attributes.get("VisibilityTimeout")
    return {
        "queue_visibility_timeout": int(visibility) if visibility is not None else None,
        "dead_letter_queue_arn": redrive.get("deadLetterTargetArn") if isinstance(redrive, dict) else None,
    }


def read_queue_visibility_timeout(clients: AwsClients, source_arn: str) -> int | None:
    """An SQS source's VisibilityTimeout (None for other sources, or a queue that cannot be read)."""
    return _queue_settings(clients, source_arn)["queue_visibility_timeout"]


SECRET_ARN_IN_TEXT = re.compile(SECRET_ARN_PATTERN)


def value_digest(value: str) -> str:
    """What the baseline keeps of an environment value: enough to tell it changed, never the value."""
    return "sha256:" + hashlib.sha256(value.encode()).hexdigest()[:16]


def read_secrets(clients: AwsClients, variables: dict[str, str]) -> list[SecretState]:
    """The Secrets Manager secrets the environment names by ARN, with whether they exist and any deletion date."""
    from botocore.exceptions import ClientError

    out = []
    for name, value in sorted(variables.items()):
        if not SECRET_ARN_IN_TEXT.match(value or ""):
            continue
        try:
            described = clients.get("secretsmanager").describe_secret(SecretId=value)
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code")
            if code in ("AccessDeniedException", "AccessDenied"):
                continue  # not one the reader may see (the remediate role reads onboarded, tagged secrets only)
            if code != "ResourceNotFoundException":
                raise
            out.append(SecretState(secret_arn=value, variable=name, exists=False))
            continue
        deleted = described.get("DeletedDate")
        out.append(
            SecretState(
                secret_arn=described.get("ARN", value),
                variable=name,
                deleted_date=deleted.isoformat() if hasattr(deleted, "isoformat") else deleted,
            )
        )
    return out


def read_function_configuration(clients: AwsClients, name_or_arn: str) -> FunctionConfiguration:
    """The current values of everything the baseline records, read fresh from the account."""
    name = function_name_of(name_or_arn)
    return configuration_from(clients, clients.get("lambda").get_function_configuration(FunctionName=name))


def configuration_from(clients: AwsClients, config: dict[str, Any]) -> FunctionConfiguration:
    """:class:`FunctionConfiguration` from a GetFunctionConfiguration response (role, concurrency and network read)."""
    name = config["FunctionName"]
    role = read_role(clients, config["Role"])
    variables = (config.get("Environment") or {}).get("Variables") or {}
    return FunctionConfiguration(
        function_name=name,
        role=role,
        reserved_concurrency=read_reserved_concurrency(clients, name),
        timeout=config["Timeout"],
        memory_size=config["MemorySize"],
        network=read_network(clients, config.get("VpcConfig")),
        aliases=read_aliases(clients, name),
        kms_keys=read_kms_keys(clients, config, role),
        event_source_mappings=read_event_source_mappings(clients, name),
        environment={k: value_digest(v) for k, v in sorted(variables.items())},
        ephemeral_storage=(config.get("EphemeralStorage") or {}).get("Size"),
        secrets=read_secrets(clients, variables),
    )
