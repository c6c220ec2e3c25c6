"""Fault injection for a Lambda function, against the embedded lab or a real account.

faults         the injector: every fault by name, applied from a scenario; restore
target         the function a fault is injected into: its clients, its configuration, its originals
permissions    its role: permissions for S3, CloudWatch Logs, DynamoDB or SQS revoked
network        its VPC path: no egress from its security groups and subnets
configuration  its settings: concurrency, timeout, memory, /tmp, environment; a noisy neighbour
code           its code: a version whose handler throws, behind the alias its callers use
keys           the key encrypting its environment: disabled, or its role no longer allowed to decrypt
event_sources  what invokes it: mappings disabled, a queue's visibility timeout, a recursive loop
dependencies   what it calls: its table overloaded by another writer, its secrets scheduled for deletion
snapshots      where the originals are kept, outside the target account
errors         a fault that cannot be applied to this function
cli            ``python -m chaos ...`` / ``responder chaos ...``

Every injection first records the original value of each thing it changes (first touch wins, so
injecting twice changes nothing more), and ``restore`` puts exactly those values back.

    >>> from chaos import FaultInjector                         # doctest: +SKIP
    >>> injector = FaultInjector.for_function("data-processor")  # doctest: +SKIP
    >>> injector.throttle(0); injector.restore()                 # doctest: +SKIP
"""

from incident_responder.core.exports import lazy_exports

__all__ = ["ChaosError", "FaultInjector"]
__getattr__ = lazy_exports(__name__, {"errors": ["ChaosError"], "faults": ["FaultInjector"]})
