"""The scenario file: how an incident is reproduced, evaluated and benchmarked.

The format is fixed by the project design (keep it stable); see ``scenarios/`` for examples::

    name: s3-policy-revoked
    faults:
      - kind: iam_revoke
        target: s3
    workload: {function: data-processor, invocations: 3, log_lines: [], app_error: null}
    # optional: the function's healthy configuration, applied before it is onboarded
    #   workload: {setup: {reserved_concurrency: null, timeout: 30, memory: 512}}
    expect: {status: REMEDIATED, fault_types: [permission_loss], actions: [restore_iam_policy]}
    # optional: how the closed loop is driven after PROPOSAL_READY (defaults shown)
    #   lifecycle: {approval: auto, replay_approval: false, remediation_failure: null,
    #               reinject_during_verifying: false}

``expect.status`` is the final status: REMEDIATED when the incident had automatable actions,
PROPOSAL_READY when it had none.

A broken file raises :class:`ScenarioError` naming the file and the offending field.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Annotated, Literal

import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator

from incident_responder.core.contracts import ActionType, FaultType
from incident_responder.core.status import TERMINAL_STATUSES, Status

# A scenario's name names its files (eval's OUT/<name>/, a cassette DIR/<name>.json): a file name, never a path.
SCENARIO_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
NAME_RULE = (
    "a scenario name is 1-100 letters, digits, '.', '_' and '-', starting with a letter or digit "
    "(it names the scenario's files: no path)"
)


def _scenario_name(name: str) -> str:
    if not SCENARIO_NAME.fullmatch(name):
        raise ValueError(NAME_RULE)
    return name


ScenarioName = Annotated[str, AfterValidator(_scenario_name)]


def path_of(folder: Path, name: str, suffix: str = "") -> Path:
    """``folder``/<name><suffix>: a scenario's file or folder (its report, its cassette). A name that is no scenario
    name, or a path that would leave ``folder``, is refused (ScenarioError), whatever gave the name."""
    path = folder / f"{name}{suffix}"
    if not SCENARIO_NAME.fullmatch(name) or os.path.normpath(path.parent) != os.path.normpath(folder):
        raise ScenarioError(f"{folder}: {name[:100]!r} is not a scenario name: {NAME_RULE}")
    return path


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class IamRevoke(_Strict):
    kind: Literal["iam_revoke"]
    # s3 (data-processor's data), dynamodb (orders-api's table), sqs (queue-consumer's queue), cloudwatch
    # (logs), both (s3 and cloudwatch)
    target: Literal["s3", "cloudwatch", "both", "dynamodb", "sqs"]


class Throttle(_Strict):
    kind: Literal["throttle"]
    reserved_concurrency: Literal[0, 1]


class NetworkBlock(_Strict):
    kind: Literal["network_block"]


class Timeout(_Strict):
    kind: Literal["timeout"]
    seconds: int = Field(ge=1, le=900)


class Memory(_Strict):
    kind: Literal["memory"]
    mb: int = Field(ge=128, le=10240)


class BadDeploy(_Strict):
    """A new version whose code throws, published and made live through the function's alias."""

    kind: Literal["bad_deploy"]
    error: str | None = Field(default=None, max_length=300, description='e.g. "TypeError: x is not a function"')


class KmsDisable(_Strict):
    """The customer-managed key encrypting the function's environment is disabled."""

    kind: Literal["kms_disable"]


class EsmDisable(_Strict):
    """The function's event source mapping is disabled: its queue is no longer read."""

    kind: Literal["esm_disable"]


class DownstreamThrottle(_Strict):
    """Something else overloads the function's table: its writes are throttled (nothing of the function changes)."""

    kind: Literal["downstream_throttle"]


class EnvVarRemoved(_Strict):
    """An environment variable the code needs is removed (the code fails as it starts)."""

    kind: Literal["env_var_removed"]
    name: str = Field(pattern=r"^[a-zA-Z]([a-zA-Z0-9_])*$", max_length=128)


class SecretScheduledForDeletion(_Strict):
    """The Secrets Manager secrets the function's environment names are scheduled for deletion."""

    kind: Literal["secret_scheduled_for_deletion"]


class QueueVisibility(_Strict):
    """The visibility timeout of the queue the function's mapping reads drops to ``seconds``."""

    kind: Literal["queue_visibility"]
    seconds: int = Field(ge=0, le=43200)


class EphemeralStorage(_Strict):
    """The function's /tmp shrinks to ``mb``."""

    kind: Literal["ephemeral_storage"]
    mb: int = Field(ge=512, le=10240)


class KmsRevoke(_Strict):
    """The key policy no longer lets the function's role decrypt (the key stays enabled)."""

    kind: Literal["kms_revoke"]


class NoisyNeighbor(_Strict):
    """Another function in the account (not onboarded) takes all of the unreserved concurrency."""

    kind: Literal["noisy_neighbor"]


class RecursiveLoop(_Strict):
    """The function's output is pointed at the queue that triggers it."""

    kind: Literal["recursive_loop"]


