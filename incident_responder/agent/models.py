"""Chat models by one setting, ``RESPONDER_MODEL`` (always given explicitly: no default model):

    offline                           the deterministic rule-based model (no endpoint, no cost)
    bedrock_converse:<model-id>       Amazon Bedrock through ChatBedrockConverse (the deployed default; an inference
                                      profile id or a model id; BEDROCK_REGION / BEDROCK_PROFILE outside Lambda)
    openai:<model>                    an OpenAI-compatible endpoint through ChatOpenAI (``base_url`` and
                                      ``api_key``, deployed as MODEL_BASE_URL / MODEL_API_KEY_PARAMETER;
                                      needs langchain-openai: the [openai] extra, or the deployed layer)
    ollama:<model>                    an Ollama server through ChatOllama (needs langchain-ollama)

Imports are lazy: a Lambda that runs the offline model never imports a provider SDK.
"""

from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Any

from incident_responder.agent.errors import ModelConfigError

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel


PROVIDERS = ("offline", "bedrock_converse", "openai", "ollama")
# Output tokens per model call, whatever the provider: a turn is a tool call or a submission, far below it, and a
# model that rambles is cut off here (the agent nudges it to be brief) instead of running on until the deadline.
MAX_OUTPUT_TOKENS = 4096


def parse_spec(spec: str) -> tuple[str, str]:
    """(provider, model id) of a model spec, or ModelConfigError saying what is accepted, or that the Bedrock model it
    names is past its end of life (every call would fail: better said before a lab starts or an incident runs)."""
    from incident_responder.agent.model_catalog import DEFAULT_MODEL, end_of_life

    accepted = "use offline, bedrock_converse:<model-id>, openai:<model> or ollama:<model>"
    if not spec or not spec.strip():
        raise ModelConfigError(f"no model given: {accepted}")
    provider, _, model_id = spec.strip().partition(":")
    if provider not in PROVIDERS:
        raise ModelConfigError(f"unknown RESPONDER_MODEL {spec!r}; {accepted}")
    if provider != "offline" and not model_id:
        raise ModelConfigError(f"RESPONDER_MODEL={spec!r} needs a model id, e.g. {DEFAULT_MODEL}")
    if provider == "bedrock_converse" and (eol := end_of_life(model_id)):
        raise ModelConfigError(
            f"{spec} names a model past its Amazon Bedrock end-of-life date ({eol}): every call fails; "
            f"use an active model, e.g. {DEFAULT_MODEL}"
        )
    return provider, model_id


def create_chat_model(
    spec: str,
    *,
    bedrock_client: Any = None,
    base_url: str | None = None,
    api_key: str | None = None,
    bedrock_region: str | None = None,
    bedrock_profile: str | None = None,
) -> BaseChatModel:
    """The chat model ``spec`` names; ``base_url`` / ``api_key`` serve OpenAI-compatible and Ollama endpoints;
    ``bedrock_region`` / ``bedrock_profile`` (else BEDROCK_REGION / BEDROCK_PROFILE) a Bedrock model's own."""
    provider, model_id = parse_spec(spec)
    spec = spec.strip()
    if provider == "offline":
        from incident_responder.agent.offline.model import OfflineChatModel

        return OfflineChatModel()
    if provider == "bedrock_converse":
        from langchain_aws import ChatBedrockConverse

        kwargs: dict[str, Any] = {
            "model": model_id,
            "temperature": 0,
            "max_tokens": MAX_OUTPUT_TOKENS,
            "disable_streaming": True,
        }
        if bedrock_client is not None:
            kwargs["client"] = bedrock_client
        else:
            # Deployed: the function's role, in its Region. Elsewhere (the lab, a laptop) BEDROCK_REGION and
            # BEDROCK_PROFILE may name the model's Region and credentials apart from every other AWS call's; the
            # endpoint is botocore's own choice (AWS_ENDPOINT_URL_BEDROCK_RUNTIME when set).
            if region := bedrock_region or os.environ.get("BEDROCK_REGION"):
                kwargs["region_name"] = region
            if profile := bedrock_profile or os.environ.get("BEDROCK_PROFILE"):
                kwargs["credentials_profile_name"] = profile
        return ChatBedrockConverse(**kwargs)
    if provider == "openai":
        try:
            from langchain_openai import ChatOpenAI
        except ImportError as exc:
            raise ModelConfigError(
                f"RESPONDER_MODEL={spec!r} needs langchain-openai: pip install 'incident-responder[openai]' "
                "(deployed: set ModelBaseUrl, which attaches the OpenAI-compatible layer)"
            ) from exc
        from incident_responder.agent.http_pool import openai_http_client

        base_url = base_url or os.environ.get("OPENAI_BASE_URL")
        # Its own connection pool per event loop: langchain-openai's default client is shared by the whole process,
        # and a warm function's next invocation runs in a new loop (see http_pool).
        kwargs = {
            "model": model_id,
            "temperature": 0,
            "max_retries": 0,
            "max_tokens": MAX_OUTPUT_TOKENS,
            "http_async_client": openai_http_client(),
        }
        if base_url:
            kwargs["base_url"] = base_url
        if api_key:
            kwargs["api_key"] = api_key
        return ChatOpenAI(**kwargs)
    try:  # ollama: the last provider parse_spec admits
        from langchain_ollama import ChatOllama
    except ImportError as exc:
        raise ModelConfigError(
            f"RESPONDER_MODEL={spec!r} needs langchain-ollama: pip install 'incident-responder[ollama]'"
        ) from exc
    from incident_responder.agent.http_pool import ollama_transport

    return ChatOllama(
        model=model_id,
        temperature=0,
        num_predict=MAX_OUTPUT_TOKENS,
        async_client_kwargs={"transport": ollama_transport()},  # a pool per event loop (see http_pool)
        **({"base_url": base_url} if base_url else {}),
    )


# The module each provider's chat model class lives in (what create_chat_model imports for it).
PROVIDER_MODULES = {
    "offline": "incident_responder.agent.offline.model",
    "bedrock_converse": "langchain_aws",
    "openai": "langchain_openai",
    "ollama": "langchain_ollama",
}


def load_provider(spec: str) -> None:
    """Import the chat model class ``spec`` names, without building a model (no client, no credentials):
    before a SnapStart snapshot, so that restored environments have it loaded."""
    module = PROVIDER_MODULES.get(spec.strip().partition(":")[0])
    if module is not None:
        importlib.import_module(module)


def model_api_key(parameter_name: str | None) -> str | None:
    """The OpenAI-compatible endpoint's key from its SSM SecureString (cached), or None when none is configured."""
    if not parameter_name:
        return None
    from aws_lambda_powertools.utilities import parameters

    try:
        return str(parameters.get_parameter(parameter_name, decrypt=True, max_age=300))
    except Exception as exc:  # noqa: BLE001 - any SDK or permission failure: said clearly, not retried
        raise ModelConfigError(f"cannot read the model API key from SSM parameter {parameter_name!r}: {exc}") from exc
