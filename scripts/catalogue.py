"""`make catalogue`: write docs/failure-catalogue.md from the failure catalogue (incident_responder/catalogue/).

.venv/bin/python scripts/catalogue.py           # writes the page
.venv/bin/python scripts/catalogue.py --check   # exits 1 when the committed page is not what it would write
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from urllib.parse import urlsplit

from chaos.kinds import KINDS
from incident_responder.actions.registry import ACTIONS
from incident_responder.catalogue.failure_mode import AREAS, FailureMode, Signature
from incident_responder.catalogue.queries import FAILURE_MODES, counts
from incident_responder.lab import benchmark

REPO = Path(__file__).resolve().parents[1]
PAGE = REPO / "docs" / "failure-catalogue.md"
COMMAND = "python scripts/catalogue.py"

RESPONDER_LABELS = {
    "fixed": "Diagnosed and fixed",
    "handed_over": "Diagnosed, handed to a person",
    "not_yet": "Not yet",
}
KIND_LABELS = {
    "error_code": "error code",
    "platform_error": "Lambda error type",
    "network_error": "connection error",
    "message": "message",
}

INTRO = f"""\
# AWS Lambda failure catalogue

The ways an AWS Lambda function fails, as AWS's own documentation describes them: for each failure, what the
operator sees, where it shows, what causes it, what AWS says fixes it, and what this responder does with it.
In the symptoms, strings in `code` are exactly what AWS prints (error codes, error types, log lines, metric and
field names), checked against the pages each entry cites; text in "double quotes" is AWS's documentation wording. The **signatures** are the strings the responder's log reader recognises
(`incident_responder/account/log_records.py` derives its tables from them).

