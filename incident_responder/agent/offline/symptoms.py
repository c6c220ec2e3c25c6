"""DIAGNOSING (the offline model): the faults metrics, environment changes, current configuration and logs show.

What drift cannot show (a recursive loop, the account's concurrency taken by others, the code's own
failures, a throttled dependency), and, with no baseline to compare with, only what configuration and logs
both support: a log line alone never makes a fault that drift contradicts.
"""

from __future__ import annotations

import json
import re
from typing import Any

from incident_responder.account.log_records import ReportRecord, parse_event
from incident_responder.account.network import VPC_NETWORK_INTERFACE_QUOTA
from incident_responder.agent.offline.findings import DISABLED_MAPPING_STATES, UNUSABLE_KEY_STATES, _Builder
from incident_responder.agent.offline.observations import Observations
from incident_responder.agent.offline.reported import _failing_mapping
from incident_responder.catalogue.queries import FAILURE_MODES, MODES_BY_ID
from incident_responder.core.contracts import FAULT_RECORDS, FaultType

# Error types AWS documents for failures the responder does not diagnose yet (docs/failure-catalogue.md): seen
# in the logs, they are named as such, never taken for a bug in the code.
NOT_YET = {
    s.text: mode.title
    for mode in FAILURE_MODES
    if mode.responder == "not_yet"
    for s in mode.signatures
    if s.kind != "message"
}
_SECONDS = re.compile(r"after (?P<seconds>\d+(?:\.\d+)?) seconds")


def _own_queue_variables(obs: Observations) -> dict[str, int]:
    """Environment variables naming a queue that one of the function's own mappings reads, with the index of
    that queue in get_dependencies' ``queues``."""
    queues = (obs.results.get("get_dependencies") or {}).get("queues") or []
    return {
        q["variable"]: i
        for i, q in enumerate(queues)
        if isinstance(q, dict) and q.get("is_event_source") and q.get("variable")
    }


def _from_metrics(b: _Builder) -> None:
    """What the function's and the account's metrics show that configuration drift cannot: a recursive loop
    Lambda stopped, and throttling by other functions' use of the account's concurrency."""
    metrics = b.obs.results.get("get_function_metrics") or {}
    if metrics.get("error"):
        return
    series = metrics.get("series") or {}
    dropped = series.get("RecursiveInvocationsDropped") or {}
    if dropped.get("total"):
        points = [
            b.point(
                "get_function_metrics",
                "series.RecursiveInvocationsDropped.total",
                dropped["total"],
                "Lambda's recursive loop detection stopped invocations of this function",
            )
        ]
        cause = "Lambda's recursive loop detection stopped the function"
        own = _own_queue_variables(b.obs)
        for variable, index in own.items():
            points.append(
                b.point(
                    "get_dependencies",
                    f"queues[{index}].is_event_source",
                    True,
                    f"{variable} names the queue that triggers the function",
                )
            )
            cause += f": its output ({variable}) names the queue that triggers it"
            if variable in b.environment:
                i, _, _ = b.environment.pop(variable)
                points.append(
                    b.point(
                        "get_config_drift",
                        f"differences[{i}].path",
                        f"environment.{variable}",
                        f"{variable} changed since the baseline",
                    )
                )
                cause += " since it was changed"
            break
        b.fault("recursive_loop", cause, *points)
    throttles = series.get("Throttles") or {}
    account = metrics.get("account") or {}
    top = (account.get("top_functions") or [{}])[0]
    limit = account.get("unreserved_concurrency_limit") or account.get("concurrency_limit")
    peak = account.get("peak_concurrent_executions")
    if (
        throttles.get("total")
        and "throttling" not in b.faults
        and limit
        and peak is not None
        and peak >= 0.9 * limit
        and top.get("function_name")
        and top["function_name"] != b.obs.function_name
        and metrics.get("reserved_concurrency") is None
    ):
        b.fault(
            "account_concurrency_exhausted",
            f"the account's concurrency ({peak:g} of {limit:g} unreserved) is taken, mostly by "
            f"{top['function_name']} ({top.get('peak_concurrent_executions', '?')} at once): this function has no "
            "reservation, so it is throttled with its own settings unchanged",
            b.point(
                "get_function_metrics",
                "account.top_functions[0].function_name",
                top["function_name"],
                "the function using most of the account's concurrency",
            ),
            b.point(
                "get_function_metrics",
                "account.peak_concurrent_executions",
                peak,
                f"the account ran {peak:g} executions at once (limit {limit:g})",
            ),
            b.point("get_function_metrics", "series.Throttles.total", throttles["total"], "this function's throttles"),
        )


