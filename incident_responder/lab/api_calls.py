"""SERVING the lab: which API operation a request is, and who signed it, as the lab's middleware reads it."""

from __future__ import annotations

import re
import statistics
from collections import Counter
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

from incident_responder.lab.environment import LAB_REGION
from incident_responder.lab.tokens import percentile


@dataclass(frozen=True)
class _Route:
    """One REST operation as botocore's model routes it: method, path, and the query keys and headers it requires."""

    name: str
    method: str
    path: re.Pattern[str]
    query: tuple[tuple[str, str], ...]  # (key, value); an empty value: the key alone must be there
    headers: tuple[str, ...]  # WSGI environ names (HTTP_X_AMZ_COPY_SOURCE)

    @classmethod
    def of(cls, operation: Any) -> _Route:
        http = operation.http
        uri, _, literal = http.get("requestUri", "/").partition("?")
        parts = re.split(r"(\{[^}]+\})", uri)
        # Each {Label} as a named group: the recorder reads the resource a call names from it (FunctionName, UUID).
        pattern = "".join(
            f"(?P<{re.sub(r'[^A-Za-z0-9_]', '_', part[1:-1].rstrip('+'))}>{'.+' if part.endswith('+}') else '[^/]+'})"
            if part.startswith("{")
            else re.escape(part)
            for part in parts
        )
        query = [(k, v) for k, v in parse_qsl(literal, keep_blank_values=True) if k != "x-id"]
        headers = []
        shape = operation.input_shape
        for member in shape.required_members if shape is not None else ():
            location = shape.members[member].serialization.get("location")
            name = shape.members[member].serialization.get("name", member)
            if location == "querystring":
                query.append((name, ""))
            elif location == "header":
                headers.append("HTTP_" + name.upper().replace("-", "_"))
        return cls(
            name=operation.name,
            method=http.get("method", "POST"),
            path=re.compile(pattern.rstrip("/") + "/?"),
            query=tuple(query),
            headers=tuple(headers),
        )

    def matches(self, query: dict[str, list[str]], environ: dict[str, Any]) -> bool:
        return all(k in query and (not v or v in query[k]) for k, v in self.query) and all(
            h in environ for h in self.headers
        )


# Credential=AKID/20261123/us-east-1/lambda/aws4_request: the access key id, region and signing name.
_CREDENTIAL_SCOPE = re.compile(r"Credential=([^/,]+)/\d{8}/([^/,]+)/([^/,]+)/aws4_request")
# CloudWatch's RPCv2 CBOR protocol names the operation in the path.
_RPC_V2_PATH = re.compile(r"^/service/[^/]+/operation/([A-Za-z0-9]+)$")


@dataclass
class _Call:
    """One request as the lab reads it: who signed it, for which service and region, and which operation it is."""

    service: str
    operation: str | None
    region: str = LAB_REGION
    access_key_id: str = ""
    kind: str = "rest"  # target (JSON with X-Amz-Target), query (form), rest, cbor
    form: dict[str, str] | None = None  # the query protocol's parameters
    path_params: dict[str, str] | None = None  # a REST route's labels


def aws_call_summary(scores: list[Any]) -> dict[str, Any]:
    """The responder's AWS calls per incident over scored scenarios (``aws_calls``, ``aws_calls_by_api``): median,
    p95, max, the REMEDIATED incidents' median, the APIs called most and the calls of each function, per incident."""
    counted = [s for s in scores if s.aws_calls is not None and s.status != "NO_ALERT"]
    calls = sorted(s.aws_calls or 0 for s in counted)
    remediated = [s.aws_calls or 0 for s in counted if s.status == "REMEDIATED"]
    by_api: Counter[str] = Counter()
    by_function: Counter[str] = Counter()
    for s in counted:
        by_api.update(s.aws_calls_by_api)
        by_function.update(s.aws_calls_by_function)
    return {
        "incidents": len(calls),
        "median": statistics.median(calls) if calls else 0,
        "p95": percentile(calls, 0.95) or 0,
        "max": calls[-1] if calls else 0,
        "remediated_median": statistics.median(remediated) if remediated else 0,
        "by_api_per_incident": {api: round(n / len(calls), 1) for api, n in by_api.most_common(15)} if calls else {},
        "by_function_per_incident": {f: round(n / len(calls), 1) for f, n in by_function.most_common()}
        if calls
        else {},
    }
