"""A lab incident whose model is ``bedrock_converse:``: the agent functions' model calls leave the lab for the user's
Bedrock endpoint (here a local server speaking Converse, named by AWS_ENDPOINT_URL_BEDROCK_RUNTIME as a VPC endpoint
or a proxy would be), signed with the user's key in the user's Region, while every other AWS call stays in moto.

The server answers as the offline model would (lab/converse/backends.py's OfflineBackend), so the incident can end
REMEDIATED only if each tool call went through the MCP server and its result came back in the next request.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from incident_responder.agent.model_catalog import DEFAULT_MODEL, DEFAULT_MODEL_ID
from incident_responder.lab.converse.backends import OfflineBackend, ScriptedBackend, answer, text
from incident_responder.lab.converse.errors import ConverseError
from incident_responder.lab.converse.gateway import ConverseGateway
from incident_responder.lab.pipeline.startup import LabPipeline
from incident_responder.lab.scenario import load_scenario
from tests.converse_user import USER_KEY, USER_REGION, USER_SECRET, user_environment

REPO = Path(__file__).parents[2]


class _Switchable:
    """The user's endpoint's answers, switched per test: one endpoint and one lab pipeline serve the module (a
    pipeline's start costs more than the incident it runs)."""

    def __init__(self) -> None:
        self.backend = OfflineBackend()

    def __call__(self, model_id: str, request: dict) -> dict:
        return self.backend(model_id, request)


@pytest.fixture(scope="module")
def user_lab(lab):
    """(the user's Converse endpoint, its switchable answers, a pipeline whose model calls go there)."""
    answers = _Switchable()
    with (
        ConverseGateway(answers, secrets={USER_KEY: USER_SECRET}, require_signature=True) as gateway,
        pytest.MonkeyPatch.context() as monkeypatch,
    ):
        user_environment(monkeypatch, gateway.url)
        with LabPipeline.start(lab=lab, workers=True, model=DEFAULT_MODEL) as pipeline:
            yield gateway, answers, pipeline


def _incident(user_lab, backend, model: str = DEFAULT_MODEL, mode: str = "closed_loop"):
    """The scenario's incident on a fresh lab under the module's pipeline, the endpoint answering with ``backend``:
    (its record, the exchanges the endpoint saw for it)."""
    gateway, answers, pipeline = user_lab
    answers.backend = backend
    pipeline.refresh(model, parameters={"RemediationMode": mode})
    before = len(gateway.exchanges)
    record = pipeline.run(load_scenario(REPO / "scenarios" / "s3-policy-revoked.yaml"))
    return record, gateway.exchanges[before:], pipeline


def test_a_lab_incident_talks_converse_to_the_users_endpoint_with_the_users_key(user_lab):
    record, exchanges, pipeline = _incident(user_lab, OfflineBackend())
    lab_key = pipeline.lab.env["AWS_ACCESS_KEY_ID"]
    assert record.status == "REMEDIATED", record.error
    # The investigation's turn (the proposal and the review are the lookups' own restore: no model turn).
    assert len(exchanges) >= 1
    # Signed by the user's key for the user's Region, never by the lab's; every signature checked.
    assert {e.access_key for e in exchanges} == {USER_KEY} != {lab_key}
    assert all(e.signature_valid for e in exchanges)
    assert {e.region for e in exchanges} == {USER_REGION}
    # The request shape Converse takes: the model id, the system prompt, the tools, the inference settings.
    first = exchanges[0]
    assert first.model_id == DEFAULT_MODEL_ID
    assert first.request["system"][0]["text"] and first.request["inferenceConfig"]["temperature"] == 0
    tools = {t["toolSpec"]["name"] for t in first.request["toolConfig"]["tools"] if "toolSpec" in t}
    assert {"get_lambda_config", "get_config_drift", "submit_diagnosis"} <= tools
    # Tool calls answered through the MCP server (the first reads, made before the first turn, are sent as the
    # assistant's calls), each result sent back with the call's id, holding the function.
    function = load_scenario(REPO / "scenarios" / "s3-policy-revoked.yaml").workload.function
    uses = {
        c["toolUse"]["toolUseId"]: c["toolUse"]["name"]
        for e in exchanges
        for c in [
            *(e.response or {}).get("output", {}).get("message", {}).get("content", []),
            *(block for m in e.request["messages"] if m["role"] == "assistant" for block in m["content"]),
        ]
        if "toolUse" in c
    }
    results = [
        block["toolResult"]
        for e in exchanges
        for m in e.request["messages"]
        if m["role"] == "user"
        for block in m["content"]
        if "toolResult" in block
    ]
    answered = [r for r in results if r["toolUseId"] in uses and r.get("status", "success") == "success"]
    assert answered, "no tool result came back to the model"
    assert {uses[r["toolUseId"]] for r in answered} >= {"get_recent_logs", "get_config_drift"}
    assert all(function in json.dumps(r["content"]) for r in answered)
    # The record counts the tokens the endpoint reported.
    assert record.metrics["input_tokens"] > 0 and record.metrics["llm_calls"] == len(exchanges)


def test_a_model_error_ends_the_incident_with_the_fix_in_one_line(user_lab):
    on_demand = ConverseError(
        400,
        "ValidationException",
        "Invocation of model ID anthropic.claude-haiku-4-5-20251001-v1:0 with on-demand throughput isn\u2019t "
        "supported. Retry your request with the ID or ARN of an inference profile that contains this model.",
    )
    spec = "bedrock_converse:anthropic.claude-haiku-4-5-20251001-v1:0"
    record, exchanges, _ = _incident(user_lab, ScriptedBackend([on_demand] * 3), model=spec)
    assert record.status == "ERROR"
    assert len(exchanges) == 1  # a configuration error is not retried
    error = record.error_reason or ""
    assert "\n" not in error and "ModelConfigError" in error
    assert "bedrock_converse:global.anthropic.claude-haiku-4-5-20251001-v1:0" in error  # the fix, named


def test_a_throttled_model_is_retried_and_the_incident_goes_on(user_lab):
    throttled = ConverseError(429, "ThrottlingException", "Too many requests, please wait before trying again.")
    offline = OfflineBackend()
    calls = {"n": 0}

    def flaky(model_id, request):
        calls["n"] += 1
        if calls["n"] == 1:
            raise throttled
        return offline(model_id, request)

    record, exchanges, _ = _incident(user_lab, flaky, mode="propose_only")
    assert record.status == "PROPOSAL_READY", record.error
    assert exchanges[0].error["type"] == "ThrottlingException"


def test_without_the_users_endpoint_variable_the_model_goes_to_bedrock_itself(monkeypatch):
    from incident_responder.lab.model_route import resolve_model_route

    user_environment(monkeypatch, "unused")
    monkeypatch.delenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:5000")  # a lab's, left in the shell: not the model's
    route = resolve_model_route(DEFAULT_MODEL)
    try:
        assert (
            route.environment["AWS_ENDPOINT_URL_BEDROCK_RUNTIME"]
            == f"https://bedrock-runtime.{USER_REGION}.amazonaws.com"
        )
        assert route.environment["BEDROCK_REGION"] == USER_REGION
        credentials = Path(route.environment["AWS_SHARED_CREDENTIALS_FILE"])
        assert USER_KEY in credentials.read_text() and oct(credentials.stat().st_mode & 0o777) == "0o600"
    finally:
        route.close()
    assert not credentials.exists()  # the lab forgets them when it stops


def test_an_openai_compatible_model_in_the_lab_needs_its_base_url(monkeypatch):
    from incident_responder.agent.errors import ModelConfigError
    from incident_responder.lab.model_route import resolve_model_route

    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(ModelConfigError, match="OPENAI_BASE_URL"):
        resolve_model_route("openai:gpt-4o-mini")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-user")
    route = resolve_model_route("openai:gpt-4o-mini")
    assert route.parameters == {"ModelBaseUrl": "http://127.0.0.1:9/v1"}
    assert route.environment == {"OPENAI_API_KEY": "sk-user"}


def test_the_scripted_backend_says_when_its_script_ran_out():
    backend = ScriptedBackend([answer(text("only one"))])
    assert backend("m", {})["stopReason"] == "end_turn"
    with pytest.raises(ConverseError, match="no more turns"):
        backend("m", {})


def test_the_model_takes_the_profile_of_the_environment_it_is_given(tmp_path):
    """`responder lab up` resolves the route from the shell's environment before it unsets AWS_PROFILE."""
    from incident_responder.lab.model_route import resolve_model_route

    (tmp_path / "credentials").write_text("[sre]\naws_access_key_id = AKIAPROFILEKEY\naws_secret_access_key = s\n")
    (tmp_path / "config").write_text("[profile sre]\nregion = ap-southeast-2\n")
    shell = {
        "AWS_PROFILE": "sre",
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "credentials"),
        "AWS_CONFIG_FILE": str(tmp_path / "config"),
    }
    route = resolve_model_route(DEFAULT_MODEL, shell)
    try:
        assert route.environment["BEDROCK_REGION"] == "ap-southeast-2"
        assert "AKIAPROFILEKEY" in Path(route.environment["AWS_SHARED_CREDENTIALS_FILE"]).read_text()
    finally:
        route.close()


def test_aws_region_wins_over_the_profiles_region_for_the_model(tmp_path):
    """As the AWS CLI reads them: AWS_REGION overrides the profile's region (botocore alone ignores it)."""
    from incident_responder.lab.model_route import resolve_model_route

    (tmp_path / "credentials").write_text("[sre]\naws_access_key_id = AKIAPROFILEKEY\naws_secret_access_key = s\n")
    (tmp_path / "config").write_text("[profile sre]\nregion = ap-southeast-2\n")
    shell = {
        "AWS_PROFILE": "sre",
        "AWS_REGION": "eu-west-3",
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "credentials"),
        "AWS_CONFIG_FILE": str(tmp_path / "config"),
    }
    route = resolve_model_route(DEFAULT_MODEL, shell)
    try:
        assert route.environment["BEDROCK_REGION"] == "eu-west-3"
    finally:
        route.close()
