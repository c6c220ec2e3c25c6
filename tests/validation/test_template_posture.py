"""What `sam deploy` creates, read as an AWS reviewer reads it: encryption that lets the publishers in,
IAM-only MCP endpoints each callable by one agent, data kept and expired as intended, parameters that
cannot contradict each other. Checked on template.yaml as SAM translates it (the CloudFormation AWS runs).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from incident_responder.agent.model_catalog import (
    DEFAULT_MODEL,
    DEFAULT_MODEL_ID,
    base_model_id,
    end_of_life,
    end_of_life_specs,
)
from incident_responder.core.settings import AgentSettings, deadline_buffer_ms
from incident_responder.lab.errors import StackRuleError
from incident_responder.lab.template import resolve_conditions
from tests.template_reading import (
    MCP_SERVER_OF,
    SAM,
    as_list,
    cfn,
    defaults,
    may_invoke,
    model_statements,
    ref_name,
    render,
    role_statements,
    translated,
)

REPO = Path(__file__).parents[2]
ASL_TEXT = (REPO / "statemachine" / "incident_lifecycle.asl.json").read_text()


def resources(kind: str, template: dict[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    template = template or cfn()
    return {k: v.get("Properties", {}) for k, v in template["Resources"].items() if v["Type"] == kind}


def function_role(function_id: str) -> str:
    return ref_name(cfn()["Resources"][function_id]["Properties"]["Role"])


def allows(statements: list[dict[str, Any]], action: str, resource_id: str) -> list[dict[str, Any]]:
    """Allow statements granting ``action`` on the resource with logical id ``resource_id``."""
    found = []
    for s in statements:
        if s.get("Effect") != "Allow" or action not in as_list(s.get("Action", [])):
            continue
        if any(ref_name(r) == resource_id or str(r).find(resource_id) >= 0 for r in as_list(s.get("Resource", []))):
            found.append(s)
    return found


# -- 1. alarms and AWS services can publish to the encrypted topics --------------------------------
def topic_publishers() -> dict[str, set[str]]:
    """Topic logical id -> who publishes to it: 'cloudwatch' for alarm actions, role ids for state machines."""
    publishers: dict[str, set[str]] = {}
    for alarm in resources("AWS::CloudWatch::Alarm").values():
        for action in alarm.get("AlarmActions", []) + alarm.get("OKActions", []):
            publishers.setdefault(ref_name(action), set()).add("cloudwatch")
    for logical_id, resource in cfn()["Resources"].items():
        if resource["Type"] == "AWS::StepFunctions::StateMachine":
            role = ref_name(resource["Properties"]["RoleArn"])
            for topic in resources("AWS::SNS::Topic"):
                if f"${{{topic}" in str(SAM["Resources"][logical_id]["Properties"].get("DefinitionSubstitutions")):
                    publishers.setdefault(topic, set()).add(role)
    # The incident topic is where users point their functions' alarms.
    publishers.setdefault("IncidentTopic", set()).add("cloudwatch")
    return publishers


def test_every_topic_uses_a_customer_managed_key_with_rotation():
    keys = resources("AWS::KMS::Key")
    for topic, props in resources("AWS::SNS::Topic").items():
        key = ref_name(props.get("KmsMasterKeyId"))
        assert key in keys, f"{topic}: {props.get('KmsMasterKeyId')} (alias/aws/sns cannot grant CloudWatch)"
        assert keys[key]["EnableKeyRotation"] is True


@pytest.mark.parametrize("topic", sorted(topic_publishers()))
def test_each_publisher_may_use_the_topics_key(topic):
    key_id = ref_name(resources("AWS::SNS::Topic")[topic]["KmsMasterKeyId"])
    key_policy = resources("AWS::KMS::Key")[key_id]["KeyPolicy"]["Statement"]
    for publisher in topic_publishers()[topic]:
        if publisher == "cloudwatch":
            grants = [
                s
                for s in key_policy
                if s["Effect"] == "Allow" and s.get("Principal", {}).get("Service") == "cloudwatch.amazonaws.com"
            ]
            assert grants, f"{topic}: CloudWatch alarms cannot use {key_id}"
            actions = {a for s in grants for a in as_list(s["Action"])}
            assert {"kms:Decrypt", "kms:GenerateDataKey*"} <= actions
            assert all("aws:SourceAccount" in str(s.get("Condition")) for s in grants), "confused-deputy condition"
            topic_policies = [
                p for p in resources("AWS::SNS::TopicPolicy").values() if topic in [ref_name(t) for t in p["Topics"]]
            ]
            assert any(
                s.get("Principal", {}).get("Service") == "cloudwatch.amazonaws.com" and s["Action"] == "sns:Publish"
                for p in topic_policies
                for s in p["PolicyDocument"]["Statement"]
            ), f"{topic}: no topic policy lets CloudWatch alarms publish"
        else:  # an IAM role (the state machine): its own policy must allow the key
            statements = role_statements(publisher)
            for action in ("kms:GenerateDataKey*", "kms:Decrypt"):
                assert allows(statements, action, key_id), f"{publisher} lacks {action} on {key_id} for {topic}"


def test_the_key_policy_keeps_the_key_manageable_and_grants_nothing_broad():
    (statements,) = [k["KeyPolicy"]["Statement"] for k in resources("AWS::KMS::Key").values()]
    services = [s["Principal"].get("Service") for s in statements if "Service" in s.get("Principal", {})]
    assert services == ["cloudwatch.amazonaws.com", "events.amazonaws.com"]
    admin = [s for s in statements if s["Action"] == "kms:*"]
    assert len(admin) == 1 and ":root" in str(admin[0]["Principal"])


def test_eventbridge_rules_of_this_account_may_publish_alarm_events_to_the_incident_topic_only():
    """EventBridge delivers to an encrypted topic only when the topic policy and the key policy let
    events.amazonaws.com in; the topic policy holds it to this account's rules (confused deputy)."""
    (key,) = resources("AWS::KMS::Key").values()
    topic_statements = {
        ref_name(t): p["PolicyDocument"]["Statement"]
        for p in resources("AWS::SNS::TopicPolicy").values()
        for t in p["Topics"]
    }
    by_events = {
        topic: [s for s in statements if s.get("Principal", {}).get("Service") == "events.amazonaws.com"]
        for topic, statements in topic_statements.items()
    }
    assert [t for t, s in by_events.items() if s] == ["IncidentTopic"]
    (grant,) = [
        s for s in key["KeyPolicy"]["Statement"] if s.get("Principal", {}).get("Service") == "events.amazonaws.com"
    ]
    for statement in by_events["IncidentTopic"]:  # the key's grant: see the test after the next section
        condition = statement["Condition"]
        assert condition["StringEquals"] == {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}
        assert ":events:${AWS::Region}:${AWS::AccountId}:rule/*" in str(condition["ArnLike"]["aws:SourceArn"])
    assert sorted(as_list(grant["Action"])) == ["kms:Decrypt", "kms:GenerateDataKey*"]


# -- 2. MCP servers behind IAM, each callable by its own agent only ---------------------------------
MCP_SERVERS = sorted(set(MCP_SERVER_OF.values()))


def test_function_urls_use_iam_auth_but_the_approval_page_and_grant_it_only_its_url():
    urls = {ref_name(u["TargetFunctionArn"]): u["AuthType"] for u in resources("AWS::Lambda::Url").values()}
    # A person's browser holds no SigV4 credentials: the approval page is public, its link's token the credential.
    assert urls == {**dict.fromkeys(MCP_SERVERS, "AWS_IAM"), "ApprovalEndpointFunction": "NONE"}
    public = [p for p in resources("AWS::Lambda::Permission").values() if p.get("Principal") == "*"]
    assert {ref_name(p["FunctionName"]) for p in public} == {"ApprovalEndpointFunction"}
    # Both actions, as function URLs created since October 2025 need, and neither allows a direct Invoke.
    assert sorted((p["Action"], p.get("FunctionUrlAuthType"), p.get("InvokedViaFunctionUrl")) for p in public) == [
        ("lambda:InvokeFunction", None, True),
        ("lambda:InvokeFunctionUrl", "NONE", None),
    ]


