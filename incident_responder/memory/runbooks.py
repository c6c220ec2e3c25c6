"""Runbooks: a team's Markdown for a function or a catalogue entry, kept in the artifacts bucket with its digest.

``runbooks/function/<name>.md`` (a Lambda function name) and ``runbooks/mode/<id>.md`` (a catalogue entry's id),
each with object metadata ``sha256``: the hex digest of its bytes, checked on every read. A runbook whose bytes do
not match its digest (edited in S3 past this module) is refused, never shown. At most :data:`MAX_BYTES`, UTF-8,
no control character but newline and tab, no bidirectional override (text that reads one way and is another).

A runbook is operator text: it guides a person and reaches the model quoted as data. Nothing here can authorise a
change: the guardrails and the review policy decide, whatever a runbook says.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Literal

from botocore.exceptions import ClientError

from incident_responder.core.aws import AwsClients

PREFIX = "runbooks/"
MAX_BYTES = 16 * 1024
DIGEST_METADATA = "sha256"  # the object metadata key (x-amz-meta-sha256)
ScopeKind = Literal["function", "mode"]
_FUNCTION_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")  # Lambda's function name pattern
_DIGEST = re.compile(r"[0-9a-f]{64}")
# Control characters but tab and newline, and the bidirectional embeddings, overrides and isolates.
_FORBIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


class RunbookError(ValueError):
    """A runbook refused: what is wrong, in one line. ``exit_code`` for the command line (2: the input)."""

    exit_code = 2


class RunbookNotFoundError(RunbookError):
    exit_code = 1


class RunbookIntegrityError(RunbookError):
    """The stored bytes do not match their recorded digest (or are no longer a valid runbook)."""

    exit_code = 1


@dataclass(frozen=True, order=True)
class Scope:
    """What a runbook is attached to: a function, or a catalogue entry (``mode``)."""

    kind: ScopeKind
    name: str

    def __str__(self) -> str:
        return f"{self.kind}/{self.name}"

    @property
    def key(self) -> str:
        return f"{PREFIX}{self}.md"


def function_scope(name: str) -> Scope:
    if not isinstance(name, str) or not _FUNCTION_NAME.fullmatch(name):
        raise RunbookError(f"not a Lambda function name: {name!r} (expected 1-64 of A-Z a-z 0-9 _ -)")
    return Scope("function", name)


def mode_scope(mode_id: str) -> Scope:
    from incident_responder.catalogue import MODES_BY_ID  # the catalogue is data, read only when a mode is named

    if mode_id not in MODES_BY_ID:
        raise RunbookError(f"not a catalogue entry: {mode_id!r} (the ids are in docs/failure-catalogue.md)")
    return Scope("mode", mode_id)


def scope_of_key(key: str) -> Scope | None:
    """The scope a stored key names, or None for any other object under the prefix."""
    m = re.fullmatch(rf"{PREFIX}(function|mode)/([A-Za-z0-9_-]{{1,64}})\.md", key)
    return Scope(m.group(1), m.group(2)) if m else None  # type: ignore[arg-type]


@dataclass(frozen=True)
class Runbook:
    scope: Scope
    digest: str  # sha256 hex of the stored bytes
    text: str

    @property
    def citation(self) -> str:
        """How a hand-over step cites it: ``runbook:<scope>@<digest>``."""
        return f"runbook:{self.scope}@{self.digest}"


@dataclass(frozen=True)
class Listed:
    scope: Scope
    digest: str
    size: int
    last_modified: str


def check_text(data: bytes) -> str:
    """The runbook's text, or RunbookError saying why these bytes are not one."""
    if len(data) > MAX_BYTES:
        raise RunbookError(f"a runbook is at most {MAX_BYTES} bytes; this one has {len(data)}")
    if not data.strip():
        raise RunbookError("the runbook is empty")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RunbookError(f"a runbook is UTF-8 text; byte {exc.start} is not") from None
    bad = _FORBIDDEN.search(text)
    if bad:
        line = text.count("\n", 0, bad.start()) + 1
        raise RunbookError(
            f"line {line}: control or bidirectional character U+{ord(bad.group()):04X} "
            "(a runbook may hold newlines and tabs only; use LF line endings)"
        )
    return text


def digest_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def store(clients: AwsClients, bucket: str, scope: Scope, data: bytes) -> Runbook:
    """Check and store ``data`` as the scope's runbook (replacing any), with its digest."""
    text = check_text(data)
    digest = digest_of(data)
    clients.get("s3").put_object(
        Bucket=bucket,
        Key=scope.key,
        Body=data,
        ContentType="text/markdown; charset=utf-8",
        Metadata={DIGEST_METADATA: digest},
    )
    return Runbook(scope, digest, text)


def load(clients: AwsClients, bucket: str, scope: Scope) -> Runbook | None:
    """The scope's runbook, None without one; RunbookIntegrityError when its bytes do not match its digest."""
    try:
        got = clients.get("s3").get_object(Bucket=bucket, Key=scope.key)
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
            return None
        raise
    data = got["Body"].read(MAX_BYTES + 1)
    recorded = (got.get("Metadata") or {}).get(DIGEST_METADATA, "")
    if not _DIGEST.fullmatch(recorded) or digest_of(data) != recorded:
        raise RunbookIntegrityError(
            f"runbook {scope} does not match its recorded sha256 digest: refused (store it again with "
            "responder runbook set)"
        )
    try:
        text = check_text(data)
    except RunbookError as exc:
        raise RunbookIntegrityError(f"runbook {scope} is not a valid runbook: {exc}") from None
    return Runbook(scope, recorded, text)


def list_runbooks(clients: AwsClients, bucket: str) -> list[Listed]:
    """Every stored runbook, by scope (the digest as recorded; :func:`load` checks it)."""
    s3 = clients.get("s3")
    listed = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=PREFIX):
        for obj in page.get("Contents", []):
            scope = scope_of_key(obj["Key"])
            if scope is None:
                continue
            head = s3.head_object(Bucket=bucket, Key=obj["Key"])
            listed.append(
                Listed(
                    scope,
                    (head.get("Metadata") or {}).get(DIGEST_METADATA, ""),
                    int(obj.get("Size", 0)),
                    obj["LastModified"].isoformat(timespec="seconds"),
                )
            )
    return sorted(listed, key=lambda r: r.scope)


def remove(clients: AwsClients, bucket: str, scope: Scope) -> None:
    """Delete the scope's runbook; RunbookNotFoundError when there is none."""
    s3 = clients.get("s3")
    try:
        s3.head_object(Bucket=bucket, Key=scope.key)
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404", "NotFound"):
            raise RunbookNotFoundError(f"no runbook for {scope}") from None
        raise
    s3.delete_object(Bucket=bucket, Key=scope.key)


def for_incident(
    clients: AwsClients, bucket: str, function_name: str, failure_modes: list[str] | tuple[str, ...] = ()
) -> tuple[list[Runbook], list[tuple[Scope, str]]]:
    """The runbooks of the incident's own function and of the named catalogue entries (unknown ids are skipped),
    and those refused (scope, why). Never another function's."""
    scopes = [function_scope(function_name)]
    for mode in dict.fromkeys(failure_modes):
        try:
            scopes.append(mode_scope(mode))
        except RunbookError:
            continue
    found: list[Runbook] = []
    refused: list[tuple[Scope, str]] = []
    for scope in scopes:
        try:
            runbook = load(clients, bucket, scope)
        except RunbookIntegrityError as exc:
            refused.append((scope, str(exc)))
            continue
        if runbook is not None:
            found.append(runbook)
    return found, refused
