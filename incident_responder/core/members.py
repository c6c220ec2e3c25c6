"""Many accounts: the member accounts and Regions a deployment answers for, and clients assumed into one of them.

A member account deploys member-account.yaml: a read role and a remediation role that only the central stack's
function roles may assume, with the external id. :class:`MemberAccess` assumes the one a purpose needs, for the
incident's account and Region only when that pair is on the allow-list, checks that the credentials STS answered with
are that account's, and keeps them for the invocation (refreshed before they expire). The deployment's own account and
Region need no role: its own clients. Nothing here is wired into the lifecycle yet (docs/deploy.md says what is).
"""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass, field
from typing import Literal

import boto3

from incident_responder.core.aws import AwsClients

ACCOUNT = re.compile(r"^\d{12}$")
REGION = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d$")
Purpose = Literal["read", "remediate"]
SESSION_SECONDS = 900  # STS's minimum: an invocation's reads and writes, not more
REFRESH_MARGIN_SECONDS = 120  # credentials this close to their expiry are assumed again


class NotAMemberError(ValueError):
    """An account and Region the deployment does not answer for: refused before anything is assumed."""


class MemberAccessError(RuntimeError):
    """The member role could not be assumed, or STS answered with another account's credentials."""


@dataclass(frozen=True, order=True)
class Member:
    account: str
    region: str

    def __str__(self) -> str:
        return f"{self.account}:{self.region}"


def parse_members(text: str | None) -> frozenset[Member]:
    """``ACCOUNT:REGION`` pairs, comma-separated (the allow-list a deployment answers for); a malformed pair is refused
    (ValueError naming it): an allow-list that silently drops an entry is worse than none."""
    members = set()
    for item in (text or "").split(","):
        item = item.strip()
        if not item:
            continue
        account, _, region = item.partition(":")
        if not ACCOUNT.match(account) or not REGION.match(region):
            raise ValueError(f"member {item[:60]!r}: expected ACCOUNT:REGION (12 digits, a Region such as eu-west-1)")
        members.add(Member(account, region))
    return frozenset(members)


@dataclass
class _Held:
    clients: AwsClients
    expires: float


@dataclass
class MemberAccess:
    """Clients for an incident's account and Region: the deployment's own, or assumed into an allowed member."""

    home_clients: AwsClients
    home: Member
    members: frozenset[Member]
    external_id: str | None
    role_prefix: str = "incident-responder"
    session_name: str = "incident-responder"
    _held: dict[tuple[Member, Purpose], _Held] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def clients(self, account: str, region: str, purpose: Purpose = "read") -> AwsClients:
        """Clients acting in ``account`` and ``region`` for ``purpose`` (read: the read role; remediate: the
        remediation role). Raises NotAMemberError for a pair off the allow-list, MemberAccessError when the role
        cannot be assumed or answers for another account."""
        wanted = Member(account, region)
        if wanted == self.home:
            return self.home_clients
        if wanted not in self.members:
            listed = ", ".join(str(m) for m in sorted(self.members)) or "none"
            raise NotAMemberError(
                f"account {account}, Region {region} is not a member this deployment answers for "
                f"(its own: {self.home}; members: {listed})"
            )
        if not self.external_id:
            raise MemberAccessError("no external id is configured: member roles cannot be assumed")
        with self._lock:
            held = self._held.get((wanted, purpose))
            if held is None or held.expires - time.time() < REFRESH_MARGIN_SECONDS:
                held = self._held[(wanted, purpose)] = self._assume(wanted, purpose)
            return held.clients

    def _assume(self, member: Member, purpose: Purpose) -> _Held:
        partition = "aws-cn" if member.region.startswith("cn-") else "aws"
        role_arn = f"arn:{partition}:iam::{member.account}:role/{self.role_prefix}-{purpose}"
        sts = self.home_clients.get("sts")
        try:
            answer = sts.assume_role(
                RoleArn=role_arn,
                RoleSessionName=self.session_name[:64],
                ExternalId=self.external_id,
                DurationSeconds=SESSION_SECONDS,
            )
        except Exception as exc:  # noqa: BLE001 - said with the role, whatever STS answered
            raise MemberAccessError(f"{role_arn} could not be assumed: {exc}") from exc
        said = str(answer.get("AssumedRoleUser", {}).get("Arn", ""))
        if said.split(":")[4:5] != [member.account]:
            raise MemberAccessError(f"{role_arn} answered as {said[:200]!r}, not as account {member.account}")
        credentials = answer["Credentials"]
        session = boto3.Session(
            aws_access_key_id=credentials["AccessKeyId"],
            aws_secret_access_key=credentials["SecretAccessKey"],
            aws_session_token=credentials["SessionToken"],
            region_name=member.region,
        )
        expiration = credentials.get("Expiration")
        expires = expiration.timestamp() if hasattr(expiration, "timestamp") else time.time() + SESSION_SECONDS
        return _Held(AwsClients(session), expires)
