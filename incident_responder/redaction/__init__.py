"""Secrets redacted before the model sees tool output, and before anything is stored or shown.

redactor      the redactor: text and JSON values in, markers ([REDACTED:<kind>]) and counts out
patterns      the shapes it looks for (AWS keys, Authorization headers, JWTs, private keys, secret settings,
              URLs with a password, card numbers by Luhn) and a deployment's own (REDACTION_PATTERNS)
known_tokens  the shapes of services' tokens, generated from detect-secrets (scripts/secret_patterns.py)
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["MARKER", "RedactionConfigError", "Redactor", "default_redactor", "parse_patterns"]
# Loaded when first used, as core.exports.lazy_exports does for the other packages; written out here because core
# imports this package (its settings check a deployment's patterns), which sits below it.
_MODULE_OF = {"MARKER": "patterns"} | dict.fromkeys(
    ["RedactionConfigError", "Redactor", "default_redactor", "parse_patterns"], "redactor"
)


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
