"""logs_not_delivered: the execution role loses its CloudWatch Logs permissions, so the function's logs no longer
reach CloudWatch Logs (catalogue entry logs-not-delivered; iam_revoke's ``cloudwatch`` target, named after the
entry)."""

from __future__ import annotations

from typing import Literal

from chaos.kinds.base import DATA_PROCESSOR, ORDERS_API, QUEUE_CONSUMER, ChaosKind, KindParameters
from chaos.kinds.iam_revoke import IAM_TARGET_SERVICES, IamRevokeKind
from chaos.target import FaultTarget
from incident_responder.core.contracts import FaultType


class LogsNotDelivered(KindParameters):
    """No parameters: the role's logs:* actions are removed (inline statements stripped, logs-only managed policies
    detached)."""

    kind: Literal["logs_not_delivered"]


class LogsNotDeliveredKind(ChaosKind[LogsNotDelivered]):
    """Remove the execution role's CloudWatch Logs permissions."""

    parameters = LogsNotDelivered
    fault_type = FaultType.PERMISSION_LOSS
    workloads = frozenset({DATA_PROCESSOR, ORDERS_API, QUEUE_CONSUMER})
    slots = ("iam",)  # the same slots as iam_revoke, which restores them
    help = "remove the execution role's CloudWatch Logs permissions (its logs stop arriving)"

    def inject(self, target: FaultTarget, params: LogsNotDelivered) -> list[str]:
        return IamRevokeKind().revoke(target, IAM_TARGET_SERVICES["cloudwatch"], {"kind": "logs_not_delivered"})

    def restore(self, target: FaultTarget, slot: str, original: object) -> str:
        return IamRevokeKind().restore(target, slot, original)
