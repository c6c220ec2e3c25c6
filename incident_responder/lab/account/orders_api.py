"""SETUP: ``orders-api``: Node.js, invoked by API Gateway through its alias ``live`` (under the function's
resource-based policy) with published versions, a PROVISIONED
DynamoDB table, its environment encrypted with a customer-managed KMS key."""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass

from incident_responder.core.aws import AwsClients
from incident_responder.lab.account.resources import _create_role, _logs_policy
from incident_responder.lab.account.sources import (
    ORDERS_API,
    ORDERS_API_GATEWAY,
    ORDERS_API_PERMISSION,
    ORDERS_API_SOURCE,
    deployment_package,
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
    # Its caller, API Gateway, invokes the alias under the function's resource-based policy (as the console grants it).
    api_id, _, route = ORDERS_API_GATEWAY
    lam.add_permission(
        FunctionName=function_name,
        Qualifier="live",
        StatementId=ORDERS_API_PERMISSION,
        Action="lambda:InvokeFunction",
        Principal="apigateway.amazonaws.com",
        SourceArn=f"arn:aws:execute-api:{region}:{account}:{api_id}/*/{route}",
    )
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
