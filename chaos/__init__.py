"""Fault injection for a Lambda function, against the embedded lab or a real account.

Every injection first records the original value of each thing it changes (first touch wins, so
injecting twice changes nothing more), and ``restore`` puts exactly those values back.

    >>> from chaos import FaultInjector                         # doctest: +SKIP
    >>> injector = FaultInjector.for_function("data-processor")  # doctest: +SKIP
    >>> injector.throttle(0); injector.restore()                 # doctest: +SKIP
"""

from chaos.faults import ChaosError, FaultInjector

__all__ = ["ChaosError", "FaultInjector"]
