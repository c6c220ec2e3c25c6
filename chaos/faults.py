"""The faults: iam_revoke, throttle, network_block, timeout, memory, bad_deploy, kms_disable,
esm_disable, downstream_throttle; and restore.

Each fault reads the function's current state (role, key, mappings, table from the function, never
assumed), records the original of every slot it is about to change, then changes it. Slots:
``iam.inline.<policy>``, ``iam.attached.<arn>``, ``concurrency``, ``timeout``, ``memory``,
``sg.<group>.egress``, ``nacl.<acl>.egress.<rule>``, ``alias.<name>`` (the version it routed to),
``kms.<key id>`` (the key's state), ``esm.<uuid>`` (the mapping's state), ``load.<table>`` (the
table's write load before another writer overloaded it).

A kind that does not apply to the function (no VPC, no alias, no customer-managed key, no event
source mapping, no table) raises :class:`ChaosError` before changing anything.
"""

from __future__ import annotations

import base64
import builtins
import hashlib
import io
import json
import re
import time
import zipfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from botocore.exceptions import ClientError

from chaos.snapshots import SnapshotStore, default_state_dir
from incident_responder.account.iam_policy import action_service, statement_services, statements
from incident_responder.account.state import (
    function_name_of,
    managed_policy_documents,
    read_network,
    read_queue_url,
    read_queue_visibility_timeout,
    read_reserved_concurrency,
    read_role,
    read_secrets,
)
from incident_responder.core.aws import AwsClients
from incident_responder.lab.account import deployment_package
from incident_responder.lab.concurrency import publish_concurrency
from incident_responder.lab.scenario import Fault

IAM_TARGET_SERVICES = {
    "s3": {"s3"},
    "cloudwatch": {"logs"},
    "both": {"s3", "logs"},
    "dynamodb": {"dynamodb"},
    "sqs": {"sqs"},
}
# Lower than any rule a person would write, so the deny is evaluated first.
NACL_DENY_RULE = 1
DEFAULT_DEPLOY_ERROR = "TypeError: Cannot read properties of undefined (reading 'id')"
# How far another writer overloads the table: this many times its provisioned write capacity.
OVERLOAD_FACTOR = 4
# An SQS queue URL, as an environment variable names the queue a function writes to.
QUEUE_URL_RE = re.compile(r"^https?://[^/]+/\d{12}/[A-Za-z0-9_-]{1,80}(\.fifo)?$")
JS_ERRORS = {"Error", "TypeError", "RangeError", "ReferenceError", "SyntaxError", "EvalError", "URIError"}


def _table_of(resource: str) -> str | None:
    """The table a DynamoDB ARN names (a table, or its indexes and streams), else None."""
    parts = resource.split(":", 5)
    if len(parts) < 6 or parts[2] != "dynamodb" or not parts[5].startswith("table/"):
        return None
    table = parts[5].split("/")[1]
    return None if any(c in table for c in "*?") else table


def code_sha256(package: bytes) -> str:
    return base64.b64encode(hashlib.sha256(package).digest()).decode()


def _split_error(error: str, default_type: str) -> tuple[str, str]:
    kind, sep, message = error.partition(":")
    if sep and kind.strip().isidentifier():
        return kind.strip(), message.strip()
    return default_type, error.strip()


def broken_package(runtime: str, handler: str, error: str) -> bytes:
    """A deployment package for ``runtime`` whose handler throws ``error`` ("Type: message") on every call."""
    if not runtime.startswith(("nodejs", "python")):
        raise ChaosError(f"bad_deploy writes Node.js or Python code, not code for the {runtime or 'unknown'} runtime")
    module, _, function = handler.rpartition(".")
    if not module or not function.isidentifier():
        raise ChaosError(f"handler {handler!r} does not name a module and a function")
    if runtime.startswith("nodejs"):
        error_type, message = _split_error(error, "Error")
        define = (
            ""
            if error_type in JS_ERRORS
            else f"class {error_type} extends Error {{\n  constructor(message) {{\n    super(message);\n"
            f"    this.name = {json.dumps(error_type)};\n  }}\n}}\n\n"
        )
        filename = f"{module}.mjs"
        source = (
            f"{define}export const {function} = async (event) => {{\n"
            '  const request = typeof event.body === "string" ? JSON.parse(event.body) : event;\n'
            f"  throw new {error_type}({json.dumps(message)});\n"
            "};\n"
        )
    else:
        error_type, message = _split_error(error, "Exception")
        known = getattr(builtins, error_type, None)
        defined = isinstance(known, type) and issubclass(known, BaseException)
        define = "" if defined else f"class {error_type}(Exception):\n    pass\n\n\n"
        filename = module.replace(".", "/") + ".py"
        source = (
            f"{define}def {function}(event, context):\n"
            '    request = event.get("detail", event)\n'
            f"    raise {error_type}({json.dumps(message)})\n"
        )
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        # A fixed timestamp: the same error always gives the same package (and CodeSha256).
        info = zipfile.ZipInfo(filename, date_time=(2026, 1, 1, 0, 0, 0))
        info.external_attr = 0o644 << 16
        archive.writestr(info, source)
    return buffer.getvalue()


