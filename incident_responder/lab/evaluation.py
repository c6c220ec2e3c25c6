"""``responder eval DIR``: run every scenario file through the whole lifecycle in a fresh lab and score it.

Scores: final status, fault types (exact set), proposed action types (exact set), evidence grounded
ratio, rejected actions, tool calls, model calls, tokens, latency, and the end state the lifecycle itself
reached: REMEDIATED must leave the configuration at its baseline and the workload healthy when invoked
again; every other end must leave the account exactly as the alert found it (nothing applied without
approval, everything applied undone on rollback). A bad scenario file is an error naming the file and the field.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from incident_responder.core.contracts import FaultType
from incident_responder.core.status import Status
from incident_responder.lab.api_calls import aws_call_summary
from incident_responder.lab.organisation import LAB_ORGANISATION
from incident_responder.lab.pipeline.record import IncidentRecord
from incident_responder.lab.pipeline.startup import LabPipeline
from incident_responder.lab.scenario import Approver, Scenario, ScenarioError, load_scenario, path_of
from incident_responder.lab.tokens import percentile, token_summary

# With nobody approving, an incident the scenario expects to change the account ends here instead.
WITHOUT_APPROVAL = {"reject": "REJECTED", "none": "APPROVAL_EXPIRED"}
ACTING_ENDS = {Status.REMEDIATED, Status.ROLLED_BACK, Status.REMEDIATION_FAILED}


class ScenarioScore(BaseModel):
    name: str
    passed: bool
    status: str
    fault_types: list[str]
    failure_modes: list[str] = Field(default_factory=list, description="the failure catalogue entries diagnosed")
    actions: list[str]
    grounded_ratio: float | None
    mitigated: bool | None = Field(
        description="REMEDIATED: back at the baseline and healthy when invoked again; None for other ends"
    )
    account_untouched: bool | None = Field(
        default=None, description="Every end but REMEDIATED: the configuration is exactly as the alert found it"
    )
    approval: dict[str, Any] | None = None
    rejected_actions: int
    tool_calls: int
    llm_calls: int
    total_tokens: int
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = Field(default=0, description="of input_tokens: read from the model's prompt cache")
    cache_write_tokens: int = Field(default=0, description="of input_tokens: written to it")
    tokens_by_agent: dict[str, int] = Field(
        default_factory=dict, description="total tokens of each agent: investigation, proposal, review"
    )
    turns_by_agent: dict[str, int] = Field(default_factory=dict, description="model turns of each agent")
    usage_by_agent: dict[str, dict[str, int]] = Field(
        default_factory=dict, description="each agent's input, output, cache read and cache write tokens"
    )
    tool_output_by_tool: dict[str, dict[str, int]] = Field(
        default_factory=dict, description="each tool's calls and the characters of its answers the model was sent"
    )
    earlier: list[dict[str, Any]] = Field(
        default_factory=list, description="the scenario's earlier incidents: each one's end, turns and tokens"
    )
    latency_ms: int
    failures: list[str]
    aws_calls: int | None = Field(default=None, description="the responder's AWS calls, alert to report (counted)")
    aws_calls_by_api: dict[str, int] = Field(default_factory=dict, description="service:Operation -> calls")
    aws_calls_by_function: dict[str, int] = Field(
        default_factory=dict, description="the responder's function (logical id) -> calls"
    )


class EvalReport(BaseModel):
    scenarios: list[ScenarioScore]
    summary: dict[str, Any]


def load_corpus(directory: Path) -> list[tuple[Path, Scenario]]:
    """Every ``*.yaml`` in ``directory`` and its folders (``scenarios/catalogue/``), in path order (a scenario file
    itself: that one); the first broken file stops everything."""
    if directory.is_file():  # `responder eval one.yaml`: a corpus of one, as `responder run` takes it
        return [(directory, load_scenario(directory))]
    files = sorted(directory.rglob("*.yaml")) + sorted(directory.rglob("*.yml"))
    if not files:
        raise ScenarioError(f"{directory}: no scenario files (*.yaml)")
    return [(path, load_scenario(path)) for path in files]


def _by_parameters(corpus: list[tuple[Path, Scenario]]) -> list[tuple[Path, Scenario]]:
    """The corpus in the order it runs: the scenarios that set no stack parameters first, then those that set the
    same ones one after another, each group in the corpus's order. The lab redeploys when the parameters change
    (about 2 s of CPU), so once per set instead of at each change."""
    return sorted(corpus, key=lambda entry: sorted(entry[1].parameters.given().items()))


def expected_status(scenario: Scenario, approval: Approver) -> str:
    """The scenario's final status, given who approves when the scenario does not say."""
    expected = scenario.expect.status
    if scenario.lifecycle.approval is None and approval in WITHOUT_APPROVAL and expected in ACTING_ENDS:
        return WITHOUT_APPROVAL[approval]
    return expected