@pytest.mark.parametrize("agent, server", sorted(MCP_SERVER_OF.items()))
def test_each_agent_may_invoke_only_its_own_server_and_only_through_its_url(agent, server):
    statements = role_statements(function_role(agent))
    url = allows(statements, "lambda:InvokeFunctionUrl", server)
    invoke = allows(statements, "lambda:InvokeFunction", server)
    assert url and invoke, "function URLs created since October 2025 need both actions"
    assert all(s["Condition"]["StringEquals"]["lambda:FunctionUrlAuthType"] == "AWS_IAM" for s in url)
    assert all(s["Condition"]["Bool"]["lambda:InvokedViaFunctionUrl"] == "true" for s in invoke)
    other = (set(MCP_SERVER_OF.values()) - {server}).pop()
    for action in ("lambda:InvokeFunctionUrl", "lambda:InvokeFunction"):
        assert not allows(statements, action, other), f"{agent} may call {other}"
    lambda_resources = [
        r
        for s in statements
        if any(str(a).startswith("lambda:Invoke") for a in as_list(s["Action"]))
        for r in as_list(s["Resource"])
    ]
    assert all(ref_name(r) == server for r in lambda_resources), lambda_resources


@pytest.mark.parametrize("function", sorted(MCP_SERVER_OF) + MCP_SERVERS)
def test_no_bearer_key_is_deployed_or_readable(function):
    env = SAM["Resources"][function]["Properties"]["Environment"]["Variables"]
    assert env["MCP_AUTH"] == "iam" and "MCP_API_KEY_PARAMETER" not in env
    assert not any(
        "ssm:GetParameter" in as_list(s["Action"]) and "mcp" in str(s["Resource"]).lower()
        for s in role_statements(function_role(function))
    )


@pytest.mark.parametrize("server", MCP_SERVERS)
def test_mcp_servers_read_only_what_their_tools_need(server):
    statements = role_statements(function_role(server))
    actions = {a for s in statements for a in as_list(s["Action"])}
    assert all(
        a.split(":")[1].startswith(("Get", "List", "Describe", "Lookup"))
        for a in actions
        if not a.startswith("xray:") and a != "sts:AssumeRole"
    ), actions
    # A member account's function is read through that account's read role, never its remediation role.
    (assume,) = [s for s in statements if "sts:AssumeRole" in as_list(s["Action"])]
    assert assume["Resource"] == {"Fn::Sub": "arn:${AWS::Partition}:iam::*:role/${MemberRoleNamePrefix}-read"}
    assert "dynamodb:GetItem" in actions and not {"dynamodb:Scan", "dynamodb:Query"} & actions
    wildcard = {a for s in statements if s["Resource"] == "*" for a in as_list(s["Action"])}
    # Only what supports no resource-level permission; when a difference appeared is the diagnosis's question.
    assert wildcard <= {
        "ec2:DescribeSecurityGroups",
        "ec2:DescribeSubnets",
        "ec2:DescribeNetworkAcls",
        "lambda:ListEventSourceMappings",
        "xray:PutTraceSegments",
        "xray:PutTelemetryRecords",
    } | (DIAGNOSTICS_WILDCARD_READS if server == "DiagnosticsMcpFunction" else set()), wildcard


# The diagnostics tools' reads that support no resource-level permission (Service Authorization Reference): when a
# difference appeared (CloudTrail), metrics, the account's concurrency limits, parameters' metadata, the routes of
# the function's subnets, the network interfaces and DNS resolution of its VPC.
DIAGNOSTICS_WILDCARD_READS = {
    "cloudtrail:LookupEvents",
    "ec2:DescribeRouteTables",
    "ec2:DescribeNetworkInterfaces",
    "ec2:DescribeVpcAttribute",
    "cloudwatch:GetMetricData",
    "cloudwatch:ListMetrics",
    "lambda:GetAccountSettings",
    "ssm:DescribeParameters",
}


# Every role that reads a function's configuration (account_state) may read all of it: aliases and the
# versions they route to, the environment's key, the event source mappings.
CONFIGURATION_READERS = [
    "DiagnosticsMcpFunction",
    "RemediationMcpFunction",
    "ProposeFunction",
    "RemediateFunction",
    "VerifyFunction",
]


@pytest.mark.parametrize("function", CONFIGURATION_READERS)
def test_configuration_readers_read_aliases_keys_and_mappings_with_the_narrowest_resources(function):
    statements = role_statements(function_role(function))

    def resources_of(action: str) -> list[str]:
        return [
            str(r)
            for s in statements
            if s.get("Effect") == "Allow" and action in as_list(s["Action"])
            for r in as_list(s["Resource"])
        ]

    for action in ("lambda:GetFunctionConfiguration", "lambda:ListAliases"):
        # function:* also matches function:NAME:VERSION, which GetFunctionConfiguration with a qualifier needs.
        assert resources_of(action) and all(":function:*" in r for r in resources_of(action)), action
    assert resources_of("kms:DescribeKey") and all(":key/*" in r for r in resources_of("kms:DescribeKey"))
    assert resources_of("lambda:ListEventSourceMappings") == ["*"]
    # What drift compares beyond the function: the secrets its environment names, its source queues' visibility
    # timeout, whether the key policy (and the role's managed policies) let its role decrypt. Never "*".
    narrowest = {
        "secretsmanager:DescribeSecret": ":secretsmanager:${AWS::Region}:${AWS::AccountId}:secret:*",
        "sqs:GetQueueUrl": ":sqs:${AWS::Region}:${AWS::AccountId}:*",
        "sqs:GetQueueAttributes": ":sqs:${AWS::Region}:${AWS::AccountId}:*",
        "kms:GetKeyPolicy": ":kms:${AWS::Region}:${AWS::AccountId}:key/*",
    }
    for action, resource in narrowest.items():
        assert resources_of(action) and all(resource in r for r in resources_of(action)), (function, action)
    assert not {"secretsmanager:GetSecretValue", "secretsmanager:ListSecrets", "sqs:ReceiveMessage"} & {
        a for s in statements for a in as_list(s["Action"])
    }, "drift reads a secret's metadata and a queue's attributes, never a value or a message"


@pytest.mark.parametrize("function", [f for f in CONFIGURATION_READERS if f != "RemediateFunction"])
def test_drift_reads_of_secrets_queues_and_key_policies_are_statements_of_their_own(function):
    """Readers (not the remediate role, which reads only what it may change) read them in DriftReads* statements
    of their own, unconditioned (a secret named after onboarding is not tagged yet, and must still be read)."""
    statements = role_statements(function_role(function))
    drift = {s["Sid"]: s for s in statements if str(s.get("Sid", "")).startswith("DriftReads")}
    assert {sid: sorted(as_list(s["Action"])) for sid, s in drift.items()} == {
        "DriftReadsSecrets": ["secretsmanager:DescribeSecret"],
        "DriftReadsQueues": ["sqs:GetQueueAttributes", "sqs:GetQueueUrl"],
        "DriftReadsKeyPolicies": ["kms:GetKeyPolicy"],
        "DriftReadsManagedPolicies": ["iam:GetPolicy", "iam:GetPolicyVersion"],
    }
    assert all(s["Effect"] == "Allow" and "Condition" not in s for s in drift.values())


def test_ingest_scans_only_the_baseline_table_and_only_two_attributes():
    statements = role_statements(function_role("IngestFunction"))
    (scan,) = [s for s in statements if "dynamodb:Scan" in as_list(s["Action"])]
    assert ref_name(scan["Resource"]) == "BaselineTable" and as_list(scan["Action"]) == ["dynamodb:Scan"]
    assert scan["Condition"] == {
        "ForAllValues:StringEquals": {"dynamodb:Attributes": ["function_name", "event_sources", "dead_letter_queues"]},
        "StringEqualsIfExists": {"dynamodb:Select": "SPECIFIC_ATTRIBUTES"},
    }


def test_ingest_reads_alarms_only_to_resolve_a_composite_and_changes_none():
    """DescribeAlarms returns composite alarms only to a permission scoped to "*" (CloudWatch API Reference):
    ingest gets exactly that read, and no other CloudWatch action."""
    statements = role_statements(function_role("IngestFunction"))
    cloudwatch = [(a, s) for s in statements for a in as_list(s["Action"]) if a.startswith("cloudwatch:")]
    assert [a for a, _ in cloudwatch] == ["cloudwatch:DescribeAlarms"]
    ((_, statement),) = cloudwatch
    assert statement["Effect"] == "Allow" and statement["Resource"] == "*" and "Condition" not in statement


