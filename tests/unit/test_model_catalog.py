"""The model catalogue: profile ids and their foundation models, end-of-life ids, and the prices costs use."""

from __future__ import annotations

from incident_responder.agent.model_catalog import (
    DEFAULT_MODEL,
    Prices,
    base_model_id,
    caches_prompts,
    end_of_life,
    prices,
    profile_prefix,
)


def test_a_profile_id_names_its_foundation_model():
    assert base_model_id("eu.anthropic.claude-haiku-4-5-20251001-v1:0") == "anthropic.claude-haiku-4-5-20251001-v1:0"
    assert profile_prefix("us-gov.anthropic.x-v1:0") == "us-gov" and profile_prefix("anthropic.x-v1:0") is None
    assert end_of_life("us.anthropic.claude-3-5-haiku-20241022-v1:0") == "2026-06-19"
    assert caches_prompts("global.anthropic.claude-haiku-4-5-20251001-v1:0") and not caches_prompts(
        "amazon.nova-lite-v1:0"
    )


def test_prices_come_from_the_environment_else_the_default_models_list_prices():
    assert prices(DEFAULT_MODEL, {}) == Prices(input=1.0, output=5.0, cache_read=0.1, cache_write=1.25)
    assert prices("offline", {}) is None and prices(None, {}) is None
    given = prices(DEFAULT_MODEL, {"PRICE_PER_MTOK_INPUT": "3", "PRICE_PER_MTOK_OUTPUT": "15"})
    assert given == Prices(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)
    # Reported input includes what was read from and written to the cache: each billed at its own price.
    assert (
        given.cost(10_000, 1_000, cache_read=6_000, cache_write=2_000)
        == (2_000 * 3 + 1_000 * 15 + 6_000 * 0.3 + 2_000 * 3.75) / 1e6
    )
