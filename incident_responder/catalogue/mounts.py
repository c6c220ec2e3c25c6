"""The failure catalogue, file systems and SnapStart: EFS mounts and snapshot restore.

One entry per failure mode, with the strings AWS prints for it (:mod:`.failure_mode` says what an entry holds).
"""

from __future__ import annotations

from incident_responder.catalogue.failure_mode import _DG, INVOKE, TS_INVOCATION, FailureMode, _code

_NO_EFS = (
    "The lab's functions mount no file system: no chaos kind or scenario reproduces it. moto runs no NFS and its "
    "Lambda keeps no FileSystemConfigs; the lab's one function in a VPC (which EFS needs), data-processor, is invoked "
    "asynchronously by S3, so no caller would receive this Invoke error, and what Lambda records of it for an "
    "asynchronous event is not documented; and a mount its security group must allow (NFS, TCP 2049) would change "
    "what the lab's other network faults show. Lambda returns this error to the caller, never to the function's "
    "logs; the responder reads it from an alert that names it and checks it against the function's "
    "FileSystemConfigs (unit tests pin the reading)."
)

MOUNTS: tuple[FailureMode, ...] = (
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
        responder="handed_over",
        fault_type="file_system_unavailable",
        action_type=None,
        handover="Check that the access point and its file system exist and are available, that the file system "
        "policy and the execution role allow the mount (elasticfilesystem:ClientMount, and ClientWrite to write), "
        "and that the access point's POSIX user and root directory are valid.",
        signatures=(_code("EFSMountFailureException"),),
        sources=(TS_INVOCATION, INVOKE),
        lab_note=_NO_EFS,
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
        responder="handed_over",
        fault_type="file_system_unavailable",
        action_type=None,
        handover="Let the function reach a mount target in each of its subnets over NFS: its security group must allow"
        " outbound TCP 2049 to the mount targets' security group, which must allow it inbound; check the "
        "subnets' routes and network ACLs, and remount after a change of the function's VPC configuration.",
        signatures=(_code("EFSMountConnectivityException"),),
        sources=(TS_INVOCATION, INVOKE),
        lab_note=_NO_EFS,
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
        responder="handed_over",
        fault_type="file_system_unavailable",
        action_type=None,
        handover="Retry after a short time; if mounts keep timing out, lower the function's reserved concurrency to "
        "reduce the load on the file system, and check the file system's throughput and connections in its "
        "metrics.",
        signatures=(_code("EFSMountTimeoutException"),),
        sources=(TS_INVOCATION, INVOKE),
        lab_note=_NO_EFS,
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
        responder="handed_over",
        fault_type="file_system_unavailable",
        action_type=None,
        handover="Give the file system more throughput: switch it to Elastic or provisioned throughput, or (in "
        "bursting mode) store more data to raise its baseline; its BurstCreditBalance metric shows whether "
        "the credits ran out. Then check the timeouts of the functions that use it.",
        signatures=(_code("EFSIOException"),),
        sources=(TS_INVOCATION, INVOKE),
        lab_note=_NO_EFS,
    ),
    FailureMode(
        id="snapstart-not-ready",
        area="mounts",
        title="A SnapStart version is not ready",
        symptom="`An error occurred (SnapStartNotReadyException) when calling the Invoke20150331 operation: Lambda "
        "is initializing your function. It will be ready to invoke once your function state becomes ACTIVE.` (HTTP "
        "409)",
        shows_in=("Invoke response (synchronous callers)", "the version's State"),
        cause="The function version is `Inactive`: it was not invoked for 14 days, or Lambda recycled the execution "
        "environment.",
        fix="Wait until the version reaches the `Active` state, then invoke it again.",
        responder="handed_over",
        fault_type="function_not_ready",
        action_type=None,
        handover="Wait until the version's State is Active (GetFunctionConfiguration with the version as Qualifier), "
        "then invoke it again; callers should retry. A version not invoked for 14 days turns Inactive again.",
        signatures=(_code("SnapStartNotReadyException"),),
        sources=(_DG + "snapstart-troubleshooting.html", INVOKE, _DG + "snapstart-activate.html"),
        lab_note="Lab only: when Lambda deletes a version's snapshot is AWS's side. The chaos kind sets up what a "
        "team using SnapStart has on queue-consumer (Python 3.12): SnapStart ApplyOn PublishedVersions, a version "
        "published with it (the lab's Lambda reports that version's OptimizationStatus On, $LATEST's Off, where moto "
        "reports SnapStart off), its SQS event source mapping invoking that version; then the lab's Lambda holds the "
        "version Inactive (no StateReasonCode: the pages cited name none). Each batch the mapping sends it is "
        "answered SnapStartNotReadyException with the troubleshooting page's message: nothing is invoked, no log "
        "line, no invocation counted. get_lambda_config shows the version the mapping invokes, Inactive, with its "
        "SnapStart setting. Not emulated: the snapshot itself and the Restore phase (the lab's runtimes take "
        "none), and the version turning Active again on its own (it stays Inactive until the kind is restored). "
        "orders-api (Node.js) and data-processor (the lab's caller invokes $LATEST) refuse the kind.",
    ),
    FailureMode(
        id="snapstart-restore-timeout",
        area="mounts",
        title="Restoring a SnapStart snapshot times out",
        symptom="`SnapStartTimeoutException` (HTTP 408; the API reference: \"Lambda couldn't restore the snapshot "
        'within the timeout limit.")',
        shows_in=("Invoke response (synchronous callers)", "function logs", "metric Errors"),
        cause="An after-restore runtime hook runs for longer than 10 seconds; network connection and credentials "
        "issues can also make the Restore phase time out.",
        fix="Check the function's logs for timeouts during the Restore phase, and make every after-restore hook "
        "complete in less than 10 seconds.",
        responder="handed_over",
        fault_type="snapstart_failure",
        action_type=None,
        handover="Find the Restore phase timeouts in the function's logs, make every after-restore runtime hook "
        "complete in less than 10 seconds (move slow work out of them, check the connections and credentials "
        "they use), then publish a new version and move the alias to it.",
        signatures=(_code("SnapStartTimeoutException"),),
        sources=(_DG + "snapstart-troubleshooting.html", INVOKE, _DG + "snapstart-monitoring.html"),
        lab_note="Lab only: the lab's runtimes take no snapshot and run no after-restore hook, so what makes the "
        "Restore phase time out (a hook running past 10 seconds, a network or credentials issue) is not emulated. "
        "The chaos kind sets up what a team using SnapStart has on queue-consumer (Python 3.12): SnapStart ApplyOn "
        "PublishedVersions, a version published with it (OptimizationStatus On), its SQS event source mapping "
        "invoking that version; then the lab's Lambda holds the version's Restore phase timing out. Each batch the "
        "mapping sends it is answered SnapStartTimeoutException with the Invoke API reference's description "
        '("Lambda couldn\'t restore the snapshot within the timeout limit."), counted an invocation and an error; '
        "the version stays Active. Not emulated: the Restore phase's lines in the function's logs and the REPORT's "
        "Restore Duration (the lab writes none: the pages cited do not give their text). The responder names the "
        "entry from errors the function's logs do not show, from an Active version that restores from a snapshot "
        "(get_lambda_config's InvokedVersions), or from an alert naming SnapStartTimeoutException. orders-api "
        "(Node.js) and data-processor (the lab's caller invokes $LATEST) refuse the kind.",
    ),
)