# -- 3. only the remediate function changes the account, and only onboarded resources ---------------
WRITE_PREFIXES = (
    "Put",
    "Delete",
    "Update",
    "Attach",
    "Detach",
    "Authorize",
    "Revoke",
    "Create",
    "Replace",
    "Tag",
    "Untag",
    "Enable",
    "Disable",
    "Restore",
    "Set",
)
ACCOUNT_SERVICES = ("lambda:", "iam:", "ec2:", "kms:", "sqs:", "secretsmanager:")
ONBOARDED = {"StringEquals": {"aws:ResourceTag/incident-responder:onboarded": "true"}}


def _writes(statements: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    return [
        (a, s)
        for s in statements
        if s.get("Effect") == "Allow"
        for a in as_list(s["Action"])
        if a.startswith(ACCOUNT_SERVICES) and a.split(":")[1].startswith(WRITE_PREFIXES)
    ]


def test_no_function_but_remediate_may_change_a_monitored_resource():
    functions = [k for k, v in cfn()["Resources"].items() if v["Type"] == "AWS::Lambda::Function"]
    for function in functions:
        writes = [a for a, _ in _writes(role_statements(function_role(function)))]
        assert writes == [] or function == "RemediateFunction", (function, writes)


def test_the_remediate_role_writes_only_what_the_actions_need_on_onboarded_resources():
    statements = role_statements(function_role("RemediateFunction"))
    writes = _writes(statements)
    assert {a for a, _ in writes} == {
        "lambda:PutFunctionConcurrency",
        "lambda:DeleteFunctionConcurrency",
        "lambda:UpdateFunctionConfiguration",
        "lambda:UpdateAlias",
        "lambda:CreateAlias",  # an alias deleted since the baseline, created again at its baseline version
        "lambda:DeleteAlias",  # the undo of that re-creation
        "lambda:PutFunctionEventInvokeConfig",
        "lambda:DeleteFunctionEventInvokeConfig",  # the undo of a first event invoke configuration
        "lambda:UpdateEventSourceMapping",
        "kms:EnableKey",
        "kms:DisableKey",
        "iam:PutRolePolicy",
        "iam:DeleteRolePolicy",
        "iam:AttachRolePolicy",
        "iam:DetachRolePolicy",
        "ec2:AuthorizeSecurityGroupEgress",
        "ec2:RevokeSecurityGroupEgress",
        "ec2:CreateNetworkAclEntry",
        "ec2:ReplaceNetworkAclEntry",
        "ec2:DeleteNetworkAclEntry",
        "sqs:SetQueueAttributes",
        "secretsmanager:RestoreSecret",
        "secretsmanager:DeleteSecret",  # the undo of a RestoreSecret: schedules the deletion again
    }
    for action, statement in writes:
        assert statement.get("Condition") == ONBOARDED, f"{action} is not limited to onboarded resources"
        assert "*" not in as_list(statement["Resource"]), action
    # It reads only the secrets and queues it may change: the onboarded ones, on their own resource types.
    for action, resource in (
        ("secretsmanager:DescribeSecret", ":secretsmanager:${AWS::Region}:${AWS::AccountId}:secret:*"),
        ("sqs:GetQueueUrl", ":sqs:${AWS::Region}:${AWS::AccountId}:*"),
        ("sqs:GetQueueAttributes", ":sqs:${AWS::Region}:${AWS::AccountId}:*"),
    ):
        granting = [s for s in statements if s.get("Effect") == "Allow" and action in as_list(s["Action"])]
        assert granting and all(s.get("Condition") == ONBOARDED for s in granting), action
        assert all(resource in str(r) for s in granting for r in as_list(s["Resource"])), action
    # A deletion it schedules always keeps Secrets Manager's recovery window.
    (never,) = [s for s in statements if s.get("Sid") == "NeverDeleteSecretsWithoutRecovery"]
    assert (never["Effect"], never["Action"], never["Resource"]) == ("Deny", "secretsmanager:DeleteSecret", "*")
    assert never["Condition"] == {"Bool": {"secretsmanager:ForceDeleteWithoutRecovery": "true"}}
    (deny,) = [s for s in statements if s.get("Sid") == "NeverGrantBroadAccess"]
    assert deny["Action"] == "iam:AttachRolePolicy" and "AdministratorAccess" in str(deny["Condition"])
    # The undo ledger lives beside the incident; nothing scans or deletes it.
    ledger = {a for s in statements if ref_name(s["Resource"]) == "IncidentStateTable" for a in as_list(s["Action"])}
    assert ledger == {"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"}


def test_the_approval_page_decides_tasks_and_reads_nothing_else():
    statements = role_statements(function_role("ApprovalEndpointFunction"))
    actions = {a for s in statements for a in as_list(s["Action"]) if not a.startswith("xray:")}
    assert actions == {"dynamodb:GetItem", "dynamodb:UpdateItem", "states:SendTaskSuccess", "states:SendTaskFailure"}


def test_the_state_machine_waits_for_approval_no_longer_than_the_parameter_says():
    substitutions = SAM["Resources"]["IncidentStateMachine"]["Properties"]["DefinitionSubstitutions"]
    for parameter in ("ApprovalTimeoutMinutes", "VerifySettleSeconds", "RemediationMode"):
        assert substitutions[parameter] == {"Ref": parameter} and f"${{{parameter}}}" in ASL_TEXT
    assert SAM["Parameters"]["AutoApprove"]["Default"] == "none"
    env = SAM["Resources"]["ReviewFunction"]["Properties"]["Environment"]["Variables"]
    assert env["AUTO_APPROVE"] == {"Ref": "AutoApprove"}
    assert env["AUTO_APPROVE_IAM_AND_NETWORK"] == {"Ref": "AutoApproveIamAndNetwork"}


@pytest.mark.parametrize("function, state", [("RemediateFunction", "Apply actions"), ("VerifyFunction", "Verify fix")])
def test_acting_functions_end_before_their_task_times_out(function, state):
    import json

    task = json.loads(ASL_TEXT)["States"][state]
    assert SAM["Resources"][function]["Properties"]["Timeout"] < task["TimeoutSeconds"]


# -- 6. data ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("table", ["IncidentStateTable", "IncidentContextTable"])
def test_incident_tables_expire_and_recover(table):
    props = resources("AWS::DynamoDB::Table")[table]
    assert props["TimeToLiveSpecification"] == {"AttributeName": "expires_at", "Enabled": True}
    assert props["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"] is True


def test_agent_functions_know_the_ttl_of_what_they_store():
    for function in MCP_SERVER_OF:
        env = SAM["Resources"][function]["Properties"]["Environment"]["Variables"]
        assert env["INCIDENT_TTL_DAYS"] == {"Ref": "IncidentTtlDays"}


def test_artifacts_bucket_denies_plain_http_blocks_public_access_and_keeps_versions():
    bucket = resources("AWS::S3::Bucket")["ArtifactsBucket"]
    assert all(bucket["PublicAccessBlockConfiguration"].values()) and len(bucket["PublicAccessBlockConfiguration"]) == 4
    assert bucket["VersioningConfiguration"]["Status"] == "Enabled"
    (policy,) = [p for p in resources("AWS::S3::BucketPolicy").values() if ref_name(p["Bucket"]) == "ArtifactsBucket"]
    deny = [s for s in policy["PolicyDocument"]["Statement"] if s["Effect"] == "Deny"]
    assert any(s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}} and s["Action"] == "s3:*" for s in deny)


# -- 7. parameters that cannot contradict each other -----------------------------------------------
@pytest.mark.parametrize("parameter", ["InvestigateTimeoutSeconds", "ProposeTimeoutSeconds"])
def test_the_shortest_allowed_timeout_leaves_the_agent_most_of_it(parameter):
    shortest = SAM["Parameters"][parameter]["MinValue"] * 1000
    buffer = deadline_buffer_ms(shortest)
    assert shortest - buffer >= 30_000, f"{parameter}={shortest // 1000}s leaves {(shortest - buffer) // 1000}s"
    for timeout in range(shortest, SAM["Parameters"][parameter]["MaxValue"] * 1000 + 1, 30_000):
        assert deadline_buffer_ms(timeout) < timeout / 2


