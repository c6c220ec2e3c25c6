"""One settings model per Lambda function: its environment, validated once.

Each handler names its model; :func:`at_cold_start` validates it while the module is imported inside
Lambda, so a missing or malformed variable fails the function's init with a message that names the
variable, instead of a default quietly taking its place (no deployed function falls back to the
offline model, a default table or a default key). Outside Lambda (the lab runs handlers in-process,
switching environments per function) the model is validated on first use of each environment.

Field names are the environment variable names in lower case.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Literal, Self, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from incident_responder.core.errors import StateMachineError

MODEL_PATTERN = r"^(offline|bedrock_converse:[A-Za-z0-9._:/-]+|openai:[A-Za-z0-9._:/-]+|ollama:[A-Za-z0-9._:/-]+)$"
McpAuth = Literal["iam", "api_key"]


class ConfigurationError(StateMachineError, RuntimeError):
    """The function's environment is incomplete or contradicts itself (an ASL error name: no retry)."""


class FunctionSettings(BaseModel):
    # defer_build: a function builds the validator of its own model only, when it validates its environment.
    model_config = ConfigDict(extra="ignore", frozen=True, str_strip_whitespace=True, defer_build=True)

    _cache: ClassVar[dict[tuple, Any]]
    _lock: ClassVar[threading.Lock] = threading.Lock()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._cache = {}

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Self:
        env = os.environ if environ is None else environ
        values = {name: env[name.upper()] for name in cls.model_fields if env.get(name.upper(), "") != ""}
        try:
            return cls.model_validate(values)
        except ValidationError as exc:
            problems = []
            for error in exc.errors():
                variable = ".".join(str(part) for part in error["loc"]).upper() or "(environment)"
                problem = "missing" if error["type"] == "missing" else error["msg"]
                problems.append(f"  {variable}: {problem}")
            raise ConfigurationError(
                f"{cls.__name__}: the function's environment is not usable:\n" + "\n".join(problems)
            ) from None

    @classmethod
    def current(cls) -> Self:
        """The settings of the current environment, validated once per distinct environment."""
        key = tuple(os.environ.get(name.upper()) for name in cls.model_fields)
        cached = cls._cache.get(key)
        if cached is None:
            cached = cls.from_env()
            with cls._lock:
                cls._cache[key] = cached
        return cached


S = TypeVar("S", bound=FunctionSettings)


def in_lambda() -> bool:
    return bool(os.environ.get("AWS_LAMBDA_FUNCTION_NAME")) and bool(os.environ.get("LAMBDA_TASK_ROOT"))


def at_cold_start(model: type[S]) -> Callable[[], S]:
    """The handler's settings accessor; inside Lambda the environment is validated right now (at init)."""
    if in_lambda():
        model.current()
    return model.current


# -- the command line ---------------------------------------------------------------------------------
class StoreSettings(FunctionSettings):
    """Where the command line (and the lab's shell) reads and writes incidents: the stack's outputs, which
    ``responder lab up`` exports. Without them, the names a lab without the stack creates its tables under."""

    incident_state_table: str = Field(default="incident-state", min_length=1)
    incident_context_table: str = Field(default="incident-context", min_length=1)
    artifacts_bucket: str | None = None
    incident_ttl_days: int | None = Field(default=None, ge=1)


# -- the functions ---------------------------------------------------------------------------------
class RedactionSettings(FunctionSettings):
    """A function that redacts what it reads (the MCP servers, ingest): a deployment's own secret shapes."""

    redaction_patterns: str | None = None

    @field_validator("redaction_patterns")
    @classmethod
    def _patterns_compile(cls, value: str | None) -> str | None:
        from incident_responder.redaction.redactor import parse_patterns

        parse_patterns(value)  # a ValueError naming the bad pattern
        return value


class IngestSettings(RedactionSettings):
    state_machine_arn: str = Field(pattern=r"^arn:aws[a-z-]*:states:")
    dead_letter_queue_url: str = Field(min_length=1)
    incident_state_table: str = Field(min_length=1)
    baseline_table: str = Field(min_length=1)
    alert_group_window_minutes: int = Field(ge=1, le=1440)


class ReconcileSettings(FunctionSettings):
    incident_state_table: str = Field(min_length=1)
    # Where an execution that ended while changing the account is reported (its unverified changes, with the ledger).
    operator_topic_arn: str | None = Field(default=None, pattern=r"^arn:aws[a-z-]*:sns:")


class SweepSettings(ReconcileSettings):
    stuck_after_minutes: int = Field(ge=1)


class ReportSettings(FunctionSettings):
    """An execution ended: the incident's report to the artifacts bucket, its link to the topics."""

    incident_state_table: str = Field(min_length=1)
    incident_context_table: str = Field(min_length=1)
    artifacts_bucket: str = Field(min_length=1)
    incident_news_topic_arn: str | None = Field(default=None, pattern=r"^arn:aws[a-z-]*:sns:")
    chat_topic_arn: str | None = Field(default=None, pattern=r"^arn:aws[a-z-]*:sns:")
    report_link_hours: float = Field(default=12, gt=0, le=168)
    # How long to wait for the reconcile function's terminal status when an execution did not succeed.
    report_settle_seconds: float = Field(default=10, ge=0, le=50)
    # Set: each ended incident goes into its function's history (history#<function_name>), kept this many days.
    memory_ttl_days: int | None = Field(default=None, ge=1)


