"""What Bedrock answers on a first use it refuses: the Marketplace subscription, the use-case form, an SCP."""

from __future__ import annotations

# Messages as Bedrock answered them in public reports (aws-samples/sample-host-openclaw-on-amazon-bedrock-agentcore#41,
# aws-solutions/aws-control-tower-customizations#211, aws-samples/sample-badgers#33).
MARKETPLACE = (
    "Model access is denied due to IAM user or service role is not authorized to perform the required AWS Marketplace "
    "actions (aws-marketplace:ViewSubscriptions, aws-marketplace:Subscribe) to enable access to this model. Refer to "
    "the Amazon Bedrock documentation for further details. Your AWS Marketplace subscription for this model cannot be "
    "completed at this time. If you recently fixed this issue, try again after 2 minutes."
)


USE_CASE_FORM = (
    "Model use case details have not been submitted for this account. Fill out the Anthropic use case details form "
    "before using the model. If you have already filled out the form, try again in 15 minutes."
)


SCP_DENY = (
    "User: arn:aws:sts::123456789012:assumed-role/InvestigateRole/fn is not authorized to perform: "
    "bedrock:InvokeModel on resource: arn:aws:bedrock:ap-southeast-2::foundation-model/anthropic.claude-haiku-4-5-"
    "20251001-v1:0 with an explicit deny in a service control policy"
)
