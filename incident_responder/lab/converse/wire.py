"""The model's side of the lab: Converse on the wire: a request's SigV4 signature checked, a request read as LangChain
messages, an answer written back as Converse content blocks."""

from __future__ import annotations

import json
import re
from typing import Any

SIGNATURE = re.compile(
    r"Credential=(?P<key>[^/]+)/(?P<scope>[^,]+), SignedHeaders=(?P<headers>[^,]+), Signature=(?P<sig>\w+)"
)


def check_signature(method: str, url: str, headers: dict[str, str], body: bytes, secrets: dict[str, str]) -> str:
    """The access key that signed this request, when its SigV4 signature is what that key's secret makes;
    ValueError saying why not otherwise."""
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    lowered = {k.lower(): v for k, v in headers.items()}
    found = SIGNATURE.search(lowered.get("authorization", ""))
    if found is None:
        raise ValueError("no SigV4 Authorization header")
    key = found.group("key")
    if key not in secrets:
        raise ValueError(f"signed with an unknown access key {key}")
    _, region, service, _ = found.group("scope").split("/")
    signed = found.group("headers").split(";")
    request = AWSRequest(method=method, url=url, data=body, headers={h: lowered[h] for h in signed if h in lowered})
    request.context["timestamp"] = lowered["x-amz-date"]
    signer = SigV4Auth(Credentials(key, secrets[key], lowered.get("x-amz-security-token")), service, region)
    canonical = signer.canonical_request(request)
    expected = signer.signature(signer.string_to_sign(request, canonical), request)
    if expected != found.group("sig"):
        raise ValueError("the SigV4 signature does not match the key's secret")
    return key


# -- Converse <-> LangChain ---------------------------------------------------------------------------
def to_langchain(request: dict[str, Any]) -> tuple[list[Any], list[dict[str, Any]]]:
    """A Converse request as LangChain messages and OpenAI-style tool definitions."""
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    messages: list[Any] = []
    system = "".join(block.get("text", "") for block in request.get("system", []))
    if system:
        messages.append(SystemMessage(system))
    names: dict[str, str] = {}
    for message in request.get("messages", []):
        texts = [b["text"] for b in message["content"] if "text" in b]
        if message["role"] == "assistant":
            calls = []
            for block in message["content"]:
                if "toolUse" in block:
                    use = block["toolUse"]
                    names[use["toolUseId"]] = use["name"]
                    calls.append({"name": use["name"], "args": use.get("input") or {}, "id": use["toolUseId"]})
            messages.append(AIMessage(content="".join(texts), tool_calls=calls))
            continue
        for block in message["content"]:
            if "toolResult" in block:
                result = block["toolResult"]
                parts = [c["text"] if "text" in c else json.dumps(c.get("json")) for c in result.get("content", [])]
                messages.append(
                    ToolMessage(
                        content="".join(parts),
                        tool_call_id=result["toolUseId"],
                        name=names.get(result["toolUseId"], ""),
                        status=result.get("status", "success"),
                    )
                )
        if texts:
            messages.append(HumanMessage("".join(texts)))
    tools = [
        {
            "type": "function",
            "function": {
                "name": t["toolSpec"]["name"],
                "description": t["toolSpec"].get("description", ""),
                "parameters": t["toolSpec"]["inputSchema"]["json"],
            },
        }
        for t in request.get("toolConfig", {}).get("tools", [])
        if "toolSpec" in t
    ]
    return messages, tools


def to_converse(message: Any) -> dict[str, Any]:
    """A LangChain AIMessage as a Converse response."""
    content: list[dict[str, Any]] = []
    if message.content:
        content.append({"text": message.content if isinstance(message.content, str) else json.dumps(message.content)})
    for call in message.tool_calls:
        content.append({"toolUse": {"toolUseId": call["id"], "name": call["name"], "input": call["args"]}})
    usage = message.usage_metadata or {}
    return {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": "tool_use" if message.tool_calls else "end_turn",
        "usage": {
            "inputTokens": usage.get("input_tokens", 0),
            "outputTokens": usage.get("output_tokens", 0),
            "totalTokens": usage.get("input_tokens", 0) + usage.get("output_tokens", 0),
        },
        "metrics": {"latencyMs": 1},
    }
