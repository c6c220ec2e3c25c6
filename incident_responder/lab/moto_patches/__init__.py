"""SERVING the lab: every patch of moto's internals, one module per moto service, applied once by Lab.start.

pinned         the moto version the patches were verified against; apply() checks it, then applies each patch
awslambda      GetAccountSettings, EphemeralStorage and DeadLetterConfig kept, event invoke configs replaced, SNS deliveries handed to the lab's dispatcher
backends       moto's server lists its services once
cloudwatch     ListMetrics by dimension name
dynamodb       conditional writes applied one at a time
function_states  a function's State, StateReason(Code), LastUpdateStatus as the lab's Lambda sets them; the lab's route for AWS's side
iam            a role's inline policies that CloudFormation created, stored as JSON (read back as documents)
responses      an action moto does not implement answered as an AWS error (501 NotImplemented), not a traceback
sqs            moto's SQS leaves mapped queues to the lab's pollers (applied when a lab serves the queue consumer)
sts            AssumeRole answers only as the role's trust policy allows (the boundary between the lab's accounts)
stepfunctions  JSONata, SendTaskFailure's cause, definitions parsed once, shared clients, Lambda tasks routed
errors         a moto other than the tested one
"""

from incident_responder.core.exports import lazy_exports

__all__ = ["TESTED_MOTO_VERSION", "UntestedMotoError", "apply", "instant_retries", "take_over_queue_polling"]
__getattr__ = lazy_exports(
    __name__,
    {
        "errors": ["UntestedMotoError"],
        "pinned": ["TESTED_MOTO_VERSION", "apply"],
        "sqs": ["take_over_queue_polling"],
        "stepfunctions": ["instant_retries"],
    },
)
