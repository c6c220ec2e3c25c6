"""Cassettes one unit at a time: what a replay matches on (and what it ignores), broken files, the spend ceiling."""

from __future__ import annotations

import copy
import json

import pytest

from incident_responder.agent.model_catalog import LIST_PRICES, Prices
from incident_responder.lab.converse.backends import ScriptedBackend, answer
from incident_responder.lab.converse.cassettes import Cassette, ReplayBackend, shape
from incident_responder.lab.converse.errors import CassetteError, ConverseError
from incident_responder.lab.converse.eval_model import EvalModel, cost_bound
from incident_responder.lab.converse.forwarding import ForwardBackend, SpendCeiling
from incident_responder.lab.converse.gateway import ConverseGateway, Exchange

TOOLS = ("get_recent_logs", "submit_diagnosis")
MODEL_ID = "global.anthropic.claude-haiku-4-5-20251001-v1:0"


def request(*, result_text: str = "ok", status: str = "success", incident: str = "inc-1") -> dict:
    return {
        "system": [{"text": "You are an SRE."}, {"cachePoint": {"type": "default"}}],
        "toolConfig": {
            "tools": [{"toolSpec": {"name": name, "inputSchema": {"json": {"type": "object"}}}} for name in TOOLS]
        },
        "inferenceConfig": {"maxTokens": 4096, "temperature": 0},
        "messages": [
            {"role": "user", "content": [{"text": f"Incident {incident} at 2026-11-24T10:00:00Z"}]},
            {
                "role": "assistant",
                "content": [{"toolUse": {"toolUseId": "t1", "name": "get_recent_logs", "input": {"lambda_name": "f"}}}],
            },
            {
                "role": "user",
                "content": [{"toolResult": {"toolUseId": "t1", "status": status, "content": [{"text": result_text}]}}],
            },
        ],
    }


def cassette_of(*requests: dict) -> Cassette:
    exchanges = [Exchange(model_id=MODEL_ID, request=r, response=answer()) for r in requests]
    return Cassette.from_exchanges("s", f"bedrock_converse:{MODEL_ID}", "us-east-1", exchanges)


def test_a_replay_matches_what_a_run_repeats_and_ignores_what_it_changes_on_its_own():
    replay = ReplayBackend(cassette_of(request()))
    # Another incident id, timestamp and tool output, and a cache point where there was none: the same conversation.
    sent = request(result_text="RequestId: 9f2c...", incident="inc-2")
    sent["messages"][-1]["content"].append({"cachePoint": {"type": "default"}})
    assert replay(MODEL_ID, sent) == answer()
    assert replay.problems() == []


@pytest.mark.parametrize(
    ("change", "where"),
    [
        (lambda r: r["messages"][2]["content"][0]["toolResult"].update(status="error"), "message 3"),
        (lambda r: r["messages"][1]["content"][0]["toolUse"]["input"].update(lambda_name="g"), "message 2"),
        (lambda r: r["inferenceConfig"].update(maxTokens=1024), "the inference settings"),
        (lambda r: r["messages"].pop(), "had 3 message(s), this run's 2"),
    ],
)
def test_a_request_that_differs_in_shape_is_a_departure_named_where_it_differs(change, where):
    replay = ReplayBackend(cassette_of(request()))
    sent = request()
    change(sent)
    with pytest.raises(ConverseError) as raised:
        replay(MODEL_ID, sent)
    assert raised.value.error_type == "ValidationException" and where in raised.value.message
    assert replay.problems()[0].startswith("departed from the cassette: submit_diagnosis call 1 differs at")
    assert "1 recorded submit_diagnosis call(s) never made" in replay.problems()[-1]


def test_another_agent_another_model_or_one_call_too_many_departs():
    replay = ReplayBackend(cassette_of(request()))
    other_agent = copy.deepcopy(request())
    other_agent["system"] = [{"text": "You propose remediations."}]
    with pytest.raises(ConverseError, match="not in the cassette"):
        replay(MODEL_ID, other_agent)
    with pytest.raises(ConverseError, match="asks us.other-model, the cassette recorded"):
        replay("us.other-model", request())
    replay(MODEL_ID, request())
    with pytest.raises(ConverseError, match="submit_diagnosis call 2 is not in the cassette"):
        replay(MODEL_ID, request())


def test_a_recorded_error_is_replayed_then_the_retry_gets_the_next_answer():
    throttled = Exchange(
        model_id=MODEL_ID,
        request=request(),
        error={"status": 429, "type": "ThrottlingException", "message": "Too many requests"},
    )
    ok = Exchange(model_id=MODEL_ID, request=request(), response=answer(output_tokens=7))
    replay = ReplayBackend(Cassette.from_exchanges("s", "m", "r", [throttled, ok]))
    with pytest.raises(ConverseError) as raised:
        replay(MODEL_ID, request())
    assert raised.value.status == 429
    assert replay(MODEL_ID, request())["usage"]["outputTokens"] == 7 and replay.problems() == []


