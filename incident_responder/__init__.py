"""AI incident responder for AWS Lambda, orchestrated by AWS Step Functions.

The packages follow an incident's lifecycle:
    intake         an alert becomes at most one incident (RECEIVED)
    investigation  the investigator agent and its read-only diagnostics tools (INVESTIGATING -> DIAGNOSED)
    proposal       the proposer agent, the restore lookups and the guardrails (PROPOSING -> PROPOSAL_READY)
    review         the critic agent and the approval policy (REVIEWING)
    approval       a person approves exactly what they were shown, once (AWAITING_APPROVAL)
    remediation    apply, record how to undo, verify, roll back (REMEDIATING -> VERIFYING -> REMEDIATED)
    notify         what operators are told, and where
    reporting      one incident as a page, as text, and as the state machine's picture
and what every stage stands on:
    core           contracts, settings, AWS clients, statuses, tracing
    account        read-only readers of the account: configuration, IAM, logs, metrics, baseline and drift
    catalogue      how Lambda fails, as AWS documents it
    agent          the agent loop both agents share, the model factory, the offline model
    state          the incident-state and incident-context stores and the single-table key scheme
    mcp_transport  the MCP servers' transport and auth, and the one client session
    cli            the ``responder`` command
    lab            the embedded AWS account (moto) and the sample workloads: never deployed
"""

__version__ = "0.1.0"
