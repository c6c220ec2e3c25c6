"""The chaos kinds, one module each, and the registry the rest is built from.

Each module (named after its kind) holds everything about the kind: its parameters (the scenario format's model
for ``- kind: <name>``), the fault type it produces, the sample workloads it applies to and what it says on
another, its snapshot slots, inject and restore (:class:`~chaos.kinds.base.ChaosKind`). From the registry below
come the scenario schema's fault union (:data:`Fault`), :data:`FAULT_TYPE_OF_KIND`, the chaos command line's
kinds and arguments, and which kind restores a slot. Adding a kind: its module, and its class in ``KIND_CLASSES``.
"""

from __future__ import annotations

import operator
from functools import reduce
from typing import TYPE_CHECKING, Annotated, Any, TypeAlias

from pydantic import Field

from chaos.errors import ChaosError
from chaos.kinds.async_events_dropped import AsyncEventsDroppedKind
from chaos.kinds.bad_deploy import BadDeployKind
from chaos.kinds.base import SAMPLE_WORKLOADS, ChaosKind, KindParameters
from chaos.kinds.code_upload_rejected import CodeUploadRejectedKind
from chaos.kinds.dead_letter_delivery_failed import DeadLetterDeliveryFailedKind
from chaos.kinds.deployment_file_permissions import DeploymentFilePermissionsKind
from chaos.kinds.dns_tcp_connection_limit import DnsTcpConnectionLimitKind
from chaos.kinds.downstream_throttle import DownstreamThrottleKind
from chaos.kinds.ec2_throttled_during_setup import Ec2ThrottledDuringSetupKind
from chaos.kinds.eni_limit_reached import EniLimitReachedKind
from chaos.kinds.env_var_removed import EnvVarRemovedKind
from chaos.kinds.environment_update_rejected import EnvironmentUpdateRejectedKind
from chaos.kinds.ephemeral_storage import EphemeralStorageKind
from chaos.kinds.esm_disable import EsmDisableKind
from chaos.kinds.event_source_function_call_failed import EventSourceFunctionCallFailedKind
from chaos.kinds.extension_crash_at_init import ExtensionCrashAtInitKind
from chaos.kinds.function_not_found import FunctionNotFoundKind
from chaos.kinds.function_pending import FunctionPendingKind
from chaos.kinds.handler_not_found import HandlerNotFoundKind
from chaos.kinds.iam_revoke import IamRevokeKind
from chaos.kinds.import_module_error import ImportModuleErrorKind
from chaos.kinds.init_phase_timeout import InitPhaseTimeoutKind
from chaos.kinds.invalid_entrypoint import InvalidEntrypointKind
from chaos.kinds.invalid_subnet_or_security_group import InvalidSubnetOrSecurityGroupKind
from chaos.kinds.kms_disable import KmsDisableKind
from chaos.kinds.kms_key_pending_deletion import KmsKeyPendingDeletionKind
from chaos.kinds.kms_revoke import KmsRevokeKind
from chaos.kinds.logs_not_delivered import LogsNotDeliveredKind
from chaos.kinds.memory import MemoryKind
from chaos.kinds.network_acl_ephemeral_ports import NetworkAclEphemeralPortsKind
from chaos.kinds.network_block import NetworkBlockKind
from chaos.kinds.no_route_to_internet import NoRouteToInternetKind
from chaos.kinds.nodejs_unexpected_exit import NodejsUnexpectedExitKind
from chaos.kinds.noisy_neighbor import NoisyNeighborKind
from chaos.kinds.queue_visibility import QueueVisibilityKind
from chaos.kinds.recursive_loop import RecursiveLoopKind
from chaos.kinds.resource_policy_missing import ResourcePolicyMissingKind
from chaos.kinds.response_not_serializable import ResponseNotSerializableKind
from chaos.kinds.runtime_exited import RuntimeExitedKind
from chaos.kinds.secret_scheduled_for_deletion import SecretScheduledForDeletionKind
from chaos.kinds.snapstart_not_ready import SnapStartNotReadyKind
from chaos.kinds.snapstart_restore_timeout import SnapStartRestoreTimeoutKind
from chaos.kinds.subnet_out_of_addresses import SubnetOutOfAddressesKind
from chaos.kinds.throttle import ThrottleKind
from chaos.kinds.timeout import TimeoutKind
from chaos.kinds.vpc_connection_not_ready import VpcConnectionNotReadyKind
from chaos.kinds.vpc_permissions_missing import VpcPermissionsMissingKind
from incident_responder.core.contracts import FaultType

