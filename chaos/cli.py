"""``responder chaos ...`` / ``python -m chaos ...``: inject faults into a Lambda function, and restore."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from botocore.exceptions import BotoCoreError, ClientError

DESCRIPTION = """\
Inject faults into a Lambda function's account state, then put everything back.

Targets the account boto3 reaches by default: a real account (your usual profile and region), or the
embedded lab when AWS_ENDPOINT_URL points at it (`responder lab up` prints what to export).
Before changing anything, each fault records the original values in a local state file; injecting
twice changes nothing more, and `restore` puts back exactly what was there.

examples:
  responder chaos iam_revoke --target s3        # role loses its S3 permissions
  responder chaos throttle --reserved-concurrency 0
  responder chaos network_block                 # no egress from its security groups / subnets
  responder chaos timeout --seconds 1
  responder chaos memory --mb 128
  responder chaos --function orders-api bad_deploy --error "TypeError: x is not a function"
                                                # new version whose code throws; alias live moved to it
  responder chaos --function orders-api kms_disable      # the key encrypting its environment disabled
  responder chaos --function queue-consumer esm_disable  # its queue's event source mapping disabled
  responder chaos --function orders-api downstream_throttle
                                                # another writer overloads its DynamoDB table (lab only)
  responder chaos --function orders-api iam_revoke --target dynamodb
  responder chaos --function queue-consumer iam_revoke --target sqs
  responder chaos env_var_removed --name INPUT_BUCKET     # the code fails as it starts
  responder chaos --function orders-api secret_scheduled_for_deletion
  responder chaos --function queue-consumer queue_visibility --seconds 1
  responder chaos ephemeral_storage --mb 512             # /tmp smaller than what it writes
  responder chaos --function orders-api kms_revoke       # its role may no longer decrypt (key enabled)
  responder chaos noisy_neighbor                         # another function takes the unreserved concurrency (lab only)
  responder chaos --function queue-consumer recursive_loop
  responder chaos apply scenarios/s3-policy-revoked.yaml
  responder chaos status
  responder chaos restore
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = DESCRIPTION
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("--function", default="data-processor", help="function name or ARN (default: data-processor)")
    parser.add_argument("--state-dir", type=Path, help="where originals are kept (default: ~/.local/state/...)")
    sub = parser.add_subparsers(dest="fault", required=True, metavar="COMMAND")
    p = sub.add_parser("iam_revoke", help="remove the role's S3, CloudWatch Logs, DynamoDB or SQS permissions")
    p.add_argument("--target", choices=["s3", "cloudwatch", "both", "dynamodb", "sqs"], default="s3")
    p = sub.add_parser("throttle", help="set reserved concurrency to 0 (all throttled) or 1")
    p.add_argument("--reserved-concurrency", type=int, choices=[0, 1], default=0)
    sub.add_parser("network_block", help="remove egress from the function's security groups and subnet NACLs")
    p = sub.add_parser("timeout", help="lower the function timeout")
    p.add_argument("--seconds", type=int, default=1)
    p = sub.add_parser("memory", help="lower the function memory size")
    p.add_argument("--mb", type=int, default=128)
    p = sub.add_parser("bad_deploy", help="publish a version whose code throws and move the function's alias to it")
    p.add_argument("--error", help="what the code throws (default: a TypeError reading 'id' of undefined)")
    sub.add_parser("kms_disable", help="disable the customer-managed key encrypting the function's environment")
    sub.add_parser("esm_disable", help="disable the event source mappings that invoke the function")
    sub.add_parser("downstream_throttle", help="overload the function's DynamoDB table from another writer (lab only)")
    p = sub.add_parser("env_var_removed", help="remove an environment variable the code needs")
    p.add_argument("--name", required=True)
    sub.add_parser("secret_scheduled_for_deletion", help="schedule the secrets its environment names for deletion")
    p = sub.add_parser("queue_visibility", help="set the visibility timeout of the queue its mapping reads")
    p.add_argument("--seconds", type=int, required=True)
    p = sub.add_parser("ephemeral_storage", help="shrink the function's /tmp")
    p.add_argument("--mb", type=int, required=True)
    sub.add_parser("kms_revoke", help="remove the key policy statement letting its role decrypt its environment")
    sub.add_parser("noisy_neighbor", help="another function takes the account's unreserved concurrency (lab only)")
    sub.add_parser("recursive_loop", help="point its output queue at the queue that triggers it")
    p = sub.add_parser("apply", help="apply the faults listed in a scenario file, in order")
    p.add_argument("scenario", type=Path)
    sub.add_parser("status", help="show what is injected and the originals kept")
    sub.add_parser("restore", help="put back every original value and forget them")


def run(args: argparse.Namespace) -> int:
    from chaos.errors import ChaosError
    from chaos.faults import FaultInjector
    from incident_responder.lab.scenario import ScenarioError, load_scenario

    try:
        if args.fault == "apply":
            scenario = load_scenario(args.scenario)
            function = scenario.workload.function
            injector = FaultInjector.for_function(function, state_dir=args.state_dir)
            for fault in scenario.faults:
                for line in injector.apply(fault):
                    print(f"{fault.kind}: {line}")
            return 0
        injector = FaultInjector.for_function(args.function, state_dir=args.state_dir)
        if args.fault == "status":
            print(json.dumps(injector.status(), indent=2))
            return 0
        if args.fault == "restore":
            lines = injector.restore()
        elif args.fault == "iam_revoke":
            lines = injector.iam_revoke(args.target)
        elif args.fault == "throttle":
            lines = injector.throttle(args.reserved_concurrency)
        elif args.fault == "network_block":
            lines = injector.network_block()
        elif args.fault == "timeout":
            lines = injector.timeout(args.seconds)
        elif args.fault == "memory":
            lines = injector.memory(args.mb)
        elif args.fault == "bad_deploy":
            lines = injector.bad_deploy(args.error)
        elif args.fault == "env_var_removed":
            lines = injector.env_var_removed(args.name)
        elif args.fault == "queue_visibility":
            lines = injector.queue_visibility(args.seconds)
        elif args.fault == "ephemeral_storage":
            lines = injector.ephemeral_storage(args.mb)
        else:  # no parameters
            lines = getattr(injector, args.fault)()
    except (ChaosError, ScenarioError, ValueError) as exc:
        print(f"chaos: {exc}", file=sys.stderr)
        return 2
    except (ClientError, BotoCoreError) as exc:
        print(f"chaos: AWS refused or could not be reached: {exc}", file=sys.stderr)
        return 1
    for line in lines:
        print(f"{args.fault}: {line}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m chaos")
    add_arguments(parser)
    return run(parser.parse_args(argv))
