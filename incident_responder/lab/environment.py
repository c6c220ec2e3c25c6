"""SERVING the lab: its account and region, and the variables that point boto3 (in any process) at it.

Other processes (the MCP servers, the chaos CLI) reach it through boto3's own ``AWS_ENDPOINT_URL``
setting plus dummy credentials: :func:`lab_environment` gives exactly those variables.
"""

from __future__ import annotations

LAB_REGION = "us-east-1"
LAB_ACCOUNT_ID = "123456789012"
# Client settings a shell may hold for other accounts or servers: they would win over the lab's own (a
# profile, an MCP server list) or change how requests to the lab's function URLs are signed (a bearer
# key). Lab commands drop them in their own process; `responder lab up` tells other shells to unset them.
NOT_FOR_THE_LAB = (
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "MCP_API_KEY",
    "MCP_API_KEY_PARAMETER",
    "MCP_AUTH",
    "RESPONDER_MCP_CONFIG",
    "RESPONDER_MCP_SERVERS",
)


def lab_environment(endpoint_url: str) -> dict[str, str]:
    """Environment variables that point boto3 (in any process) at the lab."""
    return {
        "AWS_ENDPOINT_URL": endpoint_url,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": LAB_REGION,
        "AWS_REGION": LAB_REGION,
    }
