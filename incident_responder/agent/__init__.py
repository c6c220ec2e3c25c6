"""LangGraph agents: one loop (``graph``) shared by the supervisor (investigation) and, later, the resolver.

errors      exception types whose class names are the state machine's ASL error names
tools       tool discovery and calls through providers (MCP over HTTP, in-memory), schema validation
evidence    mechanical verification of a diagnosis's evidence pointers
graph       the agent loop: reason -> route -> execute tools | submit | nudge | end
supervisor  the investigating agent: prompt, submit_diagnosis, verification
offline     a deterministic rule-based chat model (the default model)
models      the model factory behind RESPONDER_MODEL
"""