def _from_network_capacity(b: _Builder) -> None:
    """What the function's network shows that drift cannot: its VPC's DNS resolution off, a subnet with no free
    address, or a VPC whose network interfaces reached Lambda's quota (a person fixes each)."""
    network = b.obs.results.get("get_network_config") or {}
    if network.get("error"):
        return
    if network.get("dns_support") is False:
        ptr = b.point("get_network_config", "dns_support", False, "DNS resolution is off in the function's VPC")
        errors = b.obs.errors("network")
        points = b.error_points(errors[0], "the function cannot reach the host it names") if errors else []
        for error in errors:
            b.explained.add((str(error.error_type), str(error.message)))
        b.fault(
            "dns_failure",
            "DNS resolution is off in the function's VPC: the host names it calls do not resolve",
            ptr,
            *points,
            mode="dns-tcp-connection-limit",
        )
    full = [subnet for subnet, free in (network.get("few_free_addresses") or {}).items() if free == 0]
    if full:
        ptr = b.point("get_network_config", f"few_free_addresses.{full[0]}", 0, "this subnet has no free IP address")
        b.fault(
            "vpc_capacity_exhausted",
            f"subnet {full[0]} of the function has no free IP address: Lambda cannot create its network interfaces",
            ptr,
            mode="subnet-out-of-addresses",
        )
    count = network.get("network_interfaces_in_vpc")
    if isinstance(count, int) and count >= VPC_NETWORK_INTERFACE_QUOTA:
        ptr = b.point(
            "get_network_config",
            "network_interfaces_in_vpc",
            count,
            f"the VPC holds {count} network interfaces (Lambda's default quota: {VPC_NETWORK_INTERFACE_QUOTA})",
        )
        b.fault(
            "vpc_capacity_exhausted",
            f"the function's VPC holds {count} network interfaces, Lambda's quota: it cannot create the function's",
            ptr,
            mode="eni-limit-reached",
        )


def _from_environment(b: _Builder) -> None:
    """Environment variables changed since the baseline (and not a loop's cause): the code's failures that name
    one are that change's, not a bug."""
    for variable, (i, before, now) in b.environment.items():
        ptr = b.point(
            "get_config_drift",
            f"differences[{i}].path",
            f"environment.{variable}",
            f"environment variable {variable} {'was removed' if now is None else 'changed'} since the baseline",
        )
        naming = [e for e in b.obs.log_errors() if variable in f"{e.error_type}: {e.message}"]
        points = []
        for error in naming[:1]:
            points = b.error_points(error, f"the code fails because {variable} is not what it expects")
        for error in naming:
            b.explained.add((str(error.error_type), str(error.message)))
        what = "was removed" if now is None else ("was added" if before is None else "changed value")
        b.fault(
            "configuration_drift",
            f"environment variable {variable} {what} since the baseline"
            + (f"; the code fails on it ({naming[0].error_type})" if naming else ""),
            ptr,
            *points,
        )


def _report_point(b: _Builder) -> int | None:
    """Invocations whose memory use reached their memory size (the platform's REPORT lines, which the tool
    summarizes; an older server listed them among the events)."""
    if at_limit := b.obs.invocations().get("at_memory_limit"):
        return b.point(
            "get_recent_logs",
            "invocations.at_memory_limit",
            at_limit,
            f"memory used reached the memory size in {at_limit} invocation(s)",
        )
    for i, event in enumerate(b.obs.logs()):
        record = parse_event(str(event.get("message", "")))
        if (
            isinstance(record, ReportRecord)
            and record.memory_size_mb
            and record.max_memory_used_mb is not None
            and record.max_memory_used_mb >= record.memory_size_mb
        ):
            excerpt = f"Max Memory Used: {record.max_memory_used_mb} MB"
            if excerpt in event["message"]:
                return b.point(
                    "get_recent_logs", f"events[{i}].message", excerpt, "memory used reached the memory size"
                )
    return None


