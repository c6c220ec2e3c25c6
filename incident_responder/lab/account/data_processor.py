"""SETUP: ``data-processor`` and the responder's own resources.

``create_sample_account`` builds, in whatever account the clients reach (normally the lab):
an S3 bucket with an input object, the function's role with inline S3, CloudWatch Logs and SQS policies,
its dead-letter queue and on-failure destination (S3 event notifications invoke it asynchronously),
its log group, a VPC path (a private subnet routed out through a NAT gateway, security group, custom NACL), the
function ``data-processor``
itself with reserved concurrency, timeout and memory, the incidents SNS topic, the baseline table
and the MCP API key.
"""

from __future__ import annotations

import json
import os
import secrets
from dataclasses import dataclass

from incident_responder.account.baseline import baseline_table_name
from incident_responder.core.aws import AwsClients
from incident_responder.core.settings import StoreSettings
from incident_responder.lab.account.resources import _create_role, _logs_policy, create_table
from incident_responder.lab.account.sources import (
    _FUNCTION_SOURCE,
    DATA_PROCESSOR_TMP_MB,
    FUNCTION_NAME,
    INCIDENT_TOPIC,
    INPUT_KEY,
    deployment_package,
)
from incident_responder.mcp_transport.auth import DEFAULT_API_KEY_PARAMETER


@dataclass(frozen=True)
class SampleAccount:
    function_name: str
    function_arn: str
    role_name: str
    bucket: str
    log_group: str
    vpc_id: str
    subnet_id: str
    security_group_id: str
    network_acl_id: str
    topic_arn: str
    baseline_table: str
    context_table: str
    artifacts_bucket: str
    api_key_parameter: str
    api_key: str


def _zip(source: str) -> bytes:
    return deployment_package("app.py", source)


def _route_out_through_nat(ec2, vpc_id: str, private_subnet_id: str) -> None:  # noqa: ANN001 (a boto3 client)
    """The way out of a private subnet that AWS documents for a VPC-connected function: a NAT gateway in a public
    subnet (whose route table leads to the internet gateway), and the private subnet's default route to it."""
    public = ec2.create_subnet(VpcId=vpc_id, CidrBlock="10.20.0.0/24")["Subnet"]["SubnetId"]
    igw = ec2.create_internet_gateway()["InternetGateway"]["InternetGatewayId"]
    ec2.attach_internet_gateway(InternetGatewayId=igw, VpcId=vpc_id)
    public_table = ec2.create_route_table(VpcId=vpc_id)["RouteTable"]["RouteTableId"]
    ec2.create_route(RouteTableId=public_table, DestinationCidrBlock="0.0.0.0/0", GatewayId=igw)
    ec2.associate_route_table(RouteTableId=public_table, SubnetId=public)
    allocation = ec2.allocate_address(Domain="vpc")["AllocationId"]
    nat = ec2.create_nat_gateway(SubnetId=public, AllocationId=allocation)["NatGateway"]["NatGatewayId"]
    private_table = ec2.create_route_table(VpcId=vpc_id)["RouteTable"]["RouteTableId"]
    ec2.create_route(RouteTableId=private_table, DestinationCidrBlock="0.0.0.0/0", NatGatewayId=nat)
    ec2.associate_route_table(RouteTableId=private_table, SubnetId=private_subnet_id)


