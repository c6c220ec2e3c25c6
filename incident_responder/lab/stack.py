"""Deploy the project's ``template.yaml`` into the lab: the same template users ``sam deploy``.

Steps: load the SAM template (short-form tags included), inline what ``sam build`` would resolve
(the ASL file, code locations), translate it offline with aws-sam-translator, and create the stack
in moto's CloudFormation. Then close moto's gaps, each stated here:

* resource types moto's CloudFormation lacks (function URLs, alarms, topic and bucket policies,
  schedules) are left out; references to them take lab values (a function URL becomes the address of
  the lab's stand-in, :mod:`incident_responder.lab.function_url`, which calls the same handler);
* conditions are resolved (template.py: ``Fn::If``, ``Condition`` on resources, ``AWS::NoValue``): moto keeps
  a NoValue list item as ``None`` and then fails on it;
* state machines created by CloudFormation land in moto's non-executing backend and keep their
  ``${...}`` placeholders: they are re-created through the API with DefinitionSubstitutions applied;
* SNS subscriptions are skipped by moto: they are created through the API;
* a number in a function's environment (a ``Ref`` to a Number parameter) is kept by moto as a number: each is set
  again as the string Lambda holds;
* function versions (``AutoPublishAlias``) are published by moto's CloudFormation, aliases are not: each alias is
  created through the API on its function's published version, and every function a state machine invokes (alias
  or version included) must exist, as in AWS. ``SnapStart`` is accepted and ignored: moto keeps no snapshots, and
  each invocation runs the registered handler, whatever version the qualifier names;
* Lambda functions run in-process: each is registered with the lab's dispatcher under its physical
  name, with the handler named in the template and the environment CloudFormation resolved.
"""

from __future__ import annotations

import copy
import importlib
import importlib.util
import io
import json
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from incident_responder.core.aws import AwsClients
from incident_responder.lab.engine import LambdaDispatcher, invoked_function, substitute
from incident_responder.lab.template import CODE_BUCKET, TEMPLATE, load_template, resolve_conditions, translate

LEFT_OUT = {
    "AWS::Lambda::Url",
    "AWS::CloudWatch::Alarm",
    "AWS::SNS::TopicPolicy",
    "AWS::SQS::QueuePolicy",
    "AWS::S3::BucketPolicy",
    "AWS::Scheduler::Schedule",
    # The member accounts' alarm bus: moto's CloudFormation passes the bus object, not its name, to a rule on it (and
    # has no bus policies). The lab's member alarms reach the incident topic directly, as the bus's rule sends them.
    "AWS::Events::EventBus",
    "AWS::Events::EventBusPolicy",
}


def _on_left_out_bus(resource: dict[str, Any], left_out: set[str]) -> bool:
    """A rule on a bus the lab left out goes with it."""
    bus = resource.get("Properties", {}).get("EventBusName")
    return resource["Type"] == "AWS::Events::Rule" and isinstance(bus, dict) and bus.get("Ref") in left_out


@dataclass
class DeployedStack:
    name: str
    template: dict[str, Any]
    parameters: dict[str, str]
    physical: dict[str, str]
    region: str
    account: str
    left_out: list[str] = field(default_factory=list)
    functions: dict[str, str] = field(default_factory=dict)  # logical id -> function name
    # An organisation lab's functions act as their roles: the credentials each was given (logical id -> variables).
    role_credentials: dict[str, dict[str, str]] = field(default_factory=dict)

    @property
    def role_keys(self) -> dict[str, str]:
        """Each function's access key -> its secret (what the lab's function URLs accept)."""
        return {c["AWS_ACCESS_KEY_ID"]: c["AWS_SECRET_ACCESS_KEY"] for c in self.role_credentials.values()}

    def resolve(self, value: Any) -> Any:
        """Evaluate the intrinsic functions the template uses, against this stack's resources."""
        if isinstance(value, list):
            return [self.resolve(v) for v in value]
        if not isinstance(value, dict):
            return value
        if "Ref" in value:
            return self._ref(value["Ref"])
        if "Fn::GetAtt" in value:
            logical, attribute = (
                value["Fn::GetAtt"] if isinstance(value["Fn::GetAtt"], list) else value["Fn::GetAtt"].split(".", 1)
            )
            return self._get_att(logical, attribute)
        if "Fn::Sub" in value:
            text, extra = (value["Fn::Sub"], {}) if isinstance(value["Fn::Sub"], str) else value["Fn::Sub"]

            def replace(match: re.Match[str]) -> str:
                token = match.group(1)
                if token in extra:
                    return str(self.resolve(extra[token]))
                if "." in token:
                    return str(self._get_att(*token.split(".", 1)))
                return str(self._ref(token))

            return re.sub(r"\$\{([^}!]+)\}", replace, text)
        if "Fn::Join" in value:
            separator, parts = value["Fn::Join"]
            return separator.join(str(self.resolve(p)) for p in parts)
        return {k: self.resolve(v) for k, v in value.items()}

    def _ref(self, name: str) -> str:
        pseudo = {
            "AWS::Region": self.region,
            "AWS::AccountId": self.account,
            "AWS::StackName": self.name,
            "AWS::Partition": "aws",
        }
        if name in pseudo:
            return pseudo[name]
        if name in self.parameters:
            return self.parameters[name]
        return self.physical[name]

    def _get_att(self, logical: str, attribute: str) -> str:
        kind = self.template["Resources"][logical]["Type"]
        physical = self.physical[logical]
        if kind == "AWS::Lambda::Function" and attribute == "Arn":
            return f"arn:aws:lambda:{self.region}:{self.account}:function:{physical}"
        if kind == "AWS::StepFunctions::StateMachine" and attribute == "Name":
            return physical.rsplit(":", 1)[-1]
        if kind == "AWS::SQS::Queue":
            name = physical.rsplit("/", 1)[-1]
            return {"QueueName": name, "Arn": f"arn:aws:sqs:{self.region}:{self.account}:{name}"}[attribute]
        if kind == "AWS::DynamoDB::Table" and attribute == "Arn":
            return f"arn:aws:dynamodb:{self.region}:{self.account}:table/{physical}"
        raise KeyError(f"the lab cannot resolve Fn::GetAtt {logical}.{attribute}")

    def output(self, name: str) -> str:
        return str(self.resolve(self.template["Outputs"][name]["Value"]))


