"""Lambda SnapStart, as deployed: the functions the state machine invokes run published versions through a ``live``
alias, with SnapStart on unless the ``SnapStart`` parameter says Disabled; a parameter change publishes a new
version; nothing SnapStart cannot run with is configured; and the runtime hooks refresh, after a restore, what
one snapshot would otherwise share between execution environments. Read on template.yaml as SAM translates it.
"""

from __future__ import annotations

import random
import re
import subprocess
import sys
import textwrap
import types
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from incident_responder.lab.engine import invoked_function
from incident_responder.lab.template import load_template, resolve_conditions, translate

REPO = Path(__file__).parents[2]
SAM = load_template()
ASL_TEXT = (REPO / "statemachine" / "incident_lifecycle.asl.json").read_text()
PYTHON_RUNTIMES_WITH_SNAPSTART = re.compile(r"^python3\.(1[2-9]|[2-9]\d)$")  # Python 3.12 and later


@cache
def translated(**parameters: str) -> dict[str, Any]:
    return translate(SAM, REPO, "us-east-1", parameters)


def deployed(**parameters: str) -> dict[str, Any]:
    """What a deployment with these parameters (defaults for the rest) creates."""
    template = translated(**parameters)
    values = {k: str(v.get("Default", "")) for k, v in template["Parameters"].items()}
    return resolve_conditions(template, {**values, **parameters})


def of_type(template: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == kind}


def state_machine(template: dict[str, Any]) -> dict[str, Any]:
    (machine,) = of_type(template, "AWS::StepFunctions::StateMachine").values()
    return machine["Properties"]


def invoked_functions() -> dict[str, str]:
    """Placeholder -> function logical id, for every function the ASL invokes (read from the SAM template)."""
    substitutions = SAM["Resources"]["IncidentStateMachine"]["Properties"]["DefinitionSubstitutions"]
    found = {}
    for placeholder in sorted(set(re.findall(r'"FunctionName": "\$\{(\w+)\}"', ASL_TEXT))):
        ref = substitutions[placeholder]
        target = ref.get("Ref") or ref.get("Fn::GetAtt")
        found[placeholder] = (target if isinstance(target, str) else target[0]).split(".")[0]
    return found


AGENT_FUNCTIONS = sorted(set(invoked_functions().values()))


def alias_of(template: dict[str, Any], function: str) -> str:
    aliases = [
        k
        for k, v in of_type(template, "AWS::Lambda::Alias").items()
        if v["Properties"]["FunctionName"] == {"Ref": function}
    ]
    assert len(aliases) == 1, f"{function}: aliases {aliases}"
    return aliases[0]


def version_of(template: dict[str, Any], function: str) -> tuple[str, dict[str, Any]]:
    alias = template["Resources"][alias_of(template, function)]["Properties"]
    version_id = alias["FunctionVersion"]["Fn::GetAtt"][0]
    return version_id, template["Resources"][version_id]


def test_the_state_machine_invokes_the_six_lifecycle_functions():
    assert AGENT_FUNCTIONS == [
        "ApprovalRequestFunction",
        "InvestigateFunction",
        "ProposeFunction",
        "RemediateFunction",
        "ReviewFunction",
        "VerifyFunction",
    ]


def test_snapstart_is_a_parameter_disabled_by_default():
    """Measured against its price (docs/operating.md, "Cold start and Lambda SnapStart"): about $17.5 a month of
    snapshot cache for a few seconds of init per incident, and a version idle for 14 days is snapshotted again
    before the next incident may run it. Rare incidents are the expected case."""
    parameter = SAM["Parameters"]["SnapStart"]
    assert parameter["Default"] == "Disabled"
    assert sorted(parameter["AllowedValues"]) == ["Disabled", "Enabled"]


@pytest.mark.parametrize("setting, apply_on", [("Enabled", "PublishedVersions"), ("Disabled", "None")])
def test_snapstart_follows_the_parameter_on_every_invoked_function_and_no_other(setting, apply_on):
    template = deployed(SnapStart=setting)
    for function, resource in of_type(template, "AWS::Lambda::Function").items():
        snapstart = resource["Properties"].get("SnapStart")
        if function in AGENT_FUNCTIONS:
            assert snapstart == {"ApplyOn": apply_on}, function
        else:
            assert snapstart is None, f"{function} has SnapStart but no alias the state machine invokes"