@pytest.mark.parametrize(
    "function, parameter",
    [("InvestigateFunction", "InvestigateTimeoutSeconds"), ("ProposeFunction", "ProposeTimeoutSeconds")],
)
def test_task_and_function_share_one_timeout_parameter(function, parameter):
    assert SAM["Resources"][function]["Properties"]["Timeout"] == {"Ref": parameter}
    substitutions = SAM["Resources"]["IncidentStateMachine"]["Properties"]["DefinitionSubstitutions"]
    assert substitutions[parameter] == {"Ref": parameter} and f"${{{parameter}}}" in ASL_TEXT


def _agent_env(template: dict[str, Any], function: str) -> dict[str, Any]:
    return template["Resources"][function]["Properties"]["Environment"]["Variables"]


def test_an_openai_compatible_model_is_deployable():
    default = cfn()

    def layer_ids(template):
        return [k for k in template["Resources"] if k.startswith("OpenAiCompatibleLayer")]

    assert layer_ids(default) == []
    chosen = resolve_conditions(
        translated(),
        {
            **defaults(),
            "ResponderModel": "openai:gpt-4o-mini",
            "ModelBaseUrl": "https://models.example.com/v1",
            "ModelApiKeyParameterName": "/incident-response/model-key",
        },
    )
    (layer,) = layer_ids(chosen)  # SAM suffixes layer versions with a content hash
    for function in MCP_SERVER_OF:
        props = chosen["Resources"][function]["Properties"]
        assert {"Ref": layer} in props["Layers"]
        env = _agent_env(chosen, function)
        assert env["MODEL_BASE_URL"] == {"Ref": "ModelBaseUrl"}
        assert env["MODEL_API_KEY_PARAMETER"] == {"Ref": "ModelApiKeyParameterName"}
        role = ref_name(props["Role"])
        # (The member list is a parameter too, of the stack's own: not the model's key.)
        model_key = [s for s in role_statements(role, chosen) if s.get("Sid") != "ReadTheMemberList"]
        assert any("ssm:GetParameter" in as_list(s["Action"]) for s in model_key)
        assert not any(
            "ssm:GetParameter" in as_list(s["Action"])
            for s in role_statements(role, default)
            if s.get("Sid") != "ReadTheMemberList"
        )
    # The function's settings accept that environment, and refuse the half-configured one.
    base = {
        "RESPONDER_MODEL": "openai:gpt-4o-mini",
        "MCP_AUTH": "iam",
        "INCIDENT_CONTEXT_TABLE": "t",
        "ARTIFACTS_BUCKET": "b",
        "INCIDENT_TTL_DAYS": "7",
        "AGENT_RECURSION_LIMIT": "12",
        "AGENT_TOKEN_CAP": "100000",
    }
    AgentSettings.from_env({**base, "MODEL_BASE_URL": "https://models.example.com/v1"})
    from incident_responder.core.settings import ConfigurationError

    with pytest.raises(ConfigurationError, match="MODEL_BASE_URL"):
        AgentSettings.from_env(base)


def test_the_model_parameter_admits_only_deployable_models():
    import re

    pattern = SAM["Parameters"]["ResponderModel"]["AllowedPattern"]
    for good in (
        "offline",
        DEFAULT_MODEL,
        "bedrock_converse:anthropic.claude-haiku-4-5-20251001-v1:0",
        "openai:gpt-4o",
    ):
        assert re.fullmatch(pattern, good)
    # An ARN is not a form the agents' IAM can be scoped to: refused rather than deployed to fail with AccessDenied.
    arn = "bedrock_converse:arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/abc"
    for bad in ("", "gpt", "ollama:llama3", "bedrock_converse:", arn):
        assert not re.fullmatch(pattern, bad)


def test_one_default_model_for_the_template_samconfig_makefile_and_code():
    import re

    assert SAM["Parameters"]["ResponderModel"]["Default"] == DEFAULT_MODEL
    assert f'ResponderModel=\\"{DEFAULT_MODEL}\\"' in (REPO / "samconfig.toml").read_text()
    (makefile_id,) = re.findall(r"^BEDROCK_MODEL_ID \?= (\S+)$", (REPO / "Makefile").read_text(), re.M)
    assert f"bedrock_converse:{makefile_id}" == DEFAULT_MODEL
    assert end_of_life(DEFAULT_MODEL_ID) is None


def test_the_template_refuses_a_model_past_its_end_of_life():
    (rule,) = SAM["Rules"].values()
    (assertion,) = rule["Assertions"]
    listed = assertion["Assert"]["Fn::Not"][0]["Fn::Contains"][0]
    assert listed == end_of_life_specs()
    for spec in listed:
        with pytest.raises(StackRuleError, match="end-of-life"):
            resolve_conditions(translated(), {**defaults(), "ResponderModel": spec})
    resolve_conditions(translated(), {**defaults(), "ResponderModel": DEFAULT_MODEL})  # the default passes


@pytest.mark.parametrize("function", sorted(MCP_SERVER_OF))
def test_agents_may_invoke_the_configured_model_through_its_profile_and_nothing_else(function):
    statements = model_statements(function, DEFAULT_MODEL)
    assert {a for s in statements for a in as_list(s["Action"])} == {"bedrock:InvokeModel"}  # Converse, no streaming
    profile = f"arn:aws:bedrock:us-east-1:123456789012:inference-profile/{DEFAULT_MODEL_ID}"
    model = base_model_id(DEFAULT_MODEL_ID)
    assert may_invoke(statements, profile)
    # The global profile routes to any commercial Region: its foundation model there, reached through the profile.
    for region in ("us-east-1", "eu-west-3", "ap-southeast-2", ""):
        assert may_invoke(statements, f"arn:aws:bedrock:{region}::foundation-model/{model}", through_profile=profile)
        assert not may_invoke(statements, f"arn:aws:bedrock:{region}::foundation-model/{model}")
    other_profile = "arn:aws:bedrock:us-east-1:123456789012:inference-profile/global.anthropic.claude-opus-4-5-v1:0"
    assert not may_invoke(statements, other_profile)
    assert not may_invoke(
        statements, "arn:aws:bedrock:us-east-1::foundation-model/anthropic.claude-opus-4-5-v1:0", other_profile
    )
    # A model invoked in this Region on demand (no profile): that foundation model, there only.
    statements = model_statements(function, "bedrock_converse:amazon.nova-lite-v1:0")
    assert may_invoke(statements, "arn:aws:bedrock:us-east-1::foundation-model/amazon.nova-lite-v1:0")
    assert not may_invoke(statements, "arn:aws:bedrock:us-west-2::foundation-model/amazon.nova-lite-v1:0")
    assert not may_invoke(statements, f"arn:aws:bedrock:us-east-1::foundation-model/{model}")
    # No Bedrock model, no Bedrock permission.
    assert model_statements(function, "offline") == []
    assert model_statements(function, "openai:gpt-4o") == []


# -- 8. alarms on the project's own metrics watch metrics the functions emit ------------------------
def test_alarms_on_project_metrics_name_what_a_handler_emits():
    import re

    emitted: set[tuple[str, str]] = set()
    for handler in (REPO / "handlers").glob("*.py"):
        text = handler.read_text()
        # A handler's metrics are written by the telemetry module of its capability, with the handler's Metrics.
        for module in re.findall(r"^from (incident_responder\.\w+\.telemetry) import", text, re.MULTILINE):
            text += (REPO / module.replace(".", "/")).with_suffix(".py").read_text()
        services = re.findall(r'Metrics\(namespace="IncidentResponder", service="(\w+)"\)', text)
        names = re.findall(r'name="(\w+)"', text) + re.findall(r'"(Approval\w+)"', text)
        emitted |= {(service, name) for service in services for name in names}
    alarms = [a for a in resources("AWS::CloudWatch::Alarm").values() if a["Namespace"] == "IncidentResponder"]
    assert len(alarms) >= 2
    for alarm in alarms:
        (dimension,) = alarm["Dimensions"]
        assert dimension["Name"] == "service"
        assert (dimension["Value"], alarm["MetricName"]) in emitted, alarm["MetricName"]
        assert ref_name(alarm["AlarmActions"][0]) == "OperatorTopic"


