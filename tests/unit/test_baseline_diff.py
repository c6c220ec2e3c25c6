import pytest

from incident_responder.account.drift import diff_configurations
from incident_responder.account.names import function_name_of
from incident_responder.account.network import NetworkState, SecurityGroupEgress
from incident_responder.account.role import RoleState
from incident_responder.account.state import FunctionConfiguration

EGRESS = [{"IpProtocol": "-1", "IpRanges": [{"CidrIp": "0.0.0.0/0"}]}]


def config(**changes) -> FunctionConfiguration:
    base = FunctionConfiguration(
        function_name="f",
        role=RoleState(
            role_name="r",
            role_arn="arn:aws:iam::1:role/r",
            inline_policies={"s3-access": {"Statement": [{"Effect": "Allow", "Action": "s3:GetObject"}]}},
        ),
        reserved_concurrency=10,
        timeout=30,
        memory_size=512,
        network=NetworkState(in_vpc=True, security_groups=[SecurityGroupEgress(group_id="sg-1", egress_rules=EGRESS)]),
    )
    return base.model_copy(update=changes)


def test_identical_configurations_have_no_drift():
    assert diff_configurations(config(), config()) == []


def test_each_change_is_reported_with_path_and_both_values():
    current = config(
        reserved_concurrency=0,
        memory_size=128,
        role=RoleState(role_name="r", role_arn="arn:aws:iam::1:role/r", inline_policies={}),
        network=NetworkState(in_vpc=True, security_groups=[SecurityGroupEgress(group_id="sg-1", egress_rules=[])]),
    )
    diffs = {d.path: d for d in diff_configurations(config(), current)}
    assert set(diffs) == {
        "reserved_concurrency",
        "memory_size",
        "role.inline_policies.s3-access",
        "network.security_groups.sg-1.egress_rules",
    }
    assert (diffs["reserved_concurrency"].baseline, diffs["reserved_concurrency"].current) == (10, 0)
    assert diffs["role.inline_policies.s3-access"].current is None
    assert diffs["network.security_groups.sg-1.egress_rules"].baseline == EGRESS


def test_list_order_is_not_drift():
    two = [{"IpProtocol": "tcp", "FromPort": 443}, {"IpProtocol": "tcp", "FromPort": 80}]
    a = config(
        network=NetworkState(in_vpc=True, security_groups=[SecurityGroupEgress(group_id="sg-1", egress_rules=two)])
    )
    b = config(
        network=NetworkState(
            in_vpc=True, security_groups=[SecurityGroupEgress(group_id="sg-1", egress_rules=two[::-1])]
        )
    )
    assert diff_configurations(a, b) == []


@pytest.mark.parametrize(
    "value, name",
    [
        ("data-processor", "data-processor"),
        ("arn:aws:lambda:eu-west-1:123456789012:function:orders_v2", "orders_v2"),
        ("arn:aws:lambda:us-gov-west-1:123456789012:function:f:$LATEST", "f"),
    ],
)
def test_function_name_of_accepts_names_and_arns(value, name):
    assert function_name_of(value) == name


@pytest.mark.parametrize("value", ["", "a b", "../etc/passwd", "x" * 65, "arn:aws:s3:::bucket", "f;rm -rf"])
def test_function_name_of_rejects_anything_else(value):
    with pytest.raises(ValueError):
        function_name_of(value)


class CountingClients:
    """Every AWS call a configuration read makes, answered as a function with nothing set would be."""

    def __init__(self):
        self.calls = []

    def get(self, service):
        clients = self

        class Client:
            def __getattr__(self, operation):
                def call(**kwargs):
                    clients.calls.append(f"{service}:{operation}")
                    return {"ReservedConcurrentExecutions": 3} if operation == "get_function_concurrency" else {}

                return call

        return Client()


RAW = {"FunctionName": "f", "Role": "arn:aws:iam::1:role/r", "Timeout": 3, "MemorySize": 128}


def test_a_partial_read_reads_only_its_parts_and_takes_the_rest_from_the_baseline():
    from incident_responder.account.state import configuration_from

    clients, baseline = CountingClients(), config()
    nothing = configuration_from(clients, RAW, (), baseline)
    assert clients.calls == []  # what GetFunctionConfiguration gave, and the baseline's own parts
    assert (nothing.timeout, nothing.memory_size) == (3, 128)
    assert (nothing.role, nothing.network, nothing.reserved_concurrency) == (baseline.role, baseline.network, 10)
    concurrency = configuration_from(clients, RAW, ("reserved_concurrency",), baseline)
    assert clients.calls == ["lambda:get_function_concurrency"] and concurrency.reserved_concurrency == 3
    paths = {d.path for d in diff_configurations(baseline, concurrency)}
    assert paths == {"reserved_concurrency", "timeout", "memory_size"}  # the parts not read never differ
    with pytest.raises(ValueError, match="no such part"):
        configuration_from(clients, RAW, ("policies",), baseline)
    with pytest.raises(ValueError, match="takes the parts"):
        configuration_from(clients, RAW, ("role",))
