"""The embedded lab: a moto server on loopback standing in for an AWS account, and a sample workload.

>>> from incident_responder.lab import Lab          # doctest: +SKIP
>>> with Lab() as lab:                               # doctest: +SKIP
...     sample = lab.create_sample_account()
"""

from incident_responder.lab.server import Lab, lab_environment

__all__ = ["Lab", "lab_environment"]
