"""The failure catalogue, invocation and permissions: who may invoke the function, and what its role may do.

One entry per failure mode, with the strings AWS prints for it (:mod:`.failure_mode` says what an entry holds).
"""

from __future__ import annotations

from incident_responder.catalogue.failure_mode import (
    _ACCESS_DENIED,
    _API,
    _BOTOCORE,
    _DG,
    INVOKE,
    TS_EXECUTION,
    TS_INVOCATION,
    FailureMode,
    _code,
    _message,
)

INVOCATION: tuple[FailureMode, ...] = (
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
        responder="handed_over",
        fault_type="caller_not_authorized",
        action_type=None,
        handover="The caller's own IAM permissions must allow it: attach the AWS managed policy AWSLambdaRole to the "
        "user or role the error names, or a policy allowing `lambda:InvokeFunction` on the function's ARN (and its "
        "alias's, `<function ARN>:<alias>`, when it invokes an alias); a caller in another account also needs a "
        "statement of the function's resource-based policy (AddPermission). The responder changes only the "
        "onboarded function's own resources, never a caller's.",
        lab_note="No chaos kind reproduces it: the error reaches only the caller, never the function's logs or "
        "metrics. Scenario invoke-not-authorized: a role in the account that calls orders-api's alias `live` alerts "
        "with the access-denied message (a project alert) while API Gateway, which the resource-based policy lets "
        "invoke, keeps invoking it successfully; the responder finds no statement for the caller in the policy "
        "(get_lambda_config, InvokePermissions) and hands over. Not emulated: the caller's role and its refused "
        "requests (the lab account holds no such role; the responder never reads a caller's own policies, outside "
        "its scope). A statement removed since the baseline is resource-policy-missing (restored); a statement that "
        "lets the caller is a gap (an explicit deny elsewhere): unit tests pin both.",
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
        responder="fixed",
        fault_type="invoke_permission_lost",
        action_type="restore_invoke_permission",
        handover="",
        lab_note="The lab emulates API Gateway as orders-api's caller: Lambda checks the alias's resource-based policy "
        "before each request, and a refused request reaches neither the function's logs nor its metrics (the "
        "function's heartbeat alarm on Invocations fires); the caller's own log line is not written anywhere the "
        "responder reads.",
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
        responder="fixed",
        fault_type="permission_loss",
        action_type="restore_iam_policy",
        handover="",
        lab_note="The lab reproduces the execution role losing its logs permissions; CloudWatch Logs throttling the "
        "account and Lambda dropping logs above 2 MB/s are not emulated.",
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
        responder="fixed",
        fault_type="deployment_regression",
        action_type="rollback_alias",
        handover="",
        lab_note="The lab reproduces an alias deleted while its caller (API Gateway, for orders-api) still invokes it: "
        "the caller gets ResourceNotFoundException and the function records nothing. A function, or a version, that "
        "no longer exists has no baseline a restore could bring back.",
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
        responder="handed_over",
        fault_type="invoke_request_rejected",
        action_type=None,
        handover="Lambda refuses the request before the function runs: have the caller send a JSON body with the "
        "content type application/json, within the invocation payload quota (see Lambda quotas), and pass larger "
        "data by reference (an S3 object the function reads). The function's configuration plays no part.",
        lab_note="The lab's callers send small JSON events (S3 notifications, API Gateway requests, SQS batches): no "
        "account setting makes a request too large or not JSON, so no chaos kind reproduces it. Scenario "
        "invoke-request-rejected: a caller of orders-api alerts with RequestTooLargeException (a project alert) while "
        "the function's own logs report no error; the responder names the entry because the failure came before the "
        "function ran, and hands over. The caller's oversized request itself is not emulated (nothing in the "
        "account records a refused request).",
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
        responder="handed_over",
        fault_type="lambda_service_error",
        action_type=None,
        handover="The error is the Lambda service's own: nothing in the function's configuration causes or fixes it. "
        "Callers retry with backoff (the AWS SDKs retry server errors); check the AWS Health Dashboard for Lambda in "
        "the Region, and contact AWS Support if the errors persist.",
        lab_note="Nothing in an account makes Lambda fail internally, so no chaos kind reproduces it (the lab fails "
        "its own API calls only to test the responder's remediation). Scenario lambda-service-error: a caller of "
        "orders-api alerts with ServiceException (a project alert) while the function's own logs and metrics show "
        "no error and its configuration is at its baseline; the responder names the entry because the logs report "
        "no error, and hands over. The caller's failed requests themselves are not emulated: the function's "
        "Invocations only count the requests that reached it.",
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
        responder="handed_over",
        fault_type="function_not_ready",
        action_type=None,
        handover="Lambda's own work, not a setting the baseline restores: 1. get_lambda_config's State Pending "
        "(StateReasonCode Creating) says Lambda is still creating the function's network interfaces; wait for "
        "Active (aws lambda wait function-active-v2 --function-name FUNCTION). 2. If it stays Pending for more than "
        "six minutes, call UpdateFunctionConfiguration (or UpdateFunctionCode, PublishVersion): Lambda cancels the "
        "pending operation and puts the function into the Failed state; then attempt the update again, or delete "
        "and recreate the function. 3. Invoke it again once it is Active (callers retry ResourceConflictException).",
        lab_note="Lab only: what holds Lambda's creation of the interfaces is AWS's side, so the chaos kind has the "
        'lab\'s Lambda hold the function Pending (StateReason "The function is being created.", StateReasonCode '
        "Creating) until it is restored. Invoke is refused with ResourceConflictException: no log line, no "
        "invocation counted (the Invocations heartbeat alarm fires). An update that would cancel the pending "
        "operation is accepted and changes nothing: the Failed state it leads to is not emulated.",
        signatures=(_code("ResourceConflictException"),),
        sources=(TS_INVOCATION, _DG + "functions-states.html"),
    ),
)