def score(
    scenario: Scenario, record: IncidentRecord, mitigated: bool | None, approval: Approver = "auto"
) -> ScenarioScore:
    expect = scenario.expect
    diagnosis = record.diagnosis or {}
    proposal = record.proposal or {}
    faults = sorted(diagnosis.get("fault_types", []))
    modes = sorted(diagnosis.get("failure_modes", []))
    actions = sorted({a["action_type"] for a in proposal.get("actions", [])})
    failures = []
    wanted = expected_status(scenario, approval)
    if record.no_alert:
        failures.append(record.no_alert)
    elif record.status != wanted:
        failures.append(f"status {record.status} (expected {wanted})")
    if faults != sorted(f.value for f in expect.fault_types):
        failures.append(f"fault_types {faults} (expected {sorted(f.value for f in expect.fault_types)})")
    if expect.failure_modes is not None and modes != sorted(set(expect.failure_modes)):
        failures.append(f"failure_modes {modes} (expected {sorted(set(expect.failure_modes))})")
    if actions != sorted({a.value for a in expect.actions}):
        failures.append(f"actions {actions} (expected {sorted({a.value for a in expect.actions})})")
    if expect.handover_cites_runbook is not None:
        cited = {s.get("runbook") for s in proposal.get("handover") or [] if isinstance(s, dict)}
        wanted_citations = {r.citation for r in scenario.runbooks}
        if bool(cited & wanted_citations) != expect.handover_cites_runbook:
            failures.append(
                f"hand-over citations {sorted(c for c in cited if c)} (expected "
                f"{'one of' if expect.handover_cites_runbook else 'none of'} {sorted(wanted_citations)})"
            )
    failures += _memory_failures(scenario, record)
    rejected = len(proposal.get("rejected_actions", []))
    if rejected:
        failures.append(f"{rejected} action(s) rejected by the guardrails")
    if mitigated is False:
        failures.append(
            f"REMEDIATED but not mitigated: {record.end_state.get('differences_from_baseline') or 'unhealthy'}"
        )
    untouched = None
    if record.status != "REMEDIATED" and record.end_state:
        untouched = record.end_state["unchanged_since_alert"]
        if not untouched:
            failures.append(f"ended {record.status} but the account differs from how the alert found it")
    approver = (record.approval or {}).get("approver") or {}
    if scenario.lifecycle.replay_approval and approver.get("replay_status") != 409:
        failures.append(f"the replayed approval link was answered {approver.get('replay_status')} (expected 409)")
    grounded = (record.evidence or {}).get("grounded_ratio")
    if diagnosis and grounded is not None and grounded < 1.0:
        failures.append(f"grounded ratio {grounded} < 1.0")
    return ScenarioScore(
        name=scenario.name,
        passed=not failures,
        status=record.status,
        fault_types=faults,
        failure_modes=modes,
        actions=actions,
        grounded_ratio=grounded,
        mitigated=mitigated,
        account_untouched=untouched,
        approval=record.approval,
        rejected_actions=rejected,
        tool_calls=record.metrics.get("tool_calls", 0),
        llm_calls=record.metrics.get("llm_calls", 0),
        total_tokens=record.metrics.get("total_tokens", 0),
        input_tokens=record.metrics.get("input_tokens", 0),
        output_tokens=record.metrics.get("output_tokens", 0),
        cache_read_tokens=record.metrics.get("cache_read_tokens", 0),
        cache_write_tokens=record.metrics.get("cache_write_tokens", 0),
        tokens_by_agent=record.metrics.get("tokens_by_agent", {}),
        turns_by_agent=record.metrics.get("turns_by_agent", {}),
        usage_by_agent=record.metrics.get("usage_by_agent", {}),
        tool_output_by_tool=record.metrics.get("tool_output_by_tool", {}),
        earlier=record.earlier,
        latency_ms=record.metrics.get("latency_ms", 0),
        failures=failures,
        aws_calls=record.metrics.get("aws_calls"),
        aws_calls_by_api=record.metrics.get("aws_calls_by_api", {}),
        aws_calls_by_function=record.metrics.get("aws_calls_by_function", {}),
    )