def test_a_cassette_survives_its_file_and_broken_files_are_named(tmp_path):
    saved = cassette_of(request()).save(tmp_path)
    assert Cassette.load(saved).exchanges[0]["shape"] == shape(request())
    cases = {
        "missing.json": "no cassette for this scenario",
        "garbage.json": "not a cassette (",
        "other.json": "not a cassette of format 1",
        "partial.json": "not a cassette (missing",
    }
    (tmp_path / "garbage.json").write_bytes(b"\xff{")
    (tmp_path / "other.json").write_text(json.dumps({"format": 9}))
    (tmp_path / "partial.json").write_text(json.dumps({"format": 1, "scenario": "s", "exchanges": [{}]}))
    for name, said in cases.items():
        with pytest.raises(CassetteError, match="^" + str(tmp_path / name)) as raised:
            Cassette.load(tmp_path / name)
        assert said in str(raised.value)


def test_the_spend_ceiling_refuses_a_call_that_could_pass_it_and_settles_at_the_reported_usage():
    prices = Prices(input=1.0, output=5.0, cache_read=0.1, cache_write=1.25)
    worst = SpendCeiling(1.0, prices).worst(request())
    ceiling = SpendCeiling(worst * 1.5, prices)
    reserved = ceiling.reserve(request())
    with pytest.raises(ConverseError, match="spend ceiling"):  # two at once could pass it
        ceiling.reserve(request())
    usage = {"inputTokens": 1000, "outputTokens": 100, "cacheReadInputTokens": 2000, "cacheWriteInputTokens": 0}
    ceiling.settle(reserved, usage)
    assert ceiling.spent_usd == pytest.approx((1000 * 1.0 + 100 * 5.0 + 2000 * 0.1) / 1e6)
    assert ceiling.reserved_usd == pytest.approx(0) and ceiling.refused == 1
    ceiling.reserve(request())  # settled low: room again


def test_forwarding_stops_at_the_ceiling_and_passes_the_models_errors_through():
    script = [answer(input_tokens=1000, output_tokens=100), ConverseError(429, "ThrottlingException", "slow down")]
    with ConverseGateway(ScriptedBackend(script)) as bedrock:
        prices = LIST_PRICES["anthropic.claude-haiku-4-5-20251001-v1:0"]
        ceiling = SpendCeiling(SpendCeiling(1, prices).worst(request()) * 1.9, prices)
        forward = ForwardBackend(bedrock.url, "us-east-1", ("AKIA", "secret", None), ceiling)
        assert forward(MODEL_ID, request())["usage"]["inputTokens"] == 1000
        assert ceiling.spent_usd == pytest.approx(0.0015)
        with pytest.raises(ConverseError) as raised:
            forward(MODEL_ID, request())
        assert (raised.value.status, raised.value.error_type) == (429, "ThrottlingException")
        assert len(bedrock.exchanges) == 2  # no retry of its own
        ceiling.spent_usd = ceiling.limit_usd - 0.0001
        with pytest.raises(ConverseError, match="spend ceiling"):
            forward(MODEL_ID, request())
        assert len(bedrock.exchanges) == 2  # refused before it was sent


def test_the_cost_bound_follows_the_templates_caps():
    prices = LIST_PRICES["anthropic.claude-haiku-4-5-20251001-v1:0"]
    # 3 agents x 2 x 100,000 tokens: 12 answers of 4,096 output tokens at $5, the rest at the cache-write $1.25.
    per_agent = (49_152 * 5.0 + (200_000 - 49_152) * 1.25) / 1e6
    assert cost_bound(10, prices) == round(10 * 3 * per_agent, 2)


@pytest.mark.parametrize(
    ("model", "options", "said"),
    [
        ("offline", {"record": "x"}, "--record needs a bedrock_converse: model"),
        ("offline", {"max_cost_usd": 1.0}, "--max-cost needs a bedrock_converse: model"),
        (None, {"record": "x", "replay": "y"}, "one or the other"),
        (None, {"replay": "nowhere"}, "no such folder of cassettes"),
    ],
)
def test_an_eval_that_cannot_record_or_replay_says_why_before_anything_starts(model, options, said, tmp_path):
    folders = {k: v if not isinstance(v, str) else tmp_path / v for k, v in options.items()}
    with pytest.raises(CassetteError, match=said):
        EvalModel(model, ["s"], **folders)


def test_a_replay_names_the_model_it_was_recorded_with(tmp_path):
    cassette_of(request()).save(tmp_path)
    with pytest.raises(CassetteError, match=f"recorded with bedrock_converse:{MODEL_ID}, not offline"):
        EvalModel("offline", ["s"], replay=tmp_path)
    other = cassette_of(request())
    other.scenario, other.model = "t", "bedrock_converse:us.other"
    other.save(tmp_path)
    with pytest.raises(CassetteError, match="cassettes of several models"):
        EvalModel(None, ["s", "t"], replay=tmp_path)


