"""The model's side of the lab: forwarding an eval's calls to the user's Bedrock endpoint with the user's credentials,
under a spend ceiling."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any

from incident_responder.agent.model_catalog import Prices
from incident_responder.lab.converse.errors import ConverseError

# The model's tool-use system prompt Bedrock adds to every call with tools (a few hundred tokens, not in the request).
HIDDEN_PROMPT_TOKENS = 1_000


@dataclass
class SpendCeiling:
    """A run's most: each call reserves what it could cost at most (every byte of the request a token at the cache-
    write price, plus the hidden tool prompt, plus its ``maxTokens`` of output) and settles at what its usage says."""

    limit_usd: float
    prices: Prices
    spent_usd: float = 0.0
    reserved_usd: float = 0.0
    refused: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def worst(self, request: dict[str, Any]) -> float:
        size = len(json.dumps(request).encode()) + HIDDEN_PROMPT_TOKENS
        output = int(request.get("inferenceConfig", {}).get("maxTokens") or 4096)
        return (size * max(self.prices.input, self.prices.cache_write) + output * self.prices.output) / 1e6

    def reserve(self, request: dict[str, Any]) -> float:
        worst = self.worst(request)
        with self._lock:
            if self.spent_usd + self.reserved_usd + worst > self.limit_usd:
                self.refused += 1
                raise ConverseError(
                    400,
                    "ValidationException",
                    f"the eval's spend ceiling: ${self.spent_usd:.4f} spent, this call could cost ${worst:.4f} more "
                    f"than the ${self.limit_usd:.2f} allowed (responder eval --max-cost)",
                )
            self.reserved_usd += worst
        return worst

    def settle(self, reserved: float, usage: dict[str, Any] | None) -> None:
        usage = usage or {}
        read, write = int(usage.get("cacheReadInputTokens") or 0), int(usage.get("cacheWriteInputTokens") or 0)
        cost = self.prices.cost(
            int(usage.get("inputTokens") or 0) + read + write, int(usage.get("outputTokens") or 0), read, write
        )
        with self._lock:
            self.reserved_usd -= reserved
            self.spent_usd += cost


class ForwardBackend:
    """The user's Bedrock endpoint, called with the user's credentials, once per call (no retries here)."""

    def __init__(
        self,
        endpoint: str,
        region: str,
        credentials: tuple[str, str, str | None],
        ceiling: SpendCeiling | None = None,
    ):
        self.endpoint, self.region, self.credentials = endpoint, region, credentials
        self.ceiling = ceiling
        self._client = None
        self._lock = threading.Lock()

    def client(self) -> Any:
        with self._lock:
            if self._client is None:
                import boto3
                from botocore.config import Config

                key, secret, token = self.credentials
                self._client = boto3.client(
                    "bedrock-runtime",
                    region_name=self.region,
                    endpoint_url=self.endpoint,  # explicit: the process's AWS_ENDPOINT_URL is the lab's
                    aws_access_key_id=key,
                    aws_secret_access_key=secret,
                    aws_session_token=token,
                    config=Config(retries={"total_max_attempts": 1}, read_timeout=300, connect_timeout=10),
                )
            return self._client

    def __call__(self, model_id: str, request: dict[str, Any]) -> dict[str, Any]:
        from botocore.exceptions import BotoCoreError, ClientError, ParamValidationError

        reserved = self.ceiling.reserve(request) if self.ceiling else 0.0
        usage = None
        try:
            response = self.client().converse(modelId=model_id, **request)
            response.pop("ResponseMetadata", None)
            usage = response.get("usage")
            return response
        except ClientError as exc:
            error = exc.response.get("Error", {})
            status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 500
            raise ConverseError(status, error.get("Code", "InternalServerException"), error.get("Message", "")) from exc
        except ParamValidationError as exc:  # what Bedrock would refuse too
            raise ConverseError(400, "ValidationException", str(exc)) from exc
        except BotoCoreError as exc:  # the endpoint unreachable: what the function would have seen, transient
            raise ConverseError(503, "ServiceUnavailableException", f"{type(exc).__name__}: {exc}") from exc
        finally:
            if self.ceiling:
                self.ceiling.settle(reserved, usage)