def approved_by(record: IncidentRecord) -> Literal["person", "policy"] | None:
    """Who approved the incident's actions: a person (the approval page, the CLI), the AutoApprove policy, or nobody."""
    from incident_responder.review.policy import AUTO_APPROVER

    approver = (record.approval or {}).get("approved_by")
    return None if approver is None else ("policy" if approver == AUTO_APPROVER else "person")


def _memory_failures(scenario: Scenario, record: IncidentRecord) -> list[str]:
    """What the scenario expects of its earlier incidents (each reached its end), of who approved, and of the
    investigation against the first earlier one's (fewer turns and fewer tokens)."""
    failures = []
    for index, (past, ran) in enumerate(zip(scenario.earlier, record.earlier, strict=False)):
        if ran["status"] != past.status:
            failures.append(f"earlier incident {index + 1} ended {ran['status']} (expected {past.status})")
    expect = scenario.expect
    if expect.approved_by is not None:
        who = approved_by(record)
        if who != expect.approved_by:
            failures.append(f"approved by {who or 'nobody'} (expected {expect.approved_by})")
    if expect.fewer_investigation_turns is not None and record.earlier:
        first, now = record.earlier[0], record.metrics
        turns = (first["turns_by_agent"]["investigation"], now["turns_by_agent"]["investigation"])
        tokens = (first["tokens_by_agent"]["investigation"], now["tokens_by_agent"]["investigation"])
        fewer = turns[1] < turns[0] and tokens[1] < tokens[0]
        if fewer != expect.fewer_investigation_turns:
            failures.append(
                f"investigation turns {turns[1]} and tokens {tokens[1]} against the first earlier incident's "
                f"{turns[0]} and {tokens[0]} (expected {'fewer' if expect.fewer_investigation_turns else 'not fewer'})"
            )
    return failures


def run_scenario(
    pipeline: LabPipeline, scenario: Scenario, approval: Approver = "auto", *, out_dir: Path | None = None
) -> ScenarioScore:
    """The whole lifecycle, then its end state: nothing here applies anything itself (``out_dir``: the
    incident's history, picture, report and transcripts are written there, before the next scenario clears the stores)."""
    if scenario.workload.account is not None:  # a member account's workload: the lab acts there
        pipeline = pipeline.member(scenario.workload.account, str(scenario.workload.region))
    record = pipeline.run(scenario, approval=approval)
    if out_dir is not None:
        from incident_responder.lab.pipeline.artifacts import write_artifacts

        write_artifacts(pipeline, record, out_dir)
    mitigated: bool | None = None
    if record.status == "REMEDIATED":
        again = pipeline.workload(scenario.workload.function).invoke(
            scenario.workload.invocations,
            log_lines=scenario.workload.log_lines,
            app_error=scenario.workload.app_error,
            notify=False,
        )
        # What no action fixes may remain: the application's own bug, and a dependency that is still saturated
        # (its throttling errors). A burst that invoked nothing (a queue nobody reads) or left messages behind is
        # not healthy.
        app_error = scenario.workload.app_error
        remaining = {app_error, app_error.partition(":")[0].strip()} if app_error else set()
        expected = set(scenario.expect.fault_types)
        handed = [LEFT_TO_A_PERSON.get(fault, (set(), ())) for fault in expected] + [
            LEFT_TO_A_PERSON_BY_MODE.get(mode, (set(), ())) for mode in scenario.expect.failure_modes or ()
        ]
        for errors, _ in handed:
            remaining |= errors
        # A handed-over fault's own differences from the baseline stay until a person acts.
        kept = tuple(p for _, paths in handed for p in paths)
        left = [
            d
            for d in record.end_state["differences_from_baseline"]
            if not any(d["path"].startswith(p) and d["path"].endswith(s) for p, s in kept)
        ]
        drains = FaultType.RECURSIVE_LOOP not in expected  # a loop Lambda stops leaves its messages behind
        healthy = again.healthy or (
            bool(again.invocations)
            and (not again.messages_left or not drains)
            and all(i.status == "succeeded" or i.error_type in remaining for i in again.invocations)
        )
        mitigated = not left and healthy
    return score(scenario, record, mitigated, approval)


