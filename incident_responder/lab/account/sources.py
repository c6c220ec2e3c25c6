"""SETUP: the sample workloads as deployed: their names, their sources, and their packages.

``data-processor`` (Python: an order batch from S3, transformed, written back), ``orders-api`` (Node.js: an order
into DynamoDB) and ``queue-consumer`` (Python: a batch of SQS messages per invocation). The lab emulates each one's
behaviour (lab/workloads/). Packages are zipped with fixed timestamps, so a source always has the same CodeSha256.
"""

from __future__ import annotations

import base64
import hashlib
import io
import zipfile

FUNCTION_NAME = "data-processor"
ORDERS_API = "orders-api"
QUEUE_CONSUMER = "queue-consumer"
# The REST API (its id, stage and route) that invokes orders-api's alias live under its resource-based policy.
ORDERS_API_GATEWAY = ("k3m9x2p7qa", "prod", "POST/orders")
ORDERS_API_PERMISSION = "orders-api-gateway-invoke"
SAMPLE_WORKLOADS = (FUNCTION_NAME, ORDERS_API, QUEUE_CONSUMER)
INCIDENT_TOPIC = "incident-alerts"
INPUT_KEY = "incoming/orders-0001.json"
# data-processor's /tmp: it stages its output there (about 700 MB at peak, lab/workloads/data_processor.py).
DATA_PROCESSOR_TMP_MB = 1024

# The sample function's source as deployed; the lab emulates its behaviour (see lab/workloads/data_processor.py).
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
