"""noisy_neighbor: another function in the account (not onboarded) takes all of the unreserved concurrency. Lab
only: in a real account only AWS publishes ``AWS/Lambda`` metrics."""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Literal

from botocore.exceptions import ClientError

from chaos.code import one_file_package
from chaos.errors import ChaosError
from chaos.kinds.base import DATA_PROCESSOR, ORDERS_API, QUEUE_CONSUMER, ChaosKind, KindParameters
from chaos.metrics import after, latest_datapoint, put_datapoints
from chaos.target import FaultTarget
from incident_responder.core.aws import AwsClients
from incident_responder.core.contracts import FaultType

NAMESPACE = "AWS/Lambda"
METRIC = "ConcurrentExecutions"
# A function's load counts while its latest datapoint is this recent (the lab's workloads read it so).
FRESH = timedelta(minutes=15)


class NoisyNeighbor(KindParameters):
    """Another function in the account (not onboarded) takes all of the unreserved concurrency."""

    kind: Literal["noisy_neighbor"]


class NoisyNeighborKind(ChaosKind[NoisyNeighbor]):
    """Another function, not onboarded, runs at the account's whole unreserved concurrency (its ``AWS/Lambda
    ConcurrentExecutions`` as Lambda publishes it; the lab's workloads obey it)."""

    parameters = NoisyNeighbor
    fault_type = FaultType.ACCOUNT_CONCURRENCY_EXHAUSTED
    workloads = frozenset({DATA_PROCESSOR, ORDERS_API, QUEUE_CONSUMER})
    slots = ("neighbor",)  # neighbor.<function>: whether chaos created it
    help = "another function takes the account's unreserved concurrency (lab only)"

    def inject(self, target: FaultTarget, params: NoisyNeighbor) -> list[str]:
        lam = target.lambda_client
        neighbor = f"{target.function_name}-neighbor"[:64]
        try:
            lam.get_function_configuration(FunctionName=neighbor)
            created = False
        except lam.exceptions.ResourceNotFoundException:
            config = target.config()
            lam.create_function(
                FunctionName=neighbor,
                Runtime="python3.12",
                Role=config["Role"],
                Handler="app.handler",
                Code={"ZipFile": one_file_package("app.py", "def handler(event, context):\n    return {}\n")},
                Timeout=900,
            )
            created = True
        target.store.remember(f"neighbor.{neighbor}", {"created": created})
        limit = lam.get_account_settings()["AccountLimit"].get("UnreservedConcurrentExecutions") or 1000
        try:
            publish_concurrency(target.clients, neighbor, float(limit))
        except ClientError as exc:
            raise ChaosError(
                f"CloudWatch refused the neighbour's load ({exc.response['Error']['Code']}): only AWS publishes AWS/ "
                "metrics in a real account, so noisy_neighbor runs against the lab"
            ) from exc
        target.store.record_fault({"kind": "noisy_neighbor"})
        return [f"function {neighbor} runs {limit} concurrent executions: the account's unreserved concurrency"]

    def restore(self, target: FaultTarget, slot: str, original: Any) -> str:
        neighbor = slot.removeprefix("neighbor.")
        publish_concurrency(target.clients, neighbor, 0.0)
        if original.get("created"):
            target.lambda_client.delete_function(FunctionName=neighbor)
            return f"function {neighbor} is idle again, and deleted"
        return f"function {neighbor} is idle again"


def publish_concurrency(clients: AwsClients, function_name: str, value: float) -> None:
    """``function_name`` runs ``value`` executions at once from now on (a datapoint clearly after its latest one:
    the workloads read the latest as the load); the account's own series says the same."""
    dimensions = [{"Name": "FunctionName", "Value": function_name}]
    at = after(latest_datapoint(clients, NAMESPACE, METRIC, dimensions, "Maximum", FRESH))
    put_datapoints(
        clients,
        NAMESPACE,
        [
            {"MetricName": METRIC, "Dimensions": dimensions, "Value": value, "Unit": "Count", "Timestamp": at},
            {"MetricName": METRIC, "Value": value, "Unit": "Count", "Timestamp": at},
        ],
    )