@pytest.mark.parametrize("setting", ["Enabled", "Disabled"])
def test_each_invoked_function_has_a_published_version_behind_a_live_alias(setting):
    template = deployed(SnapStart=setting)
    for function in AGENT_FUNCTIONS:
        alias = template["Resources"][alias_of(template, function)]
        assert alias["Properties"]["Name"] == "live"
        version_id, version = version_of(template, function)
        assert version["Type"] == "AWS::Lambda::Version"
        assert version["Properties"]["FunctionName"] == {"Ref": function}
        # A replaced version is deleted, with its snapshot: old versions would each keep a billed cache.
        assert version["DeletionPolicy"] == "Delete", version_id


@pytest.mark.parametrize("setting", ["Enabled", "Disabled"])
def test_the_state_machine_invokes_each_function_through_its_alias(setting):
    template = deployed(SnapStart=setting)
    substitutions = state_machine(template)["DefinitionSubstitutions"]
    for placeholder, function in invoked_functions().items():
        assert substitutions[placeholder] == {"Ref": alias_of(template, function)}, placeholder


def test_the_state_machine_role_may_invoke_the_aliases_and_nothing_else():
    template = deployed()
    role = template["Resources"][state_machine(template)["RoleArn"]["Fn::GetAtt"][0]]
    statements = [s for p in role["Properties"]["Policies"] for s in p["PolicyDocument"]["Statement"]]
    invoking = [s for s in statements if "lambda:InvokeFunction" in str(s.get("Action")) or "lambda:*" in str(s)]
    assert all(s["Effect"] == "Allow" for s in invoking)
    granted = [r for s in invoking for r in (s["Resource"] if isinstance(s["Resource"], list) else [s["Resource"]])]
    aliases = sorted(alias_of(template, f) for f in AGENT_FUNCTIONS)
    # Ref of an AWS::Lambda::Alias is its qualified ARN (function:NAME:live): not $LATEST, not another version.
    assert sorted(r.get("Ref", "") for r in granted if isinstance(r, dict)) == aliases
    assert all(isinstance(r, dict) and "Ref" in r for r in granted), granted


def test_no_invoked_function_has_what_snapstart_cannot_run_with():
    template = deployed()
    for function in AGENT_FUNCTIONS:
        props = template["Resources"][function]["Properties"]
        assert PYTHON_RUNTIMES_WITH_SNAPSTART.match(props["Runtime"]), props["Runtime"]
        assert props.get("PackageType", "Zip") == "Zip", "container images cannot use SnapStart"
        assert not props.get("FileSystemConfigs"), "EFS cannot be used with SnapStart"
        assert props.get("EphemeralStorage", {}).get("Size", 512) <= 512, "SnapStart allows at most 512 MB of /tmp"
    for kind in ("AWS::Lambda::Version", "AWS::Lambda::Alias"):
        for name, resource in of_type(template, kind).items():
            assert "ProvisionedConcurrencyConfig" not in resource["Properties"], f"{name}: provisioned concurrency"


# -- a parameter change publishes a new version ------------------------------------------------------
OTHER_VALUE = {
    "ResponderModel": "offline",
    "ModelBaseUrl": "https://models.example.com/v1",
    "ModelApiKeyParameterName": "/incident-responder/model-api-key",
    "ChatSlackWorkspaceId": "T0123ABCD",
    "ChatSlackChannelId": "C0123ABCD",
    "ChatTeamsTenantId": "00000000-0000-0000-0000-000000000001",
    "ChatTeamsTeamId": "00000000-0000-0000-0000-000000000002",
    "ChatTeamsChannelId": "19%3A0123456789abcdef0123456789abcdef%40thread.tacv2",
}


