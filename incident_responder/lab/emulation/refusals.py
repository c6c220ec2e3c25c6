"""EMULATING a workload: what the Lambda service answers instead of running the function (its environment's key
unusable, its VPC configuration naming what EC2 does not know, no room or no permission for its network
interfaces). Nothing reaches the function's log group; the caller gets the error."""

from __future__ import annotations

from incident_responder.account.iam_policy import is_allowed
from incident_responder.account.network import VPC_NETWORK_INTERFACE_QUOTA, count_vpc_network_interfaces, read_routing
from incident_responder.core.aws import AwsClients
from incident_responder.lab.emulation.invocation import AccountView
from incident_responder.lab.moto_patches.function_states import (
    EC2_THROTTLED,
    SNAPSTART_RESTORE_TIMEOUT,
    condition_of,
    set_function_state,
)

# What the Lambda service answers when it cannot decrypt the function's environment (the function never runs);
# a key in any other state than these (PendingDeletion, ...): the Invoke API reference's KMSInvalidStateException.
KMS_ERRORS = {
    "Disabled": (
        "KMSDisabledException",
        "Lambda was unable to decrypt the environment variables because the KMS key used is disabled. "
        "Please check the function's KMS key settings.",
    ),
    "denied": (
        "KMSAccessDeniedException",
        "Lambda was unable to decrypt the environment variables because KMS access was denied. Please check the "
        "function's KMS key settings. KMS Exception: AccessDeniedExceptionKMS Message: User: {principal} is not "
        "authorized to perform: kms:Decrypt on resource: {key} because no resource-based policy allows the "
        "kms:Decrypt action",
    ),
    "not_found": (
        "KMSNotFoundException",
        "Lambda couldn't decrypt the environment variables because the KMS key was not found. Check the function's "
        "KMS key settings.",
    ),
    "other": (
        "KMSInvalidStateException",
        "Lambda couldn't decrypt the environment variables because the state of the KMS key used is not valid for "
        "Decrypt. Check the function's KMS key settings.",
    ),
}


# What the Lambda service answers when the function's VPC configuration names a subnet or group EC2 does not know
# (the Invoke API reference's descriptions; HTTP 502).
VPC_ERRORS = {
    "subnet-": (
        "InvalidSubnetIDException",
        "The subnet ID provided in the Lambda function VPC configuration is not valid.",
    ),
    "sg-": (
        "InvalidSecurityGroupIDException",
        "The security group ID provided in the Lambda function VPC configuration is not valid.",
    ),
}


# What the Lambda service answers when it must create the function's network interfaces and the execution role may
# not (the Invoke API reference's description; HTTP 502).
EC2_ACCESS_DENIED = ("EC2AccessDeniedException", "Need additional permissions to configure VPC settings.")


# What the Lambda service answers when the function's subnets or VPC have no room for its network interfaces (the
# Invoke API reference's descriptions; HTTP 502).
SUBNET_FULL = (
    "SubnetIPAddressLimitReachedException",
    "AWS Lambda couldn't set up VPC access for the Lambda function because one or more configured subnets has no "
    "available IP addresses.",
)
ENI_LIMIT = ("ENILimitReachedException", "The elastic network interface limit was reached for the function's VPC.")
EC2_THROTTLED_ERROR = (
    "EC2ThrottledException",
    "Amazon EC2 throttled Lambda during Lambda function initialization using the execution role provided for the "
    "function.",
)
# The StateReasonCode Lambda sets when it fails to recreate an idle function's network interfaces for that error.
STATE_REASON_CODES = {
    EC2_ACCESS_DENIED[0]: "InsufficientRolePermissions",
    SUBNET_FULL[0]: "SubnetOutOfIPAddresses",
    ENI_LIMIT[0]: "EniLimitExceeded",
    EC2_THROTTLED_ERROR[0]: "EC2RequestLimitExceeded",
    VPC_ERRORS["subnet-"][0]: "InvalidSubnet",
    VPC_ERRORS["sg-"][0]: "InvalidSecurityGroup",
}

# What Lambda answers a function that is not Active (the Invoke API reference's descriptions; the Pending message as
# troubleshooting-invocation.html quotes it).
PENDING = (
    "ResourceConflictException",
    "The operation cannot be performed at this time. The function is currently in the following state: Pending",
)
NOT_READY = (
    "ResourceNotReadyException",
    "The function is inactive and its VPC connection is no longer available. Wait for the VPC connection to "
    "reestablish and try again.",
)
ENI_NOT_READY = (
    "ENINotReadyException",
    "Lambda couldn't invoke the Lambda function because the elastic network interface (ENI) configured for its VPC "
    "connection isn't ready yet. Wait a few moments and try the request again.",
)


