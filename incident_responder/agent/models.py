"""Chat models by one setting, ``RESPONDER_MODEL`` (always given explicitly: no default model):

    offline                           the deterministic rule-based model (no endpoint, no cost)
    bedrock_converse:<model-id>       Amazon Bedrock through ChatBedrockConverse (the deployed default)
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

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel


class ModelConfigError(ValueError):
    """RESPONDER_MODEL names no model this project can build (said with what is accepted)."""


# When set, Bedrock clients come from here (the lab's evaluation points them at real Bedrock with
# the user's own credentials while every other client talks to the lab).
_bedrock_client_factory: Any = None


def set_bedrock_client_factory(factory: Any) -> None:
    global _bedrock_client_factory
    _bedrock_client_factory = factory


def real_bedrock_client_factory(region: str | None = None):
    """A factory of bedrock-runtime clients on the real endpoint with the credentials boto3 finds *now*.

    Raises ModelConfigError at once (before any lab starts) when there are no credentials or no region.
    """
    import boto3

    session = boto3.Session()
    credentials = session.get_credentials()
    if credentials is None:
        raise ModelConfigError(
            "no AWS credentials for Bedrock: configure a profile (AWS_PROFILE) or access keys with "
            "bedrock:InvokeModel; the lab itself needs none"
        )
    region = region or os.environ.get("BEDROCK_REGION") or session.region_name
    if not region:
        raise ModelConfigError("no region for Bedrock: set BEDROCK_REGION or AWS_REGION")
    frozen = credentials.get_frozen_credentials()

    def factory():
        return boto3.client(
            "bedrock-runtime",
            region_name=region,
            endpoint_url=f"https://bedrock-runtime.{region}.amazonaws.com",
            aws_access_key_id=frozen.access_key,
            aws_secret_access_key=frozen.secret_key,
            aws_session_token=frozen.token,
        )

    return factory


PROVIDERS = ("offline", "bedrock_converse", "openai", "ollama")


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
    spec: str, *, bedrock_client: Any = None, base_url: str | None = None, api_key: str | None = None
) -> BaseChatModel:
    """The chat model ``spec`` names; ``base_url`` / ``api_key`` serve OpenAI-compatible and Ollama endpoints."""
    provider, model_id = parse_spec(spec)
    spec = spec.strip()
    if provider == "offline":
        from incident_responder.agent.offline import OfflineChatModel

        return OfflineChatModel()
    if provider == "bedrock_converse":
        from langchain_aws import ChatBedrockConverse

        kwargs: dict[str, Any] = {"model": model_id, "temperature": 0, "max_tokens": 4096, "disable_streaming": True}
        if bedrock_client is None and _bedrock_client_factory is not None:
            bedrock_client = _bedrock_client_factory()
        if bedrock_client is not None:
            kwargs["client"] = bedrock_client
        elif region := os.environ.get("BEDROCK_REGION"):
            kwargs["region_name"] = region
        return ChatBedrockConverse(**kwargs)
    if provider == "openai":
        try:
            from langchain_openai import ChatOpenAI
        except ImportError as exc:
            raise ModelConfigError(
                f"RESPONDER_MODEL={spec!r} needs langchain-openai: pip install 'incident-responder[openai]' "
                "(deployed: set ModelBaseUrl, which attaches the OpenAI-compatible layer)"
            ) from exc
        base_url = base_url or os.environ.get("OPENAI_BASE_URL")
        kwargs = {"model": model_id, "temperature": 0, "max_retries": 0}
        if base_url:
            kwargs["base_url"] = base_url
        if api_key:
            kwargs["api_key"] = api_key
        return ChatOpenAI(**kwargs)
    if provider == "ollama":
        try:
            from langchain_ollama import ChatOllama
        except ImportError as exc:
            raise ModelConfigError(
                f"RESPONDER_MODEL={spec!r} needs langchain-ollama: pip install 'incident-responder[ollama]'"
            ) from exc
        return ChatOllama(model=model_id, temperature=0, **({"base_url": base_url} if base_url else {}))
    raise AssertionError(provider)  # parse_spec admits only the providers above


# The module each provider's chat model class lives in (what create_chat_model imports for it).
PROVIDER_MODULES = {
    "offline": "incident_responder.agent.offline",
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
