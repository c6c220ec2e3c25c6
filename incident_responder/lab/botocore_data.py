"""One botocore data loader per lab process, so each AWS service's JSON model is parsed once.

botocore gives every Session a loader of its own, and a loader caches what it parsed only for itself. The lab
makes sessions all the time: moto makes one per service backend (for its region list) at every start and
every reset, each ``AwsClients`` makes one, and every execution environment its handler's. Parsing the
models again for each was a sixth of the CPU a lab start cost. The models are read-only data, so one loader
(per data path) can serve every session of the process; the fork server also parses the models its
functions use before it forks them (the lab's SnapStart, workers.py).
"""

from __future__ import annotations

import threading
from typing import Any

# What the lab's functions create clients for (a model missing here is parsed by the worker that needs it).
FUNCTION_SERVICES = (
    "cloudtrail",
    "cloudwatch",
    "dynamodb",
    "ec2",
    "iam",
    "kms",
    "lambda",
    "logs",
    "s3",
    "sns",
    "sqs",
    "ssm",
    "stepfunctions",
    "sts",
)

_lock = threading.Lock()


def share_loaders() -> None:
    """From now on, every botocore Session of this process gets the same loader for the same data path."""
    import botocore.session

    with _lock:
        create = botocore.session.create_loader
        if getattr(create, "shared", None) is not None:
            return
        loaders: dict[Any, Any] = {}

        def shared(search_path_string: str | None = None) -> Any:
            with _lock:
                if search_path_string not in loaders:
                    loaders[search_path_string] = create(search_path_string)
                return loaders[search_path_string]

        shared.shared = loaders  # type: ignore[attr-defined]
        botocore.session.create_loader = shared


def parse_models(services: tuple[str, ...] = FUNCTION_SERVICES) -> None:
    """Parse what a client of each service needs (model, endpoint rules, partitions) into the shared loader."""
    import boto3

    share_loaders()
    session = boto3.Session(aws_access_key_id="lab", aws_secret_access_key="lab", region_name="us-east-1")
    for service in services:
        session.client(service, endpoint_url="http://127.0.0.1:1")  # no request is made
