"""The failure catalogue, networking (VPC): subnets, security groups, routes and endpoints.

One entry per failure mode, with the strings AWS prints for it (:mod:`.failure_mode` says what an entry holds).
"""

from __future__ import annotations

from incident_responder.catalogue.failure_mode import (
    _DG,
    ERRNO,
    INVOKE,
    TS_NETWORKING,
    FailureMode,
    _code,
    _message,
    _network,
)

STATES = _DG + "functions-states.html"

NETWORKING: tuple[FailureMode, ...] = (
    # -- networking ----------------------------------------------------------------------------------
    FailureMode(
        id="egress-rules-changed",
        area="networking",
        title="The function's security groups or network ACLs no longer let it out",
        symptom="Calls from a VPC-connected function cannot reach their endpoint: `Error: connect ETIMEDOUT "
        "176.32.98.189:443` (Node.js) or `ReadTimeoutError: Read timed out. (read timeout=15)` (Python), often "
        "followed by `Task timed out after 10.00 seconds`. The SDKs' connection errors (`ConnectTimeoutError`, "
        "`EndpointConnectionError`, `ConnectionClosedError`) and the system errors (`ECONNREFUSED`, "
        "`EHOSTUNREACH`, `ENETUNREACH`) are the same failure seen by another client.",
        shows_in=("function logs", "metric Errors", "metric Duration"),
        cause="An outbound rule of the function's security groups, or an entry of its subnets' network ACLs, that "
        "let the function reach its endpoints was removed or changed.",
        fix="When a function is connected to a VPC, all outbound requests go through the VPC: its security groups "
        "and network ACLs must let the traffic out, to a NAT gateway for the internet or to VPC endpoints for AWS "
        "services.",
        responder="fixed",
        fault_type="network_block",
        action_type="restore_network_egress",
        handover="",
        signatures=(
            _network("ConnectTimeoutError"),
            _network("ConnectTimeout"),
            _network("ConnectionError"),
            _network("EndpointConnectionError"),
            _network("ConnectionClosedError"),
            _network("ReadTimeoutError"),
            _network("TimeoutError"),
            _network("ETIMEDOUT"),
            _network("ECONNREFUSED"),
            _network("ECONNRESET"),
            _network("EHOSTUNREACH"),
            _network("ENETUNREACH"),
            _network("EAI_AGAIN"),
            _network("ENOTFOUND"),
        ),
        sources=(
            TS_NETWORKING,
            _DG + "configuration-vpc-internet.html",
            "https://docs.aws.amazon.com/boto3/latest/guide/error-handling.html",
            ERRNO,
        ),
    ),
    FailureMode(
        id="network-acl-ephemeral-ports",
        area="networking",
        title="A network ACL blocks the ephemeral ports",
        symptom='"Lambda intermittently loses connection to your VPC subnets, which you have configured a network '
        'access control list (ACL) for." TCP or UDP connections fail now and then.',
        shows_in=("function logs", "metric Errors"),
        cause="Lambda's Hyperplane network interfaces use the ephemeral ports 1024 to 65535 to connect Lambda to the "
        "VPC; a network ACL of the function's subnets does not allow that whole range for TCP and UDP.",
        fix="Allow the port range 1024 to 65535 for both TCP and UDP in the subnets' network ACLs.",
        responder="fixed",
        fault_type="network_block",
        action_type="restore_network_egress",
        handover="",
        lab_note="Fixed when the entry that stops the range was added since the baseline (it is removed). The lab's "
        "kind denies inbound TCP on the whole range, so every reply to the function is dropped and each connection "
        "times out, not only now and then: the lab does not emulate which port the Hyperplane interface picks.",
        signatures=(),
        sources=(TS_NETWORKING,),
    ),
    FailureMode(
        id="no-route-to-internet",
        area="networking",
        title="A VPC-connected function has no route out",
        symptom='"Your Lambda function loses internet access after connecting to a VPC." Calls time out with '
        "`Error: connect ETIMEDOUT 176.32.98.189:443` or `ReadTimeoutError: Read timed out. (read timeout=15)`.",
        shows_in=("function logs", "metric Errors"),
        cause="The function's subnets send outbound traffic nowhere that leads out: no route to a NAT gateway in a "
        "public subnet, and no VPC endpoint for the AWS services it calls.",
        fix="Route outbound traffic from the function's subnets to a NAT gateway in a public subnet, or reach AWS "
        "services through VPC endpoints.",
        responder="fixed",
        fault_type="vpc_misconfigured",
        action_type="restore_vpc_configuration",
        handover="",
        lab_note="Fixed when the function was moved to subnets with no route out (its VpcConfig goes back to the "
        "baseline's); a route removed from a route table the baseline's subnets still use is not restored (the "
        "baseline does not record route tables). moto routes nothing: the lab's function reads its subnets' route "
        "tables and times out as a connection with no route does.",
        signatures=(_message("Error: connect ETIMEDOUT"), _message("ReadTimeoutError: Read timed out.")),
        sources=(TS_NETWORKING, _DG + "configuration-vpc-internet.html"),
    ),
    FailureMode(
        id="eni-limit-reached",
        area="networking",
        title="The VPC's network interface limit is reached",
        symptom="`ENILimitReachedException: The elastic network interface limit was reached for the function's "
        "VPC.` (Invoke: HTTP 502)",
        shows_in=("Invoke response (synchronous callers)", "function State"),
        cause="Lambda creates a network interface for each combination of subnet and security group attached to a "
        "function; the default quota is 250 network interfaces per VPC.",
        fix="Request a quota increase in the Service Quotas console.",
        responder="handed_over",
        fault_type="vpc_capacity_exhausted",
        action_type=None,
        handover="A quota, not a setting the baseline restores: 1. get_network_config's network_interfaces_in_vpc "
        "shows the VPC's network interfaces; list them (aws ec2 describe-network-interfaces --filters "
        "Name=vpc-id,Values=VPC_ID) and delete those of retired workloads. 2. Or request a higher quota in the "
        "Service Quotas console (AWS Lambda, Elastic network interfaces per VPC). 3. Invoke the function again: "
        "Lambda sets up its interfaces at the next invocation.",
        lab_note="The lab counts every network interface of the VPC against the default quota of 250 and its Lambda "
        "answers Invoke with ENILimitReachedException when it must recreate an idle function's interfaces (no log "
        "line), and sets the function Inactive with StateReasonCode EniLimitExceeded (its StateReason, whose words "
        "AWS does not document, is left unset).",
        signatures=(_code("ENILimitReachedException"),),
        sources=(TS_NETWORKING, INVOKE, STATES),
    ),
    FailureMode(
        id="subnet-out-of-addresses",
        area="networking",
        title="The function's subnets have no free IP addresses",
        symptom="`SubnetIPAddressLimitReachedException` (HTTP 502; the API reference: \"AWS Lambda couldn't set up "
        "VPC access for the Lambda function because one or more configured subnets has no available IP "
        'addresses.")',
        shows_in=("Invoke response (synchronous callers)", "function State"),
        cause="One or more of the function's subnets has no available IP address.",
        fix="The API reference names the cause only: the configured subnets need available IP addresses.",
        responder="handed_over",
        fault_type="vpc_capacity_exhausted",
        action_type=None,
        handover="Capacity, not a setting the baseline restores: 1. get_network_config's few_free_addresses names the "
        "subnet with no free address (AvailableIpAddressCount 0). 2. Free addresses in it (aws ec2 "
        "describe-network-interfaces --filters Name=subnet-id,Values=SUBNET_ID: delete unused interfaces), or add "
        "subnets with free addresses, in other Availability Zones, to the function's VpcConfig "
        "(UpdateFunctionConfiguration). 3. Invoke the function again: Lambda sets up its interfaces at the next "
        "invocation.",
        lab_note="The lab's Lambda answers Invoke with SubnetIPAddressLimitReachedException when it must recreate an "
        "idle function's interfaces in a subnet with no free address (no log line), and sets the function Inactive "
        "with StateReasonCode SubnetOutOfIPAddresses (its StateReason, whose words AWS does not document, is left "
        "unset).",
        signatures=(_code("SubnetIPAddressLimitReachedException"),),
        sources=(INVOKE, STATES),
    ),
    FailureMode(
        id="ec2-throttled-during-setup",
        area="networking",
        title="Amazon EC2 throttles Lambda while it sets up the VPC connection",
        symptom='`EC2ThrottledException` (HTTP 502; the API reference: "Amazon EC2 throttled Lambda during Lambda '
        'function initialization using the execution role provided for the function."), or `EC2UnexpectedException` '
        "(HTTP 502): Lambda received an unexpected Amazon EC2 client exception while setting up the function. The "
        "function's State is Inactive, StateReasonCode `EC2RequestLimitExceeded`.",
        shows_in=("Invoke response (synchronous callers)", "function State"),
        cause="The Amazon EC2 calls Lambda makes with the function's execution role, to set up its network "
        "interfaces, were throttled or failed.",
        fix="The API reference names the cause only; the request can be retried later. Amazon EC2 throttles API "
        "requests for each account on a per-Region basis (RequestLimitExceeded): calls retried with exponential "
        "backoff, or a higher limit requested.",
        responder="handed_over",
        fault_type="function_not_ready",
        action_type=None,
        handover="EC2's request rate, not a setting the baseline restores: 1. get_lambda_config's State Inactive with "
        "StateReasonCode EC2RequestLimitExceeded says Amazon EC2 throttled the calls Lambda makes with the "
        "function's execution role to set up its network interfaces. 2. Find what else calls the EC2 API at a high "
        "rate in the function's account and Region (CloudTrail events from ec2.amazonaws.com with errorCode "
        "RequestLimitExceeded) and slow it down (backoff, fewer polls), or request a higher EC2 API limit from AWS "
        "Support. 3. Invoke the function again: Lambda sets up its interfaces at the next invocation.",
        lab_note="Lab only: EC2's request rate is AWS's side, so the chaos kind has the lab's Lambda see its network "
        "interface calls for the function throttled until it is restored: Invoke fails with EC2ThrottledException "
        "(no log line) and the function is Inactive with StateReasonCode EC2RequestLimitExceeded, as "
        "functions-states.html says of resources Lambda fails to recreate (a function whose creation or update is "
        "throttled is Failed instead; not emulated). EC2UnexpectedException is not emulated; StateReason, whose "
        "words AWS does not document for this code, is left unset.",
        signatures=(_code("EC2ThrottledException"), _code("EC2UnexpectedException")),
        sources=(INVOKE, STATES, "https://docs.aws.amazon.com/ec2/latest/devguide/ec2-api-throttling.html"),
    ),
    FailureMode(
        id="vpc-permissions-missing",
        area="networking",
        title="The execution role may not manage network interfaces",
        symptom='`EC2AccessDeniedException` (HTTP 502; the API reference: "Need additional permissions to configure '
        'VPC settings.")',
        shows_in=("Invoke response (synchronous callers)", "function State"),
        cause="The execution role lacks the Amazon EC2 permissions Lambda uses to create and manage the function's "
        "network interfaces (those of the managed policy AWSLambdaVPCAccessExecutionRole).",
        fix="Give the execution role the network interface permissions, for example with the managed policy "
        "AWSLambdaVPCAccessExecutionRole.",
        responder="fixed",
        fault_type="permission_loss",
        action_type="restore_iam_policy",
        handover="",
        lab_note="A function keeps the network interfaces it has: the permissions are needed only to create them. The "
        "lab's function is invoked after idling, when Lambda recreates them, so Invoke fails with "
        "EC2AccessDeniedException (no log line) and the function is Inactive with StateReasonCode "
        "InsufficientRolePermissions until an invocation can set them up (its StateReason, whose words AWS does not "
        "document, is left unset).",
        signatures=(_code("EC2AccessDeniedException"),),
        sources=(INVOKE, _DG + "configuration-vpc.html", STATES),
    ),
    FailureMode(
        id="invalid-subnet-or-security-group",
        area="networking",
        title="The VPC configuration names a subnet or security group that is not valid",
        symptom="`InvalidSubnetIDException` or `InvalidSecurityGroupIDException` (HTTP 502): the subnet or security "
        "group ID provided in the Lambda function VPC configuration is not valid.",
        shows_in=("Invoke response (synchronous callers)",),
        cause="A subnet or security group in the function's VPC configuration does not exist (any more).",
        fix="Configure the function with subnets and security groups that exist (UpdateFunctionConfiguration, "
        "`VpcConfig`).",
        responder="fixed",
        fault_type="vpc_misconfigured",
        action_type="restore_vpc_configuration",
        handover="",
        lab_note="EC2 refuses to delete a security group or subnet that Lambda's network interfaces still use; the "
        "lab deletes the replacement at once (as after Lambda reclaimed an idle function's interfaces), and Invoke "
        "fails as Lambda answers then, with no log line.",
        signatures=(_code("InvalidSubnetIDException"), _code("InvalidSecurityGroupIDException")),
        sources=(INVOKE,),
    ),
    FailureMode(
        id="vpc-connection-not-ready",
        area="networking",
        title="The function's VPC connection is not ready",
        symptom="`ENINotReadyException` (HTTP 502: the network interface configured for the function's VPC "
        "connection isn't ready yet) or `ResourceNotReadyException` (HTTP 502: the function is inactive and its "
        "VPC connection is no longer available).",
        shows_in=("Invoke response (synchronous callers)", "function State"),
        cause="Lambda is still creating the function's network interface, or the function went inactive and its "
        "VPC connection is being re-established.",
        fix="Wait a few moments and try the request again.",
        responder="handed_over",
        fault_type="function_not_ready",
        action_type=None,
        handover="Lambda's own work, not a setting the baseline restores: 1. get_lambda_config's State Inactive "
        "(StateReasonCode Idle) or Pending (StateReasonCode Restoring) says Lambda reclaimed the idle function's "
        "network interfaces and is re-establishing its VPC connection: wait a few moments and invoke it again "
        "(callers retry ResourceNotReadyException and ENINotReadyException). 2. If it stays Inactive with another "
        "StateReasonCode, that reason keeps Lambda from recreating the interfaces (EniLimitExceeded, "
        "SubnetOutOfIPAddresses, InsufficientRolePermissions: their own entries); resolve it and redeploy the "
        "function to bring it back to Active.",
        lab_note="Lab only: Lambda reclaims an idle function's interfaces and re-establishes them by itself, so the "
        "chaos kind has the lab's Lambda reclaim them (Inactive, StateReasonCode Idle) and not finish recreating "
        "them until it is restored. The first invocations are answered ResourceNotReadyException and the function "
        "turns Pending (StateReasonCode Restoring), later ones ENINotReadyException; nothing is logged. StateReason, "
        "whose words AWS does not document for these codes, is left unset.",
        signatures=(_code("ENINotReadyException"), _code("ResourceNotReadyException")),
        sources=(INVOKE, STATES),
    ),
    FailureMode(
        id="dns-tcp-connection-limit",
        area="networking",
        title="Host names do not resolve",
        symptom="`UNKNOWNHOSTEXCEPTION`: the function fails to connect to hosts whose names it cannot resolve.",
        shows_in=("function logs",),
        cause="Usually a misconfigured or degraded DNS, or a host name that is not in DNS; otherwise the function "
        "exhausts the 20 concurrent TCP connections Lambda supports for DNS resolution (DNS falls back to TCP for "
        "large answers).",
        fix="Check that the DNS infrastructure is configured and healthy and that the host is in DNS; for large DNS "
        "answers use libraries that support EDNS. The TCP limit cannot be raised.",
        responder="handed_over",
        fault_type="dns_failure",
        action_type=None,
        handover="DNS or the code, not a setting the baseline records: 1. get_network_config's dns_support false: "
        "turn DNS resolution back on (ModifyVpcAttribute EnableDnsSupport true; the console's VPC settings, DNS "
        "resolution); if the VPC's DHCP options name their own DNS servers, check that they answer. "
        "2. If DNS is healthy and the host is in DNS, the code exhausts the 20 concurrent TCP connections Lambda "
        "supports for DNS: fewer concurrent lookups, or a resolver library with EDNS for large answers (the limit "
        "cannot be raised). 3. Invoke the function again.",
        lab_note="The lab reproduces the misconfigured DNS (the VPC's enableDnsSupport off; the Python function "
        "reports botocore's EndpointConnectionError); the 20-connection TCP limit itself is not emulated.",
        signatures=(_message("UNKNOWNHOSTEXCEPTION"),),
        sources=(TS_NETWORKING,),
    ),
)
