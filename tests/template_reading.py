"""template.yaml as the posture tests read it: the SAM document, which MCP server each agent calls, who may invoke what, the model permissions."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from incident_responder.lab.template import load_template, resolve_conditions, translate

REPO = Path(__file__).parents[1]
SAM = load_template()
MCP_SERVER_OF = {
    "InvestigateFunction": "DiagnosticsMcpFunction",
    "ProposeFunction": "RemediationMcpFunction",
    "ReviewFunction": "RemediationMcpFunction",
}
PSEUDO = {
    "AWS::Partition": "aws",
    "AWS::Region": "us-east-1",
    "AWS::AccountId": "123456789012",
    "AWS::StackName": "incident-responder",
}


def model_statements(function: str, model: str) -> list[dict[str, Any]]:
    parameters = {**defaults(), "ResponderModel": model}
    template = resolve_conditions(translated(), parameters)
    role = ref_name(template["Resources"][function]["Properties"]["Role"])
    statements = [
        s for s in role_statements(role, template) if any(a.startswith("bedrock:") for a in as_list(s["Action"]))
    ]
    return render(statements, parameters)


def may_invoke(statements: list[dict[str, Any]], resource: str, through_profile: str | None = None) -> bool:
    """IAM's answer for bedrock:InvokeModel on ``resource`` (a call routed through ``through_profile``)."""
    from fnmatch import fnmatchcase

    for s in statements:
        if s["Effect"] != "Allow" or "bedrock:InvokeModel" not in as_list(s["Action"]):
            continue
        if not any(fnmatchcase(resource, r) for r in as_list(s["Resource"])):
            continue
        wanted = s.get("Condition", {}).get("ArnLike", {}).get("bedrock:InferenceProfileArn")
        if wanted is None or (through_profile is not None and fnmatchcase(through_profile, wanted)):
            return True
    return False


@cache
def translated() -> dict[str, Any]:
    return translate(SAM, REPO, "us-east-1")


def defaults() -> dict[str, str]:
    return {k: str(v.get("Default", "")) for k, v in translated()["Parameters"].items()}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def ref_name(value: Any) -> str | None:
    """The logical id a Ref / GetAtt points at."""
    if isinstance(value, dict):
        if "Ref" in value:
            return value["Ref"]
        if "Fn::GetAtt" in value:
            target = value["Fn::GetAtt"]
            return target[0] if isinstance(target, list) else target.split(".")[0]
    return None


def role_statements(role_id: str, template: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    props = (template or cfn())["Resources"][role_id]["Properties"]
    return [s for policy in props.get("Policies", []) for s in as_list(policy["PolicyDocument"]["Statement"])]


def render(node: Any, parameters: dict[str, str]) -> Any:
    """A policy's strings as CloudFormation renders them (Ref, Sub, Join, Split, Select)."""
    import re

    names = {**PSEUDO, **parameters}
    if isinstance(node, list):
        return [render(n, parameters) for n in node]
    if not isinstance(node, dict):
        return node
    if "Ref" in node:
        return names[node["Ref"]]
    if "Fn::Sub" in node:
        text, variables = node["Fn::Sub"] if isinstance(node["Fn::Sub"], list) else (node["Fn::Sub"], {})
        scope = {**names, **{k: render(v, parameters) for k, v in variables.items()}}
        return re.sub(r"\$\{([^}]+)\}", lambda m: scope[m.group(1)], text)
    if "Fn::Join" in node:
        delimiter, items = node["Fn::Join"]
        return delimiter.join(render(items, parameters))
    if "Fn::Split" in node:
        delimiter, text = node["Fn::Split"]
        return render(text, parameters).split(delimiter)
    if "Fn::Select" in node:
        index, items = node["Fn::Select"]
        return render(items, parameters)[int(index)]
    return {k: render(v, parameters) for k, v in node.items()}


@cache
def cfn() -> dict[str, Any]:
    """What a deployment with the default parameters creates."""
    return resolve_conditions(translated(), defaults())