This page is generated from `incident_responder/catalogue/__init__.py`: edit that file, then run
`{COMMAND}` (or `make catalogue`) and commit both. The tests fail when the page and the catalogue differ.
"""


def _status(mode: FailureMode) -> str:
    if mode.responder == "fixed":
        return f"{RESPONDER_LABELS['fixed']} with `{mode.action_type}` (fault type `{mode.fault_type}`)"
    if mode.responder == "handed_over":
        return f"{RESPONDER_LABELS['handed_over']} (fault type `{mode.fault_type}`): {mode.handover}"
    return RESPONDER_LABELS["not_yet"]


def _short_status(mode: FailureMode) -> str:
    if mode.responder == "fixed":
        return f"Fixed (`{mode.action_type}`)"
    if mode.responder == "handed_over":
        return "Handed over"
    return "Not yet"


def _link_text(url: str) -> str:
    parts = urlsplit(url)
    segments = [s for s in parts.path.split("/") if s]
    if parts.netloc == "github.com" and len(segments) >= 2:
        return f"{segments[0]}/{segments[1]}"
    if "botocore" in segments and "exceptions" in segments:
        return f"botocore: {segments[segments.index('services') + 1]} {segments[-1].removesuffix('.html')}"
    if not segments:
        return parts.netloc
    return segments[-1].removesuffix(".html")


def _signature(signature: Signature) -> str:
    kind = KIND_LABELS[signature.kind]
    read_as = f" → `{signature.category}`" if signature.category else ""
    return f"`{signature.text}` ({kind}{read_as})"


def _mode(mode: FailureMode) -> list[str]:
    lines = [
        f'<a id="{mode.id}"></a>',
        "",
        f"### {mode.title}",
        "",
        f"- **Symptom:** {mode.symptom}",
        f"- **Shows in:** {', '.join(mode.shows_in)}",
        f"- **Cause:** {mode.cause}",
        f"- **Fix (AWS):** {mode.fix}",
        f"- **Responder:** {_status(mode)}",
    ]
    if mode.signatures:
        lines.append(f"- **Signatures:** {', '.join(_signature(s) for s in mode.signatures)}")
    kind = KINDS.get(mode.id.replace("-", "_"))
    if kind is not None:
        scenario = f"scenarios/catalogue/{mode.id}.yaml"
        lines.append(
            f"- **Reproduce in the lab:** `- kind: {kind.name}` in a scenario (on {', '.join(sorted(kind.workloads))})"
            + (f"; `{scenario}`" if (REPO / scenario).is_file() else "")
        )
    if mode.lab_note:
        lines.append(f"- **In the lab:** {mode.lab_note}")
    lines.append(f"- **Sources:** {', '.join(f'[{_link_text(u)}]({u})' for u in mode.sources)}")
    lines.append(f"- **Id:** `{mode.id}`")
    return [*lines, ""]


def _actions() -> list[str]:
    """The actions table: every action type in the registry, what it fixes and how it is governed."""
    lines = [
        '<a id="actions"></a>',
        "",
        "## The actions",
        "",
        "Every action type the responder can take, from the action registry (`incident_responder/actions/`): the "
        "faults it fixes (in the order faults are fixed), its risk, who approves it, the remediation MCP server's "
        "lookup that offers its restore, and the IAM writes its remediate role allows.",
        "",
        "| action | fixes | risk | approval | lookup | IAM writes |",
        "|---|---|---|---|---|---|",
    ]
    approvals = {"policy": "the review policy", "access": "a person (unless opted in)", "person": "a person, always"}
    for action_type, action in ACTIONS.items():
        fixes = ", ".join(f"`{f}`" for f in action.fixes)
        writes = ", ".join(f"`{w}`" for w in sorted(action.iam_writes))
        lines.append(
            f"| `{action_type}` | {fixes} | {action.risk} | {approvals[action.approval]} | `{action.lookup_tool}` "
            f"| {writes} |"
        )
    return [*lines, ""]


def render() -> str:
    """The page, from FAILURE_MODES, with each entry's coverage from the scenarios that pass."""
    numbers = counts()
    passing = {c.mode.id: c for c in benchmark.coverage(benchmark.offline_results(), benchmark.corpus())}
    lines = [
        INTRO,
        "## What the responder covers",
        "",
        "| Failure modes | Diagnosed | Fixed | Handed over | Not yet | Diagnosed by a passing scenario |",
        "|---:|---:|---:|---:|---:|---:|",
        f"| {numbers['listed']} | {numbers['diagnosed']} | {numbers['fixed']} | {numbers['handed_over']} "
        f"| {numbers['not_yet']} | {sum(c.diagnosed for c in passing.values())} |",
        "",
        "The last column is computed from the scenarios that pass: an entry counts when a corpus scenario expects it "
        "(`expect.failure_modes`) and passed in the offline model's kept run (`bench/benchmark/offline.json`, "
        "`make eval-model`); [the benchmark](benchmark.md#coverage-of-the-failure-catalogue) lists them.",
        "",
        "*Diagnosed and fixed*: the responder finds the cause and proposes the action that restores the recorded "
        "baseline. *Handed over*: it finds the cause and tells a person what to do. *Not yet*: the responder does "
        "not diagnose it yet.",
        "",
        "## Contents",
        "",
    ]
    by_area = {area: [m for m in FAILURE_MODES if m.area == area] for area in AREAS}
    for area, title in AREAS.items():
        lines.append(f"- [{title}](#{area}) ({len(by_area[area])})")
    lines += ["- [The actions](#actions)", ""]
    for area, title in AREAS.items():
        lines += [f'<a id="{area}"></a>', "", f"## {title}", "", "| Failure | Responder | Scenarios passing |"]
        lines.append("|---|---|---:|")
        for m in by_area[area]:
            c = passing[m.id]
            shown = f"{len(c.passing)}/{len(c.scenarios)}" if c.scenarios else "-"
            lines.append(f"| [{m.title}](#{m.id}) | {_short_status(m)} | {shown} |")
        lines.append("")
        for mode in by_area[area]:
            lines += _mode(mode)
    lines += _actions()
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the committed page is out of date")
    args = parser.parse_args(argv)
    page = render()
    relative = PAGE.relative_to(REPO) if PAGE.is_relative_to(REPO) else PAGE
    if args.check:
        if not PAGE.exists() or PAGE.read_text(encoding="utf-8") != page:
            print(
                f"{relative} is out of date with the failure catalogue (incident_responder/catalogue/): run `{COMMAND}` "
                "(or `make catalogue`) and commit the page",
                file=sys.stderr,
            )
            return 1
        print(f"{relative} is up to date")
        return 0
    PAGE.parent.mkdir(parents=True, exist_ok=True)
    PAGE.write_text(page, encoding="utf-8")
    print(f"wrote {relative}: {counts()['listed']} failure modes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
