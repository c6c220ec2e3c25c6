"""INVESTIGATING, PROPOSING and REVIEWING: the agent loop the three agents share, and the models they run on.

spec           what one run is made of: the agent's spec, limits, state, context (bound models) and outcome
graph          the agent loop: reason -> route -> execute tools | submit | nudge | give up
nodes          the loop's nodes and routes, and the watchdog that tells the model to submit
protocol       what the agents and the offline model agree on: tags, quoting, terminal and lookup tool names
tools          tool discovery and calls through providers (MCP over HTTP, in-memory)
executor       each call's arguments and result checked against the tool's schemas (once), its scope enforced
evidence       mechanical verification of a diagnosis's and a review's evidence pointers
errors         exception types whose class names are the state machine's ASL error names
models         the chat model factory behind RESPONDER_MODEL
configured     what an agent function builds from its settings: its model, limits and MCP server config
model_catalog  what the project knows of Bedrock models: the default, end of life, prompt caching, prices
telemetry      spans, log lines and metrics of each model turn and tool call
transcript     what each agent said and did, turn by turn, for a person to read after the run
offline        a deterministic rule-based chat model (the default model)
"""

from incident_responder.core.exports import lazy_exports

__all__ = [
    "DEFAULT_MODEL",
    "AgentRun",
    "AgentSpec",
    "InMemoryToolProvider",
    "Limits",
    "McpAuthError",
    "McpConnectionError",
    "McpInitError",
    "McpServerConfig",
    "McpToolProvider",
    "ModelAuthError",
    "ModelConfigError",
    "ModelTransientError",
    "SUBMIT_DIAGNOSIS",
    "SUBMIT_PROPOSAL",
    "SUBMIT_REVIEW",
    "ToolExecutor",
    "ToolSpec",
    "agent_graph",
    "classify_model_error",
    "create_chat_model",
    "parse_spec",
    "quote_untrusted",
    "run_agent",
    "run_agent_over_mcp",
    "verify_diagnosis",
    "verify_review",
]
__getattr__ = lazy_exports(
    __name__,
    {
        "errors": [
            "McpAuthError",
            "McpConnectionError",
            "McpInitError",
            "ModelAuthError",
            "ModelConfigError",
            "ModelTransientError",
            "classify_model_error",
        ],
        "evidence": ["verify_diagnosis", "verify_review"],
        "graph": ["agent_graph", "run_agent", "run_agent_over_mcp"],
        "model_catalog": ["DEFAULT_MODEL"],
        "models": ["create_chat_model", "parse_spec"],
        "protocol": ["SUBMIT_DIAGNOSIS", "SUBMIT_PROPOSAL", "SUBMIT_REVIEW", "quote_untrusted"],
        "spec": ["AgentRun", "AgentSpec", "Limits"],
        "executor": ["ToolExecutor"],
        "tools": ["InMemoryToolProvider", "McpServerConfig", "McpToolProvider", "ToolSpec"],
    },
)
