"""The secret shapes the redactor looks for, in the order it applies them.

Each is (kind, regex, what to redact, check): ``what`` names the group that holds the secret (0: the whole match),
so a key's name, a header's scheme or a URL's user stay readable around the marker; ``check`` confirms a match the
regex alone would over-report (a card number by Luhn, a bare 40-character string by its character classes).

The shapes services give their tokens (GitHub, Slack, Stripe, ...) come from detect-secrets
(:mod:`incident_responder.redaction.known_tokens`, generated); the ones here take a secret whole where that
library only finds where one starts (a private key's header line, a JWT's first part, a URL's user name).
An order matters: a marker already written is never matched again (``(?!\\[REDACTED:)``, and no marker has the
characters a secret needs), so each secret is counted once, under the first kind that took it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from incident_responder.redaction.known_tokens import AWS_ACCESS_KEY_ID, KNOWN_TOKENS

MARKER = "[REDACTED:{kind}]"
MARKER_RE = re.compile(r"\[REDACTED:([a-z0-9][a-z0-9-]{0,40})\]")
NOT_A_MARKER = r"(?!\[REDACTED:)"


@dataclass(frozen=True)
class Shape:
    kind: str
    regex: re.Pattern[str]
    group: int | str = 0  # the group holding the secret (0: the whole match)
    check: Callable[[str], bool] | None = None


def luhn(digits: str) -> bool:
    """The Luhn checksum every payment card number passes (ISO/IEC 7812)."""
    total = 0
    for position, char in enumerate(reversed(digits)):
        value = int(char)
        if position % 2:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


# Issuer prefixes and lengths (Visa, Mastercard, American Express, Discover, JCB, Diners, UnionPay): a 13 to 19
# digit number that passes Luhn but starts otherwise (an epoch in milliseconds starts 17...) is no card.
_CARD_BRANDS = re.compile(
    r"4\d{12}(?:\d{3}){0,2}|5[1-5]\d{14}|2(?:2[2-9]|[3-6]\d|7[01])\d{13}|2720\d{12}|3[47]\d{13}"
    r"|6(?:011|5\d\d)\d{12}(?:\d{3})?|35(?:2[89]|[3-8]\d)\d{12}|3(?:0[0-5]|[68]\d)\d{11}|62\d{14,17}"
)


def card_number(match: str) -> bool:
    digits = re.sub(r"[ -]", "", match)
    return bool(_CARD_BRANDS.fullmatch(digits)) and luhn(digits)


def mixed_base64(match: str) -> bool:
    """A bare 40-character string is an AWS secret key only with upper case, lower case and a digit in it (a
    SHA-1 in hex, a name or a path segment of that length has not all three)."""
    return any(c.isupper() for c in match) and any(c.islower() for c in match) and any(c.isdigit() for c in match)


# The name of a setting that holds a secret, as code and configuration name them (DB_PASSWORD, apiKey,
# client-secret, x-amz-security-token): never inside an ARN or a path (":secret:", "/db-password").
_SECRET_NAME = (
    r"(?<![A-Za-z0-9_:/.\-])"
    r"(?P<name>[A-Za-z0-9_.\-]*?(?:password|passwd|pwd|passphrase|secret|token|api[_\-]?key|access[_\-]?key"
    r"|private[_\-]?key|credentials?)[A-Za-z0-9_.\-]*)"
)

SHAPES: tuple[Shape, ...] = (
    Shape(
        "private-key",
        re.compile(
            r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
            re.S,
        ),
    ),
    Shape("jwt", re.compile(r"(?<![A-Za-z0-9_\-])eyJ[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]*")),
    Shape(
        "authorization",
        re.compile(
            # Atomic groups (no backtracking into them): a second pass over a marked header changes nothing.
            r"(?i)\b(?:proxy-)?authorization(?>[\"']?\s*[:=]\s*[\"']?)"
            r"(?>(?:(?:bearer|basic|digest|negotiate|token|aws4-hmac-sha256)\s+)?)"
            + NOT_A_MARKER
            + r"(?P<secret>[^\s\"'][^\"'\r\n]*)"
        ),
        "secret",
    ),
    Shape(
        "bearer-token",
        re.compile(r"(?i)\bbearer\s+" + NOT_A_MARKER + r"(?P<secret>[A-Za-z0-9\-._~+/]{8,}=*)"),
        "secret",
    ),
    Shape(
        "url-password",
        re.compile(r"\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/?#@'\"]+:" + NOT_A_MARKER + r"(?P<secret>[^\s/?#@'\"]+)@"),
        "secret",
    ),
    Shape("aws-access-key-id", re.compile(rf"(?<![A-Z0-9]){AWS_ACCESS_KEY_ID}(?![A-Z0-9])")),
    Shape(
        "aws-secret-key",
        re.compile(
            r"(?i)(?:aws.{0,20}?(?:secret|key|pwd|pw|password|pass|token)|secret_?access_?key).{0,20}?[=:]\s*[\"']?"
            r"(?P<secret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"
        ),
        "secret",
    ),
    Shape("aws-secret-key", re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])"), check=mixed_base64),
    *(
        Shape(kind, re.compile(rf"(?<![A-Za-z0-9_:./\-])(?:{pattern})(?![A-Za-z0-9_])", flags))
        for kind, pattern, flags in KNOWN_TOKENS
    ),
    Shape(
        "secret-value",
        # name=value, name: value, "name": "value", name:"value"; never name:value (an IAM action such as
        # secretsmanager:GetSecretValue, an ARN's service and resource).
        re.compile(
            rf"(?i){_SECRET_NAME}(?:[\"']\s*:\s*[\"']?|\s*=\s*[\"']?|\s*:\s+[\"']?|:[\"'])"
            + NOT_A_MARKER
            + r"(?P<secret>[^\s\"',;&}\]]+)"
        ),
        "secret",
    ),
    Shape("card-number", re.compile(r"(?<![\d\-])\d(?:[ \-]?\d){12,18}(?![\d\-])"), check=card_number),
)


def custom_shape(kind: str, pattern: str) -> Shape:
    """A deployment's own shape (REDACTION_PATTERNS): its first group is the secret when it has one."""
    if not re.fullmatch(r"[a-z0-9][a-z0-9-]{0,40}", kind):
        raise ValueError(f"redaction kind {kind!r}: lower-case letters, digits and '-' (at most 41)")
    try:
        regex = re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"redaction pattern {kind!r} is not a regular expression: {exc}") from None
    if regex.match(""):
        raise ValueError(f"redaction pattern {kind!r} matches the empty string: it would mark every position")
    return Shape(kind, regex, 1 if regex.groups else 0)
