"""SERVING the lab: the moto version its patches were verified against, and :func:`apply`, which applies each once.

The lab patches moto's internals (module globals, class attributes, URL tables): what those are called and do
changes between moto releases, silently. So :func:`apply` refuses any moto but the one pyproject.toml pins in the
``lab`` extra, and the patches were re-verified against.

Applied on demand instead, not here: stepfunctions.instant_retries (retries without the wait, for tests),
stepfunctions.route_lambda_tasks and awslambda.route_sns_deliveries (the dispatcher's install and uninstall),
sqs.take_over_queue_polling (a lab whose workloads poll the queue consumer's queue).
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable

from incident_responder.lab.moto_patches import (
    awslambda,
    backends,
    cloudformation,
    cloudwatch,
    dynamodb,
    function_states,
    iam,
    responses,
    serialize,
    sqs,
    stepfunctions,
    sts,
)
from incident_responder.lab.moto_patches.errors import UntestedMotoError

# pyproject.toml's `lab` extra pins moto[server] to exactly this (a test keeps the two the same).
TESTED_MOTO_VERSION = "5.2.5"

# Every patch of moto's internals, in the order applied, each with why the lab needs it. Each is idempotent.
PATCHES: tuple[tuple[Callable[[], None], str], ...] = (
    (cloudwatch._list_metrics_by_dimension_name, "ListMetrics matches a dimension filter without a value"),
    (responses._answer_unimplemented_actions, "an action moto lacks is an AWS error (501), not a traceback"),
    (iam._inline_policies_as_json, "a role's inline policies created by CloudFormation read back as documents"),
    (sts.honour_trust_policies, "AssumeRole answers only as the role's trust policy allows: the accounts' boundary"),
    (awslambda.answer_account_settings, "moto has no GetAccountSettings; the concurrency faults read it"),
    (awslambda.keep_ephemeral_storage, "UpdateFunctionConfiguration keeps EphemeralStorage, as Lambda does"),
    (awslambda.keep_processing_results, "a mapping's LastProcessingResult is the lab poller's, as Lambda's is"),
    (awslambda.keep_dead_letter_config, "a function keeps its DeadLetterConfig, as Lambda does"),
    (function_states.report_function_states, "a function's State and its reasons are what the lab's Lambda set"),
    (function_states.report_snap_start, "a function's SnapStart setting kept and reported, as Lambda does"),
    (function_states.answer_lab_route, "the lab's chaos holds what only AWS's side of Lambda knows (lab only)"),
    (awslambda.replace_event_invoke_config, "PutFunctionEventInvokeConfig replaces the configuration, as Lambda's"),
    (awslambda.refuse_oversized_environment, "environment variables over 4 KB are refused, as Lambda refuses them"),
    (dynamodb._serialize_dynamodb_writes, "conditional writes are atomic, as the approval and alert grouping need"),
    (backends._list_services_once, "moto's server lists its services once, not on every request"),
    (backends._list_response_methods_once, "moto lists each response class's methods once, not on every request"),
    (serialize._possible_keys_once, "moto's serializer finds each attribute's names once per kind of object"),
    (sqs._retention_from_the_queue, "ReceiveMessage checks retention without counting the queue per message"),
    (cloudformation._json_templates_as_json, "a JSON template is parsed as JSON, not by the pure-Python YAML loader"),
    (stepfunctions.install_jsonata, "JSONata states evaluate (moto ships no evaluator)"),
    (stepfunctions._declare_strings_escaped, "a string holding a quote or backslash no longer breaks JSONata"),
    (stepfunctions._pass_task_failure_cause, "SendTaskFailure keeps its cause, which the ASL reads"),
    (stepfunctions._history_without_data_when_asked, "GetExecutionHistory honours includeExecutionData=false"),
    (stepfunctions._parse_each_definition_once, "each definition is parsed once, not per execution"),
    (stepfunctions._reuse_task_clients, "Task states share one boto3 client per region and service"),
    (stepfunctions._announce_execution_changes, "execution changes wake waiters instead of polling moto"),
)


def installed_moto_version() -> str:
    return importlib.metadata.version("moto")


def check_moto_version() -> None:
    """Refuse (:class:`UntestedMotoError`) a moto other than :data:`TESTED_MOTO_VERSION`."""
    installed = installed_moto_version()
    if installed != TESTED_MOTO_VERSION:
        raise UntestedMotoError(
            f"moto {installed} is installed, but the lab's patches of moto's internals "
            f"(incident_responder/lab/moto_patches/) were verified against moto {TESTED_MOTO_VERSION}: run "
            f"`make install` to install the pinned version, or re-verify the patches against moto {installed} and "
            "change the pin in pyproject.toml (and TESTED_MOTO_VERSION)."
        )


def apply() -> None:
    """Check the installed moto, then apply every patch (once: applying them again changes nothing)."""
    check_moto_version()
    for patch, _reason in PATCHES:
        patch()
