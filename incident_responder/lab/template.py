"""DEPLOYING the lab: ``template.yaml`` as the lab reads it: parsed (short-form tags included), translated from
SAM offline, its conditions decided (``Fn::If``, ``Condition`` on resources, ``AWS::NoValue``: moto keeps a NoValue
list item as ``None`` and then fails on it) and its ``Rules`` checked."""

from __future__ import annotations

import copy
import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from incident_responder.lab.errors import StackRuleError

REPO_ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = REPO_ROOT / "template.yaml"
CODE_BUCKET = "lab-deployment-artifacts"
NO_VALUE = object()


class _CfnLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    """YAML with CloudFormation's short-form tags (!Ref, !GetAtt, !Sub ...) turned into long form.

    libyaml's safe loader when PyYAML has it: the pure-Python one takes ~0.3 s per template parse."""


def _intrinsic(loader: yaml.Loader, suffix: str, node: yaml.Node) -> dict[str, Any]:
    tag = node.tag[1:]
    name = tag if tag in ("Ref", "Condition") else f"Fn::{tag}"  # as CloudFormation reads them
    if isinstance(node, yaml.ScalarNode):
        value: Any = loader.construct_scalar(node)
        if tag == "GetAtt":
            value = value.split(".", 1)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)
    return {name: value}


_CfnLoader.add_multi_constructor("!", _intrinsic)


_PARSED: dict[Path, tuple[tuple[int, int], dict[str, Any]]] = {}


def load_template(path: Path = TEMPLATE) -> dict[str, Any]:
    """The template as a dict the caller may change: parsed once per file version, then copied (every lab
    deploy and every lab-only table reads it)."""
    path = Path(path).resolve()
    stat = path.stat()
    version = (stat.st_mtime_ns, stat.st_size)
    cached = _PARSED.get(path)
    if cached is None or cached[0] != version:
        cached = (version, yaml.load(path.read_text(), Loader=_CfnLoader))  # noqa: S506 - SafeLoader subclass
        _PARSED[path] = cached
    return copy.deepcopy(cached[1])


@dataclass(frozen=True)
class FunctionUrlSpec:
    """A function URL of the template (SAM names its resource ``<Function>Url``)."""

    url_id: str
    function_id: str
    auth_type: str
    handler: str


def function_urls(template_path: Path = TEMPLATE) -> list[FunctionUrlSpec]:
    """Every function URL the template declares: the lab serves each through the function's own handler."""
    found = []
    for logical_id, resource in load_template(template_path)["Resources"].items():
        props = resource.get("Properties", {})
        if resource.get("Type") == "AWS::Serverless::Function" and "FunctionUrlConfig" in props:
            found.append(
                FunctionUrlSpec(
                    f"{logical_id}Url", logical_id, props["FunctionUrlConfig"]["AuthType"], props["Handler"]
                )
            )
    return found


def translate(
    template: dict[str, Any], base: Path, region: str, parameters: dict[str, str] | None = None
) -> dict[str, Any]:
    """SAM -> CloudFormation, offline (no IAM lookups, no S3 uploads). ``parameters``: the values SAM itself
    resolves while translating (few: version hashes, alias names), as CloudFormation's transform receives them."""
    import boto3
    from samtranslator.metrics.metrics import Metrics as SamMetrics
    from samtranslator.parser.parser import Parser
    from samtranslator.translator.translator import Translator

    sam = copy.deepcopy(template)
    for logical_id, resource in sam.get("Resources", {}).items():
        props = resource.setdefault("Properties", {})
        kind = resource.get("Type")
        if kind == "AWS::Serverless::StateMachine" and isinstance(props.get("DefinitionUri"), str):
            props["Definition"] = json.loads((base / props.pop("DefinitionUri")).read_text())
        if kind == "AWS::Serverless::Function" and isinstance(props.get("CodeUri"), str):
            props["CodeUri"] = f"s3://{CODE_BUCKET}/{logical_id}.zip"
        if kind == "AWS::Serverless::LayerVersion" and isinstance(props.get("ContentUri"), str):
            props["ContentUri"] = f"s3://{CODE_BUCKET}/{logical_id}.zip"
    # SAM counts its own usage metrics; published here (to its no-op publisher), they are not warned about
    # ("There are unpublished metrics") when the translator is collected.
    usage = SamMetrics()
    translator = Translator(
        managed_policy_map=None,
        sam_parser=Parser(),
        boto_session=boto3.session.Session(region_name=region),
        metrics=usage,
    )
    try:
        return translator.translate(
            sam_template=sam, parameter_values=dict(parameters or {}), get_managed_policy_map=lambda: {}
        )
    finally:
        usage.publish()


