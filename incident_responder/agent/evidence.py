"""Mechanical verification of evidence pointers (a diagnosis's, a review's) against this run's tool results.

A pointer is verified when its tool was called in this run, its field path resolves in that tool's
result, and its value is found there (equal, or for text an exact excerpt of at least 3 characters).
Paths use dots and brackets: ``differences[0].path``, ``events[*].message``, ``inline_policies.s3-access``.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, Field

from incident_responder.core.contracts import FAULTS, Diagnosis, EvidencePointer, ReviewSubmission

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
            elif isinstance(token, int):
                if isinstance(value, list) and -len(value) <= token < len(value):
                    following.append(value[token])
            elif isinstance(value, dict):
                if token in value:
                    following.append(value[token])
                elif token.isdigit() and int(token) in value:
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


def verify_pointers(
    pointers: list[EvidencePointer], results: list[dict[str, Any]]
) -> tuple[list[EvidencePointer], list[PointerCheck]]:
    """Each pointer with ``verified`` set (whatever the model claimed), and the check behind it."""
    checked, checks = [], []
    for i, pointer in enumerate(pointers):
        ok, reason = check_pointer(pointer.tool, pointer.field, pointer.value, results)
        checks.append(PointerCheck(index=i, verified=ok, reason=reason))
        checked.append(pointer.model_copy(update={"verified": ok}))
    return checked, checks


def evidence_report(checks: list[PointerCheck], *, confidence_capped: bool = False) -> EvidenceReport:
    verified = sum(c.verified for c in checks)
    return EvidenceReport(
        total=len(checks),
        verified=verified,
        grounded_ratio=round(verified / len(checks), 3) if checks else 0.0,
        checks=checks,
        confidence_capped=confidence_capped,
    )


def verify_diagnosis(diagnosis: Diagnosis, results: list[dict[str, Any]]) -> tuple[Diagnosis, EvidenceReport]:
    """The diagnosis with ``verified`` set on every pointer (and confidence capped), plus the report.

    ``results`` are this run's successful tool calls: ``{"tool": name, "arguments": {...}, "result": {...}}``.
    """
    evidence, checks = verify_pointers(diagnosis.evidence, results)
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
    return updated, evidence_report(checks, confidence_capped=capped)


def verify_review(
    submission: ReviewSubmission, results: list[dict[str, Any]]
) -> tuple[ReviewSubmission, EvidenceReport]:
    """The critic's verdicts with every evidence pointer verified against this review's tool results.

    ``policy`` is cleared: only the approval policy writes it. The report numbers the pointers across
    all verdicts, in order.
    """
    verdicts = []
    checks: list[PointerCheck] = []
    for verdict in submission.verdicts:
        evidence, own = verify_pointers(verdict.evidence, results)
        checks += [check.model_copy(update={"index": len(checks) + n}) for n, check in enumerate(own)]
        verdicts.append(verdict.model_copy(update={"evidence": evidence, "policy": []}))
    return submission.model_copy(update={"verdicts": verdicts}), evidence_report(checks)


# -- which fault a diagnosis grounds ---------------------------------------------------------------
# A pointer speaks to a fault when its tool, field or value names what the fault is about (the values
# of verified pointers are real tool output), or when a remediation step about the fault rests on it.
# What a verified pointer must show to support each fault an action fixes (the fault's record in the contract).
FAULT_SIGNS = {str(r.fault_type): re.compile(r.signs, re.I) for r in FAULTS if r.signs is not None}


def verified_evidence_by_fault(diagnosis: dict[str, Any]) -> dict[str, list[int]]:
    """For each diagnosed fault, the indices of the diagnosis's verified pointers that support it.

    A fault with no such pointer is diagnosed without grounding: nothing may be changed for it.
    Faults no action remedies (application_error, unknown) get every verified pointer.
    """
    evidence = diagnosis.get("evidence") or []
    verified = [i for i, p in enumerate(evidence) if isinstance(p, dict) and p.get("verified") is True]
    by_fault: dict[str, list[int]] = {}
    for fault in diagnosis.get("fault_types") or []:
        signs = FAULT_SIGNS.get(fault)
        if signs is None:
            by_fault[fault] = verified
            continue
        support = {
            i
            for i in verified
            if signs.search(f"{evidence[i].get('tool')} {evidence[i].get('field')} {evidence[i].get('value')}")
        }
        for step in diagnosis.get("remediation_plan") or []:
            if signs.search(f"{step.get('action', '')} {step.get('details', '')}"):
                support.update(i for i in step.get("evidence_basis") or [] if i in verified)
        by_fault[fault] = sorted(support)
    return by_fault
