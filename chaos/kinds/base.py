"""A chaos kind: one way to break a function, and everything about it.

Its parameters (the scenario format's model for ``- kind: <name>``), the fault type a diagnosis should name,
the sample workloads it applies to (and what it says when a function offers nothing to break), the slots of the
snapshot store it records originals in, how it injects and how it restores one slot. A subclass that leaves out
``inject`` or ``restore`` cannot be instantiated, so the registry (:mod:`chaos.kinds`) fails at import.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar, Generic, TypeVar, cast, get_args

from pydantic import BaseModel, ConfigDict

from chaos.target import FaultTarget
from incident_responder.core.contracts import FaultType

# The lab's sample workloads, by function name (the scenario format's ``workload.function``).
DATA_PROCESSOR = "data-processor"  # Python, in a VPC
ORDERS_API = "orders-api"  # Node.js, alias live, DynamoDB table, secret, KMS-encrypted environment
QUEUE_CONSUMER = "queue-consumer"  # Python, fed by an SQS event source mapping, writes to a results queue
SAMPLE_WORKLOADS = frozenset({DATA_PROCESSOR, ORDERS_API, QUEUE_CONSUMER})


class KindParameters(BaseModel):
    """A fault as a scenario file lists it: ``kind`` and the kind's parameters, nothing else."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: str


P = TypeVar("P", bound=KindParameters)


class ChaosKind(ABC, Generic[P]):
    """One chaos kind. Subclasses set the class attributes and implement ``inject`` and ``restore``."""

    parameters: type[P]  # the scenario model; its ``kind: Literal["<name>"]`` names the kind
    fault_type: ClassVar[FaultType]  # what the investigator should call the fault it produces
    workloads: ClassVar[frozenset[str]]  # the sample workloads it applies to
    refusal: ClassVar[str | None] = None  # what its ChaosError says on a function it does not apply to
    slots: ClassVar[tuple[str, ...]]  # the snapshot slot prefixes it records (``timeout``, ``iam`` for iam.*)
    help: ClassVar[str]  # one line for the command line
    defaults: ClassVar[Mapping[str, Any]] = {}  # for a parameter the command line or a direct call leaves out
    argument_help: ClassVar[Mapping[str, str]] = {}  # the command line's help for a parameter
    example: ClassVar[Mapping[str, Any]] = {}  # parameters that make a valid fault (tests)

    @property
    def name(self) -> str:
        return kind_name(self.parameters)

    def parameter_names(self) -> list[str]:
        return [field for field in self.parameters.model_fields if field != "kind"]

    def parameters_of(self, *args: Any, **params: Any) -> P:
        """A direct call's parameters (positional in the model's order, then keywords, then ``defaults``), as
        given: the kind's own checks judge them, as the command line's values."""
        names = self.parameter_names()
        if len(args) > len(names):
            raise TypeError(f"{self.name}() takes {len(names)} parameter(s) ({', '.join(names)}), not {len(args)}")
        given = {**dict(zip(names, args, strict=False)), **params}
        unknown = set(given) - set(names)
        if unknown:
            raise TypeError(f"{self.name}() has no parameter {sorted(unknown)[0]!r} (it takes {names})")
        values = {**self.defaults, **given}
        for field in names:
            if field not in values and self.parameters.model_fields[field].is_required():
                raise TypeError(f"{self.name}() needs its parameter {field!r}")
        return cast(P, self.parameters.model_construct(kind=self.name, **values))

    @abstractmethod
    def inject(self, target: FaultTarget, params: P) -> list[str]:
        """Record the original of each slot before changing it (first touch wins), change it, record the fault;
        say what changed. On a function it does not apply to, raise ChaosError before changing anything."""

    @abstractmethod
    def restore(self, target: FaultTarget, slot: str, original: Any) -> str:
        """Put back one recorded slot (its whole name, e.g. ``iam.inline.<policy>``) to ``original``; say what."""


def kind_name(parameters: type[KindParameters]) -> str:
    """The kind a parameters model is for: the value of its ``kind: Literal[...]``."""
    (name,) = get_args(parameters.model_fields["kind"].annotation)
    return str(name)
