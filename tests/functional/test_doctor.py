"""`responder doctor` against the lab, as against an account: every check passing, then each one failing with its
fix. Bedrock's control plane and runtime are a local double (lab/converse/) named by the standard
AWS_ENDPOINT_URL_BEDROCK / AWS_ENDPOINT_URL_BEDROCK_RUNTIME; everything else is the lab's moto."""

from __future__ import annotations

import pytest

from incident_responder.account.baseline import ONBOARDED_TAG
from incident_responder.agent.model_catalog import DEFAULT_MODEL, DEFAULT_MODEL_ID
from incident_responder.cli.doctor import FAIL, PASS, WARN, report, run_doctor
from incident_responder.lab.converse.backends import OfflineBackend, ScriptedBackend
from incident_responder.lab.converse.errors import ConverseError
from incident_responder.lab.converse.gateway import ConverseGateway
from incident_responder.lab.pipeline.startup import LabPipeline
from tests.model_refusals import MARKETPLACE, SCP_DENY, USE_CASE_FORM


@pytest.fixture(scope="module")
def pipeline(lab):
    with LabPipeline.start(lab=lab, workers=True, parameters={"RemediationMode": "propose_only"}) as running:
        yield running


@pytest.fixture
def bedrock(monkeypatch):
    with ConverseGateway(OfflineBackend()) as double:
        monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK", double.url)
        monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", double.url)
        yield double


def statuses(checks) -> dict[str, str]:
    return {c.name: c.status for c in checks}


def test_a_working_setup_passes_every_check(pipeline, bedrock, capsys):
    checks = run_doctor(DEFAULT_MODEL, pipeline.stack.name, clients=pipeline.clients)
    text, status = report(checks)
    print(text)  # the transcript, as `responder doctor --stack incident-responder` prints it in the lab
    failed = [c.line() for c in checks if c.status == FAIL]
    assert status == 0 and not failed, failed
    found = statuses(checks)
    for name in ("credentials", "region", "model lifecycle", "inference profile", "model answers", "stack", "outputs"):
        assert found[name] == PASS, name
    for function in pipeline.workload_names:
        assert found[f"{function} tag"] == PASS and found[f"{function} alarms"] == PASS
    assert found["ApprovalTopicArn"] == PASS
    assert found["responder out of scope"] == PASS
    assert "check-alert" in text
    assert bedrock.exchanges[0].model_id == DEFAULT_MODEL_ID


def test_each_broken_part_fails_with_its_fix(pipeline, bedrock):
    clients = pipeline.clients
    function = pipeline.sample.function_name
    lam = clients.get("lambda")
    arn = lam.get_function_configuration(FunctionName=function)["FunctionArn"]
    lam.untag_resource(Resource=arn, TagKeys=[ONBOARDED_TAG])
    cloudwatch = clients.get("cloudwatch")
    alarms = [
        a
        for a in cloudwatch.describe_alarms()["MetricAlarms"]
        if {"Name": "FunctionName", "Value": function} in a.get("Dimensions", [])
    ]
    for alarm in alarms:  # its alarms now notify somewhere else
        cloudwatch.put_metric_alarm(
            **{
                k: alarm[k]
                for k in (
                    "AlarmName",
                    "MetricName",
                    "Namespace",
                    "Statistic",
                    "Period",
                    "EvaluationPeriods",
                    "Threshold",
                    "ComparisonOperator",
                    "Dimensions",
                )
            },
            AlarmActions=["arn:aws:sns:us-east-1:123456789012:somewhere-else"],
        )
    # Someone tags the responder's own remediate role as onboarded.
    own_role = lam.get_function_configuration(FunctionName=pipeline.stack.physical["RemediateFunction"])["Role"]
    clients.get("iam").tag_role(RoleName=own_role.rsplit("/", 1)[-1], Tags=[{"Key": ONBOARDED_TAG, "Value": "true"}])
    sns = clients.get("sns")
    approval = pipeline.stack.output("ApprovalTopicArn")
    for subscription in sns.list_subscriptions_by_topic(TopicArn=approval)["Subscriptions"]:
        sns.unsubscribe(SubscriptionArn=subscription["SubscriptionArn"])
    try:
        checks = {c.name: c for c in run_doctor(DEFAULT_MODEL, pipeline.stack.name, clients=clients)}
        assert (
            checks[f"{function} tag"].status == FAIL
            and f"responder onboard {function}" in checks[f"{function} tag"].fix
        )
        assert checks[f"{function} alarms"].status == FAIL and "AlarmActions" in checks[f"{function} alarms"].fix
        assert checks["ApprovalTopicArn"].status == FAIL and "confirm" in checks["ApprovalTopicArn"].fix
        scope = checks["responder out of scope"]
        assert scope.status == FAIL and own_role.rsplit("/", 1)[-1] in scope.detail and "remove the tag" in scope.fix
        _, status = report(list(checks.values()))
        assert status == 1
        # No such stack: said, with what to do.
        (missing,) = [c for c in run_doctor(DEFAULT_MODEL, "no-such-stack", clients=clients) if c.name == "stack"]
        assert missing.status == FAIL and "sam deploy" in missing.fix
    finally:
        pipeline.refresh()