def create_sample_account(
    clients: AwsClients,
    *,
    function_name: str = FUNCTION_NAME,
    api_key: str | None = None,
    environment: dict[str, str] | None = None,
    responder_resources: bool = True,
) -> SampleAccount:
    """Create the sample workload and the responder's own resources. Not idempotent: use a fresh lab."""
    account = clients.account_id()
    region = clients.region
    bucket = f"{function_name}-input-{account}"
    log_group = f"/aws/lambda/{function_name}"
    role_name = f"{function_name}-role"

    s3 = clients.get("s3")
    if region == "us-east-1":
        s3.create_bucket(Bucket=bucket)
    else:
        s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": region})
    orders = [{"order_id": f"o-{i}", "items": [{"price": 9.5, "qty": i + 1}]} for i in range(20)]
    s3.put_object(Bucket=bucket, Key=INPUT_KEY, Body=json.dumps(orders).encode())

    sqs = clients.get("sqs")
    dead_letter_arn, failure_destination_arn = (
        sqs.get_queue_attributes(QueueUrl=sqs.create_queue(QueueName=name)["QueueUrl"], AttributeNames=["QueueArn"])[
            "Attributes"
        ]["QueueArn"]
        for name in (f"{function_name}-dlq", f"{function_name}-failed-events")
    )
    policies = {
        "s3-access": {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Sid": "ReadInputWriteOutput",
                    "Effect": "Allow",
                    "Action": ["s3:GetObject", "s3:PutObject"],
                    "Resource": f"arn:aws:s3:::{bucket}/*",
                }
            ],
        },
        "cloudwatch-logs": _logs_policy(region, account, log_group),
        # Where asynchronous invocations that fail every attempt go: the dead-letter queue and the on-failure
        # destination (Lambda sends to both with the execution role's permissions).
        "failed-events": {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Sid": "SendFailedEvents",
                    "Effect": "Allow",
                    "Action": "sqs:SendMessage",
                    "Resource": [dead_letter_arn, failure_destination_arn],
                }
            ],
        },
        "vpc-access": {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Sid": "ManageEnis",
                    "Effect": "Allow",
                    "Action": [
                        "ec2:CreateNetworkInterface",
                        "ec2:DescribeNetworkInterfaces",
                        "ec2:DeleteNetworkInterface",
                    ],
                    "Resource": "*",
                }
            ],
        },
    }
    role_arn = _create_role(clients, role_name, policies)
    clients.get("logs").create_log_group(logGroupName=log_group)

    ec2 = clients.get("ec2")
    vpc_id = ec2.create_vpc(CidrBlock="10.20.0.0/16")["Vpc"]["VpcId"]
    subnet_id = ec2.create_subnet(VpcId=vpc_id, CidrBlock="10.20.1.0/24")["Subnet"]["SubnetId"]
    group_id = ec2.create_security_group(
        GroupName=f"{function_name}-sg", Description=f"{function_name} egress", VpcId=vpc_id
    )["GroupId"]
    _route_out_through_nat(ec2, vpc_id, subnet_id)
    # A new security group already allows all egress; the function needs HTTPS to S3.
    acl_id = ec2.create_network_acl(VpcId=vpc_id)["NetworkAcl"]["NetworkAclId"]
    for egress in (True, False):
        ec2.create_network_acl_entry(
            NetworkAclId=acl_id,
            RuleNumber=100,
            Protocol="-1",
            RuleAction="allow",
            Egress=egress,
            CidrBlock="0.0.0.0/0",
        )
    current = ec2.describe_network_acls(Filters=[{"Name": "association.subnet-id", "Values": [subnet_id]}])
    association = next(
        a["NetworkAclAssociationId"]
        for acl in current["NetworkAcls"]
        for a in acl["Associations"]
        if a["SubnetId"] == subnet_id
    )
    ec2.replace_network_acl_association(AssociationId=association, NetworkAclId=acl_id)

    variables = {"INPUT_BUCKET": bucket, **(environment or {})}
    function_arn = clients.get("lambda").create_function(
        FunctionName=function_name,
        Runtime="python3.12",
        Role=role_arn,
        Handler="app.handler",
        Code={"ZipFile": _zip(_FUNCTION_SOURCE)},
        Timeout=30,
        MemorySize=512,
        VpcConfig={"SubnetIds": [subnet_id], "SecurityGroupIds": [group_id]},
        Environment={"Variables": variables},
        EphemeralStorage={"Size": DATA_PROCESSOR_TMP_MB},
        DeadLetterConfig={"TargetArn": dead_letter_arn},
    )["FunctionArn"]
    clients.get("lambda").put_function_concurrency(FunctionName=function_name, ReservedConcurrentExecutions=10)
    # S3 event notifications invoke it asynchronously: retries, the events' maximum age and where failures go.
    clients.get("lambda").put_function_event_invoke_config(
        FunctionName=function_name,
        MaximumRetryAttempts=2,
        MaximumEventAgeInSeconds=3600,
        DestinationConfig={"OnFailure": {"Destination": failure_destination_arn}},
    )

    table = baseline_table_name()
    context_table = StoreSettings.current().incident_context_table
    artifacts = os.environ.get("ARTIFACTS_BUCKET") or f"incident-artifacts-{account}"
    topic_arn = f"arn:aws:sns:{region}:{account}:{INCIDENT_TOPIC}"
    if responder_resources:  # without the deployed stack, create what the responder itself uses
        topic_arn = clients.get("sns").create_topic(Name=INCIDENT_TOPIC)["TopicArn"]
        create_table(clients, "BaselineTable", table)
        create_table(clients, "IncidentContextTable", context_table)
        if region == "us-east-1":
            s3.create_bucket(Bucket=artifacts)
        else:
            s3.create_bucket(Bucket=artifacts, CreateBucketConfiguration={"LocationConstraint": region})
    key = api_key or secrets.token_urlsafe(24)
    clients.get("ssm").put_parameter(Name=DEFAULT_API_KEY_PARAMETER, Value=key, Type="SecureString", Overwrite=True)
    return SampleAccount(
        function_name=function_name,
        function_arn=function_arn,
        role_name=role_name,
        bucket=bucket,
        log_group=log_group,
        vpc_id=vpc_id,
        subnet_id=subnet_id,
        security_group_id=group_id,
        network_acl_id=acl_id,
        topic_arn=topic_arn,
        baseline_table=table,
        context_table=context_table,
        artifacts_bucket=artifacts,
        api_key_parameter=DEFAULT_API_KEY_PARAMETER,
        api_key=key,
    )