# -- the end of an incident: its report, its link, the optional chat channel ----------------------------
def test_the_report_function_reads_the_incident_and_writes_only_reports_and_histories():
    statements = role_statements(function_role("ReportFunction"))
    granted = {
        (a, str(r))
        for s in statements
        if s["Effect"] == "Allow"
        for a in as_list(s["Action"])
        for r in as_list(s["Resource"])
    }
    actions = {a for a, _ in granted if not a.startswith("xray:")}
    assert actions == {
        "dynamodb:GetItem",
        "dynamodb:PutItem",  # the ended incident into its function's history (tests/validation/test_memory_posture.py)
        "s3:GetObject",
        "s3:PutObject",
        "states:GetExecutionHistory",
        "states:DescribeStateMachineForExecution",
        "sns:Publish",
        "kms:GenerateDataKey*",
        "kms:Decrypt",
        "sqs:SendMessage",  # an end it could not report, to its dead-letter queue (SAM grants it)
    }
    assert {r for a, r in granted if a == "sqs:SendMessage"} == {
        str({"Fn::GetAtt": ["ExecutionEndedDeadLetterQueue", "Arn"]})
    }
    # It writes (and links, the pre-signed URL acting with its role) only under reports/; reads incidents/ too.
    assert [r for a, r in granted if a == "s3:PutObject"] and all(
        "/reports/*" in r for a, r in granted if a == "s3:PutObject"
    )
    assert all("/reports/*" in r or "/incidents/*" in r for a, r in granted if a == "s3:GetObject")
    assert allows(statements, "sns:Publish", "IncidentNewsTopic") and allows(
        statements, "kms:GenerateDataKey*", "TopicsKey"
    )
    # Every end of this state machine's executions reaches it (the reconcile function only the failed ones).
    (rule,) = [
        p for p in resources("AWS::Events::Rule").values()
        if any(ref_name(t.get("Arn")) == "ReportFunction" for t in p.get("Targets", []))
    ]  # fmt: skip
    pattern = rule["EventPattern"]
    assert set(pattern["detail"]["status"]) == {"SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED"}
    assert [ref_name(a) for a in pattern["detail"]["stateMachineArn"]] == ["IncidentStateMachine"]
    env = cfn()["Resources"]["ReportFunction"]["Properties"]["Environment"]["Variables"]
    assert env["CHAT_TOPIC_ARN"] == "" and env["REPORT_LINK_HOURS"] == {"Ref": "ReportLinkHours"}
    assert defaults()["ReportLinkHours"] == "12" and translated()["Parameters"]["ReportLinkHours"]["MaxValue"] == 168


def test_chat_is_off_by_default():
    kinds = {v["Type"] for v in cfn()["Resources"].values()}
    assert not {k for k in kinds if k.startswith("AWS::Chatbot::")} and "ChatTopic" not in cfn()["Resources"]


@pytest.mark.parametrize(
    ("parameters", "kind"),
    [
        (
            {"ChatSlackWorkspaceId": "T0123ABC", "ChatSlackChannelId": "C0123ABC"},
            "AWS::Chatbot::SlackChannelConfiguration",
        ),
        (
            {"ChatTeamsTenantId": "tenant", "ChatTeamsTeamId": "team", "ChatTeamsChannelId": "19%3Aabc%40thread.tacv2"},
            "AWS::Chatbot::MicrosoftTeamsChannelConfiguration",
        ),
    ],
)
def test_a_chat_channel_receives_news_and_can_run_nothing(parameters, kind):
    template = resolve_conditions(translated(), {**defaults(), **parameters})
    (channel,) = resources(kind, template).values()
    assert [ref_name(t) for t in channel["SnsTopicArns"]] == ["ChatTopic"]
    assert channel["GuardrailPolicies"] == [{"Fn::Sub": "arn:${AWS::Partition}:iam::aws:policy/AWSDenyAll"}]
    role = template["Resources"][ref_name(channel["IamRoleArn"])]["Properties"]
    assert not role.get("Policies") and not role.get("ManagedPolicyArns")
    assert "chatbot.amazonaws.com" in str(role["AssumeRolePolicyDocument"])
    assert ref_name(resources("AWS::SNS::Topic", template)["ChatTopic"]["KmsMasterKeyId"]) == "TopicsKey"
    report = template["Resources"]["ReportFunction"]["Properties"]
    assert ref_name(report["Environment"]["Variables"]["CHAT_TOPIC_ARN"]) == "ChatTopic"
    statements = role_statements(ref_name(report["Role"]), template)
    assert allows(statements, "sns:Publish", "ChatTopic")
    # The approval request function tells the channel an incident waits (never the links: see incident_responder/notify/chat.py).
    request = template["Resources"]["ApprovalRequestFunction"]["Properties"]
    assert ref_name(request["Environment"]["Variables"]["CHAT_TOPIC_ARN"]) == "ChatTopic"
    assert allows(role_statements(ref_name(request["Role"]), template), "sns:Publish", "ChatTopic")
    others = {k for k in resources("AWS::SNS::Topic", template)} - {"ChatTopic"}
    assert others and kind not in str([template["Resources"][t] for t in others])


# -- the remediate role can never change the responder itself -------------------------------------------------
def decide(statements: list[dict[str, Any]], action: str, resource: str, tags: dict[str, str]) -> str:
    """IAM's answer for one request by these identity statements: an explicit Deny wins, then any Allow."""
    from fnmatch import fnmatchcase

    def matches(s: dict[str, Any]) -> bool:
        if not any(fnmatchcase(action, a) for a in as_list(s["Action"])):
            return False
        if not any(fnmatchcase(resource, r) for r in as_list(s["Resource"])):
            return False
        for conditions in s.get("Condition", {}).values():
            for key, wanted in conditions.items():
                # Only resource tags are modelled; a statement conditioned on anything else does not match here.
                if not key.startswith("aws:ResourceTag/") or tags.get(key.split("/", 1)[1]) not in as_list(wanted):
                    return False
        return True

    if any(s["Effect"] == "Deny" and matches(s) for s in statements):
        return "denied"
    return "allowed" if any(s["Effect"] == "Allow" and matches(s) for s in statements) else "not allowed"


ROLE_ARN = "arn:aws:iam::123456789012:role/"
FUNCTION_ARN = "arn:aws:lambda:us-east-1:123456789012:function:"
SECRET_ARN = "arn:aws:secretsmanager:us-east-1:123456789012:secret:"
QUEUE_ARN = "arn:aws:sqs:us-east-1:123456789012:"
ONBOARDED_TAGS = {"incident-responder:onboarded": "true"}


@pytest.mark.parametrize(
    "action, resource, tags, answer",
    [
        ("iam:PutRolePolicy", ROLE_ARN + "data-processor-role", ONBOARDED_TAGS, "allowed"),
        ("iam:PutRolePolicy", ROLE_ARN + "data-processor-role", {}, "not allowed"),
        # The stack's own roles and functions, even when someone tagged them as onboarded:
        ("iam:PutRolePolicy", ROLE_ARN + "incident-responder-RemediateFunctionRole-1A2B3C", ONBOARDED_TAGS, "denied"),
        ("iam:AttachRolePolicy", ROLE_ARN + "incident-responder-IncidentStateMachineRole-9Z", ONBOARDED_TAGS, "denied"),
        (
            "iam:PutRolePolicy",
            ROLE_ARN + "renamed",
            {**ONBOARDED_TAGS, "incident-responder:component": "responder"},
            "denied",
        ),
        ("lambda:UpdateFunctionConfiguration", FUNCTION_ARN + "incident-responder-Ingest-X1", ONBOARDED_TAGS, "denied"),
        ("lambda:PutFunctionConcurrency", FUNCTION_ARN + "data-processor", ONBOARDED_TAGS, "allowed"),
        # Nor widen its own scope:
        ("iam:TagRole", ROLE_ARN + "any-role", ONBOARDED_TAGS, "denied"),
        ("lambda:TagResource", FUNCTION_ARN + "any", {}, "denied"),
        ("ec2:CreateTags", "arn:aws:ec2:us-east-1:123456789012:security-group/sg-1", {}, "denied"),
        ("kms:PutKeyPolicy", "arn:aws:kms:us-east-1:123456789012:key/k", ONBOARDED_TAGS, "denied"),
        ("iam:CreatePolicyVersion", "arn:aws:iam::123456789012:policy/p", {}, "denied"),
        # The secrets and queues of onboarded functions, and nothing else:
        ("secretsmanager:RestoreSecret", SECRET_ARN + "orders-api/payment-key-AbCdEf", ONBOARDED_TAGS, "allowed"),
        ("secretsmanager:DeleteSecret", SECRET_ARN + "orders-api/payment-key-AbCdEf", ONBOARDED_TAGS, "allowed"),
        ("secretsmanager:RestoreSecret", SECRET_ARN + "someone-elses-AbCdEf", {}, "not allowed"),
        ("secretsmanager:DescribeSecret", SECRET_ARN + "someone-elses-AbCdEf", {}, "not allowed"),
        ("secretsmanager:GetSecretValue", SECRET_ARN + "orders-api/payment-key-AbCdEf", ONBOARDED_TAGS, "not allowed"),
        ("secretsmanager:PutResourcePolicy", SECRET_ARN + "orders-api/payment-key-AbCdEf", ONBOARDED_TAGS, "denied"),
        ("secretsmanager:TagResource", SECRET_ARN + "any-AbCdEf", {}, "denied"),
        ("sqs:SetQueueAttributes", QUEUE_ARN + "queue-consumer-queue", ONBOARDED_TAGS, "allowed"),
        ("sqs:SetQueueAttributes", QUEUE_ARN + "someone-elses-queue", {}, "not allowed"),
        ("sqs:GetQueueAttributes", QUEUE_ARN + "someone-elses-queue", {}, "not allowed"),
        ("sqs:SetQueueAttributes", QUEUE_ARN + "incident-responder-AlertsDeadLetterQueue-1A", ONBOARDED_TAGS, "denied"),
        (
            "sqs:SetQueueAttributes",
            QUEUE_ARN + "renamed",
            {**ONBOARDED_TAGS, "incident-responder:component": "responder"},
            "denied",
        ),
        ("sqs:TagQueue", QUEUE_ARN + "any", {}, "denied"),
        ("sqs:AddPermission", QUEUE_ARN + "queue-consumer-queue", ONBOARDED_TAGS, "denied"),
        ("sqs:ReceiveMessage", QUEUE_ARN + "queue-consumer-queue", ONBOARDED_TAGS, "not allowed"),
    ],
)
def test_the_remediate_role_never_changes_the_responder_nor_widens_its_scope(action, resource, tags, answer):
    statements = render(role_statements(function_role("RemediateFunction")), defaults())
    assert decide(statements, action, resource, tags) == answer