# What stays after a REMEDIATED incident for a fault handed to a person: the failures it still causes (their error
# types) and its own differences from the baseline ((path prefix, path suffix) pairs).
LEFT_TO_A_PERSON: dict[FaultType, tuple[set[str], tuple[tuple[str, str], ...]]] = {
    FaultType.DEPENDENCY_THROTTLING: ({"ProvisionedThroughputExceededException"}, ()),
    FaultType.CONFIGURATION_DRIFT: ({"KeyError"}, (("environment.", ""),)),
    FaultType.KMS_ACCESS_DENIED: ({"KMSAccessDeniedException"}, (("kms_keys.", ".role_may_decrypt"),)),
    FaultType.ACCOUNT_CONCURRENCY_EXHAUSTED: ({"TooManyRequestsException"}, ()),
    FaultType.RECURSIVE_LOOP: (set(), (("environment.", ""),)),
    FaultType.VPC_CAPACITY_EXHAUSTED: ({"SubnetIPAddressLimitReachedException", "ENILimitReachedException"}, ()),
    FaultType.DNS_FAILURE: ({"EndpointConnectionError"}, ()),
}
# The same, for a catalogue entry handed over whose fault type is fixed in its other entries (a key scheduled for
# deletion is a kms_key_disabled fault, but its deletion is a person's to cancel).
LEFT_TO_A_PERSON_BY_MODE: dict[str, tuple[set[str], tuple[tuple[str, str], ...]]] = {
    "kms-key-pending-deletion": ({"KMSInvalidStateException"}, (("kms_keys.", ".key_state"),)),
    "runtime-exited": ({"Runtime.ExitError"}, ()),
    "response-not-serializable": ({"Runtime.MarshalError"}, ()),
    "deployment-file-permissions": ({"PermissionError"}, ()),
}


def _cost(scores: list[ScenarioScore], model: str) -> float | None:
    """From usage, cache reads and writes included: PRICE_PER_MTOK_INPUT / PRICE_PER_MTOK_OUTPUT (USD per million
    tokens) when set, else the model's list prices when known."""
    from incident_responder.reporting.report import estimated_cost_usd

    return estimated_cost_usd(
        sum(s.input_tokens for s in scores),
        sum(s.output_tokens for s in scores),
        sum(s.cache_read_tokens for s in scores),
        sum(s.cache_write_tokens for s in scores),
        model_spec=model,
    )


