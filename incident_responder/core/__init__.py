"""What every capability shares: the data contracts, each function's settings, AWS clients, tracing.

contracts      the data contracts (a package): incident, evidence, diagnosis, actions, review, approval, usage
errors         the errors the shared contracts raise, by their ASL names
status         an incident's status: the state machine's status states
settings       one settings model per Lambda function: its environment, validated once at cold start
aws            boto3 clients for one account, created once and reused; AWS errors passed on typed
tracing        X-Ray tracing for the handlers (Powertools' Tracer where a segment can be written)
runtime_hooks  SnapStart runtime hooks: what one snapshot must not hand to every restored environment
encoding       how a time and a value are written down (ISO 8601 UTC, canonical JSON)
exports        how each package re-exports its public names, loaded on first use
"""

from incident_responder.core.exports import lazy_exports

__all__ = [
    "AwsClients",
    "ConfigurationError",
    "InvalidIncidentError",
    "Status",
    "at_cold_start",
    "canonical",
    "iso",
    "lambda_tracer",
    "lazy_exports",
]
__getattr__ = lazy_exports(
    __name__,
    {
        "aws": ["AwsClients"],
        "encoding": ["canonical", "iso"],
        "errors": ["InvalidIncidentError"],
        "exports": ["lazy_exports"],
        "settings": ["ConfigurationError", "at_cold_start"],
        "status": ["Status"],
        "tracing": ["lambda_tracer"],
    },
)
