"""Offline validation of what users deploy: template.yaml, the ASL definition, and built artifacts."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from importlib.metadata import distributions
from pathlib import Path

import pytest

from incident_responder.lab.engine import substitute
from incident_responder.lab.template import load_template
from tests.scripts_by_path import load_script

REPO = Path(__file__).parents[2]
TOOLS = REPO / ".tools"
ASL = REPO / "statemachine" / "incident_lifecycle.asl.json"
SAM = TOOLS / "venv" / "bin" / "sam"
CFN_LINT = TOOLS / "venv" / "bin" / "cfn-lint"
OFFLINE_ENV = {
    **os.environ,
    "SAM_CLI_TELEMETRY": "0",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_ACCESS_KEY_ID": "offline",
    "AWS_SECRET_ACCESS_KEY": "offline",
}
for key in ("AWS_ENDPOINT_URL", "AWS_PROFILE", "AWS_SESSION_TOKEN"):
    OFFLINE_ENV.pop(key, None)


@pytest.mark.skipif(not CFN_LINT.exists(), reason="cfn-lint is not installed in .tools (run `make tools`)")
def test_cfn_lint_passes():
    out = subprocess.run([str(CFN_LINT), str(REPO / "template.yaml")], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr


@pytest.mark.skipif(not SAM.exists(), reason="aws-sam-cli is not installed in .tools (run `make tools`)")
def test_sam_validate_passes():
    """SAM's own check of the transform (the lint is test_cfn_lint_passes: `--lint` would run cfn-lint again)."""
    out = subprocess.run(
        [str(SAM), "validate", "--template", "template.yaml"],
        cwd=REPO,
        env=OFFLINE_ENV,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout + out.stderr


def _substitutions() -> dict[str, str]:
    """Stand-ins shaped like what CloudFormation puts in, for every DefinitionSubstitutions key."""
    machine = load_template()["Resources"]["IncidentStateMachine"]["Properties"]
    stand_ins = {
        "IncidentStateTable": "incident-responder-IncidentStateTable-ABC123",
        "InvestigateFunctionArn": "arn:aws:lambda:us-east-1:123456789012:function:incident-responder-Investigate-ABC",
        "MaxIncidentsPerHour": "20",
        "MaxIncidentsPerFunctionPerHour": "5",
        "InvestigateTimeoutSeconds": "300",
        "ProposeFunctionArn": "arn:aws:lambda:us-east-1:123456789012:function:incident-responder-Propose-ABC",
        "ProposeTimeoutSeconds": "180",
        "IncidentNewsTopicArn": "arn:aws:sns:us-east-1:123456789012:incident-responder-incident-news",
        "IncidentTtlSeconds": "7*86400",
        "RemediationMode": "closed_loop",
        "ReviewFunctionArn": "arn:aws:lambda:us-east-1:123456789012:function:incident-responder-Review-ABC",
        "ApprovalRequestFunctionArn": "arn:aws:lambda:us-east-1:123456789012:function:incident-responder-Approval-ABC",
        "ApprovalTimeoutMinutes": "60",
        "RemediateFunctionArn": "arn:aws:lambda:us-east-1:123456789012:function:incident-responder-Remediate-ABC",
        "VerifyFunctionArn": "arn:aws:lambda:us-east-1:123456789012:function:incident-responder-Verify-ABC",
        "VerifySettleSeconds": "120",
        "OperatorTopicArn": "arn:aws:sns:us-east-1:123456789012:incident-responder-operator-notifications",
    }
    assert set(machine["DefinitionSubstitutions"]) == set(stand_ins), "a substitution was added without a stand-in here"
    return stand_ins


def test_every_placeholder_in_the_definition_is_substituted_by_the_template():
    text = substitute(ASL.read_text(), _substitutions())
    assert "${" not in text
    definition = json.loads(text)
    assert definition["QueryLanguage"] == "JSONata"
    # The lifecycle words users see in the console are state names.
    assert {
        "RECEIVED",
        "INVESTIGATING",
        "DIAGNOSED",
        "PROPOSING",
        "PROPOSAL_READY",
        "FAILED",
        "ERROR",
        "PROPOSAL_FAILED",
        "REVIEWING",
        "AWAITING_APPROVAL",
        "REMEDIATING",
        "VERIFYING",
        "REMEDIATED",
        "ROLLING_BACK",
        "ROLLED_BACK",
        "REJECTED",
        "APPROVAL_EXPIRED",
        "REMEDIATION_FAILED",
    } <= set(definition["States"])


ASL_VALIDATOR = TOOLS / "node_modules" / ".bin" / "asl-validator"


@pytest.mark.skipif(
    not ASL_VALIDATOR.exists(), reason="asl-validator is not installed in .tools (run `make tools`; needs npm)"
)
def test_asl_validator_accepts_the_deployed_definition_and_rejects_a_broken_one(tmp_path):
    good = tmp_path / "lifecycle.asl.json"
    good.write_text(substitute(ASL.read_text(), _substitutions()))
    out = subprocess.run([str(ASL_VALIDATOR), "--json-path", str(good)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "is valid" in out.stdout, out.stdout + out.stderr
    broken = json.loads(good.read_text())
    broken["States"]["DIAGNOSED"]["Next"] = "Nowhere"
    bad = tmp_path / "broken.asl.json"
    bad.write_text(json.dumps(broken))
    out = subprocess.run([str(ASL_VALIDATOR), "--json-path", str(bad)], capture_output=True, text=True, timeout=60)
    assert out.returncode != 0 and "Nowhere" in out.stdout + out.stderr


RUNTIME_PYTHON = shutil.which("python3.12") or next(
    iter(sorted(Path.home().glob(".pyenv/versions/3.12*/bin/python3.12"))), None
)


def _artifacts_module():
    """scripts/artifacts.py (what `make bench` reports sizes with), loaded by path: scripts is no package."""
    return load_script("artifacts")


def _locks_module():
    """scripts/locks.py (what `make lock` and the layer build use), loaded by path like artifacts.py."""
    return load_script("locks")


# Imported with every handler's artifacts below: counts the modules Python had to compile from source.
_COUNT_COMPILED = """
import importlib._bootstrap_external as external, sys
compiled = []
source_to_code = external.SourceLoader.source_to_code
def counting(self, data, path, *args, **kwargs):
    compiled.append(str(path))
    return source_to_code(self, data, path, *args, **kwargs)
external.SourceLoader.source_to_code = counting
sys.path[:0] = {paths!r}
"""

# A Bedrock Converse call with a tool bound, from the built artifacts, answered by botocore's Stubber: the
# request is validated against the layer's botocore model, and numpy (excluded) must not be needed.
_CONVERSE = """
import boto3
from botocore.stub import Stubber
from incident_responder.agent.models import create_chat_model

client = boto3.client("bedrock-runtime", region_name="us-east-1", aws_access_key_id="k", aws_secret_access_key="s")
stubber = Stubber(client)
tool_use = {"toolUseId": "t1", "name": "get_logs", "input": {"function_name": "data-processor"}}
stubber.add_response("converse", {
    "output": {"message": {"role": "assistant", "content": [{"toolUse": tool_use}]}},
    "stopReason": "tool_use",
    "usage": {"inputTokens": 12, "outputTokens": 7, "totalTokens": 19},
    "metrics": {"latencyMs": 5},
})
stubber.activate()

def get_logs(function_name: str) -> str:
    '''Recent log events of a Lambda function.'''
    return ""

model = create_chat_model("bedrock_converse:global.anthropic.claude-haiku-4-5-20251001-v1:0", bedrock_client=client)
message = model.bind_tools([get_logs]).invoke("Why does data-processor fail?")
stubber.assert_no_pending_responses()
print(message.tool_calls[0]["name"], message.tool_calls[0]["args"]["function_name"], message.usage_metadata["input_tokens"])
"""


@pytest.mark.skipif(not SAM.exists(), reason="aws-sam-cli is not installed in .tools (run `make tools`)")
@pytest.mark.skipif(
    RUNTIME_PYTHON is None, reason="no python3.12 (the functions' runtime) to import the built artifacts with"
)
@pytest.mark.slow
@pytest.mark.timeout(900)  # a full sam build with both layers, beside the rest of the suite
def test_sam_build_artifacts_import_every_handler(tmp_path):
    build_dir = tmp_path / "build"
    out = subprocess.run(
        [
            str(SAM),
            "build",
            "--build-in-source",
            "--parallel",
            # A fresh build directory: samconfig.toml's build cache would only hash the whole folder (.venv and
            # .tools included) to find nothing to reuse, a third of the build's CPU.
            "--no-cached",
            "--build-dir",
            str(build_dir),
            "--template",
            "template.yaml",
        ],
        cwd=REPO,
        # The artifacts as `make build` makes them, bytecode included: what the size budget and the import
        # checks below are about (precompiling adds some 20 s).
        env={**OFFLINE_ENV, "PY_RUNTIME": str(RUNTIME_PYTHON)},
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    layer = build_dir / "DependenciesLayer" / "python"
    openai_layer = build_dir / "OpenAiCompatibleLayer" / "python"
    assert openai_layer.is_dir(), "sam build did not build the OpenAI-compatible layer"
    # Size: every function with every layer it may get (the OpenAI-compatible one included) fits the budget.
    artifacts = _artifacts_module()
    deployments = {d["function"]: d for d in artifacts.deployments(build_dir, REPO / "template.yaml")}
    assert deployments["InvestigateFunction"]["layers"] == ["DependenciesLayer", "OpenAiCompatibleLayer"]
    largest = max(deployments.values(), key=lambda d: d["bytes"])
    assert largest["bytes"] <= artifacts.DEPLOYMENT_BUDGET, (
        f"{largest['function']} + {largest['layers']}: {largest['bytes'] / 2**20:.1f} MiB unzipped "
        f"(budget {artifacts.DEPLOYMENT_BUDGET / 2**20:.0f} MiB; Lambda's limit 250)"
    )
    # Each layer holds exactly its lock's pins (requirements/lambda.txt, requirements/openai-layer.txt), and
    # so nothing requirements/lambda-exclude.txt names.
    locks = _locks_module()
    excluded = set(locks.requirement_names(locks.EXCLUDE))
    for folder, lock in ((layer, locks.DEPENDENCIES_LAYER), (openai_layer, locks.OPENAI_LAYER)):
        shipped = {locks.canonical(d.metadata["Name"]): d.version for d in distributions(path=[str(folder)])}
        assert shipped == {name: pin["version"] for name, pin in locks.parse_requirements(lock).items()}, folder
        assert not set(shipped) & excluded, set(shipped) & excluded
    # `sam package` dates every file 1980-01-01; Lambda's file systems are read-only (-B). The bytecode
    # shipped must serve anyway: no module of the project or its layers compiled at import.
    for path in build_dir.rglob("*"):
        os.utime(path, (315532800, 315532800))
    handlers = {
        "IngestFunction": "handlers.ingest",
        "InvestigateFunction": "handlers.investigate",
        "ProposeFunction": "handlers.propose",
        "RemediationMcpFunction": "handlers.remediation_mcp",
        "DiagnosticsMcpFunction": "handlers.diagnostics_mcp",
        "ReconcileFunction": "handlers.reconcile",
        "SweepFunction": "handlers.reconcile",
        "ReportFunction": "handlers.report",
        "ReviewFunction": "handlers.review",
        "ApprovalRequestFunction": "handlers.approval",
        "ApprovalEndpointFunction": "handlers.approval",
        "RemediateFunction": "handlers.remediate",
        "VerifyFunction": "handlers.verify",
    }
    functions = {k for k, v in load_template()["Resources"].items() if v["Type"] == "AWS::Serverless::Function"}
    assert set(handlers) == functions  # a function added to the template is imported here too
    env = {
        "PATH": os.environ["PATH"],
        "PYENV_VERSION": "3.12.1",
        "AWS_DEFAULT_REGION": "us-east-1",
        "POWERTOOLS_TRACE_DISABLED": "1",
    }
    for function, module in handlers.items():
        code = build_dir / function
        assert (code / "handlers").is_dir(), f"{function}: source not copied"
        check = subprocess.run(
            [
                str(RUNTIME_PYTHON),
                "-I",
                "-B",
                "-c",
                _COUNT_COMPILED.format(paths=[str(code), str(layer)])
                + f"import {module}\nprint('ok', [p for p in compiled if p.startswith({str(build_dir)!r})])",
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert check.stdout.strip() == "ok []", f"{function}: {check.stdout[-2000:]} {check.stderr[-2000:]}"
    # Only production code ships: no lab package, no chaos, and nothing that imports moto.
    for function in handlers:
        code = build_dir / function
        assert not (code / "incident_responder" / "lab").exists(), f"{function}: the lab was shipped"
        assert not (code / "chaos").exists() and not (code / "tests").exists(), f"{function}: lab code shipped"
        importing_moto = [
            str(f.relative_to(code))
            for f in code.rglob("*.py")
            if re.search(r"^\s*(import moto|from moto[ .])", f.read_text(errors="replace"), re.M)
        ]
        assert importing_moto == [], f"{function}: {importing_moto}"
    assert not (layer / "moto").exists(), "moto in the dependencies layer"
    paths = [str(build_dir / "InvestigateFunction"), str(layer)]
    check = subprocess.run(
        [str(RUNTIME_PYTHON), "-I", "-B", "-c", f"import sys; sys.path[:0] = {paths!r}\n" + _CONVERSE],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert check.stdout.strip() == "get_logs data-processor 12", check.stderr[-2000:]
    # The OpenAI-compatible layer (attached only with ModelBaseUrl) completes the dependencies layer.
    check = subprocess.run(
        [
            str(RUNTIME_PYTHON),
            "-I",
            "-B",
            "-c",
            f"import sys; sys.path[:0] = {[str(build_dir / 'InvestigateFunction'), str(openai_layer), str(layer)]!r}; "
            "from incident_responder.agent.models import create_chat_model; "
            "m = create_chat_model('openai:m', base_url='https://models.example.com/v1', api_key='k'); "
            "print(type(m).__name__)",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert check.stdout.strip() == "ChatOpenAI", check.stderr[-2000:]
    # The MCP server's code travels with its function.
    assert (build_dir / "DiagnosticsMcpFunction" / "mcp" / "diagnostics" / "server.py").exists()
    assert (build_dir / "RemediationMcpFunction" / "mcp" / "remediation" / "server.py").exists()


def test_every_terminal_write_in_the_definition_records_when_the_incident_ended():
    from incident_responder.state.lifecycle import TERMINAL_STATUSES

    states = json.loads(ASL.read_text())["States"]
    terminal_writes = {
        name: state["Arguments"]["UpdateExpression"]
        for name, state in states.items()
        if state.get("Resource", "").endswith("dynamodb:updateItem")
        and state["Arguments"].get("ExpressionAttributeValues", {}).get(":status", {}).get("S") in TERMINAL_STATUSES
    }
    assert set(terminal_writes) >= TERMINAL_STATUSES - {"SUPPRESSED"}
    for name, expression in terminal_writes.items():
        assert "ended_at = :now" in expression, name


def test_every_state_write_retries_a_throttle_and_nothing_that_may_have_written():
    """A throttled DynamoDB write changed nothing: each state that writes retries it (test_state_machine runs
    one). A 5xx or a timeout may have written, and a conditional write repeated would then fail its own
    condition (RECEIVED would even read its own write as a replay): those are never retried."""
    states = json.loads(ASL.read_text())["States"]
    writes = {name: s for name, s in states.items() if s.get("Resource", "").startswith("arn:aws:states:::dynamodb:")}
    assert len(writes) >= 20
    throttles = {
        "DynamoDB.ProvisionedThroughputExceededException",
        "DynamoDB.ThrottlingException",
        "DynamoDB.RequestLimitExceeded",
    }
    for name, state in writes.items():
        retried = [error for retrier in state.get("Retry", []) for error in retrier["ErrorEquals"]]
        assert set(retried) == throttles, name
        (retrier,) = state["Retry"]
        assert retrier["JitterStrategy"] == "FULL" and retrier["MaxAttempts"] >= 3, name


def test_every_notification_is_sent_again_when_sns_fails_for_a_moment():
    """A notification is the only word a person gets of an incident (the operator alarm above all): a Publish
    that failed is made again, with jittered backoff, before its Catch gives up (test_closed_loop runs one)."""
    states = json.loads(ASL.read_text())["States"]
    publishes = {name: s for name, s in states.items() if s.get("Resource") == "arn:aws:states:::sns:publish"}
    assert {"Notify operators", "Alarm operators", "Handed over", "Notify remediated"} <= set(publishes)
    for name, state in publishes.items():
        (retrier,) = state.get("Retry", [{}])
        assert retrier.get("ErrorEquals") == ["States.TaskFailed"], name
        assert retrier["JitterStrategy"] == "FULL" and retrier["MaxAttempts"] >= 5, name