__all__ = [
    "FAULT_TYPE_OF_KIND",
    "KINDS",
    "KIND_CLASSES",
    "SAMPLE_WORKLOADS",
    "ChaosKind",
    "Fault",
    "KindParameters",
    "kind_named",
    "kind_of_slot",
]

# In the order the command line lists them (the design's order).
KIND_CLASSES: tuple[type[ChaosKind[Any]], ...] = (
    IamRevokeKind,
    ThrottleKind,
    NetworkBlockKind,
    TimeoutKind,
    MemoryKind,
    BadDeployKind,
    KmsDisableKind,
    EsmDisableKind,
    DownstreamThrottleKind,
    EnvVarRemovedKind,
    SecretScheduledForDeletionKind,
    QueueVisibilityKind,
    EphemeralStorageKind,
    KmsRevokeKind,
    NoisyNeighborKind,
    RecursiveLoopKind,
    # Catalogue kinds: named after the failure catalogue entry they reproduce.
    HandlerNotFoundKind,
    ExtensionCrashAtInitKind,
    ImportModuleErrorKind,
    ResponseNotSerializableKind,
    RuntimeExitedKind,
    DeploymentFilePermissionsKind,
    InvalidSubnetOrSecurityGroupKind,
    NoRouteToInternetKind,
    VpcPermissionsMissingKind,
    SubnetOutOfAddressesKind,
    EniLimitReachedKind,
    DnsTcpConnectionLimitKind,
    EventSourceFunctionCallFailedKind,
    ResourcePolicyMissingKind,
    LogsNotDeliveredKind,
    FunctionNotFoundKind,
    AsyncEventsDroppedKind,
    DeadLetterDeliveryFailedKind,
    FunctionPendingKind,
    VpcConnectionNotReadyKind,
    Ec2ThrottledDuringSetupKind,
    InitPhaseTimeoutKind,
    EnvironmentUpdateRejectedKind,
    KmsKeyPendingDeletionKind,
    NetworkAclEphemeralPortsKind,
    NodejsUnexpectedExitKind,
    InvalidEntrypointKind,
    CodeUploadRejectedKind,
    SnapStartNotReadyKind,
    SnapStartRestoreTimeoutKind,
)


def _registry(classes: tuple[type[ChaosKind[Any]], ...]) -> dict[str, ChaosKind[Any]]:
    kinds: dict[str, ChaosKind[Any]] = {}
    for cls in classes:
        kind = cls()  # a class without inject or restore fails here, at import
        if kind.name in kinds:
            raise TypeError(f"two chaos kinds are named {kind.name!r}")
        if not kind.workloads <= SAMPLE_WORKLOADS or not kind.slots:
            raise TypeError(f"chaos kind {kind.name!r}: workloads must be sample workloads, and slots named")
        kinds[kind.name] = kind
    return kinds


KINDS: dict[str, ChaosKind[Any]] = _registry(KIND_CLASSES)

# The fault type each kind produces, as the investigator should name it (a kind is how chaos breaks something; a
# fault type is what a diagnosis calls it): ``memory`` -> ``memory_exhaustion``.
FAULT_TYPE_OF_KIND: dict[str, FaultType] = {name: kind.fault_type for name, kind in KINDS.items()}

# The scenario format's fault: one of the kinds' parameters, told apart by ``kind``.
if TYPE_CHECKING:
    Fault: TypeAlias = KindParameters
else:
    Fault = Annotated[reduce(operator.or_, (k.parameters for k in KINDS.values())), Field(discriminator="kind")]

# Which kind restores a slot, by the slot's prefix (``iam`` of ``iam.inline.<policy>``). A prefix two kinds record
# the same way (``env.<name>``) is restored by the first; both restore it alike.
_SLOT_KINDS: dict[str, ChaosKind[Any]] = {}
for _kind in KINDS.values():
    for _prefix in _kind.slots:
        _SLOT_KINDS.setdefault(_prefix, _kind)


def kind_named(name: str) -> ChaosKind[Any]:
    if name not in KINDS:
        raise ChaosError(f"no chaos kind {name!r} (there are {', '.join(KINDS)})")
    return KINDS[name]


def kind_of_slot(slot: str) -> ChaosKind[Any] | None:
    """The kind that restores ``slot`` (None: no kind records such a slot)."""
    return _SLOT_KINDS.get(slot.partition(".")[0])
