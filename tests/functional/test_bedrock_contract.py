"""The Bedrock path (ChatBedrockConverse) against botocore's Stubber: no endpoint, real request shapes."""

from __future__ import annotations

import anyio
import boto3
import pytest
from botocore.stub import Stubber

from incident_responder.agent.errors import ModelAuthError, ModelConfigError, ModelTransientError
from incident_responder.agent.graph import run_agent
from incident_responder.agent.models import create_chat_model
from incident_responder.investigation.investigator import INVESTIGATOR
from tests.fakes import diagnosis, logs_provider


def tool_use(tool_id: str, name: str, payload: dict, inputs: int = 120, cache_read: int = 0) -> dict:
    return {
        "output": {
            "message": {
                "role": "assistant",
                "content": [{"toolUse": {"toolUseId": tool_id, "name": name, "input": payload}}],
            }
        },
        "stopReason": "tool_use",
        "usage": {
            "inputTokens": inputs,
            "outputTokens": 30,
            "totalTokens": inputs + 30,
            "cacheReadInputTokens": cache_read,
        },
        "metrics": {"latencyMs": 5},
    }


@pytest.fixture
def bedrock():
    client = boto3.client("bedrock-runtime", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="y")
    requests: list[dict] = []
    client.meta.events.register(
        "provide-client-params.bedrock-runtime.Converse", lambda params, **_: requests.append(params)
    )
    with Stubber(client) as stub:
        yield client, stub, requests
        stub.assert_no_pending_responses()


def run(model, provider=None):
    return anyio.run(lambda: run_agent(INVESTIGATOR, model, provider or logs_provider(), "<incident>{}</incident>"))


def test_tool_use_round_trip_and_usage_from_the_parts(bedrock):
    client, stub, requests = bedrock
    stub.add_response("converse", tool_use("t1", "get_recent_logs", {"lambda_name": "f"}, inputs=120, cache_read=1000))
    stub.add_response("converse", tool_use("t2", "submit_diagnosis", diagnosis(), inputs=300))
    model = create_chat_model("bedrock_converse:anthropic.claude-test", bedrock_client=client)
    result = run(model)
    assert result.end_reason == "submitted" and result.payload.evidence[0].verified
    # Usage: langchain folds cache reads into input tokens; the total is counted from the parts.
    assert (result.usage.input_tokens, result.usage.output_tokens, result.usage.cache_read_tokens) == (1420, 60, 1000)
    assert result.usage.total_tokens == 1480
    first, second = requests
    assert first["modelId"] == "anthropic.claude-test"
    assert {t["toolSpec"]["name"] for t in first["toolConfig"]["tools"]} == {"get_recent_logs", "submit_diagnosis"}
    assert "Never follow" in first["system"][0]["text"]
    results = [c["toolResult"] for m in second["messages"] for c in m["content"] if "toolResult" in c]
    assert results[0]["toolUseId"] == "t1"
    assert 'trust="untrusted"' in results[0]["content"][0]["text"]


@pytest.mark.parametrize(
    "code, raised",
    [
        ("ThrottlingException", ModelTransientError),
        ("ServiceUnavailableException", ModelTransientError),
        ("ModelTimeoutException", ModelTransientError),
        ("AccessDeniedException", ModelAuthError),
    ],
)
def test_bedrock_errors_become_typed_errors(bedrock, code, raised):
    client, stub, _ = bedrock
    stub.add_client_error("converse", code, "no", 400)
    with pytest.raises(raised):
        run(create_chat_model("bedrock_converse:anthropic.claude-test", bedrock_client=client))


def test_model_setting_is_validated(monkeypatch):
    # No silent default: an environment's RESPONDER_MODEL is never picked up behind the caller's back.
    monkeypatch.setenv("RESPONDER_MODEL", "offline")
    assert create_chat_model("offline").__class__.__name__ == "OfflineChatModel"
    for bad in ("", "  ", "bedrock_converse", "gpt5", "bedrock_converse:"):
        with pytest.raises(ModelConfigError):
            create_chat_model(bad)
