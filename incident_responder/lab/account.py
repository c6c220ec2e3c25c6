"""The lab account's resources: the sample workloads and what the responder needs.

``create_sample_account`` builds, in whatever account the clients reach (normally the lab):
an S3 bucket with an input object, the function's role with inline S3 and CloudWatch Logs policies,
its log group, a VPC path (subnet, security group, custom NACL), the function ``data-processor``
itself with reserved concurrency, timeout and memory, the incidents SNS topic, the baseline table
and the MCP API key.

``create_orders_api`` adds ``orders-api`` (Node.js, invoked through its alias ``live`` with published
versions, a PROVISIONED DynamoDB table, its environment encrypted with a customer-managed KMS key) and
``create_queue_consumer`` adds ``queue-consumer`` (Python, fed by an SQS queue with a dead-letter queue
through an event source mapping). Each function's deployed source is below; the lab emulates its
behaviour (workload.py). Packages are zipped with fixed timestamps, so a source always has the same
CodeSha256.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import secrets
import zipfile
from dataclasses import dataclass
from typing import Any

from incident_responder.account.baseline import baseline_table_name
from incident_responder.core.aws import AwsClients
from incident_responder.mcp_transport.auth import DEFAULT_API_KEY_PARAMETER
from incident_responder.state.store import RecordStore

FUNCTION_NAME = "data-processor"
ORDERS_API = "orders-api"
QUEUE_CONSUMER = "queue-consumer"
SAMPLE_WORKLOADS = (FUNCTION_NAME, ORDERS_API, QUEUE_CONSUMER)
INCIDENT_TOPIC = "incident-alerts"
INPUT_KEY = "incoming/orders-0001.json"
# data-processor's /tmp: it stages its output there (about 700 MB at peak, workload.py).
DATA_PROCESSOR_TMP_MB = 1024

# The sample function's source as deployed; the lab emulates its behaviour (see workload.py).
_FUNCTION_SOURCE = '''"""data-processor: reads an order batch from S3, transforms it, writes the result back."""
import json, os
import boto3
from botocore.config import Config

s3 = boto3.client("s3", config=Config(connect_timeout=5, retries={"max_attempts": 2}))
BUCKET = os.environ["INPUT_BUCKET"]

def handler(event, context):
    key = event.get("key", "incoming/orders-0001.json")
    body = s3.get_object(Bucket=os.environ["INPUT_BUCKET"], Key=key)["Body"].read()
    orders = [transform(o) for o in json.loads(body)]
    with open("/tmp/processed.json", "w") as out:  # staged on /tmp: the batch is large
        json.dump(orders, out)
    s3.upload_file("/tmp/processed.json", BUCKET, key.replace("incoming/", "processed/"))
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


# orders-api as deployed (index.mjs, an ES module; the AWS SDK v3 is part of the nodejs20.x runtime).
ORDERS_API_SOURCE = """// orders-api: stores an order in DynamoDB (invoked through the alias "live").
import { DynamoDBClient, GetItemCommand, PutItemCommand } from "@aws-sdk/client-dynamodb";
import { SecretsManagerClient, GetSecretValueCommand } from "@aws-sdk/client-secrets-manager";

const ddb = new DynamoDBClient({});
const secrets = new SecretsManagerClient({});
const TABLE = process.env.TABLE_NAME;