class McpAuthSettings(FunctionSettings):
    """How MCP requests are authenticated, on both ends: IAM (a function URL checks SigV4) or a bearer key."""

    mcp_auth: McpAuth
    mcp_api_key_parameter: str | None = None

    @model_validator(mode="after")
    def _key_for_api_key_auth(self) -> Self:
        if self.mcp_auth == "api_key" and not self.mcp_api_key_parameter:
            raise ValueError("MCP_AUTH=api_key needs MCP_API_KEY_PARAMETER (the SSM SecureString with the key)")
        return self


class McpServerSettings(McpAuthSettings, RedactionSettings):
    """An MCP server behind a function URL."""

    baseline_table: str = Field(min_length=1)
    # The diagnostics server's get_incident_history: where the histories are, and how far back it answers.
    incident_state_table: str | None = None
    memory_days: int = Field(default=30, ge=1, le=365)


class AgentSettings(McpAuthSettings):
    """What both agent functions need: the model, their MCP server's auth, limits and where to store.

    What they build from these (model, limits, MCP server config) is in :mod:`incident_responder.agent.configured`,
    their store in :meth:`incident_responder.state.store.RecordStore.from_settings`."""

    responder_model: str = Field(pattern=MODEL_PATTERN)
    model_base_url: str | None = Field(default=None, pattern=r"^https?://\S+$")
    model_api_key_parameter: str | None = Field(default=None, pattern=r"^/[A-Za-z0-9_./-]+$")
    bedrock_region: str | None = None
    bedrock_profile: str | None = None  # outside Lambda only (the lab): the model's credentials, apart from the rest
    incident_context_table: str = Field(min_length=1)
    artifacts_bucket: str = Field(min_length=1)
    incident_ttl_days: int = Field(ge=1)
    agent_recursion_limit: int = Field(ge=2)
    agent_token_cap: int = Field(ge=1000)
    agent_max_nudges: int = Field(default=1, ge=0)

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        openai = self.responder_model.startswith("openai:")
        if openai and not self.model_base_url:
            raise ValueError("RESPONDER_MODEL=openai:<model> needs MODEL_BASE_URL (the OpenAI-compatible endpoint)")
        if self.model_base_url and not openai:
            raise ValueError(f"MODEL_BASE_URL is set but RESPONDER_MODEL={self.responder_model} does not use it")
        return self


def deadline_buffer_ms(timeout_ms: int) -> int:
    """Time kept back from the agent to submit and store its result: a quarter of the function's
    timeout, between 10 s and 90 s, so a short timeout still leaves most of it for the investigation
    (60 s -> 15 s kept, 45 s to work; 300 s -> 75 s kept)."""
    return min(90_000, max(10_000, timeout_ms // 4))


class InvestigateSettings(AgentSettings):
    diagnostics_mcp_url: str = Field(pattern=r"^https?://\S+$")


class ProposeSettings(AgentSettings):
    remediation_mcp_url: str = Field(pattern=r"^https?://\S+$")
    baseline_table: str = Field(min_length=1)


# -- the closed loop ---------------------------------------------------------------------------------
class ReviewSettings(AgentSettings):
    """REVIEWING: the critic agent over the remediation server, and the approval policy it cannot lower."""

    remediation_mcp_url: str = Field(pattern=r"^https?://\S+$")
    baseline_table: str = Field(min_length=1)
    auto_approve: Literal["none", "low"]
    # Opt-in: with AUTO_APPROVE=low, IAM and network baseline restores the critic approved skip the person too.
    auto_approve_iam_and_network: bool = False
    # Set: the memory rules read the function's history (one GetItem) and only ever make the floor stricter.
    incident_state_table: str | None = None
    memory_days: int = Field(default=30, ge=1, le=365)
    recurrence_hours: int = Field(default=24, ge=1, le=720)


class ApprovalRequestSettings(FunctionSettings):
    """AWAITING_APPROVAL: store the hashed task token, send the approval request with its links."""

    incident_state_table: str = Field(min_length=1)
    approval_topic_arn: str = Field(pattern=r"^arn:aws[a-z-]*:sns:")
    approval_url: str = Field(pattern=r"^https?://\S+$")
    incident_ttl_days: int = Field(ge=1)
    chat_topic_arn: str | None = Field(default=None, pattern=r"^arn:aws[a-z-]*:sns:")


class ApprovalEndpointSettings(FunctionSettings):
    """The approval page behind a function URL: a link's token, checked against its record, decides once."""

    incident_state_table: str = Field(min_length=1)


class RemediateSettings(FunctionSettings):
    """REMEDIATING and ROLLING_BACK: apply approved actions (recording how to undo each), or undo them."""

    incident_state_table: str = Field(min_length=1)
    baseline_table: str = Field(min_length=1)
    incident_ttl_days: int = Field(ge=1)


class VerifySettings(FunctionSettings):
    """VERIFYING: is the configuration back at the baseline, and is the function healthy again?"""

    baseline_table: str = Field(min_length=1)