def evaluate(
    directory: Path,
    *,
    model: str | None = None,
    approval: Approver = "auto",
    on_scenario: Callable[[int, int, ScenarioScore], None] | None = None,
    out_dir: Path | None = None,
    record: Path | None = None,
    replay: Path | None = None,
    max_cost_usd: float | None = None,
    on_start: Callable[[str], None] | None = None,
    count_calls: bool = False,
) -> EvalReport:
    """Every scenario of ``directory`` in one lab; ``on_scenario(done, total, score)`` as each one ends;
    with ``out_dir``, each scenario's history, picture, report and transcripts under ``out_dir``/<scenario name>/.

    ``record``: each scenario's model calls kept in ``record``/<scenario>.json; ``replay``: answered from there
    instead, with no model and no credentials (lab/converse/); ``max_cost_usd``: a ``bedrock_converse:`` run stops
    calling the model there (default: what the run may cost at most, at the model's list prices).
    ``on_start(line)``: where the model calls go and what they may cost, before the lab starts.
    ``count_calls``: each incident's AWS calls by the responder's functions, in all and by API (``aws_calls``)."""
    from incident_responder.lab.converse.eval_model import EvalModel

    corpus = load_corpus(directory)  # before any lab starts: a broken file costs nothing
    names = [scenario.name for _, scenario in corpus]
    calls = EvalModel(model, names, record=record, replay=replay, max_cost_usd=max_cost_usd)
    model = calls.model
    if on_start is not None:
        on_start(calls.describe(len(corpus)))
    scores = []
    stopped = None
    try:
        # An organisation (member accounts in other Regions) when a scenario's workload is a member's.
        members = any(scenario.workload.account for _, scenario in corpus)
        organisation = LAB_ORGANISATION if members else None
        with LabPipeline.start(
            model=model, model_route=calls.route, organisation=organisation, count_calls=count_calls
        ) as pipeline:
            for index, (_, scenario) in enumerate(_by_parameters(corpus)):
                # One lab for the whole corpus: restored and checked clean between scenarios (warm functions, no
                # redeploy), or redeployed when the check finds something a scenario changed for good.
                pipeline.ready_for(scenario, model, fresh=index == 0)
                calls.begin(scenario.name)
                scored = run_scenario(
                    pipeline, scenario, approval, out_dir=path_of(out_dir, scenario.name) if out_dir else None
                )
                if problems := calls.end(scenario.name):
                    scored = scored.model_copy(update={"passed": False, "failures": scored.failures + problems})
                scores.append(scored)
                if on_scenario is not None:
                    on_scenario(index + 1, len(corpus), scores[-1])
                if calls.exhausted:
                    stopped = f"the spend ceiling was reached after {index + 1} of {len(corpus)} scenario(s)"
                    break
    finally:
        calls.close()
    ranks = {scenario.name: rank for rank, (_, scenario) in enumerate(corpus)}
    scores.sort(key=lambda scored: ranks.get(scored.name, len(ranks)))  # the corpus's order, whatever ran first
    latencies = [s.latency_ms for s in scores]
    remediated = [s.latency_ms for s in scores if s.status == "REMEDIATED"]
    statuses: dict[str, int] = {}
    for s in scores:
        statuses[s.status] = statuses.get(s.status, 0) + 1
    grounded = [s.grounded_ratio for s in scores if s.grounded_ratio is not None]
    mitigations = [s.mitigated for s in scores if s.mitigated is not None]
    return EvalReport(
        scenarios=scores,
        summary={
            "passed": sum(s.passed for s in scores),
            "total": len(corpus),
            "model": model,
            "approval": approval,
            "final_statuses": dict(sorted(statuses.items())),
            "mean_grounded_ratio": round(statistics.mean(grounded), 3) if grounded else None,
            "mitigated": f"{sum(mitigations)}/{len(mitigations)}",
            "rejected_actions": sum(s.rejected_actions for s in scores),
            "tool_calls": sum(s.tool_calls for s in scores),
            "llm_calls": sum(s.llm_calls for s in scores),
            "total_tokens": sum(s.total_tokens for s in scores),
            "input_tokens": sum(s.input_tokens for s in scores),
            "output_tokens": sum(s.output_tokens for s in scores),
            "cache_read_tokens": sum(s.cache_read_tokens for s in scores),
            "cache_write_tokens": sum(s.cache_write_tokens for s in scores),
            "estimated_cost_usd": _cost(scores, model),
            "spent_usd": calls.spent_usd,
            "stopped": stopped,
            "replayed_from": str(replay) if replay else None,
            # Tokens per incident beside the share of scenarios that passed: a saving cannot hide a loss.
            "tokens": token_summary(scores),
            **({"aws_calls": aws_call_summary(scores)} if count_calls else {}),
            "latency_ms_p50": int(statistics.median(latencies)) if latencies else 0,
            "alert_to_remediated_ms_p50": percentile(remediated, 0.5),
            "alert_to_remediated_ms_p95": percentile(remediated, 0.95),
        },
    )
