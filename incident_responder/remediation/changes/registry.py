"""REMEDIATING and ROLLING_BACK: the change each action type makes, by action type."""

from __future__ import annotations

from typing import Any

from incident_responder.core.aws import AwsClients
from incident_responder.core.contracts import ActionType, RemediationAction
from incident_responder.remediation.changes.alias import _AliasVersion
from incident_responder.remediation.changes.base import _Change
from incident_responder.remediation.changes.concurrency import _Concurrency
from incident_responder.remediation.changes.event_source_mappings import _EventSourceMapping
from incident_responder.remediation.changes.function_configuration import _FunctionConfiguration
from incident_responder.remediation.changes.iam import _IamPolicy
from incident_responder.remediation.changes.kms import _KmsKey
from incident_responder.remediation.changes.network import _NetworkEgress
from incident_responder.remediation.changes.queues import _QueueVisibility
from incident_responder.remediation.changes.secrets import _Secret

CHANGES: dict[ActionType, _Change] = {
    ActionType.RESTORE_IAM_POLICY: _IamPolicy(),
    ActionType.UPDATE_CONCURRENCY: _Concurrency(),
    ActionType.RESTORE_NETWORK_EGRESS: _NetworkEgress(),
    ActionType.UPDATE_FUNCTION_CONFIGURATION: _FunctionConfiguration(),
    ActionType.ROLLBACK_ALIAS: _AliasVersion(),
    ActionType.ENABLE_KMS_KEY: _KmsKey(),
    ActionType.ENABLE_EVENT_SOURCE_MAPPING: _EventSourceMapping(),
    ActionType.RESTORE_SECRET: _Secret(),
    ActionType.RESTORE_QUEUE_ATTRIBUTES: _QueueVisibility(),
}


def capture_prior(clients: AwsClients, action: RemediationAction) -> dict[str, Any]:
    """The live state of exactly what ``action`` changes, as the ledger records it."""
    return CHANGES[action.action_type].capture(clients, action.typed_parameters())
