"""Chaos faults: each changes what it says, is idempotent, and restore puts back exactly what was there."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from chaos import ChaosError, FaultInjector
from incident_responder.account.drift import diff_configurations
from incident_responder.account.state import read_function_configuration
from incident_responder.investigation.diagnostics import get_config_drift

FAULTS = [
    ("iam_revoke", {"target": "s3"}),
    ("iam_revoke", {"target": "cloudwatch"}),
    ("iam_revoke", {"target": "both"}),
    ("throttle", {"reserved_concurrency": 0}),
    ("throttle", {"reserved_concurrency": 1}),
    ("network_block", {}),
    ("network_acl_ephemeral_ports", {}),
    ("timeout", {"seconds": 1}),
    ("memory", {"mb": 128}),
]


def injector(clients) -> FaultInjector:
    return FaultInjector.for_function("data-processor", clients=clients)


def test_fault_changes_state_is_idempotent_and_restores_exactly(clients, sample, subtests):
    # One account for every fault: each restores exactly, so the next starts from the baseline again.
    for kind, params in FAULTS:
        with subtests.test(f"{kind}-{params}"):
            before = read_function_configuration(clients, "data-processor")
            getattr(injector(clients), kind)(**params)
            after_once = read_function_configuration(clients, "data-processor")
            assert diff_configurations(before, after_once), "the fault changed nothing"
            snapshot = dict(injector(clients).store.slots)

            getattr(injector(clients), kind)(**params)  # again, from a new process's point of view
            assert read_function_configuration(clients, "data-processor") == after_once
            assert injector(clients).store.slots == snapshot

            injector(clients).restore()
            assert diff_configurations(before, read_function_configuration(clients, "data-processor")) == []
            assert injector(clients).store.slots == {}
            assert not get_config_drift(clients, "data-processor").drifted


def test_iam_revoke_s3_removes_only_s3_permissions(clients, sample):
    iam = clients.get("iam")
    iam.put_role_policy(
        RoleName=sample.role_name,
        PolicyName="mixed",
        PolicyDocument=json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [{"Effect": "Allow", "Action": ["s3:ListBucket", "sqs:SendMessage"], "Resource": "*"}],
            }
        ),
    )
    injector(clients).iam_revoke("s3")
    policies = read_function_configuration(clients, "data-processor").role.inline_policies
    assert "s3-access" not in policies
    assert policies["mixed"]["Statement"] == [{"Effect": "Allow", "Action": "sqs:SendMessage", "Resource": "*"}]
    assert {"cloudwatch-logs", "vpc-access"} <= set(policies)


def test_stacked_faults_restore_to_the_first_original(clients, sample):
    before = read_function_configuration(clients, "data-processor")
    chaos = injector(clients)
    chaos.throttle(1)
    chaos.throttle(0)
    chaos.iam_revoke("s3")
    chaos.iam_revoke("both")
    chaos.timeout(1)
    chaos.memory(128)
    chaos.network_block()
    assert [f["kind"] for f in chaos.status()["faults"]] == [
        "throttle",
        "throttle",
        "iam_revoke",
        "iam_revoke",
        "timeout",
        "memory",
        "network_block",
    ]
    chaos.restore()
    assert diff_configurations(before, read_function_configuration(clients, "data-processor")) == []


def test_restore_of_a_policy_that_did_not_exist_removes_it(clients, sample):
    chaos = injector(clients)
    chaos.store.remember("iam.inline.added-later", None)
    clients.get("iam").put_role_policy(
        RoleName=sample.role_name,
        PolicyName="added-later",
        PolicyDocument=json.dumps(
            {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sqs:*", "Resource": "*"}]}
        ),
    )
    chaos.restore()
    assert "added-later" not in read_function_configuration(clients, "data-processor").role.inline_policies


def test_restore_with_nothing_recorded(clients, sample):
    assert injector(clients).restore() == ["nothing to restore"]


def test_restore_after_the_responder_already_removed_the_blocking_rule(clients, sample):
    injector(clients).network_block()
    ec2 = clients.get("ec2")
    added = [slot.split(".egress.") for slot in injector(clients).store.slots if ".egress." in slot]
    for acl_slot, rule in added:  # what the remediation does: the deny rule chaos added is deleted
        ec2.delete_network_acl_entry(NetworkAclId=acl_slot.split(".", 1)[-1], RuleNumber=int(rule), Egress=True)
    lines = injector(clients).restore()
    assert any("already removed" in line for line in lines), lines
    assert injector(clients).store.slots == {}


def test_restore_after_the_responder_already_removed_the_ephemeral_ports_deny(clients, sample):
    injector(clients).network_acl_ephemeral_ports()
    (slot,) = injector(clients).store.slots  # rule 1 held no inbound entry: restore deletes the deny
    acl_id, rule = slot.removeprefix("nacl_ingress.").rsplit(".", 1)
    clients.get("ec2").delete_network_acl_entry(NetworkAclId=acl_id, RuleNumber=int(rule), Egress=False)
    lines = injector(clients).restore()
    assert any("already removed" in line for line in lines), lines
    assert injector(clients).store.slots == {}


def test_network_block_needs_a_vpc(clients, sample):
    clients.get("lambda").update_function_configuration(
        FunctionName="data-processor", VpcConfig={"SubnetIds": [], "SecurityGroupIds": []}
    )
    with pytest.raises(ChaosError, match="not attached to a VPC"):
        injector(clients).network_block()


def test_bad_values_are_refused_before_any_change(clients, sample):
    before = read_function_configuration(clients, "data-processor")
    for call in (lambda c: c.timeout(0), lambda c: c.memory(64), lambda c: c.iam_revoke("redis")):
        with pytest.raises(ChaosError):
            call(injector(clients))
    assert read_function_configuration(clients, "data-processor") == before
    assert injector(clients).store.slots == {}


def _cli(*args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "chaos", *args], env=env, capture_output=True, text=True, timeout=60)


def test_cli_help_explains_itself(lab_env):
    out = _cli("--help", env=lab_env)
    assert out.returncode == 0
    for word in ("iam_revoke", "throttle", "network_block", "timeout", "memory", "restore", "AWS_ENDPOINT_URL"):
        assert word in out.stdout


def test_cli_round_trip_across_processes(clients, sample, lab_env, tmp_path):
    before = read_function_configuration(clients, "data-processor")
    scenario = tmp_path / "s.yaml"
    scenario.write_text("name: t\nfaults:\n  - kind: timeout\n    seconds: 2\n  - kind: iam_revoke\n    target: s3\n")
    assert _cli("apply", str(scenario), env=lab_env).returncode == 0
    assert read_function_configuration(clients, "data-processor").timeout == 2
    status = json.loads(_cli("status", env=lab_env).stdout)
    assert set(status["slots"]) == {"timeout", "iam.inline.s3-access"}
    restored = _cli("restore", env=lab_env)
    assert restored.returncode == 0, restored.stderr
    assert diff_configurations(before, read_function_configuration(clients, "data-processor")) == []


def test_cli_errors_are_clear(lab_env, tmp_path, sample):
    missing = _cli("--function", "no-such-function", "throttle", env=lab_env)
    assert missing.returncode == 1 and "ResourceNotFoundException" in missing.stderr
    assert "Traceback" not in missing.stderr
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nfaults:\n  - kind: throttle\n    reserved_concurrency: 7\n")
    out = _cli("apply", str(bad), env=lab_env)
    assert out.returncode == 2 and "reserved_concurrency" in out.stderr and str(bad) in out.stderr
