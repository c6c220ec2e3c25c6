"""The model's side of the lab: a local Bedrock Converse endpoint, what answers it, and an eval's recordings.

gateway     the HTTP server speaking Converse (and Bedrock's control plane, for responder doctor)
wire        a request's SigV4 signature checked; Converse read as LangChain messages and written back
backends    what answers: the offline model over the wire (prompt caching accounted for), or a test's script
forwarding  an eval's calls forwarded to the user's Bedrock endpoint, under a spend ceiling
cassettes   one scenario's calls recorded, and replayed by matching each request to a recorded one
eval_model  the model of one eval run: its route for the lab, forwarding, recording or replaying
errors      an answer that is an error, as Bedrock sends one; a recording that cannot be made or replayed
"""

from incident_responder.core.exports import lazy_exports

__all__ = [
    "Cassette",
    "CassetteError",
    "ConverseError",
    "ConverseGateway",
    "EvalModel",
    "Exchange",
    "ForwardBackend",
    "OfflineBackend",
    "PromptCache",
    "ReplayBackend",
    "ScriptedBackend",
    "SpendCeiling",
    "answer",
    "check_signature",
    "text",
    "tool_use",
]
__getattr__ = lazy_exports(
    __name__,
    {
        "backends": ["OfflineBackend", "PromptCache", "ScriptedBackend", "answer", "text", "tool_use"],
        "cassettes": ["Cassette", "ReplayBackend"],
        "errors": ["CassetteError", "ConverseError"],
        "eval_model": ["EvalModel"],
        "forwarding": ["ForwardBackend", "SpendCeiling"],
        "gateway": ["ConverseGateway", "Exchange"],
        "wire": ["check_signature"],
    },
)