def test_every_role_of_the_stack_is_named_after_it_or_tagged_as_the_responders():
    """CloudFormation names what it creates <stack>-<logical id>-<suffix>; the tag covers a role named otherwise."""
    for logical_id, resource in cfn()["Resources"].items():
        if resource["Type"] not in ("AWS::IAM::Role", "AWS::Lambda::Function", "AWS::StepFunctions::StateMachine"):
            continue
        props = resource["Properties"]
        named = props.get("RoleName") or props.get("FunctionName")
        tags = props.get("Tags", [])
        tagged = (
            {"Key": "incident-responder:component", "Value": "responder"} in tags if isinstance(tags, list) else False
        )
        assert tagged or named is None, f"{logical_id} is named {named} and not tagged as the responder's"


# -- an execution's end is handled or kept ----------------------------------------------------------
@pytest.mark.parametrize("function", ["ReportFunction", "ReconcileFunction"])
def test_an_execution_end_that_could_not_be_handled_is_kept_and_alarmed(function):
    """Lambda retries a failed asynchronous invocation twice and then drops the event; EventBridge drops one it
    could not deliver once its retries run out. An incident's report or its reconciliation would be lost with no
    trace: both ends go to one queue, which EventBridge may write to for these two rules only, and an alarm on it."""
    queue = "ExecutionEndedDeadLetterQueue"
    template = cfn()["Resources"]
    assert template[queue]["Type"] == "AWS::SQS::Queue"
    assert ref_name(template[function]["Properties"]["DeadLetterConfig"]["TargetArn"]) == queue
    assert allows(role_statements(function_role(function)), "sqs:SendMessage", queue)
    (target,) = template[f"{function}ExecutionEnded"]["Properties"]["Targets"]
    assert ref_name(target["DeadLetterConfig"]["Arn"]) == queue
    (policy,) = [p for p in resources("AWS::SQS::QueuePolicy").values() if queue in map(ref_name, p["Queues"])]
    (grant,) = policy["PolicyDocument"]["Statement"]
    assert grant["Principal"] == {"Service": "events.amazonaws.com"} and grant["Action"] == "sqs:SendMessage"
    assert ref_name(grant["Resource"]) == queue
    assert sorted(map(ref_name, grant["Condition"]["ArnEquals"]["aws:SourceArn"])) == [
        "ReconcileFunctionExecutionEnded",
        "ReportFunctionExecutionEnded",
    ]
    (alarm,) = [
        a
        for a in resources("AWS::CloudWatch::Alarm").values()
        if a.get("Namespace") == "AWS/SQS" and queue in str(a.get("Dimensions"))
    ]
    assert alarm["MetricName"] == "ApproximateNumberOfMessagesVisible" and alarm["Threshold"] == 1
    assert [ref_name(a) for a in alarm["AlarmActions"]] == ["OperatorTopic"]


# -- the diagnostics tools read what they report, and no value ------------------------------------------------
KEY_ARN = "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
TABLE_ARN = "arn:aws:dynamodb:us-east-1:123456789012:table/"
PARAMETER_ARN = "arn:aws:ssm:us-east-1:123456789012:parameter/"
# Every call get_function_metrics, get_recent_changes and get_dependencies make (incident_responder/account/metrics.py,
# changes.py and dependencies.py, and the account readers they reuse), on the resource each names.
SIGNALS_CALLS = [
    ("lambda:GetFunctionConfiguration", FUNCTION_ARN + "orders-api"),
    ("lambda:GetFunctionConcurrency", FUNCTION_ARN + "orders-api"),
    ("lambda:GetAccountSettings", "*"),
    ("cloudwatch:GetMetricData", "*"),
    ("cloudwatch:ListMetrics", "*"),
    ("cloudtrail:LookupEvents", "*"),
    ("lambda:ListEventSourceMappings", "*"),
    ("lambda:ListVersionsByFunction", FUNCTION_ARN + "orders-api"),
    ("lambda:ListAliases", FUNCTION_ARN + "orders-api"),
    ("lambda:GetFunctionEventInvokeConfig", FUNCTION_ARN + "orders-api"),
    ("sqs:GetQueueUrl", QUEUE_ARN + "queue-consumer-queue"),
    ("sqs:GetQueueAttributes", QUEUE_ARN + "queue-consumer-queue"),
    ("secretsmanager:DescribeSecret", SECRET_ARN + "orders-api/payment-key-AbCdEf"),
    ("ssm:DescribeParameters", "*"),
    ("kms:DescribeKey", KEY_ARN),
    ("kms:GetKeyPolicy", KEY_ARN),
    ("iam:ListRolePolicies", ROLE_ARN + "orders-api-role"),
    ("iam:GetRolePolicy", ROLE_ARN + "orders-api-role"),
    ("iam:ListAttachedRolePolicies", ROLE_ARN + "orders-api-role"),
    ("dynamodb:DescribeTable", TABLE_ARN + "orders-api-orders"),
]


ARTIFACTS = "arn:aws:s3:::artifacts"


def diagnostics_statements() -> list[dict[str, Any]]:
    """The diagnostics server's statements as deployed; a stack resource's ARN (GetAtt) written as its logical id."""
    statements = render(
        role_statements(function_role("DiagnosticsMcpFunction")), {**defaults(), "ArtifactsBucket.Arn": ARTIFACTS}
    )
    for statement in statements:
        resources = [ref_name(r) or r if isinstance(r, dict) else r for r in as_list(statement["Resource"])]
        statement["Resource"] = resources
    return statements


@pytest.mark.parametrize("action, resource", SIGNALS_CALLS)
def test_the_diagnostics_server_may_make_every_call_of_the_metrics_changes_and_dependencies_tools(action, resource):
    statements = diagnostics_statements()
    assert decide(statements, action, resource, {}) == "allowed"


