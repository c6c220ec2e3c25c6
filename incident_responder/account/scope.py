"""What the MCP tools may answer for: onboarded functions only (a recorded baseline exists).

Checked before any tool reads the account: a malformed name (control characters included), a function
that was never onboarded, or an ARN naming another account, region or partition is refused with a
message that says why, and the only AWS call made is the baseline table's own GetItem.
"""

from __future__ import annotations

import anyio
from botocore.exceptions import BotoCoreError, ClientError

from incident_responder.account.baseline import baseline_table_name, onboarded_arn, read_baselines_once
from incident_responder.account.errors import OutOfScopeError
from incident_responder.account.names import function_name_of
from incident_responder.core.aws import AwsClients
from incident_responder.core.members import NotAMemberError, incident_clients


class OnboardedScope:
    def __init__(self, clients: AwsClients, table: str | None = None):
        self.clients = clients
        self.table = table

    def resolve(self, name_or_arn: str) -> tuple[AwsClients, str]:
        """The clients that reach the function (a member account's, for an ARN of an allowed member account and
        Region) and its bare name, if the tools may answer for it; otherwise OutOfScopeError."""
        try:
            name = function_name_of(name_or_arn)
        except ValueError as exc:
            raise OutOfScopeError(str(exc)) from None
        clients = self.clients
        if name_or_arn.startswith("arn:"):
            parts = name_or_arn.split(":")
            try:
                clients = incident_clients(parts[4], parts[3], "read", self.clients)
            except NotAMemberError as exc:
                raise OutOfScopeError(f"{name_or_arn!r}: {exc}") from None
        table = self.table or baseline_table_name()
        try:
            recorded = onboarded_arn(clients, name, table)
        except (ClientError, BotoCoreError) as exc:
            raise OutOfScopeError(f"cannot read the baseline table {table!r} to check {name!r}: {exc}") from None
        if recorded is None:
            raise OutOfScopeError(
                f"{name!r} is not onboarded: the tools answer only for functions with a recorded baseline "
                f"(responder onboard {name})"
            )
        if name_or_arn.startswith("arn:"):
            asked = ":".join(name_or_arn.split(":")[:7])
            if asked != recorded:
                raise OutOfScopeError(
                    f"{name_or_arn!r} is not the onboarded function {name!r} ({recorded or 'no ARN recorded'}): "
                    "another account, region or partition"
                )
        return clients, name

    async def aresolve(self, name_or_arn: str) -> tuple[AwsClients, str]:
        """:meth:`resolve` off the event loop (boto3 blocks), for the MCP servers' async tools: the first thing each
        tool call does, so the baseline item it reads is the one the tool loads next (read once per call)."""
        read_baselines_once()
        return await anyio.to_thread.run_sync(self.resolve, name_or_arn)
