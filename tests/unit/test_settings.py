"""Each function's settings: validated once, named clearly when wrong, never silently defaulted."""

from __future__ import annotations

import time

import anyio
import pytest

from incident_responder.agent.configured import agent_limits, mcp_server
from incident_responder.agent.graph import run_agent
from incident_responder.agent.models import create_chat_model
from incident_responder.core.settings import (
    ConfigurationError,
    IngestSettings,
    InvestigateSettings,
    McpServerSettings,
    at_cold_start,
    deadline_buffer_ms,
)
from incident_responder.investigation.investigator import INVESTIGATOR
from incident_responder.state.store import RecordStore
from tests.fakes import logs_provider

INVESTIGATE = {
    "RESPONDER_MODEL": "bedrock_converse:global.anthropic.claude-haiku-4-5-20251001-v1:0",
    "DIAGNOSTICS_MCP_URL": "https://abc.lambda-url.us-east-1.on.aws/mcp",
    "MCP_AUTH": "iam",
    "INCIDENT_CONTEXT_TABLE": "ctx",
    "ARTIFACTS_BUCKET": "bucket",
    "INCIDENT_TTL_DAYS": "7",
    "AGENT_RECURSION_LIMIT": "12",
    "AGENT_TOKEN_CAP": "100000",
}


def test_a_complete_environment_validates():
    settings = InvestigateSettings.from_env(INVESTIGATE)
    assert settings.incident_ttl_days == 7 and settings.mcp_auth == "iam"
    assert RecordStore.from_settings(settings).ttl_days == 7
    assert mcp_server(settings, "diagnostics", "u").auth == "iam"


def test_a_missing_model_is_an_error_not_the_offline_model():
    env = {k: v for k, v in INVESTIGATE.items() if k != "RESPONDER_MODEL"}
    with pytest.raises(ConfigurationError, match="RESPONDER_MODEL: missing"):
        InvestigateSettings.from_env(env)


def test_every_problem_is_named_with_its_variable():
    env = {**INVESTIGATE, "AGENT_TOKEN_CAP": "lots", "MCP_AUTH": "none", "ARTIFACTS_BUCKET": ""}
    with pytest.raises(ConfigurationError) as caught:
        InvestigateSettings.from_env(env)
    message = str(caught.value)
    for variable in ("AGENT_TOKEN_CAP", "MCP_AUTH", "ARTIFACTS_BUCKET: missing"):
        assert variable in message


def test_contradictions_are_refused():
    with pytest.raises(ConfigurationError, match="MODEL_BASE_URL is set"):
        InvestigateSettings.from_env({**INVESTIGATE, "MODEL_BASE_URL": "https://models.example.com/v1"})
    with pytest.raises(ConfigurationError, match="MCP_API_KEY_PARAMETER"):
        McpServerSettings.from_env({"MCP_AUTH": "api_key", "BASELINE_TABLE": "b"})


def test_at_cold_start_validates_at_import_inside_lambda(monkeypatch):
    monkeypatch.delenv("STATE_MACHINE_ARN", raising=False)
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "ingest")
    monkeypatch.setenv("LAMBDA_TASK_ROOT", "/var/task")
    with pytest.raises(ConfigurationError, match="STATE_MACHINE_ARN"):
        at_cold_start(IngestSettings)
    monkeypatch.delenv("LAMBDA_TASK_ROOT")
    accessor = at_cold_start(IngestSettings)  # outside Lambda: on first use
    monkeypatch.setenv("STATE_MACHINE_ARN", "arn:aws:states:us-east-1:123456789012:stateMachine:s")
    monkeypatch.setenv("DEAD_LETTER_QUEUE_URL", "https://sqs.us-east-1.amazonaws.com/123456789012/dlq")
    monkeypatch.setenv("INCIDENT_STATE_TABLE", "incident-state")
    monkeypatch.setenv("BASELINE_TABLE", "baseline")
    monkeypatch.setenv("ALERT_GROUP_WINDOW_MINUTES", "30")
    assert accessor() is accessor()  # validated once per environment


def test_the_deadline_buffer_follows_the_timeout():
    assert deadline_buffer_ms(60_000) == 15_000
    assert deadline_buffer_ms(300_000) == 75_000
    assert deadline_buffer_ms(900_000) == 90_000
    assert deadline_buffer_ms(20_000) == 10_000


def test_a_60_second_timeout_still_investigates():
    """With a fixed 90 s buffer a 60 s function was told to submit before its first tool call."""
    limits = agent_limits(InvestigateSettings.from_env({**INVESTIGATE, "RESPONDER_MODEL": "offline"}), 60_000)
    deadline = time.monotonic() + 60

    def remaining_ms() -> int:
        return int((deadline - time.monotonic()) * 1000)

    incident = '<incident>\n{"function_name": "f", "incident_id": "i", "metric_name": "Errors"}\n</incident>'
    run = anyio.run(
        lambda: run_agent(
            INVESTIGATOR,
            create_chat_model("offline"),
            logs_provider(),
            incident,
            limits=limits,
            remaining_ms=remaining_ms,
        )
    )
    assert run.tool_calls >= 1 and run.end_reason == "submitted"