@pytest.mark.parametrize(
    "action, resource",
    [
        ("secretsmanager:GetSecretValue", SECRET_ARN + "orders-api/payment-key-AbCdEf"),
        ("ssm:GetParameter", PARAMETER_ARN + "orders-api/config"),
        ("ssm:GetParameters", PARAMETER_ARN + "orders-api/config"),
        ("ssm:GetParametersByPath", PARAMETER_ARN + "orders-api"),
        ("ssm:GetParameterHistory", PARAMETER_ARN + "orders-api/config"),
        ("kms:Decrypt", KEY_ARN),
        ("sqs:ReceiveMessage", QUEUE_ARN + "queue-consumer-queue"),
        ("dynamodb:GetItem", TABLE_ARN + "orders-api-orders"),
        ("dynamodb:Scan", TABLE_ARN + "orders-api-orders"),
    ],
)
def test_the_diagnostics_server_reads_no_secret_parameter_message_or_item_and_decrypts_nothing(action, resource):
    statements = diagnostics_statements()
    assert decide(statements, action, resource, {}) == "not allowed"
    granted = {a for s in statements if s["Effect"] == "Allow" for a in as_list(s["Action"])}
    assert not {a for a in granted if a.endswith("*") or a.startswith(("ssm:GetParameter", "kms:Decrypt"))}
    assert "secretsmanager:GetSecretValue" not in granted


@pytest.mark.parametrize(
    "action, key, decided",
    [
        ("s3:GetObject", "runbooks/function/orders-api.md", "allowed"),
        ("s3:GetObject", "runbooks/mode/eni-limit-reached.md", "allowed"),
        ("s3:GetObject", "incidents/orders-api-1/proposal.json", "not allowed"),
        ("s3:GetObject", "reports/orders-api-1/report.html", "not allowed"),
        ("s3:PutObject", "runbooks/function/orders-api.md", "not allowed"),
        ("s3:DeleteObject", "runbooks/function/orders-api.md", "not allowed"),
    ],
)
def test_the_diagnostics_server_reads_the_runbooks_and_nothing_else_of_the_artifacts(action, key, decided):
    assert decide(diagnostics_statements(), action, f"{ARTIFACTS}/{key}", {}) == decided


def test_runbooks_never_expire_with_the_incidents_artifacts():
    rules = SAM["Resources"]["ArtifactsBucket"]["Properties"]["LifecycleConfiguration"]["Rules"]
    expiring = [r for r in rules if "ExpirationInDays" in r]
    assert expiring and all(r.get("Prefix") in ("incidents/", "reports/") for r in expiring)


def test_the_metrics_changes_and_dependencies_reads_are_statements_of_their_own():
    statements = role_statements(function_role("DiagnosticsMcpFunction"))
    own = {s["Sid"]: s for s in statements if s.get("Sid") in SIGNALS_STATEMENTS}
    assert {sid: sorted(as_list(s["Action"])) for sid, s in own.items()} == SIGNALS_STATEMENTS
    assert own["ReadMetricsChangesAndDependencies"]["Resource"] == "*"
    assert all(s["Effect"] == "Allow" and "Condition" not in s for s in own.values())
    for sid in ("ReadVersionsAndDestinations", "ReadDependencyTables"):
        assert "*" not in as_list(own[sid]["Resource"]), sid


SIGNALS_STATEMENTS = {
    "ReadMetricsChangesAndDependencies": [
        "cloudwatch:GetMetricData",
        "cloudwatch:ListMetrics",
        "lambda:GetAccountSettings",
        "ssm:DescribeParameters",
    ],
    "ReadVersionsAndDestinations": ["lambda:GetFunctionEventInvokeConfig", "lambda:ListVersionsByFunction"],
    "ReadDependencyTables": ["dynamodb:DescribeTable"],
}


def test_the_renamed_news_topic_keeps_its_old_output_name():
    """IncidentNewsTopic was ProposalTopic: the old output still answers, with the same topic."""
    outputs = SAM["Outputs"]
    assert ref_name(outputs["IncidentNewsTopicArn"]["Value"]) == "IncidentNewsTopic"
    assert ref_name(outputs["ProposalTopicArn"]["Value"]) == "IncidentNewsTopic"
    assert "ProposalTopic" not in SAM["Resources"]


# -- incidents that overlap: the lease's holder, an end that leaves a change unverified -------------------------
def test_the_remediate_role_may_ask_whether_a_lease_holders_execution_still_runs_and_nothing_more():
    """A lease passes on only once its holder's execution has ended (remediation/lease.py): the remediate role
    describes the lifecycle's executions, named by the state machine's name (a Ref to it would make a cycle: the
    state machine invokes this function)."""
    statements = render(role_statements(function_role("RemediateFunction")), defaults())
    name = render(SAM["Resources"]["IncidentStateMachine"]["Properties"]["Name"], defaults())
    executions = "arn:aws:states:us-east-1:123456789012:execution:"
    incident = f"{executions}{name}:data-processor-20261127T000000-0123456789"
    assert decide(statements, "states:DescribeExecution", incident, {}) == "allowed"
    assert decide(statements, "states:DescribeExecution", f"{executions}another-machine:x", {}) == "not allowed"
    for action in ("states:StopExecution", "states:SendTaskSuccess", "states:StartExecution"):
        assert decide(statements, action, incident, {}) == "not allowed"


def test_reconcile_may_alarm_the_operators_of_an_unverified_change_and_stopped_executions_alarm():
    template = cfn()["Resources"]
    env = template["ReconcileFunction"]["Properties"]["Environment"]["Variables"]
    assert ref_name(env["OPERATOR_TOPIC_ARN"]) == "OperatorTopic"
    statements = role_statements(function_role("ReconcileFunction"))
    assert allows(statements, "sns:Publish", "OperatorTopic")
    for action in ("kms:GenerateDataKey*", "kms:Decrypt"):
        assert allows(statements, action, "TopicsKey")
    (aborted,) = [a for a in resources("AWS::CloudWatch::Alarm").values() if a.get("MetricName") == "ExecutionsAborted"]
    assert aborted["Namespace"] == "AWS/States" and [ref_name(a) for a in aborted["AlarmActions"]] == ["OperatorTopic"]
    assert ref_name(aborted["Dimensions"][0]["Value"]) == "IncidentStateMachine"


# -- a real account: a second stack, a noisy neighbour, log costs, Regions, the sweep's patience ---------------
# Resource types whose names are unique in an account and Region, and the property that names them.
NAMED = {
    "AWS::Scheduler::Schedule": "Name",
    "AWS::Events::Rule": "Name",
    "AWS::SNS::Topic": "TopicName",
    "AWS::StepFunctions::StateMachine": "StateMachineName",
    "AWS::Logs::LogGroup": "LogGroupName",
    "AWS::KMS::Alias": "AliasName",
    "AWS::Lambda::Function": "FunctionName",
    "AWS::DynamoDB::Table": "TableName",
    "AWS::SQS::Queue": "QueueName",
    "AWS::S3::Bucket": "BucketName",
    "AWS::IAM::Role": "RoleName",
    "AWS::Chatbot::SlackChannelConfiguration": "ConfigurationName",
    "AWS::Chatbot::MicrosoftTeamsChannelConfiguration": "ConfigurationName",
}


def test_a_second_stack_in_the_account_and_region_names_nothing_the_first_one_named():
    """A fixed name (SAM names a ScheduleV2 schedule after its logical id) makes the second stack fail to create."""
    template = translated()
    named = {}
    for logical_id, resource in template["Resources"].items():
        name = resource.get("Properties", {}).get(NAMED.get(resource["Type"], ""))
        if name is not None:
            named[logical_id] = name
    assert "SweepFunctionEvery15Minutes" in named  # the schedule is among those checked
    for logical_id, name in named.items():
        rendered = {
            stack: render(
                name, {"AWS::StackName": stack, "AWS::StackId": f"arn:aws:cloudformation:r:a:stack/{stack}/{stack}-id"}
            )
            for stack in ("incident-responder", "incident-responder-staging")
        }
        assert len(set(map(str, rendered.values()))) == 2, f"{logical_id}: one name for every stack: {name}"


def test_the_sweep_schedules_name_fits_schedulers_limit_for_any_deployable_stack():
    (schedule,) = resources("AWS::Scheduler::Schedule").values()
    stack = "s" * 61  # the longest stack name the state machine's name (80 characters) leaves room for
    name = render(
        schedule["Name"],
        {"AWS::StackName": stack, "AWS::StackId": f"arn:aws:cloudformation:r:a:stack/{stack}/{'0' * 36}"},
    )
    assert len(name) <= 64, name


