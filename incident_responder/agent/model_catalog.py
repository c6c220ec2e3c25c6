"""What this project knows about Bedrock models, from Bedrock's own documentation: the default, which model ids are
end-of-life, how an inference profile id relates to its foundation model, and list prices for the cost estimate.

Only the model cards and the inference-profile tables decide what goes here (the pages are named beside each entry);
``responder doctor`` asks Bedrock itself (GetFoundationModel's ``modelLifecycle``) for everything else. Nothing here
imports boto3: the template tests, the settings and the cost estimate read it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

# Claude Haiku 4.5 through its global cross-Region inference profile. Its Bedrock model card
# (docs.aws.amazon.com/bedrock/latest/userguide/model-card-anthropic-claude-haiku-4-5.html): lifecycle Active,
# Converse supported, on demand only through an inference profile (geo "us."/"eu."/... or "global."), prompt
# caching (4,096 tokens a checkpoint at least, 4 checkpoints, on system, messages and tools). The global profile
# is callable from most commercial source Regions (a "us." profile only from US ones); where data must stay in a
# geography, use its geographic profile (ResponderModel=bedrock_converse:eu.anthropic.claude-haiku-4-5-...).
DEFAULT_MODEL_ID = "global.anthropic.claude-haiku-4-5-20251001-v1:0"
DEFAULT_MODEL = f"bedrock_converse:{DEFAULT_MODEL_ID}"

# The prefixes of Bedrock's system-defined (cross-Region) inference profile ids: "<prefix>.<foundation model id>".
PROFILE_PREFIXES = ("global", "us", "us-gov", "eu", "apac", "jp", "au", "ca")

# What a system-defined profile of each prefix may route a call to (Bedrock's "Geographic cross-Region inference" and
# "Global cross-Region inference" pages). The exact destination Regions depend on the Region the call is made from and
# AWS adds Regions to profiles: ``responder doctor`` asks Bedrock for them (GetInferenceProfile's models); this is what
# a person is told when it cannot. An SCP that denies any destination Region makes the call fail (AccessDenied),
# which a geographic profile inside the Regions the organisation allows avoids.
GEOGRAPHIES = {
    "global": "any commercial AWS Region",
    "us": "AWS Regions in the United States only",
    "us-gov": "AWS GovCloud (US) Regions only",
    "eu": "AWS Regions in Europe only",
    "apac": "AWS Regions in Asia Pacific only",
    "jp": "AWS Regions in Japan only",
    "au": "AWS Regions in Australia only",
    "ca": "AWS Regions in Canada only",
}
# The geography a source Region's geographic profiles keep calls in (the Region code's prefix); None: no such profile.
_REGION_GEOGRAPHY = (("us-gov-", "us-gov"), ("us-", "us"), ("eu-", "eu"), ("ap-", "apac"), ("ca-", "ca"))

# Foundation models past their Bedrock end-of-life date (their model cards' "Model EOL date"): every call fails.
END_OF_LIFE = {
    # docs.aws.amazon.com/bedrock/latest/userguide/model-card-anthropic-claude-3-5-haiku.html: Legacy, EOL 19 June 2026
    "anthropic.claude-3-5-haiku-20241022-v1:0": "2026-06-19",
}


def base_model_id(model_id: str) -> str:
    """The foundation model an inference profile id names (``us.anthropic.x`` -> ``anthropic.x``); others unchanged."""
    prefix, dot, rest = model_id.partition(".")
    return rest if dot and prefix in PROFILE_PREFIXES else model_id


def profile_prefix(model_id: str) -> str | None:
    """``global``, ``us``, ... for an inference profile id; None for a foundation model id."""
    prefix, dot, _ = model_id.partition(".")
    return prefix if dot and prefix in PROFILE_PREFIXES else None


def geographic_profile(model_id: str, geography: str) -> str:
    """The id of ``model_id``'s (a profile's or a foundation model's) system-defined profile in ``geography``."""
    return f"{geography}.{base_model_id(model_id)}"


def geography_of_region(region: str) -> str | None:
    """The prefix of the geographic profiles callable from ``region`` (``eu-west-1`` -> ``eu``), None when none is."""
    return next((geography for prefix, geography in _REGION_GEOGRAPHY if region.startswith(prefix)), None)


