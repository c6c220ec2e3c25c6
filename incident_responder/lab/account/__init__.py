"""SETUP: the lab account's resources: the sample workloads as deployed, and what the responder needs.

sources         the sample workloads' names, deployed sources and packages (the same source, the same CodeSha256)
resources       what every sample's creation shares: its role, log permissions, alarms, the responder's tables
data_processor  ``data-processor`` (S3 in and out, in a VPC) and the responder's own resources
orders_api      ``orders-api`` (Node.js behind the alias ``live``, a PROVISIONED table, a KMS-encrypted environment)
queue_consumer  ``queue-consumer`` (Python fed by an SQS queue with a dead-letter queue)
"""

from incident_responder.core.exports import lazy_exports

__all__ = [
    "FUNCTION_NAME",
    "INCIDENT_TOPIC",
    "ORDERS_API",
    "QUEUE_CONSUMER",
    "SAMPLE_WORKLOADS",
    "OrdersApiResources",
    "QueueConsumerResources",
    "SampleAccount",
    "create_function_alarms",
    "create_orders_api",
    "create_queue_consumer",
    "create_sample_account",
    "create_table",
    "deployment_package",
]
__getattr__ = lazy_exports(
    __name__,
    {
        "sources": [
            "FUNCTION_NAME",
            "INCIDENT_TOPIC",
            "ORDERS_API",
            "QUEUE_CONSUMER",
            "SAMPLE_WORKLOADS",
            "deployment_package",
        ],
        "resources": ["create_function_alarms", "create_table"],
        "data_processor": ["SampleAccount", "create_sample_account"],
        "orders_api": ["OrdersApiResources", "create_orders_api"],
        "queue_consumer": ["QueueConsumerResources", "create_queue_consumer"],
    },
)
