"""The failure catalogue, encryption of environment variables (KMS): the key and who may use it.

One entry per failure mode, with the strings AWS prints for it (:mod:`.failure_mode` says what an entry holds).
"""

from __future__ import annotations

from incident_responder.catalogue.failure_mode import _BOTOCORE, INVOKE, TS_INVOCATION, FailureMode, _code

KMS: tuple[FailureMode, ...] = (
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
        handover="If deleting the key was not intended, before its deletion date: cancel the deletion (`aws kms "
        "cancel-key-deletion --key-id <key>`: the key is Disabled afterwards), then enable it (`aws kms enable-key "
        "--key-id <key>`). The responder does not cancel a deletion someone scheduled.",
        signatures=(_code("KMSInvalidStateException", "kms"),),
        sources=(
            INVOKE,
            _BOTOCORE + "lambda/client/exceptions/KMSInvalidStateException.html",
            "https://docs.aws.amazon.com/kms/latest/APIReference/API_CancelKeyDeletion.html",
            "https://docs.aws.amazon.com/kms/latest/developerguide/deleting-keys-cancelling-key-deletion.html",
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
        responder="handed_over",
        fault_type="kms_key_missing",
        action_type=None,
        handover="A deleted key cannot be restored: configure the function (and each version callers invoke) with a "
        "key that exists, or the AWS managed key (UpdateFunctionConfiguration with KMSKeyArn, then publish and "
        "move the alias); re-create any secret the key alone encrypted.",
        signatures=(_code("KMSNotFoundException", "kms"),),
        sources=(INVOKE, _BOTOCORE + "lambda/client/exceptions/KMSNotFoundException.html"),
        lab_note="AWS KMS deletes a key only after a waiting period of 7 to 30 days, and the lab does not shorten it: "
        "no chaos kind deletes a key. The responder reads a key KMS no longer has (the baseline's key not found) "
        "and the lab answers its invocations with KMSNotFoundException; unit tests pin both.",
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
        responder="handed_over",
        fault_type="kms_unavailable",
        action_type=None,
        handover="Retry the calls that use the key with exponential backoff; if KMS throttles them, cache data keys or "
        "spread the requests, or request a higher AWS KMS request quota for the Region; if the key is unavailable "
        "(a custom key store disconnected), reconnect its key store.",
        signatures=(_code("KeyUnavailableException", "kms"), _code("KMSThrottlingException", "kms")),
        sources=(
            _BOTOCORE + "kms/client/exceptions/KeyUnavailableException.html",
            _BOTOCORE + "sns/client/exceptions/KMSThrottlingException.html",
        ),
        lab_note="No account setting makes AWS KMS throttle or lose a key, so no chaos kind reproduces it: the "
        "scenario's function raises the SDK's error (orders-api, `app_error`), as uncaught code would, and the "
        "responder diagnoses it from that error in the logs.",
    ),
)
