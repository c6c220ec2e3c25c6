"""The failure catalogue, deployment, code and runtime: packages, handlers, layers and versions.

One entry per failure mode, with the strings AWS prints for it (:mod:`.failure_mode` says what an entry holds).
"""

from __future__ import annotations

from incident_responder.catalogue.failure_mode import (
    _DG,
    INVOKE,
    NODE_RUNTIME_CLIENT,
    PYTHON_RUNTIME_CLIENT,
    RUNTIME_EMULATOR,
    RUNTIME_ENVIRONMENT,
    TS_DEPLOYMENT,
    TS_EXECUTION,
    TS_INVOCATION,
    FailureMode,
    _code,
    _message,
    _platform,
)

DEPLOYMENT: tuple[FailureMode, ...] = (
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
        responder="fixed",
        fault_type="layers_changed",
        action_type="restore_layers",
        handover="",
        lab_note="The lab reproduces the layer case: a layer added since the baseline whose copy of a package the "
        "handler imports holds compiled extensions built for another platform (a layer comes before the runtime's "
        "own packages); the responder restores the baseline's layers. An import error without a layer change (the "
        "package itself) stays undiagnosed: a person redeploys the package.",
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
        responder="fixed",
        fault_type="handler_misconfigured",
        action_type="restore_handler",
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
        responder="handed_over",
        fault_type="code_package_invalid",
        action_type=None,
        handover="Rebuild the deployment package with files readable by the runtime (`chmod 644` for files, `chmod "
        "755` for directories and executables, e.g. `chmod -R o+rX .` before zipping) and deploy it again "
        "(UpdateFunctionCode); the baseline keeps no package to put back.",
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
        responder="fixed",
        fault_type="runtime_misconfigured",
        action_type="restore_runtime",
        handover="",
        lab_note="The lab reproduces the runtime case: the function's runtime setting moved since the baseline to an "
        "OS-only runtime (`provided.al2023`) whose bootstrap neither the package nor a layer has; every Init phase "
        "fails (`INIT_REPORT ... Error Type: Runtime.InvalidEntrypoint`, then the platform's line for each "
        "invocation) and the responder restores the baseline's runtime. A package deployed without its bootstrap on "
        "an unchanged OS-only runtime, and a container image's ENTRYPOINT, stay undiagnosed: a person rebuilds them.",
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
        responder="fixed",
        fault_type="layers_changed",
        action_type="restore_layers",
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
        responder="fixed",
        fault_type="deployment_regression",
        action_type="rollback_alias",
        handover="",
        lab_note="The lab reproduces a new version, live through the alias its callers use, whose async handler "
        "awaits a promise it never settles; the responder rolls the alias back to the baseline's version. The runtime "
        "client logs the error as an `Invoke Error` with the type it names `Runtime.NodeJsExit` (AWS's page spells it "
        "`Runtime.NodejsExit`). A Node.js deadlock and a function invoked at `$LATEST` (no version to go back to) are "
        "not reproduced.",
        signatures=(
            _platform("Runtime.NodejsExit"),
            _platform("Runtime.NodeJsExit"),
            _message("detected an unexpected Node.js exit code"),
        ),
        sources=(TS_INVOCATION, NODE_RUNTIME_CLIENT),
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
        responder="handed_over",
        fault_type="application_error",
        action_type=None,
        handover="The runtime's process ended with an exit status: find the explicit exit (`sys.exit()`, `exit()`, "
        "`process.exit()`, `os.Exit()`) in the code and return a value instead, then deploy it; if the `REPORT` "
        "lines show `Max Memory Used` at the memory size, the memory is the cause instead.",
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
        responder="handed_over",
        fault_type="application_error",
        action_type=None,
        handover="The code returns what the runtime cannot serialise: change the handler to return JSON-serialisable "
        "values (decode base64 output with `.decode()`, convert dates and decimals to strings) and deploy it; roll "
        "the alias back if a recent version brought the error.",
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
        responder="fixed",
        fault_type="handler_misconfigured",
        action_type="restore_handler",
        handover="",
        lab_note="A refused upload changes nothing and raises no alarm by itself. The lab reproduces the incident it "
        "leaves: a deploy whose configuration step (the new code's handler) went through and whose code upload, a "
        ".zip file whose request is larger than the 70,167,211 bytes Lambda takes, was refused; the old code has no "
        "such module (`Runtime.ImportModuleError`). The lab's trail records the refused call with its errorCode, as "
        "CloudTrail records failed management calls; the responder reads it from the recent changes and restores the "
        "baseline's handler (the old code runs again); the new code still has to go through Amazon S3. The newer "
        "`Zipped size must be smaller than 52428800 bytes` answer for a .zip file between 50 MB and that request "
        "size, and the account's code storage filling up, are not reproduced.",
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
        responder="handed_over",
        fault_type="code_package_invalid",
        action_type=None,
        handover="Lambda refuses to run the function's runtime or package: move the function to a supported runtime "
        "(UpdateFunctionConfiguration `Runtime`), or deploy a valid .zip file (UpdateFunctionCode); if callers invoke "
        "an alias that moved to a new version since it worked, point the alias back at the previous version first.",
        lab_note="No chaos kind or scenario reproduces it: AWS refuses a .zip file it cannot unzip when it is "
        "uploaded (UpdateFunctionCode answers `InvalidParameterValueException`, `Could not unzip uploaded file`) "
        "and documents no state of a function whose Invoke answers these errors, so the lab does not invent one. "
        "Lambda returns them to the caller, never to the function's logs; the responder reads them from an alert that "
        "names them and bears them out with the function's Runtime (InvalidRuntimeException) or a code deployment in "
        "its recent changes (InvalidZipFileException), then hands over (unit tests pin the reading).",
        signatures=(_code("InvalidRuntimeException"), _code("InvalidZipFileException")),
        sources=(INVOKE,),
    ),
)
