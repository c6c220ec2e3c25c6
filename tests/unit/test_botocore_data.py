"""The lab's one botocore data loader per process: sessions share it, and what it parsed is not parsed again."""

from __future__ import annotations

import boto3
import botocore.session
from botocore.loaders import JSONFileLoader, Loader

from incident_responder.lab.botocore_data import parse_models, share_loaders


def test_sessions_share_one_loader_and_a_parsed_model_is_not_read_again(monkeypatch):
    share_loaders()
    share_loaders()  # idempotent: not a loader of loaders
    first, second = botocore.session.Session(), botocore.session.Session()
    assert first.get_component("data_loader") is second.get_component("data_loader")

    parse_models(("lambda", "dynamodb"))
    reads = []
    original = JSONFileLoader.load_file
    monkeypatch.setattr(JSONFileLoader, "load_file", lambda self, path: reads.append(path) or original(self, path))
    session = boto3.Session(aws_access_key_id="k", aws_secret_access_key="s", region_name="eu-west-1")
    session.client("lambda", endpoint_url="http://127.0.0.1:1")
    session.client("dynamodb", endpoint_url="http://127.0.0.1:1")
    assert reads == []
    Loader().load_service_model("lambda", "service-2")  # a loader of its own reads the file again (counted)
    assert any("lambda" in str(path) for path in reads)
