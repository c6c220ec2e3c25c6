"""Mechanical verification of a diagnosis's evidence pointers against this run's tool results.

A pointer is verified when its tool was called in this run, its field path resolves in that tool's
result, and its value is found there (equal, or for text an exact excerpt of at least 3 characters).
Paths use dots and brackets: ``differences[0].path``, ``events[*].message``, ``inline_policies.s3-access``.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, Field

from incident_responder.contracts import Diagnosis

_TOKEN = re.compile(r"\[(\*|-?\d+)\]|([^.\[\]]+)")
MIN_EXCERPT = 3


class PointerCheck(BaseModel):
    index: int
    verified: bool
    reason: str | None = None


class EvidenceReport(BaseModel):
    total: int
    verified: int
    grounded_ratio: float = Field(description="verified / total; 0.0 when there is no evidence")
    checks: list[PointerCheck]
    confidence_capped: bool = False


class _Missing:
    pass


MISSING = _Missing()


def _tokens(path: str) -> list[str | int]:
    out: list[str | int] = []
    for index, key in _TOKEN.findall(path.strip().lstrip(".")):
        out.append(key if key else ("*" if index == "*" else int(index)))
    return out


def resolve_path(data: Any, path: str) -> list[Any]:
    """Every value at ``path`` (several with ``[*]``); empty when the path does not resolve.

    >>> resolve_path({"events": [{"message": "a"}, {"message": "b"}]}, "events[*].message")
    ['a', 'b']
    """
    current = [data]
    for token in _tokens(path):
        following = []
        for value in current:
            if token == "*" and isinstance(value, list):
                following.extend(value)
            elif (
                isinstance(token, int)
                and isinstance(value, list)
                and -len(value) <= token < len(value)
                or isinstance(token, str)
                and isinstance(value, dict)
                and token in value
            ):
                following.append(value[token])
            elif isinstance(token, str) and isinstance(value, dict) and token.isdigit() and int(token) in value:
                following.append(value[int(token)])
        current = following
        if not current:
            return []
    return current


def value_matches(claimed: str, actual: Any) -> bool:
    claimed = claimed.strip()
    if isinstance(actual, str):
        return claimed == actual or (len(claimed) >= MIN_EXCERPT and claimed in actual)
    if actual is None:
        return claimed.lower() in ("null", "none")
    if isinstance(actual, bool):
        return claimed.lower() == str(actual).lower()
    if isinstance(actual, int | float):
        try:
            return float(claimed) == float(actual)
        except ValueError:
            return False
    if isinstance(actual, dict):
        return claimed in actual or claimed == json.dumps(actual, sort_keys=True)
    if isinstance(actual, list):
        return any(value_matches(claimed, item) for item in actual if not isinstance(item, dict | list)) or (
            claimed == json.dumps(actual)
        )
    return False


def check_pointer(tool: str, field: str, value: str, results: list[dict[str, Any]]) -> tuple[bool, str | None]:
    calls = [r["result"] for r in results if r["tool"] == tool]
    if not calls:
        return False, f"tool {tool!r} was not called in this investigation"
    resolved = [v for result in calls for v in resolve_path(result, field)]
    if not resolved:
        return False, f"field {field!r} does not resolve in any {tool} result"
    if not any(value_matches(value, v) for v in resolved):
        return False, f"value {value[:80]!r} is not at {field!r} in any {tool} result"
    return True, None


def verify_diagnosis(diagnosis: Diagnosis, results: list[dict[str, Any]]) -> tuple[Diagnosis, EvidenceReport]:
    """The diagnosis with ``verified`` set on every pointer (and confidence capped), plus the report.

    ``results`` are this run's successful tool calls: ``{"tool": name, "arguments": {...}, "result": {...}}``.
    """
    checks = []
    evidence = []
    for i, pointer in enumerate(diagnosis.evidence):
        ok, reason = check_pointer(pointer.tool, pointer.field, pointer.value, results)
        checks.append(PointerCheck(index=i, verified=ok, reason=reason))
        evidence.append(pointer.model_copy(update={"verified": ok}))
    verified = sum(c.verified for c in checks)
    # Confidence cannot exceed "low" when the diagnosis rests only on unverified evidence, or when any
    # remediation step does.
    rests_on_nothing = verified == 0
    step_unsupported = any(
        step.evidence_basis and not any(evidence[i].verified for i in step.evidence_basis)
        for step in diagnosis.remediation_plan
    )
    capped = (rests_on_nothing or step_unsupported) and diagnosis.confidence != "low"
    updated = diagnosis.model_copy(
        update={"evidence": evidence, "confidence": "low" if capped else diagnosis.confidence}
    )
    report = EvidenceReport(
        total=len(checks),
        verified=verified,
        grounded_ratio=round(verified / len(checks), 3) if checks else 0.0,
        checks=checks,
        confidence_capped=capped,
    )
    return updated, report
