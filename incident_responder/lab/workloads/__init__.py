"""EMULATING the sample workloads: each one's behaviour, against whatever account it is given.

data_processor  ``data-processor``: an S3 object in, the processed object out, through its VPC's network path
orders_api      ``orders-api``: an order into its DynamoDB table, through the alias ``live``
queue_consumer  ``queue-consumer``: batches from its SQS queue, as Lambda's poller delivers them
selection       which emulator a function gets: by name, else by its shape

moto records configuration but enforces none of it (a revoked policy denies nothing, reserved
concurrency 0 throttles nothing, a removed egress rule blocks nothing, a disabled key or event source
mapping stops nothing). So each workload reads the account state the real function would run into,
decides each invocation's fate from it, and leaves only the traces the real function and the AWS
services would leave: runtime log lines in ``/aws/lambda/<name>`` (none at all when its role cannot
write logs), ``AWS/Lambda`` metrics (and its dependencies' ``AWS/DynamoDB`` / ``AWS/SQS`` metrics),
and a CloudWatch alarm notification on the incidents topic. Nothing names the injected fault. What
every function shares (throttling, the platform's lines, logs, metrics, alarms) is lab/emulation/; each
workload here supplies what it does.
"""

from incident_responder.core.exports import lazy_exports

__all__ = [
    "DataProcessor",
    "OrdersApi",
    "QueueConsumer",
    "egress_to_s3_allowed",
    "table_write_load",
    "workload_for",
]
__getattr__ = lazy_exports(
    __name__,
    {
        "data_processor": ["DataProcessor", "egress_to_s3_allowed"],
        "orders_api": ["OrdersApi", "table_write_load"],
        "queue_consumer": ["QueueConsumer"],
        "selection": ["workload_for"],
    },
)
