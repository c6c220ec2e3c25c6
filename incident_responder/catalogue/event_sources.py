"""The failure catalogue, event source mappings: the queues and streams that invoke the function.

One entry per failure mode, with the strings AWS prints for it (:mod:`.failure_mode` says what an entry holds).
"""

from __future__ import annotations

from incident_responder.catalogue.failure_mode import _DG, ESM_CONFIGURATION, METRICS, UPDATE_ESM, FailureMode, _message

EVENT_SOURCES: tuple[FailureMode, ...] = (
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
        responder="handed_over",
        fault_type="event_source_failing",
        action_type=None,
        handover="Fix the error the function returns on the batches (its logs name it), or take the records it cannot "
        "process out of the way: an SQS source's redrive policy moves them to a dead-letter queue after "
        "maxReceiveCount receives; for a stream, set BisectBatchOnFunctionError, MaximumRetryAttempts, "
        "MaximumRecordAgeInSeconds and an on-failure destination.",
        signatures=(_message("PROBLEM: Function call failed"),),
        sources=(_DG + "with-kinesis.html", ESM_CONFIGURATION, UPDATE_ESM, METRICS),
        lab_note="moto keeps no processing result: the lab records the one Lambda reports after its poller's last "
        "batches (queue-consumer, SQS); no stream or IteratorAge is emulated.",
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
        responder="handed_over",
        fault_type="kafka_access_failed",
        action_type=None,
        handover="Read the mapping's LastProcessingResult: add the Kafka ACLs it needs (DescribeConfigs on the "
        "cluster, Describe and Read on the topic and on the consumer group named after the mapping's UUID), give "
        "the execution role kafka-cluster:Connect, or replace the credentials or certificates in the secret the "
        "mapping uses; role changes can take several minutes to apply.",
        signatures=(
            _message("Cluster failed to authorize Lambda"),
            _message("SASL authentication failed"),
            _message("Server failed to authenticate Lambda"),
            _message("Lambda failed to authenticate server"),
            _message("Provided certificate or private key is invalid"),
        ),
        sources=(_DG + "with-kafka-troubleshoot.html",),
        lab_note="The lab has no Kafka cluster and its only mapping reads SQS, which never reports these: no chaos "
        "kind or scenario reproduces it; the offline investigator's reading of the mapping is tested with the "
        "mapping as Lambda reports it.",
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
        responder="handed_over",
        fault_type="kafka_access_failed",
        action_type=None,
        handover="Correct what the mapping's StateTransitionReason names (the mapping's or the function's "
        "configuration, the cluster's credentials or its ACLs and the role's permissions), then enable the mapping "
        "again.",
        signatures=(
            _message("ESM_CONFIG_NOT_VALID"),
            _message("EVENT_SOURCE_AUTHN_ERROR"),
            _message("EVENT_SOURCE_AUTHZ_ERROR"),
            _message("FUNCTION_CONFIG_NOT_VALID"),
        ),
        sources=(_DG + "with-kafka-troubleshoot.html",),
        lab_note="The lab has no Kafka cluster and its only mapping reads SQS, which never reports these: no chaos "
        "kind or scenario reproduces it; the offline investigator's reading of the mapping is tested with the "
        "mapping as Lambda reports it.",
    ),
)
