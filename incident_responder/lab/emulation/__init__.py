"""EMULATING a workload: what every emulated Lambda function shares, around what each workload does.

burst       a burst of invocations as Lambda runs it: throttling, the service refusing, the platform's lines
invocation  one invocation's profile, account view, simulated clock and outcome; the burst's result
traces      what a burst leaves: log lines, ``AWS/Lambda`` metrics, the alarm notification
errors      how a handler's steps end early: what its code raised, or the sandbox killed
"""

from incident_responder.core.exports import lazy_exports

__all__ = [
    "REGION_NAMES",
    "AccountView",
    "AlarmSpec",
    "BurstResult",
    "Invocation",
    "InvocationOutcome",
    "Workload",
    "WorkloadProfile",
]
__getattr__ = lazy_exports(
    __name__,
    {
        "burst": ["Workload"],
        "invocation": [
            "AccountView",
            "AlarmSpec",
            "BurstResult",
            "Invocation",
            "InvocationOutcome",
            "WorkloadProfile",
        ],
        "traces": ["REGION_NAMES"],
    },
)
