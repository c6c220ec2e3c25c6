"""The whole pipeline on the embedded lab: the deployed stack, the sample workloads, and scenario runs.

startup    the lab with the stack deployed and the sample workloads onboarded; started, refreshed
incident   one scenario's incident: faults injected, the workload's burst, the lifecycle followed to its end
cleanup    between two scenarios: every fault restored, what an incident leaves cleared
record     the final record of one incident, as ``responder run --json`` prints it
artifacts  what a run leaves on disk: execution history, picture, record and report
"""

from incident_responder.core.exports import lazy_exports

__all__ = ["IncidentRecord", "LabPipeline", "write_artifacts"]
__getattr__ = lazy_exports(
    __name__,
    {"artifacts": ["write_artifacts"], "record": ["IncidentRecord"], "startup": ["LabPipeline"]},
)