def _from_observation_only(b: _Builder) -> None:
    """No baseline to compare with: conclude only what configuration and logs both support."""
    obs = b.obs
    b.gap(
        "configuration drift unknown (no baseline or drift tool unavailable): findings rest on current state and logs"
    )
    config = obs.config()
    if config.get("ReservedConcurrentExecutions") == 0:
        ptr = b.point(
            "get_lambda_config", "ReservedConcurrentExecutions", 0, "reserved concurrency 0 throttles every invocation"
        )
        b.fault("throttling", "reserved concurrency is 0", ptr)
    if (state := config.get("KMSKeyState")) in UNUSABLE_KEY_STATES:
        ptr = b.point("get_lambda_config", "KMSKeyState", state, "Lambda cannot decrypt the environment with this key")
        b.resources.append(config.get("KMSKeyArn") or "")
        mode = "kms-key-pending-deletion" if state == "PendingDeletion" else "kms-key-disabled"
        b.fault("kms_key_disabled", f"the KMS key encrypting the environment is {state}", ptr, mode=mode)
    if obs.is_queue_alarm():
        for i, mapping in enumerate(config.get("EventSourceMappings") or []):
            if mapping.get("State") in DISABLED_MAPPING_STATES:
                ptr = b.point(
                    "get_lambda_config",
                    f"EventSourceMappings[{i}].State",
                    mapping["State"],
                    "the mapping that reads the queue is disabled",
                )
                b.fault("event_source_disabled", f"event source mapping {mapping.get('UUID')} is disabled", ptr)
    if denied := b.first_error_points("the function is denied access by its role", "access_denied"):
        b.fault("permission_loss", "the execution role denies an action the function needs", *denied)
    if blocked := b.first_error_points("outbound connections fail", "network"):
        b.fault("network_block", "outbound connections from the function fail", *blocked)
    for error in obs.errors("timeout"):
        m = _SECONDS.search(str(error.message))
        if m and config.get("Timeout") is not None and float(m.group("seconds")) == float(config["Timeout"]):
            cfg = b.point("get_lambda_config", "Timeout", config["Timeout"], "the configured timeout")
            b.fault(
                "timeout",
                f"invocations run longer than the {config['Timeout']} s timeout",
                *b.error_points(error, "invocations hit the configured timeout"),
                cfg,
            )
            break
    killed = obs.errors("out_of_memory")
    if killed and (report := _report_point(b)) is not None:
        b.fault(
            "memory_exhaustion",
            "invocations exhaust the function's memory size",
            report,
            *b.error_points(killed[0], "the runtime was killed"),
        )
    if obs.incident.get("metric_name") == "IncomingLogEvents" and "get_iam_state" in obs.results:
        iam = obs.results["get_iam_state"]
        grants_logs = any("logs:" in json.dumps(doc) for doc in iam.get("inline_policies", {}).values())
        if not grants_logs and not iam.get("attached_policy_arns"):
            ptr = b.point(
                "get_iam_state",
                "role_name",
                iam.get("role_name"),
                "this role has no policy granting CloudWatch Logs actions",
            )
            b.fault("permission_loss", "the execution role cannot write logs", ptr)


def _from_catalogue_errors(b: _Builder, *, last: bool = False) -> None:
    """An error the logs report that names a failure catalogue entry whose fault the logs establish by themselves
    (``from_logs`` in its record: AWS itself, a quota, the caller, the code): that fault, with the error as its
    evidence. Any other entry needs the configuration to bear it out: read ``last``, after every other finding,
    the error of an entry whose fault nothing found is only a gap."""
    for error in b.obs.log_errors():
        mode = MODES_BY_ID.get(str(error.failure_mode or ""))
        if error.handled or mode is None or mode.fault_type is None or mode.responder == "not_yet":
            continue
        if (str(error.error_type), str(error.message)) in b.explained or mode.fault_type in b.faults:
            continue
        if FAULT_RECORDS[FaultType(mode.fault_type)].from_logs:
            points = b.error_points(error, f"AWS documents this failure: {mode.title}")
            cause = f"{mode.title[0].lower()}{mode.title[1:]} ({error.error_type})"
            b.fault(mode.fault_type, cause, *points, mode=mode.id)
            b.explained.add((str(error.error_type), str(error.message)))
        elif last and b.obs.drift() is not None:
            b.gap(f"the logs report {error.error_type} ({mode.id}) but the configuration does not bear it out")