# The sweep stops an execution whose status has not changed for StuckAfterMinutes. That must be longer than the
# state machine itself may keep an incident in any status, or it ends healthy work (a verification settling for
# an hour, an investigation retried after a timeout). Measured on the definition, every parameter at its maximum.
def _asl_at_maxima() -> dict[str, Any]:
    import json
    import re

    from incident_responder.lab.engine import substitute

    parameters = SAM["Parameters"]
    machine = SAM["Resources"]["IncidentStateMachine"]["Properties"]["DefinitionSubstitutions"]
    values = {k: "x" for k in machine} | {
        k: str(v.get("MaxValue", v.get("Default"))) for k, v in parameters.items() if v["Type"] == "Number"
    }
    values["IncidentTtlSeconds"] = "1"
    text = substitute(ASL_TEXT, values)
    assert not re.search(r"\$\{\w+\}", text)
    return json.loads(text)["States"]


def _seconds(value: Any) -> float:
    import re

    import jsonata

    if isinstance(value, int | float):
        return value
    return jsonata.Jsonata(re.fullmatch(r"\{%(.*)%\}", value, re.S).group(1)).evaluate(None)


def _task_seconds(state: dict[str, Any]) -> float:
    """A task's longest run: every attempt to its TimeoutSeconds (10 s for a service call without one) and every
    wait at its full length, except attempts Lambda refused before running anything (``Lambda.*`` errors)."""
    attempt = _seconds(state["TimeoutSeconds"]) if "TimeoutSeconds" in state else 10
    total = attempt
    for retrier in state.get("Retry", []):
        interval, rate = retrier.get("IntervalSeconds", 1), retrier.get("BackoffRate", 2.0)
        cap, attempts = retrier.get("MaxDelaySeconds", float("inf")), retrier.get("MaxAttempts", 3)
        total += sum(min(interval * rate**n, cap) for n in range(attempts))
        if not all(error.startswith("Lambda.") for error in retrier["ErrorEquals"]):
            total += attempts * attempt
    return total


def longest_in_each_status() -> dict[str, float]:
    """Status -> the longest the state machine may stay in it (from its write to the next status's write)."""
    import re

    from incident_responder.core.status import ACTIVE_STATUSES
    from incident_responder.state.lifecycle import WAITING_STATUSES

    states = _asl_at_maxima()

    def is_status(name: str) -> bool:
        return re.fullmatch(r"[A-Z_]+", name) is not None

    def following(state: dict[str, Any]) -> list[str]:
        found = [state["Next"]] if "Next" in state else []
        found += [c["Next"] for c in state.get("Choices", []) + state.get("Catch", [])]
        return found + ([state["Default"]] if "Default" in state else [])

    def longest(name: str, seen: tuple[str, ...]) -> float:
        state = states[name]
        here = _task_seconds(state) if state["Type"] == "Task" else _seconds(state.get("Seconds", 0))
        rest = [longest(n, (*seen, name)) for n in following(state) if not is_status(n) and n not in seen]
        return here + max(rest, default=0)

    found = {n: longest(n, ()) for n in states if n in ACTIVE_STATUSES and n not in WAITING_STATUSES}
    assert {"INVESTIGATING", "PROPOSING", "REVIEWING", "REMEDIATING", "VERIFYING", "ROLLING_BACK"} <= set(found)
    return found


def test_the_sweep_waits_longer_than_the_state_machine_may_keep_an_incident_in_any_status():
    stuck = SAM["Parameters"]["StuckAfterMinutes"]
    assert stuck["Default"] >= stuck["MinValue"]
    for status, seconds in longest_in_each_status().items():
        assert seconds < stuck["MinValue"] * 60, f"{status} may last {seconds / 60:.0f} min"


def test_each_function_logs_to_a_group_that_expires():
    template = cfn()
    groups = resources("AWS::Logs::LogGroup", template)
    retention = SAM["Parameters"]["LogRetentionDays"]
    assert int(retention["Default"]) in retention["AllowedValues"]  # CloudWatch Logs accepts only some values
    for function, props in resources("AWS::Lambda::Function", template).items():
        group = ref_name(props.get("LoggingConfig", {}).get("LogGroup"))
        assert group in groups, f"{function} logs to a group that never expires"
        assert groups[group]["RetentionInDays"] == {"Ref": "LogRetentionDays"} or groups[group][
            "RetentionInDays"
        ] == int(retention["Default"]), group
        # Lambda does not create a custom group whose name begins with aws/ (logs would be lost).
        assert not str(render(groups[group]["LogGroupName"], defaults())).lstrip("/").startswith("aws/")


# Lambda SnapStart is in every commercial Region but Asia Pacific (New Zealand) and Asia Pacific (Taipei).
NO_SNAPSTART = [
    ("aws", "ap-southeast-6"),
    ("aws", "ap-east-2"),
    ("aws-cn", "cn-north-1"),
    ("aws-us-gov", "us-gov-west-1"),
]


@pytest.mark.parametrize("partition, region", NO_SNAPSTART + [("aws", "us-east-1"), ("aws", "eu-west-1")])
def test_snapstart_is_asked_for_only_where_lambda_offers_it(partition, region):
    supported = (partition, region) not in NO_SNAPSTART
    asked = {**defaults(), "SnapStart": "Enabled", "AWS::Region": region, "AWS::Partition": partition}
    template = resolve_conditions(translated(), asked)
    for function, props in resources("AWS::Lambda::Function", template).items():
        if "SnapStart" in props:
            expected = "PublishedVersions" if supported else "None"
            assert props["SnapStart"] == {"ApplyOn": expected}, f"{function} in {region}"


def test_eventbridges_use_of_the_topics_key_is_held_to_the_incident_topic_not_to_source_keys():
    """SNS asks KMS for the data key on EventBridge's behalf; AWS's examples grant events.amazonaws.com the key with
    no aws:SourceArn / aws:SourceAccount condition, which those requests need not carry. SNS names the topic in
    the encryption context: the grant is held to the incident topic by that instead."""
    (key,) = resources("AWS::KMS::Key").values()
    (grant,) = [
        s for s in key["KeyPolicy"]["Statement"] if s.get("Principal", {}).get("Service") == "events.amazonaws.com"
    ]
    assert "aws:Source" not in str(grant.get("Condition"))
    context = render(grant["Condition"]["StringEquals"]["kms:EncryptionContext:aws:sns:topicArn"], defaults())
    topic = render(resources("AWS::SNS::Topic")["IncidentTopic"]["TopicName"], defaults())
    assert context == f"arn:aws:sns:us-east-1:123456789012:{topic}"


def test_the_responders_functions_keep_concurrency_of_their_own():
    """A noisy neighbour that takes the account's unreserved concurrency throttles only functions without a
    reservation. Zero would throttle every call; Lambda keeps 100 unreserved, so the reservation can be left off."""
    parameter = SAM["Parameters"]["ResponderReservedConcurrency"]
    import re

    pattern = parameter["AllowedPattern"]
    assert not re.fullmatch(pattern, "0") and not re.fullmatch(pattern, "-1") and re.fullmatch(pattern, "")
    assert re.fullmatch(pattern, parameter["Default"]) and int(parameter["Default"]) >= 5
    functions = resources("AWS::Lambda::Function")
    for function, props in functions.items():
        assert props.get("ReservedConcurrentExecutions") == {"Ref": "ResponderReservedConcurrency"}, function
    # Every function reserving the default leaves most of an account's 1,000 to its own functions.
    assert len(functions) * int(parameter["Default"]) <= 200
    # "none" too: sam deploy --guided keeps the default when given an empty value.
    assert re.fullmatch(pattern, "none")
    for none in ("", "none"):
        unreserved = resolve_conditions(translated(), {**defaults(), "ResponderReservedConcurrency": none})
        for function, props in resources("AWS::Lambda::Function", unreserved).items():
            assert "ReservedConcurrentExecutions" not in props, function


def test_the_functions_where_text_enters_take_the_deployments_redaction_patterns():
    """Ingest (the alert's text) and both MCP servers (every tool result) redact with the RedactionPatterns
    parameter; no other function reads it (an agent's alias would otherwise need a new version for it)."""
    readers = {
        name
        for name, resource in SAM["Resources"].items()
        if resource["Type"] == "AWS::Serverless::Function"
        and (resource["Properties"].get("Environment") or {}).get("Variables", {}).get("REDACTION_PATTERNS")
        == {"Ref": "RedactionPatterns"}
    }
    assert readers == {"IngestFunction", "DiagnosticsMcpFunction", "RemediationMcpFunction"}
    assert "REDACTION_PATTERNS" not in SAM["Globals"]["Function"]["Environment"]["Variables"]
    assert SAM["Parameters"]["RedactionPatterns"]["MaxLength"] <= 1024