# -- the prompt cache the offline model reports over the wire ----------------------------------------------
def conversation(turns: int, *, words: int = 3000) -> tuple[dict, int]:
    """A request of ``turns`` exchanges with cache points after the tools, the system prompt and its end; and its
    input tokens (4 characters each)."""
    point = {"cachePoint": {"type": "default"}}
    messages = [{"role": "user", "content": [{"text": "incident " * words}]}]
    for n in range(1, turns):
        messages.append({"role": "assistant", "content": [{"text": f"turn {n} " * words}]})
        messages.append({"role": "user", "content": [{"text": f"result {n} " * words}]})
    messages[-1]["content"].append(point)
    sent = {
        "toolConfig": {"tools": [{"toolSpec": {"name": "get_logs", "inputSchema": {"json": {}}}}, point]},
        "system": [{"text": "You are an SRE. " * 50}, point],
        "messages": messages,
    }
    return sent, len(json.dumps(sent)) // 4


def test_the_prompt_cache_writes_a_long_prefix_once_and_reads_it_back_on_the_next_turn():
    from incident_responder.lab.converse.backends import PromptCache

    now = [0.0]
    cache = PromptCache(clock=lambda: now[0])
    first, first_tokens = conversation(1)
    read, write = cache.account(MODEL_ID, first, first_tokens)
    assert read == 0 and 0.9 * first_tokens <= write <= first_tokens  # the whole prefix, up to its last cache point
    second, second_tokens = conversation(2)
    read2, write2 = cache.account(MODEL_ID, second, second_tokens)
    assert read2 == pytest.approx(write, rel=0.05)  # the first turn, read back
    assert read2 + write2 <= second_tokens and write2 > 0.5 * (second_tokens - first_tokens)
    now[0] += 301  # five minutes without a hit: gone
    assert cache.account(MODEL_ID, second, second_tokens)[0] == 0


def test_the_prompt_cache_keeps_nothing_below_the_models_minimum_or_for_a_model_without_caching():
    from incident_responder.lab.converse.backends import PromptCache

    cache = PromptCache()
    short, tokens = conversation(1, words=100)
    assert tokens < 4096 and cache.account(MODEL_ID, short, tokens) == (0, 0)
    assert cache.account(MODEL_ID, short, tokens) == (0, 0)
    long, tokens = conversation(2)
    assert cache.account("amazon.nova-lite-v1:0", long, tokens) == (0, 0)


def test_cost_per_incident_with_and_without_the_cache():
    from incident_responder.lab.tokens import cost_summary

    prices = Prices(input=1.0, output=5.0, cache_read=0.1, cache_write=1.25)
    rows = [
        {"input_tokens": 10_000, "output_tokens": 1_000, "cache_read_tokens": 6_000, "cache_write_tokens": 2_000},
        {"input_tokens": 4_000, "output_tokens": 200},
    ]
    summary = cost_summary(rows, prices)
    with_cache = [(2_000 + 6_000 * 0.1 + 2_000 * 1.25 + 5_000) / 1e6, (4_000 + 1_000) / 1e6]
    assert summary["with_caching"]["total"] == round(sum(with_cache), 4)
    assert summary["without_caching"]["median"] == round((15_000 + 5_000) / 2 / 1e6, 5)
    assert (summary["cache_read_share"], summary["cache_write_share"]) == (round(6_000 / 14_000, 3), 0.143)


def test_a_cassettes_path_never_leaves_its_folder(tmp_path):
    """Defect: a scenario named ../outside was recorded to, and replayed from, a file outside the folder."""
    folder = tmp_path / "cassettes"
    escaping = cassette_of(request())
    escaping.scenario = "../outside"
    with pytest.raises(CassetteError, match="'../outside' is not a scenario name"):
        escaping.save(folder)
    assert not (tmp_path / "outside.json").exists()
    cassette_of(request()).save(tmp_path).rename(tmp_path / "outside.json")  # a cassette there to be read
    folder.mkdir()
    with pytest.raises(CassetteError, match="'../outside' is not a scenario name"):
        EvalModel(None, ["../outside"], replay=folder)


@pytest.mark.parametrize(
    ("broken", "said"),
    [
        ('{"format": 1, "exchanges": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply"),
        ('{"format": 1, "recorded_at": ' + "9" * 5000 + "}", "Exceeds the limit (4300 digits)"),
        ({"model": {"id": "x"}}, "model: Input should be a valid string"),
        ({"model": 5}, "model: Input should be a valid string"),
        ({"scenario": "../s"}, "scenario: Value error, a scenario name is"),
    ],
    ids=["deep", "long-number", "model-object", "model-number", "scenario-path"],
)
def test_a_malformed_cassette_is_named_with_what_is_wrong_never_a_crash(tmp_path, broken, said):
    """Defect: RecursionError, ValueError and TypeError tracebacks from `responder eval --replay`, or a model that
    is no string taken for the run's model (text: the file; a mapping: what changes in a recorded cassette)."""
    path = cassette_of(request()).save(tmp_path)
    text = broken if isinstance(broken, str) else json.dumps({**json.loads(path.read_text()), **broken})
    path.write_text(text)
    with pytest.raises(CassetteError, match="^" + str(path) + ": not a cassette") as raised:
        EvalModel(None, ["s"], replay=tmp_path)
    assert said in str(raised.value)
