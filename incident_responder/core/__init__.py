"""What every capability shares: the data contracts, each function's settings, AWS clients, tracing.

contracts      the data contracts: incident, evidence, diagnosis, remediation actions, token usage
settings       one settings model per Lambda function: its environment, validated once at cold start
aws            boto3 clients for one account, created once and reused; AWS errors passed on typed
tracing        X-Ray tracing for the handlers (Powertools' Tracer where a segment can be written)
runtime_hooks  SnapStart runtime hooks: what one snapshot must not hand to every restored environment
exports        how each package re-exports its public names, loaded on first use
"""

from incident_responder.core.exports import lazy_exports

__all__ = ["AwsClients", "lazy_exports"]
__getattr__ = lazy_exports(__name__, {"aws": ["AwsClients"], "exports": ["lazy_exports"]})
