"""EMULATING ``data-processor`` (Python, in a VPC): reads an object from S3 and writes the result back, invoked
asynchronously by S3 event notifications (failed events retried, then sent to its dead-letter queue and on-failure
destination). Its network path (security groups, NACLs, and a route out of the VPC: a NAT or internet gateway, or a
gateway endpoint) must reach S3; its role must allow GetObject and PutObject."""

from __future__ import annotations

import ipaddress
from typing import Any

from incident_responder.account.network import NetworkState, read_routing, vpc_resolves_names
from incident_responder.lab.account.sources import INPUT_KEY
from incident_responder.lab.emulation.asynchronous import s3_event
from incident_responder.lab.emulation.burst import Workload
from incident_responder.lab.emulation.invocation import AccountView, Invocation, WorkloadProfile
from incident_responder.lab.runtimes import Frame, RaisedError, locate

# A public S3 address in us-east-1: where the function's HTTPS connection goes.
S3_DESTINATION = ipaddress.ip_address("52.217.0.10")
EPHEMERAL_PORTS = (1024, 65535)


def _covers(cidr: str | None, address: ipaddress.IPv4Address) -> bool:
    return bool(cidr) and address in ipaddress.ip_network(cidr, strict=False)


def _protocol_matches(protocol: str, port: int, port_range: dict[str, Any] | None) -> bool:
    if str(protocol) == "-1":
        return True
    if str(protocol).lower() not in ("6", "tcp"):
        return False
    if not port_range:
        return True
    return int(port_range.get("From", 0)) <= port <= int(port_range.get("To", 65535))


def _nacl_allows(entries: list[dict[str, Any]], *, egress: bool, port: int) -> bool:
    """NACLs are stateless and ordered: the lowest-numbered matching rule decides; none matching denies."""
    for entry in sorted((e for e in entries if bool(e.get("Egress")) == egress), key=lambda e: e["RuleNumber"]):
        if not _covers(entry.get("CidrBlock"), S3_DESTINATION):
            continue
        if _protocol_matches(entry.get("Protocol", "-1"), port, entry.get("PortRange")):
            return entry.get("RuleAction") == "allow"
    return False


def egress_to_s3_allowed(network: NetworkState) -> bool:
    """Can an HTTPS connection from the function reach S3 (and its replies come back)?"""
    if not network.in_vpc:
        return True
    # Security groups are stateful: one egress rule suffices, replies are allowed.
    sg_ok = any(
        _protocol_matches(
            rule.get("IpProtocol", "-1"), 443, {"From": rule.get("FromPort", 0), "To": rule.get("ToPort", 65535)}
        )
        and (
            any(_covers(r.get("CidrIp"), S3_DESTINATION) for r in rule.get("IpRanges", []))
            or bool(rule.get("PrefixListIds"))
        )
        for group in network.security_groups
        for rule in group.egress_rules
    )
    acl_ok = all(
        _nacl_allows(subnet.entries, egress=True, port=443)
        and any(_nacl_allows(subnet.entries, egress=False, port=p) for p in EPHEMERAL_PORTS)
        for subnet in network.subnets
    )
    return sg_ok and acl_ok


def _traceback(error_type: str, message: str, line: int, code: str) -> RaisedError:
    return RaisedError(error_type, message, [Frame("/var/task/app.py", line, "handler", code=code)])


def _session_name(role_arn: str) -> str:
    return role_arn.rsplit("/", 1)[-1].removesuffix("-role")


def _module_error(error_type: str, message: str, source: str | None, code: str) -> RaisedError:
    """An exception raised while the runtime imports the handler's module (its init phase)."""
    return RaisedError(error_type, message, [Frame("/var/task/app.py", locate(source, code)[0], "<module>", code=code)])