def _without(template: dict[str, Any], left_out: set[str], overrides: dict[str, str]) -> dict[str, Any]:
    """The template minus resources moto cannot create; references to them replaced by lab values."""

    def rewrite(value: Any) -> Any:
        if isinstance(value, list):
            return [rewrite(v) for v in value]
        if isinstance(value, str):
            for token, replacement in overrides.items():
                value = value.replace("${" + token + "}", replacement)
            return value
        if isinstance(value, dict):
            if "Fn::GetAtt" in value:
                ref = value["Fn::GetAtt"]
                token = ".".join(ref) if isinstance(ref, list) else ref
                if token in overrides:
                    return overrides[token]
            if value.get("Ref") in left_out:
                return overrides.get(value["Ref"], "left-out-in-the-lab")
            return {k: rewrite(v) for k, v in value.items()}
        return value

    out = copy.deepcopy(template)
    out["Resources"] = {k: rewrite(v) for k, v in out["Resources"].items() if k not in left_out}
    out["Outputs"] = {k: rewrite(v) for k, v in out.get("Outputs", {}).items()}
    return out


def _placeholder_zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("README.txt", "The lab runs this function's handler in-process.")
    return buffer.getvalue()


def deploy_stack(
    clients: AwsClients,
    dispatcher: LambdaDispatcher,
    *,
    stack_name: str = "incident-responder",
    overrides: dict[str, str] | None = None,
    environment: dict[str, dict[str, str]] | None = None,
    parameters: dict[str, str] | None = None,
    template_path: Path = TEMPLATE,
    stable_table_names: bool = True,
    model_environment: dict[str, str] | None = None,
    as_their_roles: bool = False,
    role_credentials: dict[str, dict[str, str]] | None = None,
) -> DeployedStack:
    """Create the stack in the lab; register its functions with ``dispatcher``.

    ``overrides`` maps ``LogicalId.Attribute`` of left-out resources to lab values;
    ``environment`` adds per-function (logical id) environment variables for the lab;
    ``model_environment`` is added to the functions that call a model (their environment names RESPONDER_MODEL):
    where their model calls go (:mod:`incident_responder.lab.model_route`).
    ``as_their_roles``: each function acts as its execution role, as Lambda gives it its role's credentials (an
    organisation lab: :mod:`incident_responder.lab.organisation`), instead of the lab's administrator's;
    ``role_credentials``: those a redeploy keeps (the running function URL servers sign with them).
    """
    region, account = clients.region, clients.account_id()
    cfn = translate(load_template(template_path), template_path.parent, region, parameters)
    values = {name: str(spec.get("Default", "")) for name, spec in cfn.get("Parameters", {}).items()}
    values.update(parameters or {})
    cfn = resolve_conditions(cfn, values)
    left_out = {k for k, v in cfn["Resources"].items() if v["Type"] in LEFT_OUT}
    left_out |= {k for k, v in cfn["Resources"].items() if _on_left_out_bus(v, left_out)}
    cfn = _without(cfn, left_out, overrides or {})
    # Created through the API once the stack exists (_create_aliases): moto's CloudFormation has no aliases.
    aliases = {k for k, v in cfn["Resources"].items() if v["Type"] == "AWS::Lambda::Alias"}
    if stable_table_names:
        # Lab only (the template names nothing): the same table names after every redeploy, so processes
        # started once (the MCP servers) keep pointing at the right tables across fresh labs.
        for logical_id, resource in cfn["Resources"].items():
            if resource["Type"] == "AWS::DynamoDB::Table":
                resource["Properties"]["TableName"] = f"{stack_name}-{logical_id}"
    s3 = clients.get("s3")
    if region == "us-east-1":
        s3.create_bucket(Bucket=CODE_BUCKET)
    else:
        s3.create_bucket(Bucket=CODE_BUCKET, CreateBucketConfiguration={"LocationConstraint": region})
    for logical_id, resource in cfn["Resources"].items():
        if resource["Type"] in ("AWS::Lambda::Function", "AWS::Lambda::LayerVersion"):
            s3.put_object(Bucket=CODE_BUCKET, Key=f"{logical_id}.zip", Body=_placeholder_zip())
    cf = clients.get("cloudformation")
    cf.create_stack(
        StackName=stack_name,
        TemplateBody=json.dumps(_without(cfn, aliases, {})),
        Parameters=[{"ParameterKey": k, "ParameterValue": v} for k, v in (parameters or {}).items()],
        Capabilities=["CAPABILITY_IAM", "CAPABILITY_NAMED_IAM", "CAPABILITY_AUTO_EXPAND"],
    )
    status = cf.describe_stacks(StackName=stack_name)["Stacks"][0]
    if status["StackStatus"] != "CREATE_COMPLETE":
        raise RuntimeError(f"lab stack {stack_name}: {status['StackStatus']} {status.get('StackStatusReason', '')}")
    physical = {
        r["LogicalResourceId"]: r.get("PhysicalResourceId", "")
        for r in cf.describe_stack_resources(StackName=stack_name)["StackResources"]
        if "LogicalResourceId" in r  # moto lists skipped resources without ids
    }
    stack = DeployedStack(stack_name, cfn, values, physical, region, account, sorted(left_out))
    _create_aliases(clients, stack)
    _environment_as_strings(clients, stack)
    _recreate_state_machines(clients, stack)
    _subscribe(clients, stack)
    environment = dict(environment or {})
    for logical_id, resource in stack.template["Resources"].items():
        variables = resource.get("Properties", {}).get("Environment", {}).get("Variables", {})
        if model_environment and "RESPONDER_MODEL" in variables:
            environment[logical_id] = {**model_environment, **environment.get(logical_id, {})}
    if as_their_roles:
        from incident_responder.lab.organisation import function_credentials

        lam = clients.get("lambda")
        for logical_id, resource in stack.template["Resources"].items():
            if resource["Type"] == "AWS::Lambda::Function":
                role = lam.get_function_configuration(FunctionName=stack.physical[logical_id])["Role"]
                given = (role_credentials or {}).get(logical_id)
                stack.role_credentials[logical_id] = function_credentials(role, given)
                environment[logical_id] = {**environment.get(logical_id, {}), **stack.role_credentials[logical_id]}
    _register_functions(clients, stack, dispatcher, environment)
    return stack