class ChaosError(RuntimeError):
    """A fault that cannot be applied to this function (said plainly, nothing half-changed)."""


def _strip_services(statement: dict[str, Any], services: set[str]) -> dict[str, Any] | None:
    """The statement without the actions of ``services``; None if nothing of it remains."""
    if statement.get("Effect") != "Allow":
        return statement
    if "NotAction" in statement:
        return None  # "everything except X" grants the target too: drop it whole
    actions = statement.get("Action", [])
    actions = [actions] if isinstance(actions, str) else list(actions)
    kept = [a for a in actions if action_service(a) not in services and action_service(a) != "*"]
    if len(kept) == len(actions):
        return statement
    if not kept:
        return None
    return {**statement, "Action": kept if len(kept) > 1 else kept[0]}


def _clean_permission(rule: dict[str, Any]) -> dict[str, Any]:
    """An IpPermission as EC2 returns it, reduced to what AuthorizeSecurityGroupEgress accepts."""
    keep = {"IpProtocol", "FromPort", "ToPort", "IpRanges", "Ipv6Ranges", "PrefixListIds", "UserIdGroupPairs"}
    out = {k: v for k, v in rule.items() if k in keep and v not in (None, [])}
    if "UserIdGroupPairs" in out:
        out["UserIdGroupPairs"] = [
            {k: v for k, v in pair.items() if k in ("GroupId", "UserId", "Description")}
            for pair in out["UserIdGroupPairs"]
        ]
    return out


