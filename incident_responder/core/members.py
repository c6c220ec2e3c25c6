"""Many accounts: the member accounts and Regions a deployment answers for, and clients assumed into one of them.

A member account deploys member-account.yaml: a read role and a remediation role that only the central stack's
function roles may assume, with the external id. :class:`MemberAccess` assumes the one a purpose needs, for the
incident's account and Region only when that pair is on the allow-list, checks that the credentials STS answered with
are that account's, and keeps them for the invocation (refreshed before they expire). The deployment's own account and
Region need no role: its own clients.

An incident's clients (:func:`incident_clients`) are :class:`MemberClients` for a member: the calls on the function and
what it depends on go to the member account, while the deployment's own stores (DynamoDB tables, the artifacts bucket,
topics, executions) stay in the central account. A member function's baseline, history and leases are keyed by its
ARN (:func:`function_key`): two accounts can hold functions of the same name.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

import boto3

from incident_responder.core.aws import AwsClients
from incident_responder.core.contracts import ACCOUNT_RE, REGION_NAME_RE

ACCOUNT = re.compile(ACCOUNT_RE)
REGION = re.compile(REGION_NAME_RE)
Purpose = Literal["read", "remediate"]
SESSION_SECONDS = 900  # STS's minimum: an invocation's reads and writes, not more
REFRESH_MARGIN_SECONDS = 120  # credentials this close to their expiry are assumed again


def session_policy(region: str) -> dict[str, Any]:
    """What assumed credentials may do at most (the role's permissions intersected with this): the member's Region
    only, besides IAM (global, signed for us-east-1), so credentials kept for one Region never act in another."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "TheIncidentsRegion",
                "Effect": "Allow",
                "NotAction": ["iam:*"],
                "Resource": "*",
                "Condition": {"StringEquals": {"aws:RequestedRegion": region}},
            },
            {"Sid": "IamIsGlobal", "Effect": "Allow", "Action": ["iam:*"], "Resource": "*"},
        ],
    }


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

    @property
    def partition(self) -> str:
        return "aws-cn" if self.region.startswith("cn-") else "aws"


def members_of(accounts: str | None, regions: str | None, home_region: str) -> frozenset[Member]:
    """The allow-list as the central stack gives it (MemberAccounts and MemberRegions, comma-separated): every
    listed account in every listed Region (the stack's own Region when none is listed), as a StackSet deploys."""
    listed = [r.strip() for r in (regions or "").split(",") if r.strip()] or [home_region]
    pairs = [f"{a.strip()}:{r}" for a in (accounts or "").split(",") if a.strip() for r in listed]
    return parse_members(",".join(pairs))


