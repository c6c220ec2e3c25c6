"""What real models do, over the Converse wire format: a scripted model (lab/converse/) answers the agent
loop through ChatBedrockConverse and botocore exactly as Bedrock would, and the loop copes with each behaviour."""

from __future__ import annotations

import asyncio
import json

import boto3
import pytest
from pydantic import BaseModel, Field

from incident_responder.agent.graph import run_agent
from incident_responder.agent.model_catalog import Prices
from incident_responder.agent.models import create_chat_model
from incident_responder.agent.spec import AgentSpec
from incident_responder.agent.tools import InMemoryToolProvider, ToolSpec
from incident_responder.lab.converse.backends import ScriptedBackend, answer, text, tool_use
from incident_responder.lab.converse.gateway import ConverseGateway

FUNCTION = "orders-api"


class Finding(BaseModel):
    summary: str = Field(min_length=10)
    confidence: float = Field(ge=0, le=1)


SPEC = AgentSpec(
    name="scripted",
    system_prompt="Find out why the function fails, then submit.",
    terminal_tool="submit_finding",
    terminal_description="Submit what you found.",
    payload_model=Finding,
)
ARGUMENT = {"type": "object", "properties": {"lambda_name": {"type": "string"}}, "required": ["lambda_name"]}
GOOD = {"summary": "the role lost s3:GetObject", "confidence": 0.9}


def provider() -> InMemoryToolProvider:
    return InMemoryToolProvider(
        {
            "get_logs": (
                ToolSpec("get_logs", "Recent log lines.", ARGUMENT),
                lambda lambda_name: {"function": lambda_name, "lines": ["AccessDenied: s3:GetObject"]},
            ),
            "get_config": (
                ToolSpec("get_config", "The configuration.", ARGUMENT),
                lambda lambda_name: {"function": lambda_name, "timeout": 30},
            ),
        }
    )


def run(turns: list, model_id: str = "global.anthropic.claude-haiku-4-5-20251001-v1:0") -> tuple:
    """The agent over the wire against ``turns``; (the run, the exchanges, the tools' calls)."""
    tools = provider()
    with ConverseGateway(ScriptedBackend(turns)) as gateway:
        client = boto3.client(
            "bedrock-runtime",
            region_name="us-west-2",
            endpoint_url=gateway.url,
            aws_access_key_id="AKIAEXAMPLE",
            aws_secret_access_key="secret",
        )
        model = create_chat_model(f"bedrock_converse:{model_id}", bedrock_client=client)
        result = asyncio.run(run_agent(SPEC, model, tools, "orders-api fails.", function_name=FUNCTION))
    return result, gateway.exchanges, tools.calls


def tool_results(request: dict) -> list[dict]:
    return [b["toolResult"] for b in request["messages"][-1]["content"] if "toolResult" in b]


def last_text(request: dict) -> str:
    """The words that end the conversation sent (a cache point may follow them)."""
    return [b["text"] for b in request["messages"][-1]["content"] if "text" in b][-1]


def test_text_with_several_tool_calls_in_one_turn():
    first = answer(
        text("I'll read the logs and the configuration."),
        tool_use("get_logs", {"lambda_name": FUNCTION}),
        tool_use("get_config", {"lambda_name": FUNCTION}),
    )
    result, exchanges, calls = run([first, answer(tool_use("submit_finding", GOOD))])
    assert result.end_reason == "submitted" and result.payload.summary == GOOD["summary"]
    assert [name for name, _ in calls] == ["get_logs", "get_config"]
    second = exchanges[1].request
    # The assistant's turn goes back as it came (its words and both calls), then both results with their ids.
    sent = second["messages"][-2]["content"]
    assert sent[0] == {"text": "I'll read the logs and the configuration."}
    assert [b["toolUse"]["name"] for b in sent if "toolUse" in b] == ["get_logs", "get_config"]
    ids = [b["toolUse"]["toolUseId"] for b in sent if "toolUse" in b]
    assert [r["toolUseId"] for r in tool_results(second)] == ids
    assert "AccessDenied" in json.dumps(tool_results(second)[0]["content"])


def test_a_tool_call_with_invalid_arguments_is_answered_with_the_error():
    result, exchanges, calls = run(
        [answer(tool_use("get_logs", {"function": FUNCTION})), answer(tool_use("submit_finding", GOOD))]
    )
    assert calls == []  # never reached the tool
    (error,) = tool_results(exchanges[1].request)
    assert error["status"] == "error" and "lambda_name" in json.dumps(error["content"])
    assert result.end_reason == "submitted"


