"""The failure catalogue, concurrency and throttling: the function's and the account's concurrency.

One entry per failure mode, with the strings AWS prints for it (:mod:`.failure_mode` says what an entry holds).
"""

from __future__ import annotations

from incident_responder.catalogue.failure_mode import (
    _API,
    _BOTOCORE,
    _DG,
    _THROTTLED,
    INVOKE,
    METRICS,
    REPOST_THROTTLING,
    TOO_MANY_REQUESTS,
    TS_INVOCATION,
    FailureMode,
    _code,
    _message,
)

CONCURRENCY: tuple[FailureMode, ...] = (
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
        responder="handed_over",
        fault_type="rate_limited",
        action_type=None,
        handover="Have the callers wait `retryAfterSeconds` and retry with backoff, and spread their requests; if "
        "the quota the Reason names is adjustable, request an increase (Service Quotas, AWS Lambda).",
        signatures=(
            _message("FunctionInvocationRateLimitExceeded"),
            _message("ReservedFunctionInvocationRateLimitExceeded"),
            _message("CallerRateLimitExceeded"),
        ),
        sources=(INVOKE, TOO_MANY_REQUESTS, REPOST_THROTTLING, _DG + "gettingstarted-limits.html"),
        lab_note="No chaos kind or scenario reproduces it, and none could honestly: Lambda allows each unit of a "
        "function's concurrency 10 requests per second (the quotas page), so its invocation rate limit binds before "
        "its concurrency limit only when invocations last less than 100 ms. Each of the lab's workloads runs 0.2 s "
        "or more even at the memory that gives it the most CPU, so an execution environment serves at most 5 "
        "requests a second: lowering the reserved concurrency throttles by concurrency "
        "(ReservedFunctionConcurrentInvocationLimitExceeded) long before by rate. The lab throttles by concurrency "
        "only, and the Reason reaches only the caller. The responder reads it from an alert that names the Reason "
        "and checks it against the function's Throttles metric (unit tests pin the reading).",
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
)
