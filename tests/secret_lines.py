"""Log lines holding each secret shape the redactor knows (the values are documentation examples, not secrets):
kind -> (the secret, a line that holds it). The unit tests, the MCP server's test and the scenario
scenarios/secrets-in-logs.yaml use the same lines."""

from __future__ import annotations

SECRET_LINES: dict[str, tuple[str, str]] = {
    "aws-access-key-id": (
        "AKIAIOSFODNN7EXAMPLE",
        "loaded credentials aws_access_key_id=AKIAIOSFODNN7EXAMPLE from the environment",
    ),
    "aws-secret-key": (
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "boto config: aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    ),
    "authorization": (
        "dXNlcjpodW50ZXIyLXNlY3JldA==",
        "outgoing request headers: {'Authorization': 'Basic dXNlcjpodW50ZXIyLXNlY3JldA==', 'Accept': '*/*'}",
    ),
    "bearer-token": (
        "ya29.a0AfH6SMBx7Qk2exampletoken",
        "upstream said 401; retrying with Bearer ya29.a0AfH6SMBx7Qk2exampletoken",
    ),
    "jwt": (
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJvcmRlcnMiLCJyb2xlIjoiYWRtaW4ifQ.c2lnbmF0dXJlLW9mLXRoZS10b2tlbg",
        "session cookie=eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJvcmRlcnMiLCJyb2xlIjoiYWRtaW4ifQ"
        ".c2lnbmF0dXJlLW9mLXRoZS10b2tlbg expired",
    ),
    "private-key": (
        "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun",
        "signing with -----BEGIN RSA PRIVATE KEY-----\\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun"
        "\\n-----END RSA PRIVATE KEY-----",
    ),
    "secret-value": (
        "hunter2-Pr0d!",
        "db connect failed: host=orders-db user=app password=hunter2-Pr0d! sslmode=require",
    ),
    "url-password": (
        "s3cr3t-url-pw",
        "DATABASE_URL=postgres://app:s3cr3t-url-pw@orders-db.internal:5432/orders unreachable",
    ),
    "card-number": ("4111 1111 1111 1111", "charge declined for card 4111 1111 1111 1111 amount 12.50"),
    "github-token": (
        "ghp_0123456789abcdefghijklmnopqrstuvwxyz",
        "cloning with token ghp_0123456789abcdefghijklmnopqrstuvwxyz",
    ),
}