def _environment_as_strings(clients: AwsClients, stack: DeployedStack) -> None:
    """Each function's environment as Lambda holds it, strings only: moto's CloudFormation keeps a number (a
    ``Ref`` to a Number parameter) as a number, a shape GetFunctionConfiguration never returns."""
    lam = clients.get("lambda")
    for logical_id, resource in stack.template["Resources"].items():
        if resource["Type"] != "AWS::Lambda::Function":
            continue
        name = stack.physical[logical_id]
        variables = lam.get_function_configuration(FunctionName=name).get("Environment", {}).get("Variables", {})
        if all(isinstance(value, str) for value in variables.values()):
            continue
        as_strings = {
            k: v if isinstance(v, str) else json.dumps(v) if isinstance(v, bool) else str(v)
            for k, v in variables.items()
        }
        lam.update_function_configuration(FunctionName=name, Environment={"Variables": as_strings})


def _create_aliases(clients: AwsClients, stack: DeployedStack) -> None:
    """moto's CloudFormation publishes the versions (``AWS::Lambda::Version``, one per aliased function) but has no
    ``AWS::Lambda::Alias``: each alias is created here, on the version the stack published for its function."""
    lam = clients.get("lambda")
    for logical_id, resource in stack.template["Resources"].items():
        if resource["Type"] != "AWS::Lambda::Alias":
            continue
        props = resource["Properties"]
        function = stack.resolve(props["FunctionName"])
        versions = lam.list_versions_by_function(FunctionName=function)["Versions"]
        published = [int(v["Version"]) for v in versions if v["Version"] != "$LATEST"]
        if not published:
            raise RuntimeError(f"lab stack {stack.name}: no version of {function} was published for {logical_id}")
        alias = lam.create_alias(FunctionName=function, Name=props["Name"], FunctionVersion=str(max(published)))
        stack.physical[logical_id] = alias["AliasArn"]


