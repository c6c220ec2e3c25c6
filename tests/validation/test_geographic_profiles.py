"""A geographic inference profile (us., eu., apac.) instead of the default global one: deployable through
ResponderModel as it is, with the agents' roles scoped to it, for an organisation whose SCP denies Regions outside
one geography (a global profile may route a call to any commercial Region, and Bedrock then answers AccessDenied)."""

from __future__ import annotations

import re

import pytest

from incident_responder.agent.model_catalog import (
    DEFAULT_MODEL_ID,
    GEOGRAPHIES,
    base_model_id,
    end_of_life,
    geographic_profile,
    geography_of_region,
    profile_reach,
)
from tests.template_reading import MCP_SERVER_OF, SAM, may_invoke, model_statements

# A Region in each geography, as a destination its profile may route to (Bedrock's geographic cross-Region inference).
DESTINATION = {"us": "us-east-2", "eu": "eu-west-3", "apac": "ap-southeast-2"}


@pytest.mark.parametrize("geography", ["us", "eu", "apac"])
def test_a_geographic_profile_of_the_default_model_is_a_deployable_responder_model(geography):
    profile_id = geographic_profile(DEFAULT_MODEL_ID, geography)
    assert profile_id == f"{geography}.{base_model_id(DEFAULT_MODEL_ID)}"
    spec = f"bedrock_converse:{profile_id}"
    assert re.fullmatch(SAM["Parameters"]["ResponderModel"]["AllowedPattern"], spec)
    assert end_of_life(profile_id) is None
    profile = f"arn:aws:bedrock:us-east-1:123456789012:inference-profile/{profile_id}"
    model = f"arn:aws:bedrock:{DESTINATION[geography]}::foundation-model/{base_model_id(DEFAULT_MODEL_ID)}"
    for function in sorted(MCP_SERVER_OF):
        statements = model_statements(function, spec)
        assert may_invoke(statements, profile), function
        assert may_invoke(statements, model, through_profile=profile), function  # where the profile routes
        assert not may_invoke(statements, model), function  # never directly
        # Not the global profile any more: an SCP that denies other geographies is never asked about them.
        assert not may_invoke(statements, profile.replace(f"/{geography}.", "/global.")), function


def test_the_catalogue_says_which_regions_each_profile_may_reach():
    assert "any commercial" in profile_reach(DEFAULT_MODEL_ID)
    assert "United States" in profile_reach(geographic_profile(DEFAULT_MODEL_ID, "us"))
    assert "Europe" in profile_reach(geographic_profile(DEFAULT_MODEL_ID, "eu"))
    assert "Asia Pacific" in profile_reach(geographic_profile(DEFAULT_MODEL_ID, "apac"))
    assert "only" in profile_reach(base_model_id(DEFAULT_MODEL_ID))  # no profile: the Region it is called in
    assert set(GEOGRAPHIES) >= {"global", "us", "eu", "apac"}
    for region, geography in {
        "us-east-1": "us",
        "us-west-2": "us",
        "eu-west-1": "eu",
        "eu-central-1": "eu",
        "ap-southeast-2": "apac",
        "ap-northeast-1": "apac",
        "us-gov-west-1": "us-gov",
        "me-central-1": None,
    }.items():
        assert geography_of_region(region) == geography, region
