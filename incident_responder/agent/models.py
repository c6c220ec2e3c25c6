"""Chat models by one setting, ``RESPONDER_MODEL``:

    offline                           the deterministic rule-based model (default; no endpoint)
    bedrock_converse:<model-id>       Amazon Bedrock through ChatBedrockConverse (the deployed default)
    openai:<model>                    an OpenAI-compatible endpoint via init_chat_model
                                      (OPENAI_BASE_URL / OPENAI_API_KEY; needs langchain-openai)
    ollama:<model>                    a local Ollama server via init_chat_model (needs langchain-ollama)

Imports are lazy: a Lambda that runs the offline model never imports a provider SDK.
"""

from __future__ import annotations

import os
from typing import Any

from langchain_core.language_models import BaseChatModel

DEFAULT_MODEL = "offline"


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


def create_chat_model(spec: str | None = None, *, bedrock_client: Any = None) -> BaseChatModel:
    spec = (spec or os.environ.get("RESPONDER_MODEL") or DEFAULT_MODEL).strip()
    provider, _, model_id = spec.partition(":")
    if provider == "offline":
        from incident_responder.agent.offline import OfflineChatModel

        return OfflineChatModel()
    if not model_id:
        raise ModelConfigError(f"RESPONDER_MODEL={spec!r} needs a model id, e.g. bedrock_converse:<model-id>")
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
    if provider in ("openai", "ollama"):
        try:
            from langchain.chat_models import init_chat_model
        except ImportError as exc:
            raise ModelConfigError(
                f"RESPONDER_MODEL={spec!r} needs the optional packages: pip install 'incident-responder[{provider}]'"
            ) from exc
        kwargs = {"temperature": 0}
        if provider == "openai" and os.environ.get("OPENAI_BASE_URL"):
            kwargs["base_url"] = os.environ["OPENAI_BASE_URL"]
        try:
            return init_chat_model(model_id, model_provider=provider, **kwargs)
        except ImportError as exc:
            raise ModelConfigError(
                f"RESPONDER_MODEL={spec!r} needs the optional packages: pip install 'incident-responder[{provider}]'"
            ) from exc
    raise ModelConfigError(
        f"unknown RESPONDER_MODEL {spec!r}; use offline, bedrock_converse:<model-id>, openai:<model> or ollama:<model>"
    )