export const handler = async (event) => {
  const order = typeof event.body === "string" ? JSON.parse(event.body) : event;
  console.log(`Creating order ${order.orderId} (${order.items.length} items)`);
  const paymentKey = await secrets.send(new GetSecretValueCommand({ SecretId: process.env.PAYMENT_SECRET_ARN }));
  const existing = await ddb.send(new GetItemCommand({ TableName: TABLE, Key: { order_id: { S: order.orderId } } }));
  if (existing.Item) {
    return { statusCode: 200, body: JSON.stringify({ orderId: order.orderId, duplicate: true }) };
  }
  const total = order.items.reduce((sum, item) => sum + item.price * item.qty, 0);
  await ddb.send(
    new PutItemCommand({
      TableName: TABLE,
      Item: { order_id: { S: order.orderId }, total: { N: String(total) }, status: { S: "NEW" } },
    }),
  );
  console.log(`Order ${order.orderId} stored`);
  return { statusCode: 201, body: JSON.stringify({ orderId: order.orderId, total }) };
};
"""

# queue-consumer as deployed (app.py): one invocation per batch of SQS messages.
QUEUE_CONSUMER_SOURCE = '''"""queue-consumer: processes order events from its SQS queue, a batch per invocation."""
import json
import logging
import os

import boto3

logger = logging.getLogger()
logger.setLevel(logging.INFO)
sqs = boto3.client("sqs")


def handler(event, context):
    records = event["Records"]
    logger.info("Received %d messages", len(records))
    for record in records:
        order = json.loads(record["body"])
        sqs.send_message(QueueUrl=os.environ["RESULTS_QUEUE_URL"], MessageBody=json.dumps(process(order)))
    logger.info("Processed %d orders", len(records))
    return {"batchItemFailures": []}


def process(order):
    total = sum(item["price"] * item["qty"] for item in order["items"])
    return {"order_id": order["order_id"], "total": total}
'''


def deployment_package(filename: str, source: str) -> bytes:
    """A zip with one file and a fixed timestamp: the same source always gives the same CodeSha256."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        info = zipfile.ZipInfo(filename, date_time=(2026, 1, 1, 0, 0, 0))
        info.external_attr = 0o644 << 16
        archive.writestr(info, source)
    return buffer.getvalue()


def code_sha256(package: bytes) -> str:
    """Lambda's CodeSha256: the base64 SHA-256 of the deployment package."""
    return base64.b64encode(hashlib.sha256(package).digest()).decode()


# The sources the lab ships, by the CodeSha256 of their package: (handler file, source).
SHIPPED_SOURCES = {
    code_sha256(deployment_package(filename, source)): (filename, source)
    for filename, source in (
        ("app.py", _FUNCTION_SOURCE),
        ("index.mjs", ORDERS_API_SOURCE),
        ("app.py", QUEUE_CONSUMER_SOURCE),
    )
}


def _zip(source: str) -> bytes:
    return deployment_package("app.py", source)


def _logs_policy(region: str, account: str, log_group: str) -> dict[str, Any]:
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "WriteOwnLogs",
                "Effect": "Allow",
                "Action": ["logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents"],
                "Resource": f"arn:aws:logs:{region}:{account}:log-group:{log_group}:*",
            }
        ],
    }


def _create_role(clients: AwsClients, role_name: str, policies: dict[str, dict[str, Any]]) -> str:
    """A Lambda execution role with ``policies`` inline; its ARN."""
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
    for name, document in policies.items():
        iam.put_role_policy(RoleName=role_name, PolicyName=name, PolicyDocument=json.dumps(document))
    return role_arn


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


def create_function_alarms(
    clients: AwsClients, function: str, actions: list[str] | None = None, threshold: float = 1.0
) -> list[str]:
    """The alarms a user gives a function: ``<function>-errors`` and ``<function>-throttles`` (Sum over a minute at
    or above ``threshold``), notifying ``actions``; the names the lab's emulated notifications carry."""
    cloudwatch = clients.get("cloudwatch")
    names = []
    for metric in ("Errors", "Throttles"):
        names.append(f"{function}-{metric.lower()}")
        cloudwatch.put_metric_alarm(
            AlarmName=names[-1],
            AlarmDescription=f"{function} {metric} alarm",
            Namespace="AWS/Lambda",
            MetricName=metric,
            Dimensions=[{"Name": "FunctionName", "Value": function}],
            Statistic="Sum",
            Period=60,
            EvaluationPeriods=1,
            Threshold=threshold,
            ComparisonOperator="GreaterThanOrEqualToThreshold",
            TreatMissingData="notBreaching",
            AlarmActions=actions or [],
        )
    return names


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


