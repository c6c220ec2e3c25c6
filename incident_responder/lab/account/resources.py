"""SETUP: what every sample workload's creation shares: its role, its log permissions, its alarms, and the tables the
responder uses when no stack is deployed."""

from __future__ import annotations

import json
from typing import Any

from incident_responder.core.aws import AwsClients


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
    from incident_responder.lab.template import load_template

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