def other_value(name: str) -> str:
    spec = SAM["Parameters"][name]
    if name in OTHER_VALUE:
        return OTHER_VALUE[name]
    if "AllowedValues" in spec:
        return next(str(v) for v in spec["AllowedValues"] if str(v) != str(spec["Default"]))
    assert spec["Type"] == "Number", f"give {name} another value in OTHER_VALUE"
    return str(int(spec["Default"]) + 1)


def parameters_read(function: str) -> set[str]:
    """Template parameters a function's own configuration reads (its role's policies are not in its versions)."""
    # Reserved concurrency belongs to the function, not to a version: its change needs no new one.
    unversioned = ("Policies", "Events", "ReservedConcurrentExecutions")
    props = {k: v for k, v in SAM["Resources"][function]["Properties"].items() if k not in unversioned}
    text = repr(props) + repr({k: v for k, v in SAM["Globals"]["Function"].items() if k not in unversioned})
    names = set(re.findall(r"'Ref': '(\w+)'", text)) | set(re.findall(r"\$\{(\w+)\}", text))
    conditions = set(re.findall(r"'Fn::If': \['(\w+)'", text))
    while conditions:  # a condition reads the parameters it refers to, and those of the conditions it names
        condition = repr(SAM["Conditions"][conditions.pop()])
        names |= set(re.findall(r"'Ref': '(\w+)'", condition))
        conditions |= set(re.findall(r"'Condition': '(\w+)'", condition))
    return names & set(SAM["Parameters"])


def version_fingerprint(function: str, parameters: dict[str, str]) -> tuple[str, str]:
    """The version's logical id and its description as CloudFormation resolves it for these parameters."""
    template = deployed(**parameters)
    version_id, version = version_of(template, function)
    values = {k: str(v.get("Default", "")) for k, v in template["Parameters"].items()} | parameters
    description = version["Properties"].get("Description", "")
    if isinstance(description, dict):
        description = re.sub(r"\$\{(\w+)\}", lambda m: values[m.group(1)], description["Fn::Sub"])
    return version_id, description


@pytest.mark.parametrize(
    "function, parameter",
    [(f, p) for f in AGENT_FUNCTIONS for p in sorted(parameters_read(f))],
)
def test_changing_a_parameter_a_function_reads_publishes_a_new_version(function, parameter):
    """SAM hashes a function's properties with their parameters unresolved: without the values in the version's
    description, the alias would keep the old model, limits or SnapStart setting until the code changed."""
    before = version_fingerprint(function, {})
    after = version_fingerprint(function, {parameter: other_value(parameter)})
    assert after != before, f"{function}: a new {parameter} leaves the live alias on the old version"


def test_the_agents_read_the_model_parameters():
    """The check above is only as good as parameters_read: it must see what the agents obviously read."""
    assert {"ResponderModel", "ModelBaseUrl", "ModelApiKeyParameterName", "SnapStart"} <= parameters_read(
        "InvestigateFunction"
    )
    assert {"AutoApprove", "AutoApproveIamAndNetwork"} <= parameters_read("ReviewFunction")
    # Through a condition that names other conditions (HasChat: HasSlackChat or HasTeamsChat).
    assert {"ChatSlackWorkspaceId", "ChatSlackChannelId", "ChatTeamsChannelId"} <= parameters_read(
        "ApprovalRequestFunction"
    )


@pytest.mark.parametrize(
    "parameters",
    [
        {},
        {
            "ResponderModel": "bedrock_converse:arn:aws:bedrock:eu-west-1:123456789012:application-inference-profile/a1b2c3d4e5f6"
        },
        {
            "ResponderModel": "openai:gpt-4.1-mini",
            "ModelBaseUrl": "https://my-resource.openai.azure.com/openai/deployments/gpt-4.1-mini/v1",
            "ModelApiKeyParameterName": "/incident-responder/openai-api-key",
            "SnapStart": "Disabled",
        },
        {  # every chat id at the longest its parameter allows
            "ChatSlackWorkspaceId": "T" * 20,
            "ChatSlackChannelId": "C" * 20,
            "ChatTeamsTenantId": "0" * 36,
            "ChatTeamsTeamId": "0" * 36,
            "ChatTeamsChannelId": "1" * 120,
        },
    ],
)
def test_version_descriptions_fit_lambdas_limit(parameters):
    for function in AGENT_FUNCTIONS:
        _, description = version_fingerprint(function, parameters)
        assert len(description) <= 256, f"{function}: {len(description)} characters"