@dataclass(frozen=True)
class OrdersApiResources:
    function_name: str
    function_arn: str
    alias_name: str
    alias_arn: str
    version: str
    role_name: str
    table_name: str
    table_arn: str
    kms_key_id: str
    kms_key_arn: str
    kms_alias: str
    log_group: str
    secret_arn: str = ""


@dataclass(frozen=True)
class QueueConsumerResources:
    function_name: str
    function_arn: str
    role_name: str
    queue_name: str
    queue_url: str
    queue_arn: str
    dead_letter_queue_name: str
    dead_letter_queue_url: str
    dead_letter_queue_arn: str
    event_source_mapping_uuid: str
    batch_size: int
    log_group: str


def _wait_updated(clients: AwsClients, function_name: str) -> None:
    # Real Lambda applies code and configuration asynchronously; publishing waits for it.
    clients.get("lambda").get_waiter("function_updated").wait(
        FunctionName=function_name, WaiterConfig={"Delay": 2, "MaxAttempts": 60}
    )


def create_orders_api(
    clients: AwsClients, *, function_name: str = ORDERS_API, environment: dict[str, str] | None = None
) -> OrdersApiResources:
    """``orders-api``: Node.js behind the alias ``live`` (version 1), a PROVISIONED table, a KMS-encrypted
    environment, reserved concurrency 20, no VPC. Not idempotent: use a fresh lab."""
    account = clients.account_id()
    region = clients.region
    table = f"{function_name}-orders"
    role_name = f"{function_name}-role"
    log_group = f"/aws/lambda/{function_name}"

    ddb = clients.get("dynamodb")
    table_arn = ddb.create_table(
        TableName=table,
        AttributeDefinitions=[{"AttributeName": "order_id", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "order_id", "KeyType": "HASH"}],
        BillingMode="PROVISIONED",
        ProvisionedThroughput={"ReadCapacityUnits": 5, "WriteCapacityUnits": 5},
    )["TableDescription"]["TableArn"]

    kms = clients.get("kms")
    key = kms.create_key(Description=f"{function_name} environment variables", KeyUsage="ENCRYPT_DECRYPT")[
        "KeyMetadata"
    ]
    kms_alias = f"alias/{function_name}-env"
    kms.create_alias(AliasName=kms_alias, TargetKeyId=key["KeyId"])
    secret_arn = clients.get("secretsmanager").create_secret(
        Name=f"{function_name}/payment-key", SecretString=secrets.token_urlsafe(24)
    )["ARN"]

    role_arn = _create_role(
        clients,
        role_name,
        {
            "dynamodb-access": {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Sid": "ReadWriteOrders",
                        "Effect": "Allow",
                        "Action": ["dynamodb:GetItem", "dynamodb:PutItem"],
                        "Resource": table_arn,
                    }
                ],
            },
            "payment-key": {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Sid": "ReadPaymentKey",
                        "Effect": "Allow",
                        "Action": "secretsmanager:GetSecretValue",
                        "Resource": secret_arn,
                    }
                ],
            },
            "cloudwatch-logs": _logs_policy(region, account, log_group),
        },
    )
    clients.get("logs").create_log_group(logGroupName=log_group)
    # The key policy lets the account administer the key and the function's role decrypt its environment.
    kms.put_key_policy(
        KeyId=key["KeyId"],
        PolicyName="default",
        Policy=json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Sid": "EnableIAMUserPermissions",
                        "Effect": "Allow",
                        "Principal": {"AWS": f"arn:aws:iam::{account}:root"},
                        "Action": "kms:*",
                        "Resource": "*",
                    },
                    {
                        "Sid": "AllowFunctionRoleDecrypt",
                        "Effect": "Allow",
                        "Principal": {"AWS": role_arn},
                        "Action": "kms:Decrypt",
                        "Resource": "*",
                    },
                ],
            }
        ),
    )

    lam = clients.get("lambda")
    function_arn = lam.create_function(
        FunctionName=function_name,
        Runtime="nodejs20.x",
        Role=role_arn,
        Handler="index.handler",
        Code={"ZipFile": deployment_package("index.mjs", ORDERS_API_SOURCE)},
        Timeout=10,
        MemorySize=256,
        KMSKeyArn=key["Arn"],
        Environment={"Variables": {"TABLE_NAME": table, "PAYMENT_SECRET_ARN": secret_arn, **(environment or {})}},
    )["FunctionArn"]
    lam.put_function_concurrency(FunctionName=function_name, ReservedConcurrentExecutions=20)
    _wait_updated(clients, function_name)
    version = lam.publish_version(FunctionName=function_name, Description="initial release")["Version"]
    alias_arn = lam.create_alias(FunctionName=function_name, Name="live", FunctionVersion=version)["AliasArn"]
    return OrdersApiResources(
        function_name=function_name,
        function_arn=function_arn,
        alias_name="live",
        alias_arn=alias_arn,
        version=version,
        role_name=role_name,
        table_name=table,
        table_arn=table_arn,
        kms_key_id=key["KeyId"],
        kms_key_arn=key["Arn"],
        kms_alias=kms_alias,
        log_group=log_group,
        secret_arn=secret_arn,
    )


