"""AI incident responder for AWS Lambda, orchestrated by AWS Step Functions.

Subpackages and modules:
    account_state  read-only readers of a function's configuration, IAM and network (one implementation
                   shared by the diagnostics tools, the baseline, chaos and the lab workload)
    baseline       record a function's known-good configuration and compare against it (drift)
    diagnostics    the diagnostics tools behind the MCP server, as plain functions with pydantic results
    mcp_auth       bearer API key for the MCP servers (SSM SecureString, environment override)
    scenario       the scenario file format shared by chaos, tests and evaluation
    lab            the embedded AWS account (moto server) and the sample workload
"""

__version__ = "0.1.0"