def test_model_checks_fail_with_their_fixes(pipeline, bedrock):
    clients = pipeline.clients
    # A model id Bedrock invokes on demand only through a profile: named, with the profile to use.
    base = DEFAULT_MODEL_ID.removeprefix("global.")
    checks = {c.name: c for c in run_doctor(f"bedrock_converse:{base}", None, clients=clients)}
    assert checks["on demand"].status == FAIL and f"bedrock_converse:global.{base}" in checks["on demand"].fix
    # A Legacy model: a warning with its way out. An unknown one: no such model.
    legacy = "bedrock_converse:anthropic.claude-3-5-haiku-20241022-v1:0"
    assert any("end-of-life" in c.detail for c in run_doctor(legacy, None, clients=clients))
    checks = {c.name: c for c in run_doctor("bedrock_converse:anthropic.no-such-model-v1:0", None, clients=clients)}
    assert checks["model exists"].status == FAIL and "list-foundation-models" in checks["model exists"].fix
    # The model refusing the caller: the call's error, classified, with its fix.
    bedrock.backend = ScriptedBackend(
        [ConverseError(403, "AccessDeniedException", "You don't have access to the model with the specified model ID.")]
    )
    checks = {c.name: c for c in run_doctor(DEFAULT_MODEL, None, clients=clients)}
    assert checks["model answers"].status == FAIL and "Model access" in checks["model answers"].fix
    # The offline model needs nothing.
    assert statuses(run_doctor("offline", None, clients=clients))["model"] == PASS
    # A Legacy model still answers: a warning with its way out, and warnings do not fail the run.
    legacy_id = "anthropic.claude-sonnet-4-20250514-v1:0"
    bedrock.catalog["foundation-models"][legacy_id] = {
        "modelDetails": {
            "modelId": legacy_id,
            "modelName": "Claude Sonnet 4",
            "inferenceTypesSupported": ["ON_DEMAND"],
            "modelLifecycle": {"status": "LEGACY"},
        }
    }
    bedrock.backend = OfflineBackend()
    checks = run_doctor(f"bedrock_converse:{legacy_id}", None, clients=clients)
    assert statuses(checks)["model lifecycle"] == WARN and report(checks)[1] == 0


# Bedrock's answers to a first use and to an organisation's SCP, as public reports quote them (tests/unit/
# test_model_errors.py names the reports).
FIRST_USE = [
    (
        ConverseError(403, "AccessDeniedException", MARKETPLACE),
        "AWS Marketplace subscription",
        ("aws-marketplace:Subscribe", "aws-marketplace:ViewSubscriptions"),
    ),
    (
        ConverseError(404, "ResourceNotFoundException", USE_CASE_FORM),
        "use-case form",
        ("put-use-case-for-model-access",),
    ),
    (
        ConverseError(403, "AccessDeniedException", SCP_DENY),
        "service control policy",
        ("geographic inference profile",),
    ),
]


