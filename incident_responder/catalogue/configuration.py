"""The failure catalogue, configuration and limits: timeout, memory, /tmp, payload and environment.

One entry per failure mode, with the strings AWS prints for it (:mod:`.failure_mode` says what an entry holds).
"""

from __future__ import annotations

from incident_responder.catalogue.failure_mode import (
    _API,
    _BOTOCORE,
    _DG,
    ERRNO,
    RUNTIME_EMULATOR,
    RUNTIME_ENVIRONMENT,
    TS_CONFIGURATION,
    TS_DEPLOYMENT,
    TS_EXECUTION,
    TS_INVOCATION,
    FailureMode,
    _code,
    _message,
    _platform,
)

CONFIGURATION: tuple[FailureMode, ...] = (
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
        responder="fixed",
        fault_type="layers_changed",
        action_type="restore_layers",
        handover="",
        lab_note="The lab reproduces a layer added with an external extension that takes longer than the Init "
        "phase's 10 seconds to start: each environment reports the Init phase's timeout, then Lambda runs the Init "
        "phase again in the invocation, within the function's timeout (a suppressed init, which the page says is "
        "not reported in CloudWatch Logs: the REPORT line's duration includes it), and the invocation times out. "
        "Static code that is slow by itself (the code's own, which no baseline restores) is not reproduced; the "
        "responder names the entry only when a layer change since the baseline bears it out.",
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
        shows_in=("deployment API response", "CloudTrail (the failed UpdateFunctionConfiguration)"),
        cause="The variables object is larger than 4096 bytes (key names, values, quotes, commas and brackets "
        "included), or it sets a key Lambda reserves (such as `AWS_REGION`).",
        fix="Keep the variables object within 4096 bytes and leave Lambda's reserved keys alone.",
        responder="handed_over",
        fault_type="environment_update_rejected",
        action_type=None,
        handover="A deploy's code went live while Lambda refused its environment update, so the code runs without the "
        "variable it reads. Keep the variables object within 4096 bytes (move large values, such as a document of "
        "settings, to Parameter Store or Secrets Manager and read them at run time), leave Lambda's reserved keys "
        "alone, and apply the environment update again (UpdateFunctionConfiguration); or deploy the previous code "
        "until then. The baseline keeps no deployment package to put back.",
        lab_note="The lab reproduces a deploy to $LATEST whose code update succeeds and whose environment update, "
        "over 4 KB, Lambda refuses (the lab's Lambda refuses a variables object over 4096 bytes in the "
        "troubleshooting page's words, and its CloudTrail records the failed call with errorCode and errorMessage); "
        "the responder reads the refused call from CloudTrail (get_recent_changes shows the message without what "
        "it quotes of the variables) and the code's KeyError from the logs. Reserved keys and "
        "RequestEntityTooLargeException are not emulated; a refused request alone raises no alarm.",
        signatures=(
            _code("InvalidParameterValueException"),
            _message("exceeded the 4KB limit"),
            _message("contains reserved keys that are currently not supported for modification"),
        ),
        sources=(TS_DEPLOYMENT,),
    ),
)
