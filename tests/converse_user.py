"""A user with their own AWS credentials, Region and Bedrock endpoint (a local server speaking Converse)."""

from __future__ import annotations

import pytest

USER_KEY, USER_SECRET, USER_REGION = "AKIAUSERKEY00000001", "the-users-own-secret", "eu-west-3"


def user_environment(monkeypatch: pytest.MonkeyPatch, endpoint: str) -> None:
    """The shell of a user with their own AWS credentials and Region, and a Bedrock endpoint of their own."""
    for key in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SESSION_TOKEN", "BEDROCK_REGION", "BEDROCK_PROFILE"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", USER_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", USER_SECRET)
    monkeypatch.setenv("AWS_REGION", USER_REGION)
    monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", endpoint)
