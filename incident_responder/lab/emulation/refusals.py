"""EMULATING a workload: what the Lambda service answers instead of running the function (its environment's key
unusable, its VPC configuration naming what EC2 does not know, no room or no permission for its network
interfaces). Nothing reaches the function's log group; the caller gets the error."""

from __future__ import annotations

from incident_responder.account.iam_policy import is_allowed
from incident_responder.account.network import VPC_NETWORK_INTERFACE_QUOTA, count_vpc_network_interfaces, read_routing
from incident_responder.core.aws import AwsClients
from incident_responder.lab.emulation.invocation import AccountView

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


def service_error(clients: AwsClients, view: AccountView, function_name: str) -> tuple[str, str] | None:
    """What the Lambda service answers instead of running the function, in this account state (None: it runs)."""
    for missing in view.config.network.missing:
        for prefix, error in VPC_ERRORS.items():
            if missing.startswith(prefix):
                return error
    # Each burst comes after the function was idle: Lambda recreates its network interfaces with its role, in
    # its subnets, within the VPC's quota of interfaces.
    network = view.config.network
    if network.in_vpc and not is_allowed(view.policies, "ec2:CreateNetworkInterface", "*"):
        return EC2_ACCESS_DENIED
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