def create_queue_consumer(clients: AwsClients, *, function_name: str = QUEUE_CONSUMER) -> QueueConsumerResources:
    """``queue-consumer``: Python fed by ``<name>-queue`` (redrive to ``<name>-dlq`` after 3 receives) through an
    event source mapping of batch size 10; no reserved concurrency, no VPC. Not idempotent: use a fresh lab."""
    from incident_responder.lab.workload import take_over_queue_polling

    take_over_queue_polling()  # before anything can reach the queue: the lab's emulation polls it, not moto
    account = clients.account_id()
    region = clients.region
    role_name = f"{function_name}-role"
    log_group = f"/aws/lambda/{function_name}"
    batch_size = 10

    sqs = clients.get("sqs")
    dlq_name = f"{function_name}-dlq"
    dlq_url = sqs.create_queue(QueueName=dlq_name, Attributes={"MessageRetentionPeriod": str(14 * 86400)})["QueueUrl"]
    dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    queue_name = f"{function_name}-queue"
    queue_url = sqs.create_queue(
        QueueName=queue_name,
        Attributes={
            # At least six times the function's timeout, as Lambda recommends for an event source.
            "VisibilityTimeout": "180",
            "RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": "3"}),
        },
    )["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    results_url = sqs.create_queue(QueueName=f"{function_name}-results")["QueueUrl"]

    role_arn = _create_role(
        clients,
        role_name,
        {
            "sqs-access": {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Sid": "ConsumeOwnQueue",
                        "Effect": "Allow",
                        "Action": ["sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes"],
                        "Resource": queue_arn,
                    },
                    {
                        "Sid": "SendResults",
                        "Effect": "Allow",
                        "Action": "sqs:SendMessage",
                        "Resource": f"arn:aws:sqs:{region}:{account}:{function_name}-*",
                    },
                ],
            },
            "cloudwatch-logs": _logs_policy(region, account, log_group),
        },
    )
    clients.get("logs").create_log_group(logGroupName=log_group)

    lam = clients.get("lambda")
    function_arn = lam.create_function(
        FunctionName=function_name,
        Runtime="python3.12",
        Role=role_arn,
        Handler="app.handler",
        Code={"ZipFile": deployment_package("app.py", QUEUE_CONSUMER_SOURCE)},
        Timeout=30,
        MemorySize=256,
        Environment={"Variables": {"RESULTS_QUEUE_URL": results_url}},
    )["FunctionArn"]
    mapping = lam.create_event_source_mapping(
        EventSourceArn=queue_arn, FunctionName=function_name, BatchSize=batch_size, Enabled=True
    )
    return QueueConsumerResources(
        function_name=function_name,
        function_arn=function_arn,
        role_name=role_name,
        queue_name=queue_name,
        queue_url=queue_url,
        queue_arn=queue_arn,
        dead_letter_queue_name=dlq_name,
        dead_letter_queue_url=dlq_url,
        dead_letter_queue_arn=dlq_arn,
        event_source_mapping_uuid=mapping["UUID"],
        batch_size=batch_size,
        log_group=log_group,
    )
