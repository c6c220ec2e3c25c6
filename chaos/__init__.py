"""Fault injection for a Lambda function, against the embedded lab or a real account.

kinds          one module per chaos kind (its scenario parameters, fault type, workloads, inject, restore) and
               the registry the scenario schema, FAULT_TYPE_OF_KIND and the command line are built from
faults         the injector: any kind by name, a scenario's faults in order; restore, slot by slot
target         the function a fault is injected into: its clients, its configuration, its mappings, its originals
scenario       what chaos reads of a scenario file: its faults and the function they apply to
code           deployment packages chaos writes: a handler that throws, an idle function
metrics        load another party puts on what the function shares, published as AWS publishes it
snapshots      where the originals are kept, outside the target account
errors         a fault that cannot be applied to this function
cli            ``python -m chaos ...`` / ``responder chaos ...``

Every injection first records the original value of each thing it changes (first touch wins, so
injecting twice changes nothing more), and ``restore`` puts back exactly those values. Chaos imports
production code only, never the lab: the lab applies scenarios with it, operators run it against real AWS.

    >>> from chaos import FaultInjector                         # doctest: +SKIP
    >>> injector = FaultInjector.for_function("data-processor")  # doctest: +SKIP
    >>> injector.throttle(0); injector.restore()                 # doctest: +SKIP
"""

from incident_responder.core.exports import lazy_exports

__all__ = ["ChaosError", "FaultInjector"]
__getattr__ = lazy_exports(__name__, {"errors": ["ChaosError"], "faults": ["FaultInjector"]})