def _check_lambda_targets(clients: AwsClients, definition: str, logical_id: str) -> None:
    """Every function the definition invokes exists, and so does the alias or version it names (AWS would fail the
    task with ResourceNotFoundException; the lab's dispatcher runs a function's handler whatever the qualifier)."""
    lam = clients.get("lambda")
    for target in sorted(set(re.findall(r'"FunctionName"\s*:\s*"([^"$]+)"', definition))):
        name, qualifier = invoked_function(target)
        try:
            lam.get_function(FunctionName=name, **({"Qualifier": qualifier} if qualifier else {}))
        except lam.exceptions.ResourceNotFoundException:
            raise RuntimeError(f"lab stack: {logical_id} invokes {target}, which does not exist") from None


def _recreate_state_machines(clients: AwsClients, stack: DeployedStack) -> None:
    sfn = clients.get("stepfunctions")
    for logical_id, resource in stack.template["Resources"].items():
        if resource["Type"] != "AWS::StepFunctions::StateMachine":
            continue
        props = resource["Properties"]
        definition = stack.resolve(props["DefinitionString"])
        substitutions = {k: stack.resolve(v) for k, v in props.get("DefinitionSubstitutions", {}).items()}
        name = stack.physical[logical_id].rsplit(":", 1)[-1]
        definition = substitute(definition, substitutions)
        _check_lambda_targets(clients, definition, logical_id)
        arn = sfn.create_state_machine(
            name=name,
            definition=definition,
            roleArn=f"arn:aws:iam::{stack.account}:role/{stack.physical.get(props['RoleArn']['Fn::GetAtt'][0], 'lab')}",
            type=props.get("StateMachineType", "STANDARD"),
        )["stateMachineArn"]
        stack.physical[logical_id] = arn


def _subscribe(clients: AwsClients, stack: DeployedStack) -> None:
    sns = clients.get("sns")
    for resource in stack.template["Resources"].values():
        if resource["Type"] == "AWS::SNS::Subscription":
            props = stack.resolve(resource["Properties"])
            sns.subscribe(TopicArn=props["TopicArn"], Protocol=props["Protocol"], Endpoint=props["Endpoint"])


def _reserved_concurrency(stack: DeployedStack, resource: dict[str, Any]) -> int | None:
    reserved = stack.resolve(resource["Properties"].get("ReservedConcurrentExecutions"))
    return int(reserved) if str(reserved or "").isdigit() else None


def _handler(path: str, *, imported: bool) -> Any:
    """The callable ``module.attribute`` names. Functions that run in worker processes import it there: here the
    module is only found (a wrong name still fails the deploy), and imported if the handler is ever called."""
    module_name, _, attribute = path.rpartition(".")
    if imported:
        return getattr(importlib.import_module(module_name), attribute)
    if importlib.util.find_spec(module_name) is None:
        raise ModuleNotFoundError(f"no module named {module_name!r} (handler {path})")

    def imported_on_call(*args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module(module_name), attribute)(*args, **kwargs)

    return imported_on_call


def _register_functions(
    clients: AwsClients, stack: DeployedStack, dispatcher: LambdaDispatcher, environment: dict[str, dict[str, str]]
) -> None:
    lam = clients.get("lambda")
    for logical_id, resource in stack.template["Resources"].items():
        if resource["Type"] != "AWS::Lambda::Function":
            continue
        name = stack.physical[logical_id]
        config = lam.get_function_configuration(FunctionName=name)
        handler = _handler(resource["Properties"]["Handler"], imported=not dispatcher.workers)
        variables = {**config.get("Environment", {}).get("Variables", {}), **environment.get(logical_id, {})}
        env = {k: str(v) for k, v in variables.items()}
        dead_letter = stack.resolve(resource["Properties"].get("DeadLetterConfig", {})).get("TargetArn")
        dispatcher.register(
            name,
            handler,
            env,
            timeout_seconds=config["Timeout"],
            memory_mb=config["MemorySize"],
            dead_letter_arn=dead_letter,
            handler_path=resource["Properties"]["Handler"],
            max_workers=_reserved_concurrency(stack, resource),
        )
        stack.functions[logical_id] = name
