"""Where the lab's agent functions send their model calls: to the user's model, never to the lab.

Every other AWS call a lab function makes goes to moto (``AWS_ENDPOINT_URL``, the lab's dummy keys). A model is the
one thing the lab cannot emulate, so the agent functions (and only they) get, besides the stack's environment:

* ``bedrock_converse:``: the user's credentials (as boto3 finds them *before* the lab replaces the environment:
  profile, SSO, environment keys), frozen into a private credentials file the functions read as the profile
  ``BEDROCK_PROFILE`` names; the user's Region (``BEDROCK_REGION``, else ``AWS_REGION`` or the profile's); and
  Bedrock Runtime's own endpoint through botocore's standard service-specific variable
  ``AWS_ENDPOINT_URL_BEDROCK_RUNTIME``, which wins over the lab's ``AWS_ENDPOINT_URL`` for that one service. When the
  user sets ``AWS_ENDPOINT_URL_BEDROCK_RUNTIME`` themselves (a VPC endpoint, a proxy, a test double), that is used.
* ``openai:``: ``OPENAI_BASE_URL`` becomes the stack's ``ModelBaseUrl`` (as deployed), ``OPENAI_API_KEY`` the key.
* ``ollama:``: ``OLLAMA_HOST`` (default http://127.0.0.1:11434).

Frozen credentials last as long as the user's session did (an SSO or assumed-role session: usually an hour or more).
"""

from __future__ import annotations

import os
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from incident_responder.agent.errors import ModelConfigError
from incident_responder.agent.models import parse_spec

MODEL_PROFILE = "responder-model"  # the profile name in the lab's private credentials file


@dataclass
class ModelRoute:
    """What the lab adds for its agent functions: environment variables and template parameters."""

    environment: dict[str, str] = field(default_factory=dict)
    parameters: dict[str, str] = field(default_factory=dict)
    description: str = "offline (no endpoint)"
    # bedrock_converse: the user's frozen credentials (access key, secret, token), for a process that forwards the
    # functions' calls itself (responder eval: lab/converse/)
    credentials: tuple[str, str, str | None] | None = field(default=None, repr=False)
    _directory: tempfile.TemporaryDirectory | None = None

    def close(self) -> None:
        """Forget the credentials file (the lab stopping)."""
        if self._directory is not None:
            self._directory.cleanup()
            self._directory = None


def resolve_model_route(spec: str, environ: dict[str, str] | None = None) -> ModelRoute:
    """The route for ``spec`` from the user's environment (``os.environ`` before the lab changes it); a setup that
    cannot work (no credentials, no Region, no base URL) is a ModelConfigError saying what to set."""
    env = dict(os.environ if environ is None else environ)
    provider, model_id = parse_spec(spec)
    if provider == "bedrock_converse":
        return _bedrock(env)
    if provider == "openai":
        base_url = env.get("OPENAI_BASE_URL")
        if not base_url:
            raise ModelConfigError(
                f"{spec} in the lab needs OPENAI_BASE_URL (the OpenAI-compatible endpoint) and OPENAI_API_KEY"
            )
        route = ModelRoute(parameters={"ModelBaseUrl": base_url}, description=f"{base_url} (OPENAI_BASE_URL)")
        if key := env.get("OPENAI_API_KEY"):
            route.environment["OPENAI_API_KEY"] = key
        return route
    if provider == "ollama":
        host = env.get("OLLAMA_HOST", "http://127.0.0.1:11434")
        return ModelRoute(environment={"OLLAMA_HOST": host}, description=f"{host} (OLLAMA_HOST)")
    return ModelRoute()


def _bedrock(env: dict[str, str]) -> ModelRoute:
    import boto3
    import botocore.exceptions

    # The user's own session, as their shell would make it (the lab's endpoint and keys are not set yet).
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        session = boto3.Session()
        credentials = session.get_credentials()
        frozen = credentials.get_frozen_credentials() if credentials is not None else None
        # AWS_REGION first, as the AWS CLI reads it (botocore reads only AWS_DEFAULT_REGION and the profile).
        region = env.get("BEDROCK_REGION") or env.get("AWS_REGION") or session.region_name
    except botocore.exceptions.BotoCoreError as exc:  # an unknown profile, a broken config file, an SSO login due
        raise ModelConfigError(f"cannot read your AWS credentials for Bedrock: {exc}") from exc
    finally:
        os.environ.clear()
        os.environ.update(saved)
    if frozen is None or not frozen.access_key:
        raise ModelConfigError(
            "no AWS credentials for Bedrock: configure a profile (AWS_PROFILE) or access keys allowed "
            "bedrock:InvokeModel on the model; the lab itself needs none"
        )
    if not region:
        raise ModelConfigError("no Region for Bedrock: set BEDROCK_REGION or AWS_REGION")
    endpoint = env.get("AWS_ENDPOINT_URL_BEDROCK_RUNTIME") or f"https://bedrock-runtime.{region}.amazonaws.com"
    directory = tempfile.TemporaryDirectory(prefix="lab-model-")
    path = Path(directory.name) / "credentials"
    lines = [f"[{MODEL_PROFILE}]", f"aws_access_key_id = {frozen.access_key}"]
    lines.append(f"aws_secret_access_key = {frozen.secret_key}")
    if frozen.token:
        lines.append(f"aws_session_token = {frozen.token}")
    path.touch(mode=stat.S_IRUSR | stat.S_IWUSR)
    path.write_text("\n".join(lines) + "\n")
    return ModelRoute(
        environment={
            "BEDROCK_PROFILE": MODEL_PROFILE,
            "BEDROCK_REGION": region,
            "AWS_SHARED_CREDENTIALS_FILE": str(path),
            "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": endpoint,
        },
        description=f"{endpoint} in {region}, signed with your credentials",
        credentials=(frozen.access_key, frozen.secret_key, frozen.token),
        _directory=directory,
    )
