"""SERVING the lab's Lambda: what moto's Lambda lacks that the lab's faults and tools need, filled in as Lambda
behaves, and where the lab's dispatcher takes over what moto's Docker-less Lambda would only echo.

Applied once, before the lab's server answers its first Lambda request (Lab.start: pinned.apply).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

# Lambda's default account limit; a real account's may be raised.
ACCOUNT_CONCURRENCY_LIMIT = 1000


def answer_account_settings() -> None:
    """moto has no GetAccountSettings (its server answers 404): the lab answers as Lambda does, with the default
    concurrency limit, less what the functions' reservations hold back from the unreserved pool."""
    from moto.awslambda import urls
    from moto.awslambda.models import lambda_backends
    from moto.awslambda_simple.models import lambda_simple_backends

    pattern = r"{0}/(?P<api_version>[^/]+)/account-settings/?$"
    if pattern in urls.url_paths:
        return

    def account_settings(request, full_url, headers):  # noqa: ANN001 (moto's handler signature)
        reserved, count, size = 0, 0, 0
        # Without Docker (the lab's configuration) moto keeps functions in its "simple" backend.
        for regions in [*lambda_backends.values(), *lambda_simple_backends.values()]:
            for backend in regions.values():
                for fn in backend.list_functions():
                    count += 1
                    size += int(getattr(fn, "code_size", 0) or 0)
                    reserved += int(getattr(fn, "reserved_concurrency", None) or 0)
        body = {
            "AccountLimit": {
                "TotalCodeSize": 80530636800,
                "CodeSizeUnzipped": 262144000,
                "CodeSizeZipped": 52428800,
                "ConcurrentExecutions": ACCOUNT_CONCURRENCY_LIMIT,
                "UnreservedConcurrentExecutions": ACCOUNT_CONCURRENCY_LIMIT - reserved,
            },
            "AccountUsage": {"TotalCodeSize": size, "FunctionCount": count},
        }

        return 200, {"Content-Type": "application/json"}, json.dumps(body)

    urls.url_paths[pattern] = account_settings


def keep_ephemeral_storage() -> None:
    """moto's UpdateFunctionConfiguration drops ``EphemeralStorage``: keep it, as Lambda does."""
    from moto.awslambda.models import LambdaFunction

    if getattr(LambdaFunction.update_configuration, "_keeps_ephemeral_storage", False):
        return
    original = LambdaFunction.update_configuration

    def update_configuration(self: Any, config_updates: dict[str, Any]) -> Any:
        storage = (config_updates.get("EphemeralStorage") or {}).get("Size")
        if storage is not None:
            self.ephemeral_storage = int(storage)
        return original(self, config_updates)

    update_configuration._keeps_ephemeral_storage = True  # type: ignore[attr-defined]
    LambdaFunction.update_configuration = update_configuration  # type: ignore[method-assign]


def route_sns_deliveries(deliver: Callable[..., Any]) -> Callable[..., Any]:
    """moto's Docker-less Lambda only echoes what SNS delivers: ``deliver`` (the lab's dispatcher) gets it from now
    on; returns what moto called before."""
    from moto.awslambda_simple.models import LambdaSimpleBackend

    before = LambdaSimpleBackend.send_sns_message
    LambdaSimpleBackend.send_sns_message = deliver
    return before


def keep_processing_results() -> None:
    """moto's event source mappings always answer ``LastProcessingResult: null``: answer what the lab's poller
    recorded (:func:`record_processing_result`), as Lambda reports the result of the mapping's last poll."""
    from moto.awslambda.models import EventSourceMapping

    if getattr(EventSourceMapping.get_configuration, "_keeps_processing_results", False):
        return
    original = EventSourceMapping.get_configuration

    def get_configuration(self: Any) -> dict[str, Any]:
        response = original(self)
        response["LastProcessingResult"] = self.__dict__.get("lab_last_processing_result")
        return response

    get_configuration._keeps_processing_results = True  # type: ignore[attr-defined]
    EventSourceMapping.get_configuration = get_configuration  # type: ignore[method-assign]


