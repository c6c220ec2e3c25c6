"""The lab's incident runs: what a run leaves on disk for a person: history, picture, record and report."""

from __future__ import annotations

from pathlib import Path

from incident_responder.lab.pipeline.record import IncidentRecord
from incident_responder.lab.pipeline.startup import LabPipeline


def write_artifacts(pipeline: LabPipeline, record: IncidentRecord, out_dir: Path) -> dict[str, Path]:
    """The execution history, a picture of the path taken, the final record and the incident's report (the
    page ``responder report`` writes), under ``out_dir``/<incident id>: all from one read of the stores."""
    import json

    from incident_responder.reporting.report import collect, execution_svg, render_html

    folder = out_dir / (record.incident_id or "no-incident")
    folder.mkdir(parents=True, exist_ok=True)
    paths = {"record": folder / "record.json"}
    paths["record"].write_text(record.model_dump_json(indent=2))
    tables = {
        "state_table": pipeline.stack.physical["IncidentStateTable"],
        "context_table": pipeline.stack.physical["IncidentContextTable"],
    }
    detail = collect(pipeline.clients, record.incident_id, **tables) if record.incident_id else None
    if detail is None:
        return paths
    if detail["history"]:
        paths["history"] = folder / "history.json"
        paths["history"].write_text(json.dumps(detail["history"], indent=2, default=str))
    picture = execution_svg(detail)
    if picture:
        paths["picture"] = folder / "execution.svg"
        paths["picture"].write_text(picture)
    paths["report"] = folder / "report.html"
    paths["report"].write_text(render_html(detail))
    return paths
