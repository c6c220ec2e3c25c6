"""The lab account's resources: the sample workload ``data-processor`` and what the responder needs.

``create_sample_account`` builds, in whatever account the clients reach (normally the lab):
an S3 bucket with an input object, the function's role with inline S3 and CloudWatch Logs policies,
its log group, a VPC path (subnet, security group, custom NACL), the function itself with reserved
concurrency, timeout and memory, the incidents SNS topic, the baseline table and the MCP API key.
"""

from __future__ import annotations

import io
import json
import os
import secrets
import zipfile
from dataclasses import dataclass

from incident_responder.aws import AwsClients
from incident_responder.baseline import baseline_table_name
from incident_responder.mcp_auth import DEFAULT_API_KEY_PARAMETER
from incident_responder.store import RecordStore

FUNCTION_NAME = "data-processor"
INCIDENT_TOPIC = "incident-alerts"
INPUT_KEY = "incoming/orders-0001.json"

# The sample function's source as deployed; the lab emulates its behaviour (see workload.py).
_FUNCTION_SOURCE = '''"""data-processor: reads an order batch from S3, transforms it, writes the result back."""
import json, os
import boto3
from botocore.config import Config

s3 = boto3.client("s3", config=Config(connect_timeout=5, retries={"max_attempts": 2}))

def handler(event, context):
    key = event.get("key", "incoming/orders-0001.json")
    body = s3.get_object(Bucket=os.environ["INPUT_BUCKET"], Key=key)["Body"].read()
    orders = [transform(o) for o in json.loads(body)]
    s3.put_object(Bucket=os.environ["INPUT_BUCKET"], Key=key.replace("incoming/", "processed/"),
                  Body=json.dumps(orders))
    return {"processed": len(orders)}

def transform(order):
    return {**order, "total": sum(i["price"] * i["qty"] for i in order["items"])}
'''


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
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("app.py", source)
    return buffer.getvalue()


def create_table(clients: AwsClients, logical_id: str, name: str) -> None:
    """A table with the keys template.yaml gives ``logical_id``, for labs that run without the stack."""
    from incident_responder.lab.stack import load_template

    ddb = clients.get("dynamodb")
    if name in ddb.list_tables()["TableNames"]:
        return
    props = load_template()["Resources"][logical_id]["Properties"]
    ddb.create_table(
        TableName=name,
        AttributeDefinitions=props["AttributeDefinitions"],
        KeySchema=props["KeySchema"],
        BillingMode="PAY_PER_REQUEST",
    )


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

    iam = clients.get("iam")
    role_arn = iam.create_role(
        RoleName=role_name,
        AssumeRolePolicyDocument=json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}
                ],
            }
        ),
    )["Role"]["Arn"]
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
        "cloudwatch-logs": {
            "Version": "2012-10-17",
            "Statement": [
                {
                    "Sid": "WriteOwnLogs",
                    "Effect": "Allow",
                    "Action": ["logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents"],
                    "Resource": f"arn:aws:logs:{region}:{account}:log-group:{log_group}:*",
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
    for name, document in policies.items():
        iam.put_role_policy(RoleName=role_name, PolicyName=name, PolicyDocument=json.dumps(document))

    logs = clients.get("logs")
    logs.create_log_group(logGroupName=log_group)

    ec2 = clients.get("ec2")
    vpc_id = ec2.create_vpc(CidrBlock="10.20.0.0/16")["Vpc"]["VpcId"]
    subnet_id = ec2.create_subnet(VpcId=vpc_id, CidrBlock="10.20.1.0/24")["Subnet"]["SubnetId"]
    group_id = ec2.create_security_group(
        GroupName=f"{function_name}-sg", Description=f"{function_name} egress", VpcId=vpc_id
    )["GroupId"]
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
    )["FunctionArn"]
    clients.get("lambda").put_function_concurrency(FunctionName=function_name, ReservedConcurrentExecutions=10)

    table = baseline_table_name()
    context_table = RecordStore.from_env().table
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
