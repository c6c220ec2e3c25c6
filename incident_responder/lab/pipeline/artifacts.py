"""The lab's incident runs: what a run leaves on disk for a person: history, picture, record, report, transcripts."""

from __future__ import annotations

from pathlib import Path

from incident_responder.lab.pipeline.record import IncidentRecord
from incident_responder.lab.pipeline.startup import LabPipeline


def write_artifacts(pipeline: LabPipeline, record: IncidentRecord, out_dir: Path) -> dict[str, Path]:
    """The execution history, a picture of the path taken, the final record, the incident's report (the
    page ``responder report`` writes) and each agent's transcript (``transcript.json``, and ``transcript.txt`` as
    ``responder show --transcript`` prints it), under ``out_dir``/<incident id>: all from one read of the stores."""
    import json

    from incident_responder.reporting.report import collect, execution_svg, render_html
    from incident_responder.reporting.transcript import transcript_text

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
    if detail.get("transcripts"):
        # What each agent said and did (agent.transcript), whole: as stored, and as responder show --transcript prints it.
        paths["transcript"] = folder / "transcript.json"
        paths["transcript"].write_text(json.dumps(detail["transcripts"], indent=2, default=str))
        paths["transcript_text"] = folder / "transcript.txt"
        paths["transcript_text"].write_text(transcript_text(detail["transcripts"]) + "\n")
    return paths
