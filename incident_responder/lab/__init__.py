"""The embedded lab: a moto server on loopback standing in for an AWS account, and a sample workload.

>>> from incident_responder.lab import Lab          # doctest: +SKIP
>>> with Lab() as lab:                               # doctest: +SKIP
...     sample = lab.create_sample_account()

server            moto in server mode on loopback (Lab), its patches applied, the failure seam in front
environment       the lab's account, region and the variables that point boto3 at it
moto_patches      every patch of moto's internals, one module per service, refusing an untested moto
request_failures  WSGI middleware: chosen API calls fail; management writes go to the trail
api_calls         which API operation a request is, and who signed it
cloudtrail        the lab's CloudTrail: management events recorded, LookupEvents answered
management_events which calls CloudTrail records, who made them, what they name
template          template.yaml as the lab reads it: parsed, translated, conditions decided
stack             the template deployed into moto, its gaps closed, its functions registered
engine            Step Functions' Lambda tasks routed to in-process handlers (LambdaDispatcher)
workers           Lambda's execution environments: worker processes forked from a preloaded server
lambda_context    the context a handler is given
changes           counts of changes in moto that waiters sleep on
errors            the lab's own errors
"""

from incident_responder.core.exports import lazy_exports

__all__ = ["Lab", "lab_environment"]
__getattr__ = lazy_exports(__name__, {"environment": ["lab_environment"], "server": ["Lab"]})