def _value(parameters: dict[str, str], node: Any) -> Any:
    """A condition's operand: a parameter's value, or the string functions CloudFormation allows in conditions."""
    if isinstance(node, dict):
        if "Ref" in node:
            return parameters.get(node["Ref"], node["Ref"])
        if "Fn::Split" in node:
            delimiter, text = node["Fn::Split"]
            return str(_value(parameters, text)).split(delimiter)
        if "Fn::Select" in node:
            index, items = node["Fn::Select"]
            return _value(parameters, items)[int(index)]
        if "Fn::Join" in node:
            delimiter, items = node["Fn::Join"]
            return delimiter.join(str(_value(parameters, i)) for i in _value(parameters, items))
    return node


def resolve_conditions(template: dict[str, Any], parameters: dict[str, str]) -> dict[str, Any]:
    """The template with its conditions decided for ``parameters``: ``Fn::If`` replaced by the chosen
    branch, ``AWS::NoValue`` removed, resources whose condition is false left out. Its ``Rules`` are checked
    first, as CloudFormation does (:class:`StackRuleError`)."""

    # Pseudo parameters a condition may read (SnapStart's Regions), as the lab deploys unless told otherwise.
    parameters = {"AWS::Partition": "aws", "AWS::Region": "us-east-1", **parameters}
    value = functools.partial(_value, parameters)
    conditions: dict[str, bool] = {}

    def decide(node: Any) -> bool:
        if isinstance(node, dict):
            if "Condition" in node:
                return condition(node["Condition"])
            if "Fn::Equals" in node:
                a, b = node["Fn::Equals"]
                return str(value(a)) == str(value(b))
            if "Fn::Not" in node:
                return not decide(node["Fn::Not"][0])
            if "Fn::And" in node:
                return all(decide(n) for n in node["Fn::And"])
            if "Fn::Or" in node:
                return any(decide(n) for n in node["Fn::Or"])
            if "Fn::Contains" in node:  # (in Rules only)
                values, wanted = node["Fn::Contains"]
                return str(value(wanted)) in [str(value(v)) for v in values]
        raise ValueError(f"the lab cannot decide condition {node!r}")

    def condition(name: str) -> bool:
        if name not in conditions:
            conditions[name] = decide(template["Conditions"][name])
        return conditions[name]

    for name, rule in template.get("Rules", {}).items():
        # CloudFormation refuses to create a stack whose parameters break a rule's assertion, saying its description.
        if "RuleCondition" in rule and not decide(rule["RuleCondition"]):
            continue
        for assertion in rule.get("Assertions", []):
            if not decide(assertion["Assert"]):
                raise StackRuleError(f"template rule {name}: {assertion.get('AssertDescription', 'assertion failed')}")

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            if node == {"Ref": "AWS::NoValue"}:
                return NO_VALUE
            if "Fn::If" in node:
                name, when_true, when_false = node["Fn::If"]
                return walk(when_true if condition(name) else when_false)
            out = {k: walk(v) for k, v in node.items()}
            return {k: v for k, v in out.items() if v is not NO_VALUE}
        if isinstance(node, list):
            return [v for v in (walk(item) for item in node) if v is not NO_VALUE]
        return node

    out = copy.deepcopy(template)
    out["Resources"] = {
        k: walk({key: v for key, v in r.items() if key != "Condition"})
        for k, r in out["Resources"].items()
        if "Condition" not in r or condition(r["Condition"])
    }
    out["Outputs"] = {k: walk(v) for k, v in out.get("Outputs", {}).items()}
    out.pop("Conditions", None)
    out.pop("Rules", None)
    return out