def record_processing_result(uuid: str, result: str) -> None:
    """What the lab's poller makes of its last poll of mapping ``uuid`` (``OK``, ``PROBLEM: Function call
    failed``). Effective where moto serves the lab (this process); elsewhere harmless."""
    from moto.awslambda.models import lambda_backends
    from moto.awslambda_simple.models import lambda_simple_backends

    for regions in [*lambda_backends.values(), *lambda_simple_backends.values()]:
        for backend in regions.values():
            mapping = backend._event_source_mappings.get(uuid)
            if mapping is not None:
                mapping.lab_last_processing_result = result


def keep_dead_letter_config() -> None:
    """moto drops a function's ``DeadLetterConfig`` (CreateFunction, UpdateFunctionConfiguration): keep it and
    return it in the configuration, as Lambda does (an empty ``TargetArn`` removes it)."""
    from moto.awslambda.models import LambdaFunction

    if getattr(LambdaFunction.get_configuration, "_keeps_dead_letter_config", False):
        return
    init, update, get = LambdaFunction.__init__, LambdaFunction.update_configuration, LambdaFunction.get_configuration

    def __init__(self: Any, account_id: str, spec: dict[str, Any], *args: Any, **kwargs: Any) -> None:
        init(self, account_id, spec, *args, **kwargs)
        self.dead_letter_target = (spec.get("DeadLetterConfig") or {}).get("TargetArn") or None

    def update_configuration(self: Any, config_updates: dict[str, Any]) -> Any:
        if "DeadLetterConfig" in config_updates:
            self.dead_letter_target = (config_updates["DeadLetterConfig"] or {}).get("TargetArn") or None
        return update(self, config_updates)

    def get_configuration(self: Any, *args: Any, **kwargs: Any) -> Any:
        config = get(self, *args, **kwargs)
        target = getattr(self, "dead_letter_target", None)
        if target:
            config["DeadLetterConfig"] = {"TargetArn": target}
        return config

    get_configuration._keeps_dead_letter_config = True  # type: ignore[attr-defined]
    update_configuration.__dict__.update(update.__dict__)  # an earlier patch's mark (keep_ephemeral_storage's)
    LambdaFunction.__init__ = __init__  # type: ignore[method-assign]
    LambdaFunction.update_configuration = update_configuration  # type: ignore[method-assign]
    LambdaFunction.get_configuration = get_configuration  # type: ignore[method-assign]


def replace_event_invoke_config() -> None:
    """moto's PutFunctionEventInvokeConfig appends a configuration and GetFunctionEventInvokeConfig reads the first:
    a put replaces the function's configuration, as Lambda's does (settings left out are removed)."""
    from moto.awslambda.models import LambdaBackend

    if getattr(LambdaBackend.put_function_event_invoke_config, "_replaces", False):
        return
    original = LambdaBackend.put_function_event_invoke_config

    def put_function_event_invoke_config(self: Any, function_name: str, config: dict[str, Any]) -> Any:
        self.get_function(function_name).event_invoke_config = []
        return original(self, function_name, config)

    put_function_event_invoke_config._replaces = True  # type: ignore[attr-defined]
    LambdaBackend.put_function_event_invoke_config = put_function_event_invoke_config  # type: ignore[method-assign]


# The most the variables object may hold (key names, values, quotes, commas and brackets included).
ENVIRONMENT_LIMIT_BYTES = 4096


def refuse_oversized_environment() -> None:
    """moto takes environment variables of any size: UpdateFunctionConfiguration refuses a variables object over
    4 KB with InvalidParameterValueException, in Lambda's words, and changes nothing."""
    from moto.awslambda.exceptions import InvalidParameterValueException
    from moto.awslambda.models import LambdaFunction

    if getattr(LambdaFunction.update_configuration, "_refuses_oversized_environment", False):
        return
    update = LambdaFunction.update_configuration

    def update_configuration(self: Any, config_updates: dict[str, Any]) -> Any:
        variables = (config_updates.get("Environment") or {}).get("Variables")
        measured = json.dumps(variables or {}, separators=(",", ":"))
        if len(measured.encode()) > ENVIRONMENT_LIMIT_BYTES:
            raise InvalidParameterValueException(
                "Lambda was unable to configure your environment variables because the environment variables you "
                f"have provided exceeded the 4KB limit. String measured: {measured}"
            )
        return update(self, config_updates)

    update_configuration.__dict__.update(update.__dict__)  # the earlier patches' marks
    update_configuration._refuses_oversized_environment = True  # type: ignore[attr-defined]
    LambdaFunction.update_configuration = update_configuration  # type: ignore[method-assign]