def profile_reach(model_id: str) -> str:
    """In words, the Regions a call to ``model_id`` may be processed in."""
    prefix = profile_prefix(model_id)
    if prefix is None:
        return "the Region it is called in only (no inference profile)"
    return GEOGRAPHIES[prefix]


def end_of_life(model_id: str) -> str | None:
    """The EOL date of the foundation model ``model_id`` (or its profile) names, when it has passed."""
    return END_OF_LIFE.get(base_model_id(model_id))


def end_of_life_specs() -> list[str]:
    """Every ``ResponderModel`` value naming an end-of-life model, as the template's rule lists them."""
    prefixes = ("", "global.", "us.", "eu.", "apac.")
    return [f"bedrock_converse:{p}{model}" for model in sorted(END_OF_LIFE) for p in prefixes]


# Models whose Bedrock card says they take prompt-caching checkpoints (in system, messages and tools), with the
# fewest tokens a checkpoint caches: a shorter prefix is simply not cached.
PROMPT_CACHING = {
    "anthropic.claude-haiku-4-5-20251001-v1:0": 4096,  # its model card: 4,096 tokens, 4 checkpoints, 5 min or 1 h
}


def caches_prompts(model_id: str) -> bool:
    """Whether cache points may be sent to ``model_id`` (its profile's foundation model takes them)."""
    return base_model_id(model_id) in PROMPT_CACHING


@dataclass(frozen=True)
class Prices:
    """USD per million tokens: input (uncached), output, cache reads and cache writes."""

    input: float
    output: float
    cache_read: float
    cache_write: float

    def cost(self, input_tokens: int, output_tokens: int, cache_read: int = 0, cache_write: int = 0) -> float:
        """``input_tokens`` as the model reports them (Bedrock's count includes cache reads and writes: those are
        billed at their own prices, the rest at the input price)."""
        uncached = max(0, input_tokens - cache_read - cache_write)
        total = (
            uncached * self.input
            + output_tokens * self.output
            + cache_read * self.cache_read
            + cache_write * self.cache_write
        )
        return round(total / 1e6, 6)


# Bedrock on-demand list prices (USD per million tokens) of the default model through a global profile: input 1.00,
# output 5.00, cache write 1.25 (5-minute TTL, 1.25x input), cache read 0.10 (0.1x input); geographic and in-Region
# profiles cost about 10% more. Prices change: PRICE_PER_MTOK_* override them (see :func:`prices`).
LIST_PRICES = {
    "anthropic.claude-haiku-4-5-20251001-v1:0": Prices(input=1.00, output=5.00, cache_read=0.10, cache_write=1.25),
}
PRICE_VARIABLES = {
    "input": "PRICE_PER_MTOK_INPUT",
    "output": "PRICE_PER_MTOK_OUTPUT",
    "cache_read": "PRICE_PER_MTOK_CACHE_READ",
    "cache_write": "PRICE_PER_MTOK_CACHE_WRITE",
}


def prices(model_spec: str | None = None, environ: dict[str, str] | None = None) -> Prices | None:
    """The prices to estimate with: PRICE_PER_MTOK_INPUT and _OUTPUT when set (cache prices from
    PRICE_PER_MTOK_CACHE_READ / _CACHE_WRITE, else 0.1x and 1.25x the input price), else the list prices of the
    Bedrock model ``model_spec`` names when known; None when neither says."""
    env = os.environ if environ is None else environ
    given = {field: env.get(name) for field, name in PRICE_VARIABLES.items()}
    if given["input"] and given["output"]:
        price_in = float(given["input"])
        return Prices(
            input=price_in,
            output=float(given["output"]),
            cache_read=float(given["cache_read"]) if given["cache_read"] else round(price_in * 0.1, 6),
            cache_write=float(given["cache_write"]) if given["cache_write"] else round(price_in * 1.25, 6),
        )
    if model_spec and model_spec.startswith("bedrock_converse:"):
        return LIST_PRICES.get(base_model_id(model_spec.partition(":")[2]))
    return None
