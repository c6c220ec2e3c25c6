"""EMULATING a workload: which emulator a function gets: a sample workload by name, else by its shape."""

from __future__ import annotations

from incident_responder.core.aws import AwsClients
from incident_responder.lab.emulation.burst import Workload
from incident_responder.lab.workloads.data_processor import DataProcessor
from incident_responder.lab.workloads.orders_api import OrdersApi
from incident_responder.lab.workloads.queue_consumer import QueueConsumer

WORKLOADS: dict[str, type[Workload]] = {
    DataProcessor.default_function_name: DataProcessor,
    OrdersApi.default_function_name: OrdersApi,
    QueueConsumer.default_function_name: QueueConsumer,
}


def workload_for(clients: AwsClients, function_name: str, alert_topic_arn: str | None = None) -> Workload:
    """The emulator of ``function_name``: a sample workload by name, else by its shape (fed by an SQS
    mapping: a queue consumer; Node.js: the orders API; otherwise a copy of data-processor)."""
    kind = WORKLOADS.get(function_name)
    if kind is None:
        lam = clients.get("lambda")
        mappings = lam.list_event_source_mappings(FunctionName=function_name).get("EventSourceMappings", [])
        runtime = lam.get_function_configuration(FunctionName=function_name).get("Runtime", "")
        if any(":sqs:" in m.get("EventSourceArn", "") for m in mappings):
            kind = QueueConsumer
        elif runtime.startswith("nodejs"):
            kind = OrdersApi
        else:
            kind = DataProcessor
    return kind(clients, function_name, alert_topic_arn=alert_topic_arn)