def test_layer_changes_publish_new_versions():
    assert SAM["Resources"]["DependenciesLayer"]["Properties"]["PublishLambdaVersion"] is True
    for function in AGENT_FUNCTIONS:
        assert SAM["Resources"][function]["Properties"]["AutoPublishAliasAllProperties"] is True


# -- the lab runs the aliases ---------------------------------------------------------------------
@pytest.mark.parametrize(
    "target, expected",
    [
        ("data-processor", ("data-processor", None)),
        ("data-processor:live", ("data-processor", "live")),
        ("123456789012:function:data-processor:3", ("data-processor", "3")),
        ("arn:aws:lambda:us-east-1:123456789012:function:data-processor", ("data-processor", None)),
        ("arn:aws:lambda:us-east-1:123456789012:function:data-processor:live", ("data-processor", "live")),
    ],
)
def test_the_lab_reads_the_function_and_qualifier_lambda_is_asked_for(target, expected):
    assert invoked_function(target) == expected


def test_the_lab_refuses_a_state_machine_that_invokes_an_alias_that_does_not_exist(monkeypatch):
    import io
    import zipfile

    import boto3
    from moto import mock_aws

    from incident_responder.core.aws import AwsClients
    from incident_responder.lab.stack import _check_lambda_targets

    for key, value in {
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "x",
        "AWS_SECRET_ACCESS_KEY": "x",
    }.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    code = io.BytesIO()
    with zipfile.ZipFile(code, "w") as archive:
        archive.writestr("handler.py", "def handler(event, context):\n    return event\n")
    with mock_aws():
        clients = AwsClients(boto3.Session(region_name="us-east-1"))
        role = clients.get("iam").create_role(RoleName="r", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
        lam = clients.get("lambda")
        lam.create_function(
            FunctionName="f",
            Runtime="python3.12",
            Role=role,
            Handler="handler.handler",
            Code={"ZipFile": code.getvalue()},
        )
        lam.create_alias(
            FunctionName="f", Name="live", FunctionVersion=lam.publish_version(FunctionName="f")["Version"]
        )
        arn = "arn:aws:lambda:us-east-1:123456789012:function:f"

        def definition(target: str) -> str:
            return f'{{"States": {{"Run": {{"Parameters": {{"FunctionName": "{target}"}}}}}}}}'

        for target in (f"{arn}:live", f"{arn}:1", arn, "f:live"):
            _check_lambda_targets(clients, definition(target), "Machine")
        for target in (f"{arn}:stale", f"{arn}:2", "g"):
            with pytest.raises(RuntimeError, match="does not exist"):
                _check_lambda_targets(clients, definition(target), "Machine")


# -- runtime hooks ---------------------------------------------------------------------------------
@pytest.fixture
def snapstart_runtime(monkeypatch):
    """A stand-in for Lambda's ``snapshot_restore_py``: records the hooks a module registers."""
    runtime = types.ModuleType("snapshot_restore_py")
    runtime.before, runtime.after = [], []
    runtime.register_before_snapshot = runtime.before.append
    runtime.register_after_restore = runtime.after.append
    monkeypatch.setitem(sys.modules, "snapshot_restore_py", runtime)
    from incident_responder.core import runtime_hooks

    monkeypatch.setattr(runtime_hooks, "_registered", False)
    monkeypatch.setattr(runtime_hooks, "_warmers", [])
    return runtime


def test_without_a_snapstart_runtime_nothing_is_registered(monkeypatch):
    from incident_responder.core import runtime_hooks

    monkeypatch.setitem(sys.modules, "snapshot_restore_py", None)  # import fails
    monkeypatch.setattr(runtime_hooks, "_registered", False)
    monkeypatch.setattr(runtime_hooks, "_warmers", [])
    assert runtime_hooks.register(lambda: None) is False
    assert runtime_hooks._warmers == []


def test_hooks_register_once_and_warmers_run_before_the_snapshot(snapstart_runtime):
    from incident_responder.core import runtime_hooks

    ran = []

    def broken():
        raise RuntimeError("no head start")

    assert runtime_hooks.register(lambda: ran.append("first"), broken)
    assert runtime_hooks.register(lambda: ran.append("second"))
    assert len(snapstart_runtime.before) == len(snapstart_runtime.after) == 1
    snapstart_runtime.before[0]()
    assert ran == ["first", "second"]  # a failing warmer costs only its own head start


def test_after_a_restore_clients_credentials_cached_keys_and_seeds_are_new(snapstart_runtime, monkeypatch):
    import boto3
    from aws_lambda_powertools.utilities.parameters.base import DEFAULT_PROVIDERS

    from incident_responder.core import runtime_hooks
    from incident_responder.core.aws import AwsClients
    from incident_responder.mcp_transport import client as mcp_client

    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    tls = mcp_client.tls_context()
    runtime_hooks.register()
    (after_restore,) = snapstart_runtime.after
    clients = AwsClients.shared()
    boto3.setup_default_session(region_name="us-east-1")
    DEFAULT_PROVIDERS["ssm"] = object()  # a provider with its client and cached values (what clear_caches drops)

    random.seed(1234)
    snapshot = random.getstate()
    same = [random.random()]
    random.setstate(snapshot)
    same.append(random.random())
    assert same[0] == same[1]  # what two environments restored from one snapshot would draw
    draws = []
    for _ in range(2):
        random.setstate(snapshot)
        after_restore()
        draws.append(random.random())
    assert draws[0] != draws[1]

    assert AwsClients.shared() is not clients
    assert boto3.DEFAULT_SESSION is None
    assert "ssm" not in DEFAULT_PROVIDERS
    assert mcp_client.tls_context() is not tls


def test_every_handler_module_registers_the_hooks():
    """Lambda ignores hooks registered in a module the handler does not import: each one registers its own."""
    for path in sorted((REPO / "handlers").glob("*.py")):
        if path.name == "__init__.py":
            continue
        assert re.search(r"^runtime_hooks\.register\(", path.read_text(), re.M), path.name


def test_an_agent_function_snapshot_holds_its_model_graph_and_contracts(tmp_path):
    """Imported as Lambda imports it with SnapStart: the before-snapshot hook builds what the first call would."""
    (tmp_path / "snapshot_restore_py.py").write_text(
        "before, after = [], []\nregister_before_snapshot = before.append\nregister_after_restore = after.append\n"
    )
    code = textwrap.dedent(
        """
        import sys
        import snapshot_restore_py as runtime
        import handlers.investigate
        from incident_responder.core import contracts
        from incident_responder.agent import graph
        assert not contracts.Diagnosis.__pydantic_complete__, "contracts are built on first use"
        assert "incident_responder.agent.offline" not in sys.modules
        for hook in runtime.before:
            hook()
        assert contracts.Diagnosis.__pydantic_complete__ and contracts.ApprovalDecision.__pydantic_complete__
        assert graph.agent_graph.cache_info().currsize == 1
        assert "incident_responder.agent.offline" in sys.modules  # RESPONDER_MODEL=offline: its class is loaded
        for hook in runtime.after:
            hook()
        print("ok", len(runtime.before), len(runtime.after))
        """
    )
    env = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": f"{tmp_path}:{REPO}",
        "AWS_DEFAULT_REGION": "us-east-1",
        # The function's environment (validated by the warm-up's settings() as by a call).
        "RESPONDER_MODEL": "offline",
        "MCP_AUTH": "iam",
        "DIAGNOSTICS_MCP_URL": "https://diagnostics.lambda-url.us-east-1.on.aws/mcp",
        "INCIDENT_CONTEXT_TABLE": "incident-context",
        "ARTIFACTS_BUCKET": "artifacts",
        "INCIDENT_TTL_DAYS": "7",
        "AGENT_RECURSION_LIMIT": "12",
        "AGENT_TOKEN_CAP": "100000",
    }
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "ok 1 1", done.stderr[-2000:]
