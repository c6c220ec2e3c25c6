"""Each model failure Bedrock describes, as its error body says it: configuration, transient or auth, and one line
that names the fix (what the incident's error shows). The state machine retries only ModelTransientError."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from botocore.exceptions import ClientError

from incident_responder.agent.errors import ModelAuthError, ModelConfigError, ModelTransientError, classify_model_error
from tests.model_refusals import MARKETPLACE, SCP_DENY, USE_CASE_FORM

ASL = json.loads((Path(__file__).parents[2] / "statemachine" / "incident_lifecycle.asl.json").read_text())


# (error code, message as Bedrock Runtime answers it, class, words the fix must say)
BODIES = [
    (
        "ResourceNotFoundException",
        "This model version has reached the end of its life. Please refer to the AWS documentation for more details.",
        ModelConfigError,
        "end of life",
    ),
    (
        "ValidationException",
        "Invocation of model ID anthropic.claude-haiku-4-5-20251001-v1:0 with on-demand throughput isn\u2019t supported. "
        "Retry your request with the ID or ARN of an inference profile that contains this model.",
        ModelConfigError,
        "bedrock_converse:global.anthropic.claude-haiku-4-5-20251001-v1:0",
    ),
    ("ValidationException", "The provided model identifier is invalid.", ModelConfigError, "check ResponderModel"),
    (
        "AccessDeniedException",
        "You don't have access to the model with the specified model ID.",
        ModelAuthError,
        "Model access",
    ),
    (
        "AccessDeniedException",
        "User: arn:aws:sts::123456789012:assumed-role/InvestigateRole/fn is not authorized to perform: "
        "bedrock:InvokeModel on resource: arn:aws:bedrock:eu-west-3::foundation-model/anthropic.claude-haiku-4-5-"
        "20251001-v1:0 because no identity-based policy allows the bedrock:InvokeModel action",
        ModelAuthError,
        "SCP",
    ),
    (
        "AccessDeniedException",
        "Access denied. This Model is marked by provider as Legacy and you have not been actively using the model in "
        "the last 30 days. Please upgrade to an active model on Amazon Bedrock",
        ModelConfigError,
        "active model",
    ),
    # First use of an Anthropic model in an account (Bedrock's model-access page: a Marketplace subscription the first
    # call starts, which needs aws-marketplace:Subscribe and ViewSubscriptions, and Anthropic's one-time use-case form).
    (
        "AccessDeniedException",
        MARKETPLACE,
        ModelAuthError,
        "aws-marketplace:Subscribe",
    ),
    ("ResourceNotFoundException", USE_CASE_FORM, ModelAuthError, "use-case form"),
    # A Region-deny SCP meets a cross-Region profile that routed the call to a Region it denies.
    ("AccessDeniedException", SCP_DENY, ModelAuthError, "geographic inference profile"),
    ("ThrottlingException", "Too many requests, please wait before trying again.", ModelTransientError, "quota"),
    (
        "ThrottlingException",
        "Too many tokens, please wait before trying again.",
        ModelTransientError,
        "tokens-per-minute",
    ),
    ("ServiceUnavailableException", "Bedrock is unable to process your request.", ModelTransientError, "retried"),
    ("ModelNotReadyException", "Model is not ready for inference. Retry your request.", ModelTransientError, "retried"),
    ("ValidationException", "Input is too long for requested model.", ModelConfigError, "AgentTokenCap"),
    (
        "ValidationException",
        "The maximum tokens you requested exceeds the model limit of 8192. Try again with a maximum tokens value that "
        "is lower than 8192.",
        ModelConfigError,
        "max_tokens",
    ),
    ("UnrecognizedClientException", "The security token included in the request is invalid.", ModelAuthError, "renew"),
    ("ExpiredTokenException", "The security token included in the request is expired", ModelAuthError, "renew"),
]


@pytest.mark.parametrize("code, message, expected, fix", BODIES, ids=[f"{b[0]}:{b[1][:30]}" for b in BODIES])
def test_each_documented_model_error_is_classified_with_its_fix(code, message, expected, fix):
    typed = classify_model_error(ClientError({"Error": {"Code": code, "Message": message}}, "Converse"))
    assert type(typed) is expected
    text = str(typed)
    assert "\n" not in text and fix in text
    assert text.index(fix) < text.index(code)  # the fix first, then what Bedrock said
    assert " ".join(message.split())[:200] in text


@pytest.mark.parametrize("message", [MARKETPLACE, USE_CASE_FORM, SCP_DENY], ids=["marketplace", "use-case", "scp"])
def test_first_use_and_organisation_denials_are_not_blamed_on_the_deployment(message):
    """None of these is fixed by redeploying or by another ResponderModel id alone: the fix says what is."""
    code = "ResourceNotFoundException" if message is USE_CASE_FORM else "AccessDeniedException"
    text = str(classify_model_error(ClientError({"Error": {"Code": code, "Message": message}}, "Converse")))
    fix = text.split(f"({code}:")[0]
    assert "deploy the stack" not in fix and "check ResponderModel" not in fix


def test_a_request_the_code_built_wrongly_is_not_blamed_on_the_configuration():
    exc = ClientError({"Error": {"Code": "ValidationException", "Message": "messages.1.content: too long"}}, "Converse")
    assert classify_model_error(exc) is exc


def agent_tasks():
    """Every Task state that runs an agent (its Retry names ModelTransientError)."""

    def walk(states):
        for name, state in states.items():
            if state.get("Type") == "Task" and any(
                "ModelTransientError" in r["ErrorEquals"] for r in state.get("Retry", [])
            ):
                yield name, state
            for branch in state.get("Branches", []):
                yield from walk(branch["States"])

    return list(walk(ASL["States"]))


def test_only_transient_model_errors_are_retried():
    tasks = agent_tasks()
    assert len(tasks) == 3  # investigate, propose, review
    for name, state in tasks:
        retried = {error for retry in state["Retry"] for error in retry["ErrorEquals"]}
        assert "ModelTransientError" in retried, name
        assert not retried & {"ModelConfigError", "ModelAuthError", "States.ALL", "ConfigurationError"}, name
        caught = {error for catch in state["Catch"] for error in catch["ErrorEquals"]}
        assert {"ModelConfigError", "ModelAuthError", "ModelTransientError"} <= caught, name