def _needs_configuration(error: Any) -> bool:
    """The error names a catalogue entry whose fault the configuration must bear out (a layer, the handler)."""
    mode = MODES_BY_ID.get(str(error.failure_mode or ""))
    if mode is None or mode.fault_type is None or mode.responder == "not_yet":
        return False
    record = FAULT_RECORDS[FaultType(mode.fault_type)]
    return record.action is not None and not record.from_logs


def _from_log_errors(b: _Builder, drift: list[dict[str, Any]] | None) -> None:
    """What the errors themselves say: the code's failures (a regression's when the deploy changed) and a
    throttled dependency; and what the logs claim that configuration does not bear out."""
    obs = b.obs
    _from_catalogue_errors(b)
    baseline_versions = {str(before) for before, _ in b.regressed.values() if before is not None}
    for error in obs.errors("exception", origin="application"):
        if error.handled or (str(error.error_type), str(error.message)) in b.explained:
            continue
        if str(error.error_type) in NOT_YET:
            b.outside.append((error, NOT_YET[str(error.error_type)]))
            continue
        if _needs_configuration(error):  # a setting's fault that nothing bore out: a gap (the last pass), not code
            continue
        excerpt = f"{error.error_type}: {error.message}"[:120]
        version = error.function_version
        if "deployment_regression" in b.faults and (version is None or str(version) not in baseline_versions):
            points = b.error_points(error, f"version {version or 'deployed'} fails: {excerpt}")
            b.fault("deployment_regression", f"the deployed version raises {excerpt}", *points)
        elif (failing := _failing_mapping(b)) is not None:
            i, mapping = failing
            ptr = b.point(
                "get_lambda_config",
                f"EventSourceMappings[{i}].LastProcessingResult",
                mapping["LastProcessingResult"],
                "the mapping's last batches failed in the function",
            )
            points = b.error_points(error, "the error the function returns on the mapping's batches")
            b.fault(
                "event_source_failing",
                f"the batches of event source mapping {mapping.get('UUID')} keep failing: the function's code "
                f"raises {excerpt}",
                ptr,
                *points,
                mode="event-source-function-call-failed",
            )
        else:
            points = b.error_points(error, "an unhandled error in the function's own code")
            b.fault("application_error", f"the function's code raises {excerpt}", *points)
    for error in obs.errors("runtime_exit"):
        # The runtime's process ended with an exit status (a kill for want of memory is out_of_memory): the code's.
        if (
            error.handled
            or (str(error.error_type), str(error.message)) in b.explained
            or "memory_exhaustion" in b.faults
        ):
            continue
        points = b.error_points(error, "the runtime's process ended during the invocation")
        b.fault("application_error", f"the function's runtime exited ({error.message[:120]})", *points)
        b.explained.add((str(error.error_type), str(error.message)))
    throttled = obs.errors("throttled", origin="aws_service")
    if throttled:
        error = throttled[0]
        what = f"{error.error_type}" + (f" on {error.operation}" if error.operation else "")
        points = b.error_points(error, "a downstream AWS service throttles the function's requests")
        if drift is None:
            unexplained = "(configuration drift unknown)"
        elif not drift:
            unexplained = "while nothing in the function's configuration changed since the baseline"
        else:
            unexplained = "which none of the configuration's changes explains"
        b.fault(
            "dependency_throttling", f"a downstream AWS service throttles its requests ({what}) {unexplained}", *points
        )
    if drift is not None:
        if obs.errors("access_denied") and "permission_loss" not in b.faults:
            b.gap(
                "the logs report access denied but the role matches its baseline: a resource policy, an SCP or a "
                "permissions boundary may deny it"
            )
        if obs.errors("kms") and "kms_key_disabled" not in b.faults:
            b.gap("the logs report KMS errors but the function's key matches its baseline")
    if obs.alert_error_category() == "kms" and "kms_key_disabled" not in b.faults:
        b.gap("the alert names a KMS error that the function's configuration does not bear out")
    _from_catalogue_errors(b, last=True)
