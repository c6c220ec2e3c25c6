"""The failure catalogue, asynchronous invocation and recursion: retries, destinations, loops.

One entry per failure mode, with the strings AWS prints for it (:mod:`.failure_mode` says what an entry holds).
"""

from __future__ import annotations

from incident_responder.catalogue.failure_mode import _DG, INVOKE, METRICS, FailureMode, _code

ASYNC_INVOCATION: tuple[FailureMode, ...] = (
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
        responder="fixed",
        fault_type="async_config_changed",
        action_type="restore_event_invoke_config",
        handover="",
        signatures=(),
        sources=(METRICS, _DG + "invocation-async.html"),
        lab_note="The lab settles a failed event at the end of its burst, when the alarm is raised: an event given up "
        "at once (no retry left, or too old for the next one) is sent to the dead-letter queue and on-failure "
        "destination and counted in `AsyncEventsDropped`; one with a retry left is still queued, and its later "
        "attempts are not run. The function's failure itself comes from another fault or the scenario's "
        "application error.",
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
        responder="fixed",
        fault_type="dead_letter_misconfigured",
        action_type="restore_dead_letter_config",
        handover="",
        signatures=(),
        sources=(METRICS, _DG + "invocation-async-retain-records.html"),
        lab_note="The lab reproduces a dead-letter queue that is not there or that the role may not send to (the "
        "role losing `sqs:SendMessage` is `permission_loss`, fixed by restoring its policy); it does not emulate an "
        "event over the queue's size limit or a FIFO queue or topic. `DeadLetterErrors` and "
        "`DestinationDeliveryFailures` show for the events Lambda gives up by the burst's end (see "
        "async-events-dropped).",
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
)