@pytest.mark.parametrize("answer, named, fixes", FIRST_USE, ids=["marketplace", "use-case", "scp"])
def test_first_use_failures_are_named_each_with_its_fix(pipeline, bedrock, answer, named, fixes):
    bedrock.backend = ScriptedBackend([answer])
    checks = {c.name: c for c in run_doctor(DEFAULT_MODEL, None, clients=pipeline.clients)}
    failed = checks["model answers"]
    assert failed.status == FAIL and named in failed.detail
    assert all(fix in failed.fix for fix in fixes) and "deploy the stack" not in failed.fix


def test_an_scp_denial_names_the_region_and_the_geographic_profile_to_use(pipeline, bedrock):
    bedrock.backend = ScriptedBackend([ConverseError(403, "AccessDeniedException", SCP_DENY)])
    checks = {c.name: c for c in run_doctor(DEFAULT_MODEL, None, clients=pipeline.clients)}
    scp = checks["organization policy"]
    base = DEFAULT_MODEL_ID.removeprefix("global.")
    assert scp.status == WARN and "ap-southeast-2" in scp.detail and "any commercial AWS Region" in scp.detail
    assert f"bedrock_converse:us.{base}" in scp.fix  # the lab's Region is us-east-1: the US profile
    # An identity policy's refusal is not an SCP's: no such warning.
    iam = "User: arn:aws:sts::1:assumed-role/r/f is not authorized to perform: bedrock:InvokeModel because no identity"
    bedrock.backend = ScriptedBackend([ConverseError(403, "AccessDeniedException", iam + "-based policy allows it")])
    assert "organization policy" not in statuses(run_doctor(DEFAULT_MODEL, None, clients=pipeline.clients))


def test_doctor_says_which_regions_the_chosen_profile_may_reach(pipeline, bedrock):
    checks = {c.name: c for c in run_doctor(DEFAULT_MODEL, None, clients=pipeline.clients)}
    assert checks["inference profile"].status == PASS
    assert "any commercial AWS Region" in checks["inference profile"].detail
    # A US geographic profile, as GetInferenceProfile answers it from us-east-1: its destination Regions, named.
    us_profile = "us." + DEFAULT_MODEL_ID.removeprefix("global.")
    base = us_profile.removeprefix("us.")
    bedrock.catalog["inference-profiles"][us_profile] = {
        "inferenceProfileId": us_profile,
        "status": "ACTIVE",
        "type": "SYSTEM_DEFINED",
        "models": [{"modelArn": f"arn:aws:bedrock:{r}::foundation-model/{base}"} for r in ("us-east-1", "us-east-2")],
    }
    checks = {c.name: c for c in run_doctor(f"bedrock_converse:{us_profile}", None, clients=pipeline.clients)}
    detail = checks["inference profile"].detail
    assert checks["inference profile"].status == PASS and "us-east-1, us-east-2" in detail and "United States" in detail


def test_a_profile_doctor_may_not_read_is_still_described_and_an_unnamed_denial_elsewhere_looks_like_an_scp():
    from botocore.exceptions import ClientError

    from incident_responder.cli.doctor_bedrock import _check_profile, _scp_warning

    class Refusing:
        def get_inference_profile(self, **_):
            denied = {
                "Code": "AccessDeniedException",
                "Message": "not authorized to perform bedrock:GetInferenceProfile",
            }
            raise ClientError({"Error": denied}, "GetInferenceProfile")

    eu = "eu." + DEFAULT_MODEL_ID.removeprefix("global.")
    check = _check_profile(Refusing(), eu, "eu-west-1")
    assert check.status == WARN and "Europe" in check.detail and "bedrock:GetInferenceProfile" in check.fix
    # Denied in a Region other than the one called, with no policy named: where a cross-Region profile sent it.
    denial = f"User: x is not authorized to perform: bedrock:InvokeModel on resource: arn:aws:bedrock:eu-north-1::foundation-model/{eu[3:]}"
    warning = _scp_warning(eu, "eu-west-1", denial)
    assert warning is not None and "eu-north-1" in warning.detail
    assert _scp_warning(eu, "eu-west-1", denial.replace("eu-north-1", "eu-west-1")) is None  # denied where called