class DataProcessor(Workload):
    """``data-processor``: an S3 object in, the processed object out (staged on /tmp)."""

    default_function_name = "data-processor"
    default_profile = WorkloadProfile(tmp_write_mb=700)

    def facts(self, view: AccountView) -> dict[str, Any]:
        bucket = view.environment.get("INPUT_BUCKET", "")
        return {
            "init_error": None
            if "INPUT_BUCKET" in view.environment
            else _module_error("KeyError", "'INPUT_BUCKET'", view.code.source, 'BUCKET = os.environ["INPUT_BUCKET"]'),
            "tmp_mb": (view.raw.get("EphemeralStorage") or {}).get("Size", 512),
            "network_ok": egress_to_s3_allowed(view.config.network)
            and all(
                r.leads_out for r in read_routing(self.clients, [s.subnet_id for s in view.config.network.subnets])
            ),
            "dns_ok": not view.config.network.vpc_id or vpc_resolves_names(self.clients, view.config.network.vpc_id),
            "can_get": view.allowed("s3:GetObject", f"arn:aws:s3:::{bucket}/{INPUT_KEY}"),
            "can_put": view.allowed(
                "s3:PutObject", f"arn:aws:s3:::{bucket}/{INPUT_KEY.replace('incoming/', 'processed/')}"
            ),
            "role_arn": view.role_arn,
            "bucket": bucket,
        }

    def async_event(self, view: AccountView, facts: dict[str, Any]) -> dict[str, Any] | None:
        return s3_event(facts["bucket"], view.region)  # S3 event notifications invoke it asynchronously

    def handle(
        self,
        ctx: Invocation,
        view: AccountView,
        facts: dict[str, Any],
        event: Any,
        extra: list[str],
        app_error: str | None,
    ) -> None:
        p = self.profile
        key = INPUT_KEY
        get_line = 'body = s3.get_object(Bucket=os.environ["INPUT_BUCKET"], Key=key)["Body"].read()'
        if facts["init_error"] is not None:
            ctx.spend(0.05)
            ctx.fail(facts["init_error"])
        ctx.info(f"Processing s3://{facts['bucket']}/{key}", at=0.01)
        ctx.spend(0.02)
        ctx.log_raw(extra)
        if facts["thrown"] is not None:
            ctx.fail(facts["thrown"])
        if not facts["dns_ok"]:  # the bucket's host name does not resolve: no connection is even tried
            ctx.spend(0.05)
            url = f"https://{facts['bucket']}.s3.amazonaws.com/{key}"
            ctx.fail(
                _traceback("EndpointConnectionError", f'Could not connect to the endpoint URL: "{url}"', 10, get_line)
            )
        if not facts["network_ok"]:
            ctx.spend(p.connect_timeout_seconds * p.connect_attempts)
            url = f"https://{facts['bucket']}.s3.amazonaws.com/{key}"
            msg = f'Connect timeout on endpoint URL: "{url}"'
            ctx.fail(_traceback("ConnectTimeoutError", msg, 10, get_line))
        if not facts["can_get"]:
            ctx.spend(0.08)
            msg = self._access_denied("GetObject", "s3:GetObject", f"{facts['bucket']}/{key}", facts["role_arn"])
            ctx.fail(_traceback("ClientError", msg, 10, get_line))
        if app_error:
            ctx.spend(0.12)
            etype, _, emsg = app_error.partition(":")
            ctx.fail(_traceback(etype.strip(), emsg.strip(), 11, "orders = [transform(o) for o in json.loads(body)]"))
        ctx.peak(p.peak_memory_mb)
        ctx.compute(p.work_seconds_at_512mb)
        processed = key.replace("incoming/", "processed/")
        if p.tmp_write_mb > facts["tmp_mb"]:
            ctx.spend(0.4)
            write = "json.dump(orders, out)"
            frames = [
                Frame("/var/task/app.py", locate(view.code.source, write)[0], "handler", code=write),
                Frame("/var/lang/lib/python3.12/json/__init__.py", 180, "dump", code="fp.write(chunk)"),
            ]
            ctx.fail(RaisedError("OSError", "[Errno 28] No space left on device", frames))
        if not facts["can_put"]:
            msg = self._access_denied("PutObject", "s3:PutObject", f"{facts['bucket']}/{processed}", facts["role_arn"])
            ctx.fail(_traceback("ClientError", msg, 12, "s3.put_object(...)"))
        ctx.info(f"Processed 20 orders -> s3://{facts['bucket']}/{processed}")

    @staticmethod
    def _access_denied(operation: str, action: str, resource: str, role_arn: str) -> str:
        role_name = role_arn.rsplit("/", 1)[-1]
        account = role_arn.split(":")[4]
        return (
            f"An error occurred (AccessDenied) when calling the {operation} operation: User: "
            f"arn:aws:sts::{account}:assumed-role/{role_name}/{_session_name(role_arn)} is not authorized "
            f'to perform: {action} on resource: "arn:aws:s3:::{resource}" because no identity-based policy '
            f"allows the {action} action"
        )