Fault = Annotated[
    IamRevoke
    | Throttle
    | NetworkBlock
    | Timeout
    | Memory
    | BadDeploy
    | KmsDisable
    | EsmDisable
    | DownstreamThrottle
    | EnvVarRemoved
    | SecretScheduledForDeletion
    | QueueVisibility
    | EphemeralStorage
    | KmsRevoke
    | NoisyNeighbor
    | RecursiveLoop,
    Field(discriminator="kind"),
]

# The fault type each fault kind produces, as the investigator should name it (a kind is how chaos breaks
# something; a fault type is what a diagnosis calls it): ``memory`` -> ``memory_exhaustion``.
FAULT_TYPE_OF_KIND: dict[str, FaultType] = {
    "iam_revoke": FaultType.PERMISSION_LOSS,
    "throttle": FaultType.THROTTLING,
    "network_block": FaultType.NETWORK_BLOCK,
    "timeout": FaultType.TIMEOUT,
    "memory": FaultType.MEMORY_EXHAUSTION,
    "bad_deploy": FaultType.DEPLOYMENT_REGRESSION,
    "kms_disable": FaultType.KMS_KEY_DISABLED,
    "esm_disable": FaultType.EVENT_SOURCE_DISABLED,
    "downstream_throttle": FaultType.DEPENDENCY_THROTTLING,
    "env_var_removed": FaultType.CONFIGURATION_DRIFT,
    "secret_scheduled_for_deletion": FaultType.DEPENDENCY_MISSING,
    "queue_visibility": FaultType.EVENT_SOURCE_MISCONFIGURED,
    "ephemeral_storage": FaultType.STORAGE_EXHAUSTION,
    "kms_revoke": FaultType.KMS_ACCESS_DENIED,
    "noisy_neighbor": FaultType.ACCOUNT_CONCURRENCY_EXHAUSTED,
    "recursive_loop": FaultType.RECURSIVE_LOOP,
}


class Setup(_Strict):
    """The function's healthy configuration, applied before onboarding (so it is the baseline).

    Only the fields given are applied; ``reserved_concurrency: null`` means no reservation, as most
    Lambda functions have.
    """

    reserved_concurrency: int | None = Field(default=None, ge=0, le=1000)
    timeout: int | None = Field(default=None, ge=1, le=900)
    memory: int | None = Field(default=None, ge=128, le=10240)


class Workload(_Strict):
    # One of the lab's sample workloads: data-processor, orders-api, queue-consumer.
    function: str = Field(default="data-processor", pattern=r"^[A-Za-z0-9_-]{1,64}$")
    invocations: int = Field(default=3, ge=1, le=100)
    log_lines: list[str] = Field(default_factory=list)
    app_error: str | None = None
    setup: Setup | None = None


Approver = Literal["auto", "reject", "none"]


class Expect(_Strict):
    status: Status = Status.PROPOSAL_READY
    fault_types: list[FaultType] = Field(default_factory=list)
    actions: list[ActionType] = Field(default_factory=list)

    @field_validator("status")
    @classmethod
    def _an_end(cls, status: Status) -> Status:
        if status not in TERMINAL_STATUSES:
            raise ValueError(f"{status} is not a status an incident ends in ({', '.join(sorted(TERMINAL_STATUSES))})")
        return status


class RemediationFailure(_Strict):
    """An AWS API call the remediate function makes that the lab answers with an error (``times`` times)."""

    operation: str = Field(pattern=r"^[A-Z][A-Za-z0-9]+$", description="e.g. PutFunctionConcurrency")
    times: int = Field(default=1, ge=1, le=100)
    code: str = Field(default="ServiceException", pattern=r"^[A-Za-z.]+$")


class Lifecycle(_Strict):
    """How the lab drives the closed loop after PROPOSAL_READY."""

    approval: Approver | None = Field(
        default=None,
        description="auto: the person approves the link; reject: rejects it; none: nobody answers (expiry). "
        "Unset: what `responder eval --approval` says (auto by default).",
    )
    replay_approval: bool = Field(default=False, description="post the used approval link again: it must be refused")
    remediation_failure: RemediationFailure | None = None
    reinject_during_verifying: bool = Field(default=False, description="the faults come back before verification")


class Scenario(_Strict):
    name: ScenarioName
    faults: list[Fault] = Field(default_factory=list)
    workload: Workload = Field(default_factory=Workload)
    lifecycle: Lifecycle = Field(default_factory=Lifecycle)
    expect: Expect = Field(default_factory=Expect)


class ScenarioError(ValueError):
    """A scenario file that cannot be used; the message names the file and the field."""


def load_scenario(path: str | Path) -> Scenario:
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_bytes().decode("utf-8"))
    except OSError as exc:
        raise ScenarioError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise ScenarioError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    except yaml.YAMLError as exc:
        raise ScenarioError(f"{path}: not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise ScenarioError(f"{path}: expected a mapping with name, faults, workload, expect")
    try:
        return Scenario.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '(top level)'}: {err['msg']}" for err in exc.errors()
        )
        raise ScenarioError(f"{path}: {problems}") from exc