def parse_members(text: str | None) -> frozenset[Member]:
    """``ACCOUNT:REGION`` pairs, comma-separated (the allow-list a deployment answers for); a malformed pair is refused
    (ValueError naming it): an allow-list that silently drops an entry is worse than none."""
    members = set()
    for item in (text or "").split(","):
        item = item.strip()
        if not item:
            continue
        account, _, region = item.partition(":")
        if not ACCOUNT.fullmatch(account) or not REGION.fullmatch(region):
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
        role_arn = f"arn:{member.partition}:iam::{member.account}:role/{self.role_prefix}-{purpose}"
        sts = self.home_clients.get("sts")
        try:
            answer = sts.assume_role(
                RoleArn=role_arn,
                RoleSessionName=self.session_name[:64],
                ExternalId=self.external_id,
                DurationSeconds=SESSION_SECONDS,
                Policy=json.dumps(session_policy(member.region)),
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


# Services whose calls stay in the deployment's own account whatever the incident's: its tables, artifacts bucket,
# topics and executions. A member function's own DynamoDB tables are read with :meth:`MemberClients.in_account`.
CENTRAL_SERVICES = frozenset({"dynamodb", "s3", "sns", "stepfunctions"})


class MemberClients(AwsClients):
    """Clients for an incident in a member account: calls go to the member, except :data:`CENTRAL_SERVICES`, which
    stay with the deployment's own clients. The member role is assumed at the first call that needs it, so a stage
    that only keys its records by the function (the report, the review) never assumes one."""

    def __init__(self, access: MemberAccess, member: Member, purpose: Purpose):
        super().__init__(access.home_clients.session)
        self.home = access.home_clients
        self.access = access
        self.member = member
        self.purpose = purpose

    def get(self, service: str) -> Any:
        return self.home.get(service) if service in CENTRAL_SERVICES else self.in_account(service)

    def in_account(self, service: str) -> Any:
        return self.access.clients(self.member.account, self.member.region, self.purpose).get(service)

    @property
    def region(self) -> str:
        return self.member.region

    @property
    def endpoint_url(self) -> str:
        return self.home.endpoint_url

    def account_id(self) -> str:
        return self.member.account


class _Given:
    """A :class:`MemberAccess` stand-in whose member clients are given: the member account's own credentials (an
    operator onboarding a member's function, the lab's administration of a member)."""

    def __init__(self, home_clients: AwsClients, member_clients: AwsClients):
        self.home_clients = home_clients
        self._member_clients = member_clients

    def clients(self, account: str, region: str, purpose: Purpose = "read") -> AwsClients:
        return self._member_clients


def with_member_credentials(home_clients: AwsClients, member_clients: AwsClients, member: Member) -> MemberClients:
    """:class:`MemberClients` acting in ``member`` with its own credentials (``member_clients``), the deployment's
    stores through ``home_clients``."""
    return MemberClients(_Given(home_clients, member_clients), member, "remediate")  # type: ignore[arg-type]


def member_of(clients: AwsClients) -> Member | None:
    """The member account and Region ``clients`` act in; None for the deployment's own."""
    return getattr(clients, "member", None)


def _arn(member: Member, function_name: str) -> str:
    return f"arn:{member.partition}:lambda:{member.region}:{member.account}:function:{function_name}"


def function_key(clients: AwsClients, function_name: str) -> str:
    """How the deployment's records name a function: its name in the deployment's own account and Region (as before
    there were members), its unqualified ARN in a member's (the same name there is another function)."""
    member = member_of(clients)
    return function_name if member is None else _arn(member, function_name)


def home_of(home_clients: AwsClients | None = None) -> Member:
    """The deployment's own account and Region: HOME_ACCOUNT (the stack sets it) and AWS_REGION ("" where unset)."""
    region = os.environ.get("AWS_REGION") or (home_clients.session.region_name if home_clients else "") or ""
    return Member(os.environ.get("HOME_ACCOUNT") or "", region)


def _member_for(account: str | None, region: str | None, home_clients: AwsClients | None = None) -> Member | None:
    """The member an incident's account and Region name; None for the deployment's own (or an incident naming none).
    Without HOME_ACCOUNT the deployment's own account is unknown here: only a listed member is one, as before
    members (ingest admitted nothing else). Whether a named member is allowed is :meth:`MemberAccess.clients`'s."""
    home = home_of(home_clients)
    if not account or (account == home.account and (not region or region == home.region)):
        return None
    wanted = Member(account, region or home.region)
    if not home.account and (not members_configured() or wanted not in member_access(home_clients).members):
        return None
    return wanted


def function_key_of(account: str | None, region: str | None, function_name: str) -> str:
    """:func:`function_key` of a function named with its account and Region (an incident's), without credentials:
    by ARN for another account or Region than the deployment's (ingest admitted it only as an allowed member)."""
    member = _member_for(account, region)
    return function_name if member is None else _arn(member, function_name)


def place_of(account: str | None, region: str | None) -> str:
    """Where an incident is, for a person: "account A, Region R" for a member's; "" for the deployment's own."""
    return f"account {account}, Region {region}" if function_key_of(account, region, "f").startswith("arn:") else ""


def members_configured() -> bool:
    """Whether this process's environment names member accounts (MEMBER_ACCOUNTS) or the stack's list of them."""
    return bool(os.environ.get("MEMBER_ACCOUNTS") or os.environ.get("MEMBERS_PARAMETER"))


def member_function_arn(incident: Any) -> str | None:
    """The unqualified ARN of an incident's function in a member account (what its tool calls name); None for the
    deployment's own account and Region."""
    key = function_key_of(incident.account_id, incident.region, incident.function_name)
    return key if key.startswith("arn:") else None


class LazyMembers(Collection[Member]):
    """The allow-list, read (:func:`member_access`) only when an alert of another account or Region than the
    deployment's asks whether it is on it: the deployment's own alerts read nothing."""

    def __init__(self, load: Callable[[], frozenset[Member]]):
        self._load = load
        self._members: frozenset[Member] | None = None

    def _get(self) -> frozenset[Member]:
        if self._members is None:
            self._members = frozenset(self._load())
        return self._members

    def __contains__(self, item: object) -> bool:
        return item in self._get()

    def __iter__(self) -> Iterator[Member]:
        return iter(self._get())

    def __len__(self) -> int:
        return len(self._get())


@dataclass(frozen=True)
class MemberConfig:
    members: frozenset[Member] = frozenset()
    external_id: str | None = None
    role_prefix: str = "incident-responder"


CONFIG_SECONDS = 300  # the stack's members parameter is read again after this long (an update reaches warm functions)


def member_config(home_clients: AwsClients, home_region: str) -> MemberConfig:
    """The allow-list, external id and role prefix: from MEMBER_ACCOUNTS, MEMBER_REGIONS, MEMBER_EXTERNAL_ID and
    MEMBER_ROLE_PREFIX when MEMBER_ACCOUNTS is set (a self-hosted server, the lab), else from the SSM parameter
    MEMBERS_PARAMETER names (the stack's: a changed member list then needs no new function version), else none.
    ValueError for a malformed list."""
    env = os.environ
    if env.get("MEMBER_ACCOUNTS"):
        values = {
            "accounts": env.get("MEMBER_ACCOUNTS"),
            "regions": env.get("MEMBER_REGIONS"),
            "external_id": env.get("MEMBER_EXTERNAL_ID"),
            "role_prefix": env.get("MEMBER_ROLE_PREFIX"),
        }
    elif env.get("MEMBERS_PARAMETER"):
        return config_in_parameter(home_clients, env["MEMBERS_PARAMETER"], home_region)
    else:
        return MemberConfig()
    return _config_of(values, home_region)


def stack_member_config(clients: AwsClients, stack: str) -> MemberConfig:
    """The members the central stack ``stack`` lists (its ``/<stack>/members`` parameter, template.yaml's
    MembersParameter), for a person's command run with the central account's credentials."""
    return config_in_parameter(clients, f"/{stack}/members", clients.region)


def config_in_parameter(clients: AwsClients, name: str, home_region: str) -> MemberConfig:
    """The members a stack's parameter lists (``/<stack>/members``, a JSON object); ValueError when malformed."""
    values = json.loads(clients.get("ssm").get_parameter(Name=name)["Parameter"]["Value"])
    if not isinstance(values, dict):
        raise ValueError(f"{name}: expected a JSON object")
    return _config_of(values, home_region)


def _config_of(values: dict[str, Any], home_region: str) -> MemberConfig:
    return MemberConfig(
        members=members_of(str(values.get("accounts") or ""), str(values.get("regions") or ""), home_region),
        external_id=str(values.get("external_id") or "") or None,
        role_prefix=str(values.get("role_prefix") or "") or "incident-responder",
    )


_ACCESS: dict[tuple, tuple[MemberAccess, float]] = {}
_ACCESS_LOCK = threading.Lock()


def member_access(home_clients: AwsClients | None = None) -> MemberAccess:
    """The process's :class:`MemberAccess` (:func:`member_config`), kept across warm invocations with the
    credentials it assumed; its configuration read again after :data:`CONFIG_SECONDS`."""
    env = os.environ
    home_clients = home_clients or AwsClients.shared()
    names = ("MEMBER_ACCOUNTS", "MEMBER_REGIONS", "MEMBER_EXTERNAL_ID", "MEMBER_ROLE_PREFIX", "MEMBERS_PARAMETER")
    key = (id(home_clients), *(env.get(n) for n in names), env.get("HOME_ACCOUNT"), env.get("AWS_REGION"))
    with _ACCESS_LOCK:
        kept = _ACCESS.get(key)
        if kept is not None and (not env.get("MEMBERS_PARAMETER") or time.time() - kept[1] < CONFIG_SECONDS):
            return kept[0]
        home = home_of(home_clients)
        config = member_config(home_clients, home.region)
        access = MemberAccess(
            home_clients=home_clients,
            home=home,
            members=config.members,
            external_id=config.external_id,
            role_prefix=config.role_prefix,
            session_name=(env.get("AWS_LAMBDA_FUNCTION_NAME") or "incident-responder")[:64],
        )
        if kept is not None and kept[0].external_id == access.external_id:
            access._held = kept[0]._held  # the credentials assumed still hold
        _ACCESS[key] = (access, time.time())
        return access


def incident_clients(
    account: str | None, region: str | None, purpose: Purpose = "read", home_clients: AwsClients | None = None
) -> AwsClients:
    """The clients an incident's stage uses: the deployment's own for its own account and Region (or an incident
    that names none: nothing is read for it), else :class:`MemberClients` for an allowed member (NotAMemberError
    otherwise, MemberAccessError when its role cannot be assumed)."""
    home_clients = home_clients or AwsClients.shared()
    member = _member_for(account, region, home_clients)
    if member is None:
        return home_clients
    access = member_access(home_clients)
    if member not in access.members:
        access.clients(member.account, member.region, purpose)  # raises NotAMemberError, saying what is listed
    return MemberClients(access, member, purpose)
