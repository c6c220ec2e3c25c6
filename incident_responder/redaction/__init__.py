"""Secrets redacted before the model sees tool output, and before anything is stored or shown.

redactor      the redactor: text and JSON values in, markers ([REDACTED:<kind>]) and counts out
patterns      the shapes it looks for (AWS keys, Authorization headers, JWTs, private keys, secret settings,
              URLs with a password, card numbers by Luhn) and a deployment's own (REDACTION_PATTERNS)
known_tokens  the shapes of services' tokens, generated from detect-secrets (scripts/secret_patterns.py)
"""

from incident_responder.core.exports import lazy_exports

__all__ = ["MARKER", "RedactionConfigError", "Redactor", "default_redactor", "parse_patterns"]
__getattr__ = lazy_exports(
    __name__,
    {
        "patterns": ["MARKER"],
        "redactor": ["RedactionConfigError", "Redactor", "default_redactor", "parse_patterns"],
    },
)