def test_a_submission_that_fails_validation_goes_back_and_is_retried_once():
    bad = {"summary": "role", "confidence": 3}
    result, exchanges, _ = run([answer(tool_use("submit_finding", bad)), answer(tool_use("submit_finding", GOOD))])
    (rejected,) = tool_results(exchanges[1].request)
    said = json.dumps(rejected["content"])
    assert rejected["status"] == "error" and "summary" in said and "confidence" in said
    assert result.end_reason == "submitted" and result.payload.confidence == 0.9
    assert len(exchanges) == 2


def test_a_final_text_without_a_submission_is_nudged():
    result, exchanges, _ = run([answer(text("It is the IAM role.")), answer(tool_use("submit_finding", GOOD))])
    nudge = last_text(exchanges[1].request)
    assert "without calling a tool" in nudge and "submit_finding" in nudge
    assert result.end_reason == "submitted"


def test_text_after_the_nudge_ends_the_run_with_its_reason():
    result, exchanges, _ = run([answer(text("It is the IAM role.")), answer(text("As I said, the role."))])
    assert result.payload is None and result.end_reason.startswith("no_tool_call")
    assert len(exchanges) == 2


def test_an_answer_cut_off_at_max_tokens_is_told_so():
    cut = answer(text("Looking at the logs, the first thing to notice is that the"), stop="max_tokens")
    result, exchanges, _ = run([cut, answer(tool_use("submit_finding", GOOD))])
    said = last_text(exchanges[1].request)
    assert "max_tokens" in said and "brief" in said
    assert result.end_reason == "submitted"


@pytest.mark.parametrize("stop", ["content_filtered", "guardrail_intervened"])
def test_a_refusal_ends_the_run_without_asking_again(stop):
    result, exchanges, _ = run(
        [answer(text("I can't help with that."), stop=stop), answer(tool_use("submit_finding", GOOD))]
    )
    assert result.payload is None
    assert result.end_reason.startswith("refused") and stop in result.end_reason and "can't help" in result.end_reason
    assert len(exchanges) == 1


def test_usage_reported_by_the_model_is_counted_with_its_cache_parts():
    turns = [
        answer(tool_use("get_logs", {"lambda_name": FUNCTION}), input_tokens=5000, output_tokens=40, cache_write=4200),
        answer(tool_use("submit_finding", GOOD), input_tokens=5300, output_tokens=60, cache_read=4200),
    ]
    result, _, _ = run(turns)
    # Converse's inputTokens leaves out what was read from or written to the cache; LangChain's input count (and
    # so ours) includes both, each of them also counted apart.
    usage = result.usage
    assert usage.input_tokens == 5000 + 4200 + 5300 + 4200 and usage.output_tokens == 100
    assert usage.cache_write_tokens == 4200 and usage.cache_read_tokens == 4200
    prices = Prices(input=1.0, output=5.0, cache_read=0.1, cache_write=1.25)
    expected = (10300 * 1.0 + 100 * 5.0 + 4200 * 0.1 + 4200 * 1.25) / 1e6
    assert prices.cost(
        usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, usage.cache_write_tokens
    ) == pytest.approx(expected)


def test_cache_points_follow_the_tools_the_system_prompt_and_the_conversation_where_the_model_takes_them():
    _, exchanges, _ = run(
        [answer(tool_use("get_logs", {"lambda_name": FUNCTION})), answer(tool_use("submit_finding", GOOD))]
    )
    point = {"cachePoint": {"type": "default"}}
    for exchange in exchanges:  # every turn: the same prefix, marked the same way, and the conversation's end
        request = exchange.request
        assert request["system"][-1] == point and request["toolConfig"]["tools"][-1] == point
        messages = request["messages"]
        assert messages[-1]["content"][-1] == point
        assert sum("cachePoint" in json.dumps(m) for m in messages) == 1
        # Bedrock takes four at most.
        assert json.dumps(request).count('"cachePoint"') == 3
    # The second turn's conversation ends after the tool result: all of the first turn is read back next time.
    assert "toolResult" in exchanges[1].request["messages"][-1]["content"][0]
    # A model whose card names no prompt caching is sent none.
    _, exchanges, _ = run([answer(tool_use("submit_finding", GOOD))], model_id="amazon.nova-lite-v1:0")
    assert "cachePoint" not in json.dumps(exchanges[0].request)