class FaultInjector:
    """Injects faults into one function's account state and restores them."""

    def __init__(self, clients: AwsClients, function_name: str, store: SnapshotStore):
        self.clients = clients
        self.function_name = function_name_of(function_name)
        self.store = store

    @classmethod
    def for_function(
        cls, function_name: str, clients: AwsClients | None = None, state_dir: Path | None = None
    ) -> FaultInjector:
        clients = clients or AwsClients()
        name = function_name_of(function_name)
        arn = clients.get("lambda").get_function_configuration(FunctionName=name)["FunctionArn"]
        store = SnapshotStore.for_target(
            state_dir or default_state_dir(), clients.endpoint_url, arn.split(":")[4], clients.region, name
        )
        return cls(clients, name, store)

    # -- helpers ---------------------------------------------------------------------------------
    @property
    def _lambda(self) -> Any:
        return self.clients.get("lambda")

    def _config(self) -> dict[str, Any]:
        return self._lambda.get_function_configuration(FunctionName=self.function_name)

    def _update_config(self, **changes: Any) -> None:
        self._lambda.update_function_configuration(FunctionName=self.function_name, **changes)
        # Real Lambda applies configuration asynchronously; later changes fail while one is pending.
        self._lambda.get_waiter("function_updated").wait(
            FunctionName=self.function_name, WaiterConfig={"Delay": 2, "MaxAttempts": 60}
        )

    # -- faults ----------------------------------------------------------------------------------
    def apply(self, fault: Fault) -> list[str]:
        """Apply one fault from a scenario file."""
        params = fault.model_dump(exclude={"kind"})
        return getattr(self, fault.kind)(**params)

    def iam_revoke(self, target: str = "s3") -> list[str]:
        """Remove the role's permissions for S3 (``s3``), CloudWatch Logs (``cloudwatch``), ``both`` of those,
        DynamoDB (``dynamodb``) or SQS (``sqs``)."""
        if target not in IAM_TARGET_SERVICES:
            raise ChaosError(f"iam_revoke target must be one of {sorted(IAM_TARGET_SERVICES)}, not {target!r}")
        services = IAM_TARGET_SERVICES[target]
        iam = self.clients.get("iam")
        role = read_role(self.clients, self._config()["Role"])
        changes = []
        for name, document in role.inline_policies.items():
            original = statements(document)
            kept = [s for s in (_strip_services(st, services) for st in original) if s is not None]
            if kept == original:
                continue
            self.store.remember(f"iam.inline.{name}", document)
            if kept:
                iam.put_role_policy(
                    RoleName=role.role_name, PolicyName=name, PolicyDocument=json.dumps({**document, "Statement": kept})
                )
                changes.append(f"removed {'/'.join(sorted(services))} actions from inline policy {name}")
            else:
                iam.delete_role_policy(RoleName=role.role_name, PolicyName=name)
                changes.append(f"deleted inline policy {name}")
        # Managed policies cannot be edited: detach those that grant only the target services.
        for arn, document in managed_policy_documents(self.clients, role.attached_policy_arns).items():
            used = set().union(*(statement_services(st) for st in statements(document)))
            if used and used <= services:
                self.store.remember(f"iam.attached.{arn}", True)
                iam.detach_role_policy(RoleName=role.role_name, PolicyArn=arn)
                changes.append(f"detached managed policy {arn}")
        self.store.record_fault({"kind": "iam_revoke", "target": target})
        return changes or [f"role {role.role_name} already grants no {target} permissions"]

    def throttle(self, reserved_concurrency: int = 0) -> list[str]:
        """Set reserved concurrency (0 throttles every invocation, 1 all but one at a time)."""
        if reserved_concurrency < 0:
            raise ChaosError("reserved concurrency must be 0 or more")
        self.store.remember("concurrency", read_reserved_concurrency(self.clients, self.function_name))
        self._lambda.put_function_concurrency(
            FunctionName=self.function_name, ReservedConcurrentExecutions=reserved_concurrency
        )
        self.store.record_fault({"kind": "throttle", "reserved_concurrency": reserved_concurrency})
        return [f"reserved concurrency set to {reserved_concurrency}"]

    def network_block(self) -> list[str]:
        """No egress: remove the security groups' egress rules and deny egress in the subnets' NACLs."""
        network = read_network(self.clients, self._config().get("VpcConfig"))
        if not network.in_vpc:
            raise ChaosError(f"{self.function_name} is not attached to a VPC: there is no egress path to block")
        ec2 = self.clients.get("ec2")
        changes = []
        for group in network.security_groups:
            self.store.remember(f"sg.{group.group_id}.egress", group.egress_rules)
            if group.egress_rules:
                ec2.revoke_security_group_egress(
                    GroupId=group.group_id, IpPermissions=[_clean_permission(r) for r in group.egress_rules]
                )
                changes.append(f"revoked {len(group.egress_rules)} egress rule(s) of {group.group_id}")
        for acl_id, entries in {s.network_acl_id: s.entries for s in network.subnets if s.network_acl_id}.items():
            existing = next((e for e in entries if e.get("Egress") and e["RuleNumber"] == NACL_DENY_RULE), None)
            self.store.remember(f"nacl.{acl_id}.egress.{NACL_DENY_RULE}", existing)
            entry = dict(
                NetworkAclId=acl_id,
                RuleNumber=NACL_DENY_RULE,
                Protocol="-1",
                RuleAction="deny",
                Egress=True,
                CidrBlock="0.0.0.0/0",
            )
            if existing is None:
                ec2.create_network_acl_entry(**entry)
            else:
                ec2.replace_network_acl_entry(**entry)
            changes.append(f"NACL {acl_id}: egress rule {NACL_DENY_RULE} denies all")
        self.store.record_fault({"kind": "network_block"})
        return changes

    def timeout(self, seconds: int = 1) -> list[str]:
        """Lower the function's timeout."""
        if not 1 <= seconds <= 900:
            raise ChaosError("timeout seconds must be between 1 and 900")
        self.store.remember("timeout", self._config()["Timeout"])
        self._update_config(Timeout=seconds)
        self.store.record_fault({"kind": "timeout", "seconds": seconds})
        return [f"timeout set to {seconds} s"]

    def memory(self, mb: int = 128) -> list[str]:
        """Lower the function's memory size."""
        if not 128 <= mb <= 10240:
            raise ChaosError("memory must be between 128 and 10240 MB")
        self.store.remember("memory", self._config()["MemorySize"])
        self._update_config(MemorySize=mb)
        self.store.record_fault({"kind": "memory", "mb": mb})
        return [f"memory size set to {mb} MB"]

    def bad_deploy(self, error: str | None = None) -> list[str]:
        """Deploy code that throws ``error``, publish it as a new version and point the function's alias at it."""
        error = error or DEFAULT_DEPLOY_ERROR
        config = self._config()
        alias = self._alias()
        name, current = alias["Name"], alias["FunctionVersion"]
        package = broken_package(config.get("Runtime", ""), config.get("Handler", ""), error)
        sha = code_sha256(package)
        current_sha = self._lambda.get_function_configuration(FunctionName=self.function_name, Qualifier=current)[
            "CodeSha256"
        ]
        self.store.remember(f"alias.{name}", {"function_version": current})
        self.store.record_fault({"kind": "bad_deploy", "error": error})
        if current_sha == sha:
            return [f"alias {name} already routes to version {current}, whose code throws {error}"]
        self._lambda.update_function_code(FunctionName=self.function_name, ZipFile=package)
        self._wait_updated()
        version = self._lambda.publish_version(FunctionName=self.function_name, CodeSha256=sha)["Version"]
        self._lambda.update_alias(FunctionName=self.function_name, Name=name, FunctionVersion=version)
        return [
            f"published version {version}, whose code throws {error}",
            f"alias {name}: version {current} -> {version}",
        ]

    def kms_disable(self) -> list[str]:
        """Disable the customer-managed key that encrypts the function's environment."""
        arn = self._config().get("KMSKeyArn")
        if not arn:
            raise ChaosError(
                f"{self.function_name}'s environment is encrypted with an AWS managed key: "
                "there is no customer-managed key to disable"
            )
        kms = self.clients.get("kms")
        metadata = kms.describe_key(KeyId=arn)["KeyMetadata"]
        if metadata.get("KeyManager") == "AWS":
            raise ChaosError(f"key {arn} is AWS managed: it cannot be disabled")
        key_id = metadata["KeyId"]  # some emulators take only the id for DisableKey / EnableKey
        self.store.remember(f"kms.{key_id}", metadata.get("KeyState"))
        self.store.record_fault({"kind": "kms_disable"})
        if metadata.get("KeyState") == "Disabled":
            return [f"KMS key {key_id} is already disabled"]
        kms.disable_key(KeyId=key_id)
        return [f"disabled KMS key {key_id} (it encrypts the environment of {self.function_name})"]

    def esm_disable(self) -> list[str]:
        """Disable every event source mapping that invokes the function."""
        mappings = self._mappings()
        if not mappings:
            raise ChaosError(f"{self.function_name} has no event source mappings: no queue or stream invokes it")
        changes = []
        for mapping in mappings:
            uuid, state = mapping["UUID"], mapping.get("State")
            self.store.remember(f"esm.{uuid}", state)
            if state in ("Disabled", "Disabling"):
                changes.append(f"event source mapping {uuid} is already {state.lower()}")
                continue
            self._lambda.update_event_source_mapping(UUID=uuid, Enabled=False)
            self._wait_mapping(uuid)
            changes.append(f"disabled event source mapping {uuid} ({mapping.get('EventSourceArn')})")
        self.store.record_fault({"kind": "esm_disable"})
        return changes

    def downstream_throttle(self) -> list[str]:
        """Another writer consumes several times the provisioned write capacity of the function's tables
        (published as their ``AWS/DynamoDB ConsumedWriteCapacityUnits``; the lab's workloads obey it)."""
        ddb = self.clients.get("dynamodb")
        tables = self._tables()
        if not tables:
            raise ChaosError(f"{self.function_name} uses no DynamoDB table: there is no dependency to overload")
        capacity = {}
        for table in tables:  # all checked before any is touched
            described = ddb.describe_table(TableName=table)["Table"]
            units = described.get("ProvisionedThroughput", {}).get("WriteCapacityUnits") or 0
            if described.get("BillingModeSummary", {}).get("BillingMode") == "PAY_PER_REQUEST" or not units:
                raise ChaosError(f"table {table} is on-demand: it has no provisioned write capacity to exceed")
            capacity[table] = units
        changes = []
        for table, units in capacity.items():
            slot = f"load.{table}"
            latest = self._latest_write_load(table)
            self.store.remember(slot, {"consumed_write_capacity_units": latest[1] if latest else 0.0})
            try:
                self._put_write_load(table, units * 60 * OVERLOAD_FACTOR, self._after(latest))
            except ClientError as exc:
                self.store.forget(slot)
                raise ChaosError(
                    f"CloudWatch refused the table's load ({exc.response['Error']['Code']}): only AWS publishes AWS/ "
                    "metrics in a real account, so downstream_throttle runs against the lab"
                ) from exc
            changes.append(f"table {table}: another writer consumes {units * OVERLOAD_FACTOR} of {units} write units/s")
        self.store.record_fault({"kind": "downstream_throttle"})
        return changes

    def env_var_removed(self, name: str) -> list[str]:
        """Remove one environment variable the function's code reads."""
        variables = dict((self._config().get("Environment") or {}).get("Variables") or {})
        if name not in variables and f"env.{name}" in self.store.slots:
            return [f"environment variable {name} is already removed"]
        if name not in variables:
            raise ChaosError(f"{self.function_name} has no environment variable {name!r} (it has {sorted(variables)})")
        self.store.remember(f"env.{name}", variables.pop(name))
        self._update_config(Environment={"Variables": variables})
        self.store.record_fault({"kind": "env_var_removed", "name": name})
        return [f"removed environment variable {name}"]

    def secret_scheduled_for_deletion(self) -> list[str]:
        """Schedule every Secrets Manager secret the function's environment names for deletion (7 days)."""
        variables = (self._config().get("Environment") or {}).get("Variables") or {}
        secrets = [s for s in read_secrets(self.clients, variables) if s.exists]
        if not secrets:
            raise ChaosError(f"{self.function_name}'s environment names no Secrets Manager secret by ARN")
        sm = self.clients.get("secretsmanager")
        changes = []
        for secret in secrets:
            self.store.remember(f"secret.{secret.secret_arn}", secret.deleted_date)
            if secret.deleted_date:
                changes.append(f"secret {secret.secret_arn} is already scheduled for deletion")
                continue
            sm.delete_secret(SecretId=secret.secret_arn, RecoveryWindowInDays=7)
            changes.append(f"secret {secret.secret_arn} ({secret.variable}) scheduled for deletion in 7 days")
        self.store.record_fault({"kind": "secret_scheduled_for_deletion"})
        return changes

    def queue_visibility(self, seconds: int) -> list[str]:
        """Set the visibility timeout of every SQS queue the function's mappings read."""
        queues = [m["EventSourceArn"] for m in self._mappings() if ":sqs:" in m.get("EventSourceArn", "")]
        if not queues:
            raise ChaosError(f"{self.function_name} has no SQS event source mapping: no queue feeds it")
        sqs = self.clients.get("sqs")
        changes = []
        for arn in dict.fromkeys(queues):
            url = read_queue_url(self.clients, arn)
            self.store.remember(f"queue.{arn}", read_queue_visibility_timeout(self.clients, arn))
            sqs.set_queue_attributes(QueueUrl=url, Attributes={"VisibilityTimeout": str(seconds)})
            changes.append(f"queue {arn.rsplit(':', 1)[-1]}: visibility timeout set to {seconds} s")
        self.store.record_fault({"kind": "queue_visibility", "seconds": seconds})
        return changes

    def ephemeral_storage(self, mb: int) -> list[str]:
        """Shrink the function's /tmp (ephemeral storage)."""
        if not 512 <= mb <= 10240:
            raise ChaosError("ephemeral storage must be between 512 and 10240 MB")
        self.store.remember("storage", (self._config().get("EphemeralStorage") or {}).get("Size", 512))
        self._update_config(EphemeralStorage={"Size": mb})
        self.store.record_fault({"kind": "ephemeral_storage", "mb": mb})
        return [f"ephemeral storage set to {mb} MB"]

    def kms_revoke(self) -> list[str]:
        """Remove from the key policy the statements that let the function's role decrypt (the key stays enabled)."""
        config = self._config()
        arn = config.get("KMSKeyArn")
        if not arn:
            raise ChaosError(f"{self.function_name}'s environment is not encrypted with a customer-managed key")
        kms = self.clients.get("kms")
        key_id = kms.describe_key(KeyId=arn)["KeyMetadata"]["KeyId"]
        policy = json.loads(kms.get_key_policy(KeyId=key_id, PolicyName="default")["Policy"])
        role_arn = config["Role"]

        def grants_role(statement: dict[str, Any]) -> bool:
            principal = statement.get("Principal")
            named = principal.get("AWS", []) if isinstance(principal, dict) else []
            return statement.get("Effect") == "Allow" and role_arn in ([named] if isinstance(named, str) else named)

        kept = [st for st in statements(policy) if not grants_role(st)]
        if len(kept) == len(statements(policy)) and f"keypolicy.{key_id}" in self.store.slots:
            return [f"key {key_id}'s policy already lets {role_arn.rsplit('/', 1)[-1]} decrypt nothing"]
        if len(kept) == len(statements(policy)):
            raise ChaosError(
                f"key {key_id}'s policy names no statement for {role_arn}: its decrypt comes from its IAM policies "
                "(use iam_revoke)"
            )
        self.store.remember(f"keypolicy.{key_id}", policy)
        kms.put_key_policy(KeyId=key_id, PolicyName="default", Policy=json.dumps({**policy, "Statement": kept}))
        self.store.record_fault({"kind": "kms_revoke"})
        return [f"key {key_id}: removed the key policy statement(s) letting {role_arn.rsplit('/', 1)[-1]} decrypt"]

    def noisy_neighbor(self) -> list[str]:
        """Another function, not onboarded, runs at the account's whole unreserved concurrency (its
        ``AWS/Lambda ConcurrentExecutions`` as Lambda publishes it; the lab's workloads obey it)."""
        lam = self._lambda
        neighbor = f"{self.function_name}-neighbor"[:64]
        try:
            lam.get_function_configuration(FunctionName=neighbor)
            created = False
        except lam.exceptions.ResourceNotFoundException:
            config = self._config()
            lam.create_function(
                FunctionName=neighbor,
                Runtime="python3.12",
                Role=config["Role"],
                Handler="app.handler",
                Code={"ZipFile": deployment_package("app.py", "def handler(event, context):\n    return {}\n")},
                Timeout=900,
            )
            created = True
        self.store.remember(f"neighbor.{neighbor}", {"created": created})
        limit = lam.get_account_settings()["AccountLimit"].get("UnreservedConcurrentExecutions") or 1000
        try:
            publish_concurrency(self.clients, neighbor, float(limit))
        except ClientError as exc:
            raise ChaosError(
                f"CloudWatch refused the neighbour's load ({exc.response['Error']['Code']}): only AWS publishes AWS/ "
                "metrics in a real account, so noisy_neighbor runs against the lab"
            ) from exc
        self.store.record_fault({"kind": "noisy_neighbor"})
        return [f"function {neighbor} runs {limit} concurrent executions: the account's unreserved concurrency"]

    def recursive_loop(self) -> list[str]:
        """Point the environment variable naming the function's output queue at the queue that triggers it."""
        sources = [m["EventSourceArn"] for m in self._mappings() if ":sqs:" in m.get("EventSourceArn", "")]
        if not sources:
            raise ChaosError(f"{self.function_name} has no SQS event source mapping: nothing triggers it to loop on")
        variables = dict((self._config().get("Environment") or {}).get("Variables") or {})
        outputs = [k for k, v in variables.items() if QUEUE_URL_RE.match(v or "")]
        if not outputs:
            raise ChaosError(f"{self.function_name}'s environment names no queue it writes to")
        name = outputs[0]
        source = sources[0]
        self.store.remember(f"env.{name}", variables[name])
        variables[name] = read_queue_url(self.clients, source)
        self._update_config(Environment={"Variables": variables})
        self.store.record_fault({"kind": "recursive_loop"})
        return [f"{name} now names {source.rsplit(':', 1)[-1]}, the queue that triggers {self.function_name}"]

    # -- what the new kinds act on ---------------------------------------------------------------
    def _wait_updated(self) -> None:
        self._lambda.get_waiter("function_updated").wait(
            FunctionName=self.function_name, WaiterConfig={"Delay": 2, "MaxAttempts": 60}
        )

    def _alias(self) -> dict[str, Any]:
        """The alias callers use: ``live`` if the function has it, else its only (or first) alias."""
        aliases = [
            alias
            for page in self._lambda.get_paginator("list_aliases").paginate(FunctionName=self.function_name)
            for alias in page["Aliases"]
        ]
        if not aliases:
            raise ChaosError(
                f"{self.function_name} has no alias: its callers invoke $LATEST, there is no alias to move to a new version"
            )
        return next((a for a in aliases if a["Name"] == "live"), sorted(aliases, key=lambda a: a["Name"])[0])

    def _mappings(self) -> list[dict[str, Any]]:
        return [
            mapping
            for page in self._lambda.get_paginator("list_event_source_mappings").paginate(
                FunctionName=self.function_name
            )
            for mapping in page["EventSourceMappings"]
        ]

    def _wait_mapping(self, uuid: str) -> None:
        """Mappings change state asynchronously; another update fails while one is under way."""
        for _ in range(60):
            if self._lambda.get_event_source_mapping(UUID=uuid).get("State") in ("Enabled", "Disabled"):
                return
            time.sleep(1)

    def _tables(self) -> list[str]:
        """The DynamoDB tables the function's role grants access to, or its environment names."""
        config = self._config()
        role = read_role(self.clients, config["Role"])
        documents = [
            *role.inline_policies.values(),
            *managed_policy_documents(self.clients, role.attached_policy_arns).values(),
        ]
        found: list[str] = []
        for document in documents:
            for statement in statements(document):
                if statement.get("Effect") != "Allow" or "dynamodb" not in statement_services(statement):
                    continue
                resources = statement.get("Resource", [])
                for resource in [resources] if isinstance(resources, str) else resources:
                    table = _table_of(resource)
                    if table and table not in found:
                        found.append(table)
        existing = set(self.clients.get("dynamodb").list_tables().get("TableNames", []))
        found = [t for t in found if t in existing]
        for value in config.get("Environment", {}).get("Variables", {}).values():
            if value in existing and value not in found:
                found.append(value)
        return found

    def _latest_write_load(self, table: str) -> tuple[datetime, float] | None:
        now = datetime.now(UTC)
        points = self.clients.get("cloudwatch").get_metric_statistics(
            Namespace="AWS/DynamoDB",
            MetricName="ConsumedWriteCapacityUnits",
            Dimensions=[{"Name": "TableName", "Value": table}],
            StartTime=now - timedelta(hours=1),
            EndTime=now + timedelta(minutes=5),
            Period=1,
            Statistics=["Sum"],
        )["Datapoints"]
        if not points:
            return None
        latest = max(points, key=lambda p: p["Timestamp"])
        return latest["Timestamp"], latest["Sum"]

    @staticmethod
    def _after(latest: tuple[datetime, float] | None) -> datetime:
        """Now, or clearly after the latest datapoint (statistics come back to the millisecond): the workloads
        read the latest one as the load."""
        now = datetime.now(UTC)
        return max(now, latest[0] + timedelta(seconds=2)) if latest else now

    def _put_write_load(self, table: str, units_per_minute: float, at: datetime) -> None:
        self.clients.get("cloudwatch").put_metric_data(
            Namespace="AWS/DynamoDB",
            MetricData=[
                {
                    "MetricName": "ConsumedWriteCapacityUnits",
                    "Dimensions": [{"Name": "TableName", "Value": table}],
                    "Value": units_per_minute,
                    "Unit": "Count",
                    "Timestamp": at,
                }
            ],
        )

    # -- restore ---------------------------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        return {"function": self.function_name, "faults": list(self.store.faults), "slots": dict(self.store.slots)}

    def restore(self) -> list[str]:
        """Put back every recorded original, newest first; each slot is forgotten once restored."""
        done = []
        for slot in reversed(list(self.store.slots)):
            done.append(self._restore_slot(slot, self.store.original(slot)))
            self.store.forget(slot)
        return done or ["nothing to restore"]

    def _restore_slot(self, slot: str, original: Any) -> str:
        kind, _, rest = slot.partition(".")
        if kind == "iam":
            return self._restore_iam(rest, original)
        if kind == "concurrency":
            if original is None:
                self._lambda.delete_function_concurrency(FunctionName=self.function_name)
                return "reserved concurrency removed (none was set)"
            self._lambda.put_function_concurrency(
                FunctionName=self.function_name, ReservedConcurrentExecutions=original
            )
            return f"reserved concurrency restored to {original}"
        if kind == "timeout":
            self._update_config(Timeout=original)
            return f"timeout restored to {original} s"
        if kind == "memory":
            self._update_config(MemorySize=original)
            return f"memory size restored to {original} MB"
        if kind == "sg":
            return self._restore_group(rest.removesuffix(".egress"), original or [])
        if kind == "nacl":
            return self._restore_nacl(rest, original)
        if kind == "alias":
            # Only the alias moves back (a rollback): the newer version stays published, as in a real account.
            version = original["function_version"]
            self._lambda.update_alias(FunctionName=self.function_name, Name=rest, FunctionVersion=version)
            return f"alias {rest} routes to version {version} again"
        if kind == "kms":
            return self._restore_key(rest, original)
        if kind == "esm":
            enabled = original in ("Enabled", "Enabling")
            self._lambda.update_event_source_mapping(UUID=rest, Enabled=enabled)
            self._wait_mapping(rest)
            return f"event source mapping {rest} {'enabled' if enabled else 'disabled'} again"
        if kind == "env":
            variables = dict((self._config().get("Environment") or {}).get("Variables") or {})
            variables[rest] = original
            self._update_config(Environment={"Variables": variables})
            return f"environment variable {rest} restored"
        if kind == "secret":
            current = next(iter(read_secrets(self.clients, {"_": rest})), None)
            if current is not None and current.deleted_date and not original:
                self.clients.get("secretsmanager").restore_secret(SecretId=rest)
                return f"secret {rest}: deletion cancelled"
            return f"secret {rest}: nothing to cancel"
        if kind == "queue":
            self.clients.get("sqs").set_queue_attributes(
                QueueUrl=read_queue_url(self.clients, rest), Attributes={"VisibilityTimeout": str(original)}
            )
            return f"queue {rest.rsplit(':', 1)[-1]}: visibility timeout restored to {original} s"
        if kind == "storage":
            self._update_config(EphemeralStorage={"Size": original})
            return f"ephemeral storage restored to {original} MB"
        if kind == "keypolicy":
            self.clients.get("kms").put_key_policy(KeyId=rest, PolicyName="default", Policy=json.dumps(original))
            return f"key {rest}: key policy restored"
        if kind == "neighbor":
            publish_concurrency(self.clients, rest, 0.0)
            if original.get("created"):
                self._lambda.delete_function(FunctionName=rest)
                return f"function {rest} is idle again, and deleted"
            return f"function {rest} is idle again"
        if kind == "load":
            # A datapoint cannot be taken back: a later one says the other writer is back to its usual load.
            units = original["consumed_write_capacity_units"]
            self._put_write_load(rest, units, self._after(self._latest_write_load(rest)))
            return f"table {rest}: the other writer's load is back to {units / 60:g} write units/s"
        raise ChaosError(f"unknown snapshot slot {slot!r}")

    def _restore_iam(self, rest: str, original: Any) -> str:
        iam = self.clients.get("iam")
        role_name = read_role(self.clients, self._config()["Role"]).role_name
        what, _, name = rest.partition(".")
        if what == "attached":
            iam.attach_role_policy(RoleName=role_name, PolicyArn=name)
            return f"re-attached {name}"
        if original is None:
            try:
                iam.delete_role_policy(RoleName=role_name, PolicyName=name)
            except ClientError as exc:
                if exc.response["Error"]["Code"] != "NoSuchEntity":
                    raise
            return f"inline policy {name} removed (it did not exist)"
        iam.put_role_policy(RoleName=role_name, PolicyName=name, PolicyDocument=json.dumps(original))
        return f"inline policy {name} restored"

    def _restore_key(self, key_id: str, original: str | None) -> str:
        kms = self.clients.get("kms")
        if original == "Enabled":
            kms.enable_key(KeyId=key_id)
            return f"KMS key {key_id} enabled again"
        if original == "Disabled":
            kms.disable_key(KeyId=key_id)
            return f"KMS key {key_id} left disabled, as it was"
        return f"KMS key {key_id} was {original}: nothing to put back"

    def _restore_group(self, group_id: str, original: list[dict[str, Any]]) -> str:
        ec2 = self.clients.get("ec2")
        current = ec2.describe_security_groups(GroupIds=[group_id])["SecurityGroups"][0].get("IpPermissionsEgress", [])
        if current:
            ec2.revoke_security_group_egress(GroupId=group_id, IpPermissions=[_clean_permission(r) for r in current])
        if original:
            ec2.authorize_security_group_egress(
                GroupId=group_id, IpPermissions=[_clean_permission(r) for r in original]
            )
        return f"egress rules of {group_id} restored ({len(original)})"

    def _restore_nacl(self, rest: str, original: dict[str, Any] | None) -> str:
        acl_id, _, rule = rest.partition(".egress.")
        ec2 = self.clients.get("ec2")
        if original is None:
            acl = ec2.describe_network_acls(NetworkAclIds=[acl_id])["NetworkAcls"][0]
            if not any(e["Egress"] and e["RuleNumber"] == int(rule) for e in acl.get("Entries", [])):
                # Already gone (the responder's remediation removed it): nothing to put back.
                return f"NACL {acl_id}: egress rule {rule} already removed"
            ec2.delete_network_acl_entry(NetworkAclId=acl_id, RuleNumber=int(rule), Egress=True)
            return f"NACL {acl_id}: egress rule {rule} removed"
        fields = {
            k: original[k]
            for k in ("Protocol", "RuleAction", "CidrBlock", "Ipv6CidrBlock", "PortRange", "IcmpTypeCode")
            if original.get(k)
        }
        ec2.replace_network_acl_entry(NetworkAclId=acl_id, RuleNumber=int(rule), Egress=True, **fields)
        return f"NACL {acl_id}: egress rule {rule} restored"
