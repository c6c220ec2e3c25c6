"""How AWS Lambda fails, as AWS documents it: one entry per failure mode, with the strings AWS prints for it.

Each entry says what the operator sees (AWS's own strings, quoted exactly as printed), where it shows, what
causes it, what AWS says fixes it, and what this responder does with it: diagnoses and fixes it, diagnoses it
and hands it to a person with what to do, or does not diagnose it yet. The strings were checked against the
pages each entry cites. The log reader's tables of error codes (``log_records``) are derived from the
signatures here, and ``docs/failure-catalogue.md`` is rendered from this list (``scripts/catalogue.py``).

Pure data, read at cold start: no imports beyond the standard library, no checks at import (the tests check
the list: ids unique, one category per string, actions that fit their fault types).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

SignatureKind = Literal["error_code", "platform_error", "network_error", "message"]
Responder = Literal["fixed", "handed_over", "not_yet"]


@dataclass(frozen=True)
class Signature:
    """A string AWS prints for this failure, exactly as printed, and how the log reader classifies it."""

    text: str
    kind: SignatureKind
    category: str | None = None  # log_records.Category, or None when the log reader does not classify it


@dataclass(frozen=True)
class FailureMode:
    """One way a Lambda function fails, what AWS says about it, and what the responder does with it."""

    id: str
    area: str  # a key of AREAS: the section of the docs page
    title: str
    symptom: str
    shows_in: tuple[str, ...]
    cause: str
    fix: str
    responder: Responder
    fault_type: str | None
    action_type: str | None
    handover: str
    signatures: tuple[Signature, ...]
    sources: tuple[str, ...]


# The page's sections, in order.
AREAS = {
    "invocation": "Invocation and permissions",
    "concurrency": "Concurrency and throttling",
    "configuration": "Configuration and limits",
    "networking": "Networking (VPC)",
    "kms": "Encryption of environment variables (KMS)",
    "event-sources": "Event source mappings",
    "async": "Asynchronous invocation and recursion",
    "deployment": "Deployment, code and runtime",
    "mounts": "File systems and SnapStart",
}


def _code(text: str, category: str | None = None) -> Signature:
    return Signature(text, "error_code", category)


def _platform(text: str, category: str | None = None) -> Signature:
    return Signature(text, "platform_error", category)


def _network(text: str) -> Signature:
    return Signature(text, "network_error", "network")


def _message(text: str, category: str | None = None) -> Signature:
    return Signature(text, "message", category)


_DG = "https://docs.aws.amazon.com/lambda/latest/dg/"
_API = "https://docs.aws.amazon.com/lambda/latest/api/"
_BOTOCORE = "https://docs.aws.amazon.com/botocore/latest/reference/services/"
INVOKE = _API + "API_Invoke.html"
TS_INVOCATION = _DG + "troubleshooting-invocation.html"
TS_EXECUTION = _DG + "troubleshooting-execution.html"
TS_DEPLOYMENT = _DG + "troubleshooting-deployment.html"
TS_NETWORKING = _DG + "troubleshooting-networking.html"
TS_CONFIGURATION = _DG + "troubleshooting-configuration.html"
METRICS = _DG + "monitoring-metrics-types.html"
RUNTIME_ENVIRONMENT = _DG + "lambda-runtime-environment.html"
ESM_CONFIGURATION = _API + "API_EventSourceMappingConfiguration.html"
UPDATE_ESM = _API + "API_UpdateEventSourceMapping.html"
TOO_MANY_REQUESTS = _BOTOCORE + "lambda/client/exceptions/TooManyRequestsException.html"
# AWS's own code, for the error types its pages name only in passing.
RUNTIME_EMULATOR = "https://github.com/aws/aws-lambda-runtime-interface-emulator"
PYTHON_RUNTIME_CLIENT = "https://github.com/aws/aws-lambda-python-runtime-interface-client"
REPOST_THROTTLING = "https://repost.aws/knowledge-center/lambda-troubleshoot-throttling"
ERRNO = "https://man7.org/linux/man-pages/man3/errno.3.html"

_ACCESS_DENIED = "access_denied"
_THROTTLED = "throttled"

FAILURE_MODES: tuple[FailureMode, ...] = (
    # -- invocation and permissions ------------------------------------------------------------------
    FailureMode(
        id="iam-permission-lost",
        area="invocation",
        title="The execution role lost a permission the code uses",
        symptom="The function's calls to another AWS service fail with the service's access-denied error code: "
        "`AccessDeniedException` for most services, `AccessDenied` for Amazon S3, `UnauthorizedOperation` for Amazon "
        "EC2, `AuthorizationError` for Amazon SNS (botocore puts the code in its message, the JavaScript SDK in the "
        "error's name).",
        shows_in=("function logs", "metric Errors"),
        cause="The function's execution role no longer allows an action its code calls: a statement was removed "
        "from one of its policies, or a policy was detached.",
        fix="Grant the permission again in the execution role. After a permission change, AWS advises a trivial "
        "update to the function's code or configuration, so that running instances, which have outdated "
        "credentials, are stopped and replaced.",
        responder="fixed",
        fault_type="permission_loss",
        action_type="restore_iam_policy",
        handover="",
        signatures=(
            _code("AccessDenied", _ACCESS_DENIED),
            _code("AccessDeniedException", _ACCESS_DENIED),
            _code("UnauthorizedOperation", _ACCESS_DENIED),
            _code("UnauthorizedException", _ACCESS_DENIED),
            _code("AuthorizationError", _ACCESS_DENIED),
            _code("AuthorizationErrorException", _ACCESS_DENIED),
            _code("NotAuthorized", _ACCESS_DENIED),
        ),
        sources=(
            _DG + "lambda-intro-execution-role.html",
            TS_EXECUTION,
            "https://docs.aws.amazon.com/AmazonS3/latest/API/ErrorResponses.html",
            "https://docs.aws.amazon.com/AWSEC2/latest/APIReference/errors-overview.html",
            _BOTOCORE + "sns/client/exceptions/AuthorizationErrorException.html",
        ),
    ),
    FailureMode(
        id="invoke-not-authorized",
        area="invocation",
        title="The caller may not invoke the function",
        symptom="`User: arn:aws:iam::123456789012:user/developer is not authorized to perform: lambda:InvokeFunction "
        "on resource: my-function`",
        shows_in=("Invoke response (synchronous callers)",),
        cause="The user or role that invokes the function has no permission for the `lambda:InvokeFunction` action "
        "(the IAM action's name differs from the API operation's, `Invoke`).",
        fix="Add the AWS managed policy AWSLambdaRole to the caller, or a policy that allows `lambda:InvokeFunction` "
        "on the function.",
        responder="not_yet",
        fault_type=None,
        action_type=None,
        handover="",
        signatures=(_message("is not authorized to perform: lambda:InvokeFunction"),),
        sources=(TS_INVOCATION,),
    ),
    FailureMode(
        id="resource-policy-missing",
        area="invocation",
        title="Another service or account cannot invoke the function",
        symptom="\"You can invoke your function directly, but it doesn't run when another service or account "
        'invokes it."',
        shows_in=("the calling service (the function is not invoked)",),
        cause="The function's resource-based policy does not grant that service or account permission to invoke it.",
        fix="Grant the service or account permission in the function's resource-based policy (AddPermission); an "
        "invoker in another account also needs permission to invoke functions from its own account.",
        responder="not_yet",
        fault_type=None,
        action_type=None,
        handover="",
        signatures=(),
        sources=(TS_INVOCATION, _API + "API_AddPermission.html"),
    ),
    FailureMode(
        id="logs-not-delivered",
        area="invocation",
        title="The function's logs do not reach CloudWatch Logs",
        symptom='"Logs don\'t appear in CloudWatch Logs." (or only some do)',
        shows_in=("CloudWatch Logs (absent log events)",),
        cause="The execution role lacks permission to write to CloudWatch Logs; or the account reached its "
        "CloudWatch Logs quotas and CloudWatch throttles the function's logging; or the function logs faster than "
        "Lambda can send (above 2 MB/s for a single log stream) and Lambda drops logs.",
        fix="Add the managed policy AWSLambdaBasicExecutionRole to the execution role and make a trivial update to "
        "the function so that instances with outdated credentials are replaced; check the CloudWatch Logs quotas "
        "in the Service Quotas console and request an increase if needed.",
        responder="not_yet",
        fault_type=None,
        action_type=None,
        handover="",
        signatures=(),
        sources=(TS_EXECUTION,),
    ),
    FailureMode(
        id="function-not-found",
        area="invocation",
        title="The function, version or alias does not exist",
        symptom='`ResourceNotFoundException` (HTTP 404; the API reference: "The resource specified in the request '
        'does not exist.")',
        shows_in=("Invoke response (synchronous callers)",),
        cause="The caller names a function, version or alias that does not exist (or no longer does).",
        fix="Invoke a function and qualifier that exist.",
        responder="not_yet",
        fault_type=None,
        action_type=None,
        handover="",
        signatures=(_code("ResourceNotFoundException"),),
        sources=(INVOKE,),
    ),
    FailureMode(
        id="invoke-request-rejected",
        area="invocation",
        title="Lambda refuses the invocation request itself",
        symptom="`RequestTooLargeException` (HTTP 413: the request payload exceeded the Invoke request body JSON input "
        "quota), `InvalidRequestContentException` (HTTP 400: the request body could not be parsed as JSON, or a "
        "request header is invalid) or `UnsupportedMediaTypeException` (HTTP 415: the content type of the Invoke "
        "request body is not JSON).",
        shows_in=("Invoke response (synchronous callers)",),
        cause="The caller sends a payload larger than the Lambda quota for invocation payloads, or a body that is "
        "not JSON.",
        fix="Send a JSON body within the invocation payload quota (see Lambda quotas).",
        responder="not_yet",
        fault_type=None,
        action_type=None,
        handover="",
        signatures=(
            _code("RequestTooLargeException"),
            _code("InvalidRequestContentException"),
            _code("UnsupportedMediaTypeException"),
        ),
        sources=(INVOKE, _DG + "gettingstarted-limits.html"),
    ),
    FailureMode(
        id="lambda-service-error",
        area="invocation",
        title="Lambda itself fails",
        symptom='`ServiceException` (HTTP 500; the API reference: "The AWS Lambda service encountered an internal '
        'error.")',
        shows_in=("Invoke response (synchronous callers)",),
        cause="An internal error of the Lambda service.",
        fix="The API reference documents no remedy on the caller's side: the error is the service's.",
        responder="not_yet",
        fault_type=None,
        action_type=None,
        handover="",
        signatures=(_code("ServiceException"),),
        sources=(INVOKE,),
    ),
    FailureMode(
        id="function-pending",
        area="invocation",
        title="The function is Pending",
        symptom="`ResourceConflictException: The operation cannot be performed at this time. The function is "
        "currently in the following state: Pending`; or the function stays in the `Pending` state for several "
        "minutes.",
        shows_in=("Invoke response (synchronous callers)", "deployment API response", "function State"),
        cause="A function connected to a VPC at creation is `Pending` while Lambda creates its elastic network "
        "interfaces: it cannot be invoked or modified until then.",
        fix="Wait for the `Active` state. If the function stays `Pending` for more than six minutes, call "
        "UpdateFunctionCode, UpdateFunctionConfiguration or PublishVersion: Lambda cancels the pending operation "
        "and puts the function into the `Failed` state, and another update can be attempted.",
        responder="not_yet",
        fault_type=None,
        action_type=None,
        handover="",
        signatures=(_code("ResourceConflictException"),),
        sources=(TS_INVOCATION, _DG + "functions-states.html"),
    ),
    # -- concurrency and throttling ------------------------------------------------------------------
    FailureMode(
        id="reserved-concurrency-lowered",
        area="concurrency",
        title="Reserved concurrency was lowered (or set to zero)",
        symptom='Callers are throttled: `TooManyRequestsException` (HTTP 429; the API reference: "The request '
        "throughput limit was exceeded.\") with the `Reason` `ReservedFunctionConcurrentInvocationLimitExceeded`; the function's "
        "`Throttles` metric rises while its `ConcurrentExecutions` stays at the reserved value.",
        shows_in=(
            "Invoke response (synchronous callers)",
            "metric Throttles",
            "metric ConcurrentExecutions",
            "metric AsyncEventsDropped",
        ),
        cause="The function's reserved concurrency is below the load it serves. Set to zero (the console's "
        "Throttle button), it stops any events from being processed until the limit is removed.",
        fix="Set the reserved concurrency back (PutFunctionConcurrency), or remove it.",
        responder="fixed",
        fault_type="throttling",
        action_type="update_concurrency",
        handover="",
        signatures=(
            _code("TooManyRequestsException", _THROTTLED),
            _message("ReservedFunctionConcurrentInvocationLimitExceeded"),
        ),
        sources=(
            INVOKE,
            TOO_MANY_REQUESTS,
            METRICS,
            _DG + "configuration-concurrency.html",
            _API + "API_PutFunctionConcurrency.html",
        ),
    ),
    FailureMode(
        id="account-concurrency-exhausted",
        area="concurrency",
        title="Another function takes the account's concurrency",
        symptom='"One function is using all of the available concurrency, causing other functions to be '
        'throttled." This function is throttled (`TooManyRequestsException` with the `Reason` '
        "`ConcurrentInvocationLimitExceeded`) while the Region's `ConcurrentExecutions` reaches the account's "
        "concurrency quota.",
        shows_in=("Invoke response (synchronous callers)", "metric Throttles", "metric ConcurrentExecutions"),
        cause="A function without reserved concurrency scales into the account's unreserved concurrency in the "
        "Region and leaves none for the others.",
        fix="Divide the account's concurrency into pools with reserved concurrency: a function with reserved "
        "concurrency can always scale to it and never beyond it. If the account's quota is too small, request an "
        "increase.",
        responder="handed_over",
        fault_type="account_concurrency_exhausted",
        action_type=None,
        handover="Give the function that takes the account's concurrency (or this one) a reserved concurrency, "
        "or request a higher concurrent-executions quota for the Region.",
        signatures=(
            _code("TooManyRequestsException", _THROTTLED),
            _message("ConcurrentInvocationLimitExceeded"),
        ),
        sources=(TS_INVOCATION, TOO_MANY_REQUESTS, METRICS, REPOST_THROTTLING),
    ),
    FailureMode(
        id="invocation-rate-exceeded",
        area="concurrency",
        title="The invocation rate exceeds a Lambda quota",
        symptom="`TooManyRequestsException` with the `Reason` `FunctionInvocationRateLimitExceeded`, "
        "`ReservedFunctionInvocationRateLimitExceeded` or `CallerRateLimitExceeded`, and `retryAfterSeconds` (the "
        "number of seconds the caller should wait before retrying).",
        shows_in=("Invoke response (synchronous callers)", "metric Throttles"),
        cause="Requests arrive faster than a Lambda rate quota allows, or faster than Lambda scales (1,000 "
        "execution environment instances every 10 seconds).",
        fix="Wait `retryAfterSeconds` before retrying; request a quota increase where the quota is adjustable.",
        responder="not_yet",
        fault_type=None,
        action_type=None,
        handover="",
        signatures=(
            _message("FunctionInvocationRateLimitExceeded"),
            _message("ReservedFunctionInvocationRateLimitExceeded"),
            _message("CallerRateLimitExceeded"),
        ),
        sources=(INVOKE, TOO_MANY_REQUESTS, REPOST_THROTTLING),
    ),
    FailureMode(
        id="dependency-throttling",
        area="concurrency",
        title="A service the function calls throttles it",
        symptom="The function's calls to another service are throttled and the SDK names the service's code: "
        "`ProvisionedThroughputExceededException`, `ThrottlingException` or `TransactionConflictException` (Amazon "
        "DynamoDB), `SlowDown` (Amazon S3), `RequestLimitExceeded` (Amazon EC2); `Rate exceeded` in the message. "
        "Lambda's own `Throttles` metric stays at zero.",
        shows_in=("function logs", "metric Errors"),
        cause="The function calls the service faster than its quota or provisioned capacity allows. AWS: if there "
        "are no Lambda `Throttles` metrics, then the throttling occurs on API calls in your Lambda function code.",
        fix="Retry the calls with exponential backoff; if the function needs a higher transactions-per-second quota "
        "for an API call, request a service quota increase (not all quotas are adjustable).",
        responder="handed_over",
        fault_type="dependency_throttling",
        action_type=None,
        handover="Add retries with exponential backoff to the throttled calls, or raise the service's quota or "
        "capacity (for example the DynamoDB table's throughput).",
        signatures=(
            _code("ProvisionedThroughputExceededException", _THROTTLED),
            _code("ThrottlingException", _THROTTLED),
            _code("Throttling", _THROTTLED),
            _code("ThrottledException", _THROTTLED),
            _code("TooManyRequestsException", _THROTTLED),
            _code("RequestLimitExceeded", _THROTTLED),
            _code("RequestThrottled", _THROTTLED),
            _code("RequestThrottledException", _THROTTLED),
            _code("SlowDown", _THROTTLED),
            _code("TransactionConflictException", _THROTTLED),
            _message("Rate exceeded"),
        ),
        sources=(
            REPOST_THROTTLING,
            "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Programming.Errors.html",
            _BOTOCORE + "dynamodb/client/exceptions/ProvisionedThroughputExceededException.html",
            "https://docs.aws.amazon.com/AmazonS3/latest/API/ErrorResponses.html",
            "https://docs.aws.amazon.com/AWSEC2/latest/APIReference/errors-overview.html",
        ),
    ),
    # -- configuration and limits --------------------------------------------------------------------
    FailureMode(
        id="function-timeout",
        area="configuration",
        title="The function runs out of its configured time",
        symptom="The platform ends the invocation and logs `Task timed out after 3.00 seconds` (the configured "
        "timeout); the error type is `Sandbox.Timedout`.",
        shows_in=("function logs", "Invoke response (synchronous callers)", "metric Errors", "metric Duration"),
        cause="The work takes longer than the timeout allows: the timeout was lowered, or a download, a call to "
        "another service or a larger input takes longer than usual. When the Init phase times out, Lambda re-runs "
        "it at the next invocation (a suppressed init) within the function's timeout, so a short timeout "
        "(around 3 seconds) can make it time out again.",
        fix="Increase the function's timeout; increase its memory (which also brings proportionally more CPU); "
        "optimise the initialisation code.",
        responder="fixed",
        fault_type="timeout",
        action_type="update_function_configuration",
        handover="",
        signatures=(_platform("Sandbox.Timedout", "timeout"), _message("Task timed out after")),
        sources=(TS_INVOCATION, TS_CONFIGURATION, RUNTIME_EMULATOR),
    ),
    FailureMode(
        id="init-phase-timeout",
        area="configuration",
        title="Initialisation takes longer than the Init phase allows",
        symptom="`INIT_REPORT Init Duration: 1236.04 ms Phase: init Status: timeout`",
        shows_in=("function logs",),
        cause="Starting the extensions, bootstrapping the runtime and running the function's static code did not "
        "finish within the Init phase's 10 seconds; Lambda retries the Init phase at the first invocation, within "
        "the function's configured timeout.",
        fix="Do less at initialisation. The 10-second limit does not apply to functions that use provisioned "
        "concurrency or SnapStart.",
        responder="not_yet",
        fault_type=None,
        action_type=None,
        handover="",
        signatures=(_message("Phase: init Status: timeout"),),
        sources=(RUNTIME_ENVIRONMENT,),
    ),
    FailureMode(
        id="memory-exhaustion",
        area="configuration",
        title="The function runs out of memory",
        symptom="The runtime is stopped when it exhausts its memory: the `REPORT` line's `Max Memory Used` reaches "
        "its `Memory Size`, and the invocation ends with the error type `Runtime.OutOfMemory`, or `Runtime.ExitError` "
        "when the runtime process is killed.",
        shows_in=("function logs", "Invoke response (synchronous callers)", "metric Errors"),
        cause="The memory size is too small for the work: it was lowered, a larger input arrived (a bigger file "
        "than usual), or memory leaks between warm invocations (objects kept in global state grow with each "
        "invocation).",
        fix="Increase the function's memory (128 MB to 10,240 MB); test with inputs at the upper bound of what the "
        "function should handle.",
        responder="fixed",
        fault_type="memory_exhaustion",
        action_type="update_function_configuration",
        handover="",
        signatures=(
            _platform("Runtime.OutOfMemory", "out_of_memory"),
            _platform("Runtime.ExitError", "runtime_exit"),
        ),
        sources=(
            TS_CONFIGURATION,
            TS_EXECUTION,
            "https://repost.aws/knowledge-center/lambda-runtime-error",
            RUNTIME_EMULATOR,
        ),
    ),
    FailureMode(
        id="ephemeral-storage-exhausted",
        area="configuration",
        title="The function runs out of /tmp (ephemeral storage)",
        symptom="Writes to `/tmp` fail once the function's ephemeral storage is full: Node.js reports the system "
        "error code `ENOSPC`, Python an OSError whose message reads `No space left on device`.",
        shows_in=("function logs", "metric Errors"),
        cause="The function's `/tmp` (`EphemeralStorage` `Size`, 512 MB by default) is smaller than what it writes: "
        "it was lowered, or what earlier invocations left in `/tmp` fills it (the directory is kept between "
        "invocations of the same execution environment).",
        fix="Give the function more ephemeral storage: any whole number between 512 and 10,240 MB.",
        responder="fixed",
        fault_type="storage_exhaustion",
        action_type="update_function_configuration",
        handover="",
        signatures=(_code("ENOSPC", "storage"), _message("No space left on device", "storage")),
        sources=(
            _DG + "API_EphemeralStorage.html",
            "https://aws.amazon.com/blogs/compute/using-larger-ephemeral-storage-for-aws-lambda/",
            ERRNO,
        ),
    ),
    FailureMode(
        id="environment-variable-removed",
        area="configuration",
        title="An environment variable the code reads was removed",
        symptom="The code fails where it reads a setting from its environment (in Python, a KeyError naming the "
        "variable); the function's configuration no longer holds that variable.",
        shows_in=("function logs", "metric Errors"),
        cause="An environment variable the code needs was removed or renamed in the function's configuration.",
        fix="Set the variable again in the function's configuration (UpdateFunctionConfiguration, "
        "`Environment` `Variables`).",
        responder="handed_over",
        fault_type="configuration_drift",
        action_type=None,
        handover="Put the removed environment variable back with its value (UpdateFunctionConfiguration): the "
        "baseline records variable names and digests, not values.",
        signatures=(),
        sources=(_DG + "configuration-envvars.html", _API + "API_UpdateFunctionConfiguration.html"),
    ),
    FailureMode(
        id="secret-scheduled-for-deletion",
        area="configuration",
        title="A secret the function reads is scheduled for deletion",
        symptom="The function's calls to AWS Secrets Manager fail with the error code `InvalidRequestException`, "
        "which Secrets Manager returns when, among other causes, the secret is scheduled for deletion.",
        shows_in=("function logs", "metric Errors"),
        cause="Someone deleted the secret the function reads. Secrets Manager does not delete a secret at once: it "
        "makes it inaccessible and schedules the deletion after a recovery window of at least seven days.",
        fix="Restore the secret within the recovery window: RestoreSecret cancels the scheduled deletion, and the "
        "secret can be accessed again.",
        responder="fixed",
        fault_type="dependency_missing",
        action_type="restore_secret",
        handover="",
        signatures=(_code("InvalidRequestException"),),
        sources=(
            _BOTOCORE + "secretsmanager/client/exceptions/InvalidRequestException.html",
            "https://docs.aws.amazon.com/secretsmanager/latest/apireference/API_RestoreSecret.html",
            "https://docs.aws.amazon.com/secretsmanager/latest/userguide/manage_delete-secret.html",
        ),
    ),
    FailureMode(
        id="environment-update-rejected",
        area="configuration",
        title="Lambda refuses the environment variables",
        symptom="`InvalidParameterValueException: Lambda was unable to configure your environment variables because "
        "the environment variables you have provided exceeded the 4KB limit.`, the same exception ending `the "
        "environment variables you have provided contains reserved keys that are currently not supported for "
        "modification.`, or `RequestEntityTooLargeException: Request must be smaller "
        "than 5120 bytes for the UpdateFunctionConfiguration operation`",
        shows_in=("deployment API response",),
        cause="The variables object is larger than 4096 bytes (key names, values, quotes, commas and brackets "
        "included), or it sets a key Lambda reserves (such as `AWS_REGION`).",
        fix="Keep the variables object within 4096 bytes and leave Lambda's reserved keys alone.",
        responder="not_yet",
        fault_type=None,
        action_type=None,
        handover="",
        signatures=(
            _code("InvalidParameterValueException"),
            _message("exceeded the 4KB limit"),
            _message("contains reserved keys that are currently not supported for modification"),
        ),
        sources=(TS_DEPLOYMENT,),
    ),
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
        responder="not_yet",
        fault_type=None,
        action_type=None,
        handover="",
        signatures=(_message("Error: connect ETIMEDOUT"), _message("ReadTimeoutError: Read timed out.")),
        sources=(TS_NETWORKING, _DG + "configuration-vpc-internet.html"),
    ),
    FailureMode(
        id="eni-limit-reached",
        area="networking",
        title="The VPC's network interface limit is reached",
        symptom="`ENILimitReachedException: The elastic network interface limit was reached for the function's "
        "VPC.` (Invoke: HTTP 502)",
        shows_in=("Invoke response (synchronous callers)",),
        cause="Lambda creates a network interface for each combination of subnet and security group attached to a "
        "function; the default quota is 250 network interfaces per VPC.",
        fix="Request a quota increase in the Service Quotas console.",
        responder="not_yet",
        fault_type=None,
        action_type=None,
        handover="",
        signatures=(_code("ENILimitReachedException"),),
        sources=(TS_NETWORKING, INVOKE),
    ),
    FailureMode(
        id="subnet-out-of-addresses",
        area="networking",
        title="The function's subnets have no free IP addresses",
        symptom="`SubnetIPAddressLimitReachedException` (HTTP 502; the API reference: \"AWS Lambda couldn't set up "
        "VPC access for the Lambda function because one or more configured subnets has no available IP "
        'addresses.")',
        shows_in=("Invoke response (synchronous callers)",),
        cause="One or more of the function's subnets has no available IP address.",
        fix="The API reference names the cause only: the configured subnets need available IP addresses.",
        responder="not_yet",
        fault_type=None,
        action_type=None,
        handover="",
        signatures=(_code("SubnetIPAddressLimitReachedException"),),
        sources=(INVOKE,),
    ),
    FailureMode(
        id="ec2-throttled-during-setup",
        area="networking",
        title="Amazon EC2 throttles Lambda while it sets up the VPC connection",
        symptom='`EC2ThrottledException` (HTTP 502; the API reference: "Amazon EC2 throttled AWS Lambda during '
        'Lambda function initialization using the execution role provided for the function."), or `EC2UnexpectedException` (HTTP '
        "502): Lambda received an unexpected Amazon EC2 client exception while setting up the function.",
        shows_in=("Invoke response (synchronous callers)",),
        cause="The Amazon EC2 calls Lambda makes with the function's execution role, to set up its network "
        "interfaces, were throttled or failed.",
        fix="The API reference names the cause only; the request can be retried later.",
        responder="not_yet",
        fault_type=None,
        action_type=None,
        handover="",
        signatures=(_code("EC2ThrottledException"), _code("EC2UnexpectedException")),
        sources=(INVOKE,),
    ),
    FailureMode(
        id="vpc-permissions-missing",
        area="networking",
        title="The execution role may not manage network interfaces",
        symptom='`EC2AccessDeniedException` (HTTP 502; the API reference: "Need additional permissions to configure '
        'VPC settings.")',
        shows_in=("Invoke response (synchronous callers)",),
        cause="The execution role lacks the Amazon EC2 permissions Lambda uses to create and manage the function's "
        "network interfaces (those of the managed policy AWSLambdaVPCAccessExecutionRole).",
        fix="Give the execution role the network interface permissions, for example with the managed policy "
        "AWSLambdaVPCAccessExecutionRole.",
        responder="not_yet",
        fault_type=None,
        action_type=None,
        handover="",
        signatures=(_code("EC2AccessDeniedException"),),
        sources=(INVOKE, _DG + "configuration-vpc.html"),
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
        responder="not_yet",
        fault_type=None,
        action_type=None,
        handover="",
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
        responder="not_yet",
        fault_type=None,
        action_type=None,
        handover="",
        signatures=(_code("ENINotReadyException"), _code("ResourceNotReadyException")),
        sources=(INVOKE, _DG + "functions-states.html"),
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
        responder="not_yet",
        fault_type=None,
        action_type=None,
        handover="",
        signatures=(_message("UNKNOWNHOSTEXCEPTION"),),
        sources=(TS_NETWORKING,),
    ),
    # -- KMS -------------------------------------------------------------------------------------------
    FailureMode(
        id="kms-key-disabled",
        area="kms",
        title="The key that encrypts the environment is disabled",
        symptom="`KMSDisabledException: Lambda was unable to decrypt the environment variables because the KMS key "
        "used is disabled. Please check the function's KMS key settings.` (Invoke: HTTP 502); code that calls AWS "
        'KMS with the key gets `DisabledException` (the API reference: "The request was rejected because the '
        'specified KMS key is not enabled.").',
        shows_in=("Invoke response (synchronous callers)", "function logs", "metric Errors"),
        cause="The AWS KMS key that encrypts the function's environment variables is disabled, or the grant that "
        "allows Lambda to use it was revoked.",
        fix="Enable the key. If the grant is missing, configure the function to use a different key, then reassign "
        "the custom key to recreate the grant.",
        responder="fixed",
        fault_type="kms_key_disabled",
        action_type="enable_kms_key",
        handover="",
        signatures=(_code("KMSDisabledException", "kms"), _code("DisabledException", "kms")),
        sources=(
            TS_INVOCATION,
            INVOKE,
            _BOTOCORE + "kms/client/exceptions/DisabledException.html",
            "https://docs.aws.amazon.com/kms/latest/APIReference/API_EnableKey.html",
        ),
    ),
    FailureMode(
        id="kms-key-pending-deletion",
        area="kms",
        title="The key that encrypts the environment is scheduled for deletion",
        symptom="`KMSInvalidStateException` (HTTP 502; the API reference: \"Lambda couldn't decrypt the environment "
        'variables because the state of the AWS KMS key used is not valid for Decrypt.")',
        shows_in=("Invoke response (synchronous callers)", "metric Errors"),
        cause="The key is in a state in which it cannot decrypt, such as pending deletion.",
        fix="Make the key usable for Decrypt again: cancel its scheduled deletion (CancelKeyDeletion) and enable it.",
        responder="handed_over",
        fault_type="kms_key_disabled",
        action_type=None,
        handover="Cancel the key's scheduled deletion (CancelKeyDeletion) and enable it (EnableKey), if deleting "
        "it was not intended: the responder does not cancel a deletion someone scheduled.",
        signatures=(_code("KMSInvalidStateException", "kms"),),
        sources=(
            INVOKE,
            _BOTOCORE + "lambda/client/exceptions/KMSInvalidStateException.html",
            "https://docs.aws.amazon.com/kms/latest/APIReference/API_CancelKeyDeletion.html",
        ),
    ),
    FailureMode(
        id="kms-key-not-found",
        area="kms",
        title="The key that encrypts the environment does not exist",
        symptom="`KMSNotFoundException` (HTTP 502; the API reference: \"Lambda couldn't decrypt the environment "
        'variables because the AWS KMS key was not found.")',
        shows_in=("Invoke response (synchronous callers)", "metric Errors"),
        cause="The key the function's configuration names was deleted, or never existed.",
        fix="Check the function's KMS key settings: configure it with a key that exists.",
        responder="not_yet",
        fault_type=None,
        action_type=None,
        handover="",
        signatures=(_code("KMSNotFoundException", "kms"),),
        sources=(INVOKE, _BOTOCORE + "lambda/client/exceptions/KMSNotFoundException.html"),
    ),
    FailureMode(
        id="kms-access-denied",
        area="kms",
        title="The function may no longer decrypt its environment",
        symptom="`KMSAccessDeniedException` (HTTP 502): `Lambda was unable to decrypt the environment variables "
        "because KMS access was denied.` The key itself is enabled.",
        shows_in=("Invoke response (synchronous callers)", "metric Errors"),
        cause="The execution role lost permission to decrypt with the key (in the key policy or the role's "
        "policies); or the role was deleted and recreated with the same name, which leaves Lambda's grant on the "
        "key pointing at the old role (`KMS Exception: UnrecognizedClientExceptionKMS Message: The security token "
        "included in the request is invalid`).",
        fix="Update the AWS KMS permissions of the IAM identity as the error says (the key policy and the IAM "
        "policy when the key and the role are in different accounts); for a recreated role, reset the grant.",
        responder="handed_over",
        fault_type="kms_access_denied",
        action_type=None,
        handover="Grant the execution role `kms:Decrypt` on the key again, in the key policy or the role's policy: "
        "a key policy is a person's change.",
        signatures=(_code("KMSAccessDeniedException", "kms"),),
        sources=(
            INVOKE,
            _BOTOCORE + "lambda/client/exceptions/KMSAccessDeniedException.html",
            "https://repost.aws/knowledge-center/lambda-kmsaccessdeniedexception-errors",
        ),
    ),
    FailureMode(
        id="kms-unavailable-or-throttled",
        area="kms",
        title="AWS KMS is unavailable or throttles the key's use",
        symptom='Code that calls AWS KMS gets `KeyUnavailableException` (the API reference: "The request was '
        'rejected because the specified KMS key was not available. You can retry the request."); a service that '
        'encrypts with KMS reports `KMSThrottlingException` ("The request was denied due to request '
        'throttling.").',
        shows_in=("function logs", "metric Errors"),
        cause="The key is temporarily unavailable, or requests that use it exceed the AWS KMS request quota.",
        fix="Retry the request (with backoff for throttling); see the AWS KMS quotas.",
        responder="not_yet",
        fault_type=None,
        action_type=None,
        handover="",
        signatures=(_code("KeyUnavailableException", "kms"), _code("KMSThrottlingException", "kms")),
        sources=(
            _BOTOCORE + "kms/client/exceptions/KeyUnavailableException.html",
            _BOTOCORE + "sns/client/exceptions/KMSThrottlingException.html",
        ),
    ),
    # -- event source mappings -----------------------------------------------------------------------
    FailureMode(
        id="event-source-mapping-disabled",
        area="event-sources",
        title="The event source mapping is disabled",
        symptom="Messages wait in the queue (records in the stream) and the function is not invoked: the mapping's "
        "`State` is `Disabled`.",
        shows_in=("event source mapping State", "queue depth or metric IteratorAge", "metric Invocations"),
        cause="Someone disabled the mapping (its `StateTransitionReason` says whether a user or Lambda made the last "
        "change).",
        fix="Enable the mapping again (UpdateEventSourceMapping): a mapping can pause invocation and resume later "
        "from the same location.",
        responder="fixed",
        fault_type="event_source_disabled",
        action_type="enable_event_source_mapping",
        handover="",
        signatures=(),
        sources=(ESM_CONFIGURATION, UPDATE_ESM),
    ),
    FailureMode(
        id="sqs-visibility-timeout-lowered",
        area="event-sources",
        title="The source queue's visibility timeout was lowered",
        symptom="Messages become visible again while the function is still processing them, and are processed "
        "again: the queue's `VisibilityTimeout` is shorter than the function needs. Creating or updating the "
        "mapping fails while the function's timeout exceeds the queue's visibility timeout.",
        shows_in=("duplicate processing", "queue metrics", "event source mapping API response"),
        cause="The source queue's visibility timeout was lowered below the function's processing time.",
        fix="Set the source queue's visibility timeout to at least six times the function's timeout: AWS, \"set the "
        "source queue's visibility timeout to at least six times the configuration timeout on your function\"; the "
        "extra time allows Lambda to retry if the function is throttled while processing a previous batch.",
        responder="fixed",
        fault_type="event_source_misconfigured",
        action_type="restore_queue_attributes",
        handover="",
        signatures=(),
        sources=(_DG + "services-sqs-configure.html",),
    ),
    FailureMode(
        id="event-source-function-call-failed",
        area="event-sources",
        title="The mapping's batches keep failing",
        symptom="The mapping's `LastProcessingResult` reads `PROBLEM: Function call failed` (healthy mappings read "
        "`OK` or `No records processed`); for a stream, `IteratorAge` grows while the failing batch is retried.",
        shows_in=("event source mapping LastProcessingResult", "metric IteratorAge", "function logs"),
        cause="The function returns an error or times out on the batch; for streams, Lambda retries the batch and "
        "by default retries failed records until they expire, which holds back the shard.",
        fix="Fix the function's error; for streams, split failing batches (BisectBatchOnFunctionError), cap the "
        "retries (MaximumRetryAttempts) and the record age (MaximumRecordAgeInSeconds), and send discarded records "
        "to an on-failure destination.",
        responder="not_yet",
        fault_type=None,
        action_type=None,
        handover="",
        signatures=(_message("PROBLEM: Function call failed"),),
        sources=(_DG + "with-kinesis.html", ESM_CONFIGURATION, UPDATE_ESM, METRICS),
    ),
    FailureMode(
        id="kafka-authentication-failed",
        area="event-sources",
        title="Lambda cannot authenticate to (or is not authorised by) the Kafka cluster",
        symptom="The mapping's `LastProcessingResult` reads `Cluster failed to authorize Lambda`, `SASL "
        "authentication failed`, `Server failed to authenticate Lambda`, `Lambda failed to authenticate server` or "
        "`Provided certificate or private key is invalid`.",
        shows_in=("event source mapping LastProcessingResult",),
        cause="The user lacks Kafka ACL permissions (DescribeConfigs Cluster, Describe and Read Group, Describe and "
        "Read Topic) or the execution role lacks `kafka-cluster:Connect`; the sign-in credentials are not valid; or "
        "the mTLS certificates do not match the brokers'.",
        fix="Add the missing ACLs (the group name is the mapping's UUID) or permissions, fix the credentials or "
        "certificates (PEM format); changes to the execution role can take several minutes to take effect.",
        responder="not_yet",
        fault_type=None,
        action_type=None,
        handover="",
        signatures=(
            _message("Cluster failed to authorize Lambda"),
            _message("SASL authentication failed"),
            _message("Server failed to authenticate Lambda"),
            _message("Lambda failed to authenticate server"),
            _message("Provided certificate or private key is invalid"),
        ),
        sources=(_DG + "with-kafka-troubleshoot.html",),
    ),
    FailureMode(
        id="kafka-consumer-stopped",
        area="event-sources",
        title="The Kafka consumer stopped",
        symptom="The mapping stops processing and its `StateTransitionReason` reads `ESM_CONFIG_NOT_VALID`, "
        "`EVENT_SOURCE_AUTHN_ERROR`, `EVENT_SOURCE_AUTHZ_ERROR` or `FUNCTION_CONFIG_NOT_VALID`.",
        shows_in=("event source mapping StateTransitionReason",),
        cause="The mapping's or the function's configuration is not valid, or Lambda cannot authenticate to the event "
        "source or lacks permission to read it.",
        fix="Correct what the reason names. Records larger than 6 MB can go unprocessed.",
        responder="not_yet",
        fault_type=None,
        action_type=None,
        handover="",
        signatures=(
            _message("ESM_CONFIG_NOT_VALID"),
            _message("EVENT_SOURCE_AUTHN_ERROR"),
            _message("EVENT_SOURCE_AUTHZ_ERROR"),
            _message("FUNCTION_CONFIG_NOT_VALID"),
        ),
        sources=(_DG + "with-kafka-troubleshoot.html",),
    ),
    # -- asynchronous invocation and recursion -------------------------------------------------------
    FailureMode(
        id="async-events-dropped",
        area="async",
        title="Asynchronous events are dropped",
        symptom="`AsyncEventsDropped` rises (events dropped without successfully executing the function) and "
        "`AsyncEventAge` grows.",
        shows_in=("metric AsyncEventsDropped", "metric AsyncEventAge", "dead-letter queue"),
        cause="Events exceed the maximum event age or exhaust the maximum retry attempts, because the function "
        "fails or is throttled; or reserved concurrency is set to 0.",
        fix="Look at the `Errors` metric for function errors and the `Throttles` metric for concurrency issues; "
        "configure a dead-letter queue or an `OnFailure` destination so that events go there before they are "
        "dropped.",
        responder="not_yet",
        fault_type=None,
        action_type=None,
        handover="",
        signatures=(),
        sources=(METRICS, _DG + "invocation-async.html"),
    ),
    FailureMode(
        id="dead-letter-delivery-failed",
        area="async",
        title="Failed events cannot be delivered to the dead-letter queue or destination",
        symptom="`DeadLetterErrors` or `DestinationDeliveryFailures` above zero.",
        shows_in=("metric DeadLetterErrors", "metric DestinationDeliveryFailures"),
        cause="Permissions errors, incorrectly configured resources or size limits; or the destination is of an "
        "unsupported type, such as an Amazon SQS FIFO queue or an Amazon SNS FIFO topic.",
        fix="Give the execution role permission to send to the queue or topic, point the function at an existing "
        "resource of a supported type, and keep events within its size limit.",
        responder="not_yet",
        fault_type=None,
        action_type=None,
        handover="",
        signatures=(),
        sources=(METRICS, _DG + "invocation-async-retain-records.html"),
    ),
    FailureMode(
        id="recursive-loop-stopped",
        area="async",
        title="Lambda stopped a recursive loop",
        symptom="`RecursiveInvocationsDropped` rises; Lambda returns `RecursiveInvocationException` (the API "
        'reference: "Lambda has detected your function being invoked in a recursive loop with other AWS resources '
        "and stopped your function's invocation.\") and notifies through the AWS Health Dashboard and by email (up to 3.5 hours "
        "later).",
        shows_in=("metric RecursiveInvocationsDropped", "AWS Health", "email", "dead-letter queue"),
        cause="The function writes to the Amazon SQS queue, Amazon SNS topic or Amazon S3 bucket that invokes it: "
        "after about 16 invocations in the same chain of requests, Lambda stops the next one. An SQS source retries "
        "the message until its `maxReceiveCount` is exceeded.",
        fix="Reduce the function's concurrency to zero, remove or disable the trigger, and fix the code that writes "
        "events back to the resource that invokes the function; consider a dead-letter queue on the source queue.",
        responder="handed_over",
        fault_type="recursive_loop",
        action_type=None,
        handover="Fix the code that writes back to the resource that triggers the function; until then, set its "
        "reserved concurrency to zero or disable the trigger, as AWS advises.",
        signatures=(_code("RecursiveInvocationException"),),
        sources=(_DG + "invocation-recursion.html", METRICS, INVOKE),
    ),
    # -- deployment, code and runtime ----------------------------------------------------------------
    FailureMode(
        id="deployment-regression",
        area="deployment",
        title="A new version fails where the previous one worked",
        symptom="Errors begin when the alias moves to a new version: the `START` line of the failing invocations "
        "shows the new version, and the previous version ran without them.",
        shows_in=("function logs", "metric Errors"),
        cause="The new version's code or configuration fails.",
        fix="Roll back the alias: update it to point to the previously working version; then fix the code and "
        "publish a new version.",
        responder="fixed",
        fault_type="deployment_regression",
        action_type="rollback_alias",
        handover="",
        signatures=(),
        sources=(TS_DEPLOYMENT, TS_EXECUTION, _DG + "configuration-aliases.html"),
    ),
    FailureMode(
        id="application-error",
        area="deployment",
        title="The function's code raises",
        symptom="The invocation returns the code's error: the response carries the `X-Amz-Function-Error` header "
        "(`FunctionError` `Unhandled` in the AWS CLI) with an `errorType` and `errorMessage`, and the logs hold the "
        "stack trace.",
        shows_in=("function logs", "Invoke response (synchronous callers)", "metric Errors"),
        cause="A bug, or an input the code does not handle: malformed JSON, a missing attribute, an S3 object key "
        "left URL-encoded, a downstream service that is unavailable.",
        fix="Validate the event payload, handle downstream errors and timeouts, and test with inputs at the upper "
        "bounds of what the function should handle.",
        responder="handed_over",
        fault_type="application_error",
        action_type=None,
        handover="Read the stack trace in the function's logs and fix the code, or the input that triggers it; roll "
        "the alias back if a recent version brought the error.",
        signatures=(_message("X-Amz-Function-Error"),),
        sources=(TS_EXECUTION, _DG + "python-exceptions.html", _DG + "nodejs-exceptions.html"),
    ),
    FailureMode(
        id="import-module-error",
        area="deployment",
        title="The runtime cannot import the handler's module",
        symptom="`Runtime.ImportModuleError` with `Unable to import module 'lambda_function': ...` (Python), or "
        "`Cannot find module 'function'` (Node.js).",
        shows_in=("function logs", "Invoke response (synchronous callers)", "metric Errors"),
        cause="The file named in the handler setting does not match the code, a library is missing from the "
        "deployment package, or a library with C or C++ extensions was built for another platform than Lambda "
        "(Amazon Linux).",
        fix="Make the handler setting match the file; package the libraries, and build those with C or C++ "
        "extensions in a Lambda-like environment (`sam build --use-container`).",
        responder="not_yet",
        fault_type=None,
        action_type=None,
        handover="",
        signatures=(
            _platform("Runtime.ImportModuleError"),
            _message("Unable to import module"),
            _message("Cannot find module"),
        ),
        sources=(_DG + "python-exceptions.html", TS_DEPLOYMENT, TS_EXECUTION, PYTHON_RUNTIME_CLIENT),
    ),
    FailureMode(
        id="handler-not-found",
        area="deployment",
        title="The handler setting names a method the code does not have",
        symptom="`index.handler is undefined or not exported` (Node.js) or `Handler 'handler' missing on module "
        "'function'` (Python), with the error type `Runtime.HandlerNotFound`.",
        shows_in=("function logs", "Invoke response (synchronous callers)", "metric Errors"),
        cause="The handler method in the function's handler setting does not match the code.",
        fix="Make the handler setting (`filename.methodname`) match the method in the code.",
        responder="not_yet",
        fault_type=None,
        action_type=None,
        handover="",
        signatures=(
            _platform("Runtime.HandlerNotFound"),
            _message("is undefined or not exported"),
            _message("missing on module"),
        ),
        sources=(TS_DEPLOYMENT, PYTHON_RUNTIME_CLIENT),
    ),
    FailureMode(
        id="deployment-file-permissions",
        area="deployment",
        title="The runtime may not read the deployment package's files",
        symptom="`EACCES: permission denied, open '/var/task/index.js'` (Node.js) or `[Errno 13] Permission denied: "
        "'/var/task/function.py'` (Python).",
        shows_in=("function logs", "metric Errors"),
        cause="The files in the deployment package are not readable by the runtime.",
        fix="Give files 644 and directories and executables 755 permissions, then deploy again.",
        responder="not_yet",
        fault_type=None,
        action_type=None,
        handover="",
        signatures=(_message("EACCES: permission denied"), _message("Permission denied: '/var/task/")),
        sources=(TS_DEPLOYMENT,),
    ),
    FailureMode(
        id="invalid-entrypoint",
        area="deployment",
        title="No valid bootstrap or entrypoint",
        symptom="`Couldn't find valid bootstrap(s): [/var/task/bootstrap /opt/bootstrap]`, error type "
        "`Runtime.InvalidEntrypoint`.",
        shows_in=("function logs", "Invoke response (synchronous callers)"),
        cause="The root of the deployment package has no executable file named `bootstrap` (for an OS-only runtime "
        "it must be at the root of the .zip file); for a container image, the ENTRYPOINT is not an absolute path or "
        "is a symlink.",
        fix="Put an executable `bootstrap` at the root of the .zip file; give the image an ENTRYPOINT with an "
        "absolute path, not a symlink.",
        responder="not_yet",
        fault_type=None,
        action_type=None,
        handover="",
        signatures=(_platform("Runtime.InvalidEntrypoint"), _message("Couldn't find valid bootstrap")),
        sources=(TS_INVOCATION,),
    ),
    FailureMode(
        id="extension-crash-at-init",
        area="deployment",
        title="An extension crashes during initialisation",
        symptom="`INIT_REPORT Init Duration: 1236.04 ms Phase: init Status: error Error Type: Extension.Crash`",
        shows_in=("function logs",),
        cause="An extension (delivered as a layer) crashed during the Init phase.",
        fix="The runtime environment page documents the log line only: the extension has to start cleanly, so "
        "remove its layer or deploy a working version of it.",
        responder="not_yet",
        fault_type=None,
        action_type=None,
        handover="",
        signatures=(_platform("Extension.Crash"),),
        sources=(RUNTIME_ENVIRONMENT, RUNTIME_EMULATOR),
    ),
    FailureMode(
        id="nodejs-unexpected-exit",
        area="deployment",
        title="Node.js exits before the handler's promises settle",
        symptom='`Runtime.NodejsExit` (Node.js 18 and later): "Lambda runtime client detected an unexpected Node.js '
        'exit code."',
        shows_in=("function logs", "metric Errors"),
        cause="The function exits before all promises are settled, for example because of a bug, or Node.js "
        "detects a deadlock that prevents them from settling (async handlers only).",
        fix="Settle (resolve or reject) every promise before the handler completes; look for race conditions in "
        "asynchronous code.",
        responder="not_yet",
        fault_type=None,
        action_type=None,
        handover="",
        signatures=(_platform("Runtime.NodejsExit"),),
        sources=(TS_INVOCATION,),
    ),
    FailureMode(
        id="runtime-exited",
        area="deployment",
        title="The code ends the runtime process",
        symptom="`Runtime.ExitError` with a message such as `Error: Runtime exited with error: exit status 129`",
        shows_in=("function logs", "Invoke response (synchronous callers)", "metric Errors"),
        cause="The code calls an explicit exit (`process.exit(0)`, `exit()`, `quit()`, `os.Exit()`...), the runtime "
        "crashes, or the function runs short of memory or opens too many connections to a backend database.",
        fix="Replace explicit exits with a valid return; check the function's memory in its logs and raise it if "
        "needed; manage database connections (for example with a proxy).",
        responder="not_yet",
        fault_type=None,
        action_type=None,
        handover="",
        signatures=(_platform("Runtime.ExitError", "runtime_exit"), _message("Runtime exited with error")),
        sources=("https://repost.aws/knowledge-center/lambda-runtime-error", TS_INVOCATION),
    ),
    FailureMode(
        id="response-not-serializable",
        area="deployment",
        title="The handler returns what the runtime cannot serialise",
        symptom="`Unable to marshal response: Object of type AttributeError is not JSON serializable`, error type "
        "`Runtime.MarshalError`.",
        shows_in=("function logs", "Invoke response (synchronous callers)", "metric Errors"),
        cause="The handler's return value is not JSON serialisable (for example bytes left undecoded after base64 "
        "encoding).",
        fix="Return a JSON-serialisable value (decode base64 output to a string).",
        responder="not_yet",
        fault_type=None,
        action_type=None,
        handover="",
        signatures=(_platform("Runtime.MarshalError"), _message("Unable to marshal response")),
        sources=(_DG + "python-exceptions.html", PYTHON_RUNTIME_CLIENT),
    ),
    FailureMode(
        id="code-upload-rejected",
        area="deployment",
        title="Lambda refuses the code package",
        symptom="`An error occurred (RequestEntityTooLargeException) when calling the UpdateFunctionCode "
        "operation`, or `Code storage limit exceeded.` (`CodeStorageExceededException`).",
        shows_in=("deployment API response",),
        cause="A .zip file uploaded directly is larger than about 50 MB; or the account's code storage (75 GB per "
        "Region, functions and layers together) is full.",
        fix="Upload larger packages to Amazon S3 and pass `S3Bucket` and `S3Key`; delete old function versions and "
        "unused code to free code storage.",
        responder="not_yet",
        fault_type=None,
        action_type=None,
        handover="",
        signatures=(_code("RequestEntityTooLargeException"), _code("CodeStorageExceededException")),
        sources=(TS_DEPLOYMENT,),
    ),
    FailureMode(
        id="invalid-runtime-or-package",
        area="deployment",
        title="The runtime is not supported or the package cannot be unzipped",
        symptom='`InvalidRuntimeException` (HTTP 502; the API reference: "The runtime or runtime version '
        'specified is not supported.") or `InvalidZipFileException` (HTTP 502: "AWS Lambda could not unzip the '
        'deployment package.")',
        shows_in=("Invoke response (synchronous callers)",),
        cause="The function's runtime or runtime version is not supported, or its .zip file is damaged.",
        fix="The API reference names the cause only: move the function to a supported runtime, or deploy a valid "
        ".zip file.",
        responder="not_yet",
        fault_type=None,
        action_type=None,
        handover="",
        signatures=(_code("InvalidRuntimeException"), _code("InvalidZipFileException")),
        sources=(INVOKE,),
    ),
    # -- file systems and SnapStart ------------------------------------------------------------------
    FailureMode(
        id="efs-mount-failure",
        area="mounts",
        title="The function cannot mount its EFS file system",
        symptom="`EFSMountFailureException: The function could not mount the EFS file system with access point "
        "arn:aws:elasticfilesystem:us-east-2:123456789012:access-point/fsap-015cxmplb72b405fd.` (HTTP 403)",
        shows_in=("Invoke response (synchronous callers)",),
        cause="The mount request was rejected: a permission or configuration issue.",
        fix="Check the function's permissions, and that its file system and access point exist and are ready for use.",
        responder="not_yet",
        fault_type=None,
        action_type=None,
        handover="",
        signatures=(_code("EFSMountFailureException"),),
        sources=(TS_INVOCATION, INVOKE),
    ),
    FailureMode(
        id="efs-mount-connectivity",
        area="mounts",
        title="The function cannot reach its EFS file system",
        symptom="`EFSMountConnectivityException: The function couldn't connect to the Amazon EFS file system with "
        "access point ... Check your network configuration and try again.` (HTTP 408)",
        shows_in=("Invoke response (synchronous callers)",),
        cause="The function cannot connect to the file system with the NFS protocol (TCP port 2049).",
        fix="Check the security groups and routing of the VPC's subnets; after a change of the function's VPC "
        "configuration, try unmounting and remounting the file system.",
        responder="not_yet",
        fault_type=None,
        action_type=None,
        handover="",
        signatures=(_code("EFSMountConnectivityException"),),
        sources=(TS_INVOCATION, INVOKE),
    ),
    FailureMode(
        id="efs-mount-timeout",
        area="mounts",
        title="Mounting the EFS file system times out",
        symptom="`EFSMountTimeoutException: The function could not mount the EFS file system with access point "
        "{...} due to mount time out.` (HTTP 408)",
        shows_in=("Invoke response (synchronous callers)",),
        cause="The function connects to the file system but the mount operation times out.",
        fix="Try again after a short time, and consider limiting the function's concurrency to reduce the load on "
        "the file system.",
        responder="not_yet",
        fault_type=None,
        action_type=None,
        handover="",
        signatures=(_code("EFSMountTimeoutException"),),
        sources=(TS_INVOCATION, INVOKE),
    ),
    FailureMode(
        id="efs-io-stalled",
        area="mounts",
        title="File system I/O takes too long",
        symptom="`EFSIOException: This function instance was stopped because Lambda detected an IO process that was "
        "taking too long.` (HTTP 410)",
        shows_in=("Invoke response (synchronous callers)",),
        cause="A previous invocation timed out and Lambda could not end the handler: the file system ran out of "
        "burst credits and its baseline throughput is too low.",
        fix="Increase the file system's size, or use provisioned throughput.",
        responder="not_yet",
        fault_type=None,
        action_type=None,
        handover="",
        signatures=(_code("EFSIOException"),),
        sources=(TS_INVOCATION, INVOKE),
    ),
    FailureMode(
        id="snapstart-not-ready",
        area="mounts",
        title="A SnapStart version is not ready",
        symptom="`An error occurred (SnapStartNotReadyException) when calling the Invoke20150331 operation: Lambda "
        "is initializing your function. It will be ready to invoke once your function state becomes ACTIVE.` (HTTP "
        "409)",
        shows_in=("Invoke response (synchronous callers)", "function State"),
        cause="The function version is `Inactive`: it was not invoked for 14 days, or Lambda recycled the execution "
        "environment.",
        fix="Wait until the version reaches the `Active` state, then invoke it again.",
        responder="not_yet",
        fault_type=None,
        action_type=None,
        handover="",
        signatures=(_code("SnapStartNotReadyException"),),
        sources=(_DG + "snapstart-troubleshooting.html", INVOKE),
    ),
    FailureMode(
        id="snapstart-restore-timeout",
        area="mounts",
        title="Restoring a SnapStart snapshot times out",
        symptom="`SnapStartTimeoutException` (HTTP 408; the API reference: \"Lambda couldn't restore the snapshot "
        'within the timeout limit.")',
        shows_in=("Invoke response (synchronous callers)", "function logs"),
        cause="An after-restore runtime hook runs for longer than 10 seconds; network connection and credentials "
        "issues can also make the Restore phase time out.",
        fix="Check the function's logs for timeouts during the Restore phase, and make every after-restore hook "
        "complete in less than 10 seconds.",
        responder="not_yet",
        fault_type=None,
        action_type=None,
        handover="",
        signatures=(_code("SnapStartTimeoutException"),),
        sources=(_DG + "snapstart-troubleshooting.html", INVOKE),
    ),
)


def signature_categories(kind: SignatureKind, modes: Iterable[FailureMode] = FAILURE_MODES) -> dict[str, str]:
    """text -> the log reader's category, for every signature of that kind that has one.

    Raises ValueError when two signatures give one text two categories (the tests keep the list free of that).
    """
    found: dict[str, str] = {}
    for mode in modes:
        for signature in mode.signatures:
            if signature.kind != kind or signature.category is None:
                continue
            known = found.setdefault(signature.text, signature.category)
            if known != signature.category:
                raise ValueError(
                    f"{signature.text!r} ({kind}) has two categories: {known!r} and {signature.category!r} ({mode.id})"
                )
    return found


def modes_by_fault_type() -> dict[str, list[FailureMode]]:
    """The diagnosed modes by the fault type the responder gives them."""
    grouped: dict[str, list[FailureMode]] = {}
    for mode in FAILURE_MODES:
        if mode.fault_type is not None:
            grouped.setdefault(mode.fault_type, []).append(mode)
    return grouped


def counts() -> dict[str, int]:
    """How many modes are listed, and how many the responder fixes, hands over or does not diagnose yet."""
    by_responder = {"fixed": 0, "handed_over": 0, "not_yet": 0}
    for mode in FAILURE_MODES:
        by_responder[mode.responder] += 1
    return {
        "listed": len(FAILURE_MODES),
        **by_responder,
        "diagnosed": by_responder["fixed"] + by_responder["handed_over"],
    }