# What Lambda answers when the published version invoked restores from a SnapStart snapshot and cannot (the
# troubleshooting page's words for the first, HTTP 409; the Invoke API reference's description for the second, 408).
SNAPSTART_NOT_READY = (
    "SnapStartNotReadyException",
    "Lambda is initializing your function. It will be ready to invoke once your function state becomes ACTIVE.",
)
SNAPSTART_TIMEOUT = ("SnapStartTimeoutException", "Lambda couldn't restore the snapshot within the timeout limit.")
# What Lambda refuses without invoking the function at all.
NOT_INVOKED = {PENDING[0], SNAPSTART_NOT_READY[0]}


def snap_start_error(clients: AwsClients, function_name: str, qualifier: str | None) -> tuple[str, str] | None:
    """What Lambda answers when the version ``qualifier`` names restores from a SnapStart snapshot and cannot (None:
    $LATEST, SnapStart off for the version, or it restores)."""
    if not qualifier:
        return None
    config = clients.get("lambda").get_function_configuration(FunctionName=function_name, Qualifier=qualifier)
    if (config.get("SnapStart") or {}).get("OptimizationStatus") != "On":
        return None
    if config.get("State") == "Inactive":
        return SNAPSTART_NOT_READY
    if condition_of(f"{function_name}:{config.get('Version')}") == SNAPSTART_RESTORE_TIMEOUT:
        return SNAPSTART_TIMEOUT
    return None


def service_error(
    clients: AwsClients, view: AccountView, function_name: str, qualifier: str | None = None
) -> tuple[str, str] | None:
    """What the Lambda service answers instead of running the function (the version ``qualifier`` names, else
    $LATEST), in this account state (None: it runs); the function's State as Lambda sets it on the way
    (functions-states.html)."""
    snap_start = snap_start_error(clients, function_name, qualifier)
    if snap_start is not None:
        return snap_start
    state, code = view.raw.get("State"), view.raw.get("StateReasonCode")
    if state == "Pending":
        # Restoring an idle function's VPC connection: its interface is not ready yet; else it is being created.
        return ENI_NOT_READY if code == "Restoring" else PENDING
    if state == "Inactive" and code == "Idle":
        # Lambda reclaimed the idle function's interfaces: the invocation fails while Lambda restores them.
        set_function_state(function_name, State="Pending", StateReason=None, StateReasonCode="Restoring")
        return NOT_READY
    error = _service_error(clients, view, function_name)
    if error is not None and error[0] in STATE_REASON_CODES:
        # Lambda failed to recreate the function's interfaces: the function is Inactive, with the reason's code.
        set_function_state(
            function_name, State="Inactive", StateReason=None, StateReasonCode=STATE_REASON_CODES[error[0]]
        )
    elif state == "Inactive":
        set_function_state(function_name, State="Active")  # recreated: Active again
    return error


def _service_error(clients: AwsClients, view: AccountView, function_name: str) -> tuple[str, str] | None:
    for missing in view.config.network.missing:
        for prefix, error in VPC_ERRORS.items():
            if missing.startswith(prefix):
                return error
    # Each burst comes after the function was idle: Lambda recreates its network interfaces with its role, in
    # its subnets, within the VPC's quota of interfaces.
    network = view.config.network
    if network.in_vpc and not is_allowed(view.policies, "ec2:CreateNetworkInterface", "*"):
        return EC2_ACCESS_DENIED
    if network.in_vpc and condition_of(function_name) == EC2_THROTTLED:
        return EC2_THROTTLED_ERROR
    if network.in_vpc and network.vpc_id:
        routing = read_routing(clients, [s.subnet_id for s in network.subnets])
        if any(r.available_ip_address_count == 0 for r in routing):
            return SUBNET_FULL
        if count_vpc_network_interfaces(clients, network.vpc_id) >= VPC_NETWORK_INTERFACE_QUOTA:
            return ENI_LIMIT
    for key in view.config.kms_keys:
        if not key.found:
            return KMS_ERRORS["not_found"]
        if key.key_state not in (None, "Enabled"):
            return KMS_ERRORS.get(key.key_state, KMS_ERRORS["other"])
        if key.role_may_decrypt is False:
            error_type, message = KMS_ERRORS["denied"]
            role = view.role_arn.rsplit("/", 1)[-1]
            principal = f"arn:aws:sts::{view.account}:assumed-role/{role}/{function_name}"
            return error_type, message.format(principal=principal, key=key.key_arn)
    return None
