"""Fault injection into the function's configuration: concurrency, timeout, memory, /tmp, environment; and the
account's unreserved concurrency taken by another function."""

from __future__ import annotations

from botocore.exceptions import ClientError

from chaos.errors import ChaosError
from chaos.target import FaultTarget
from incident_responder.account.state import read_reserved_concurrency
from incident_responder.lab.account.sources import deployment_package
from incident_responder.lab.concurrency import publish_concurrency


class ConfigurationFaults(FaultTarget):
    """Faults in the function's own settings, and in the concurrency it shares."""

    def throttle(self, reserved_concurrency: int = 0) -> list[str]:
        """Set reserved concurrency (0 throttles every invocation, 1 all but one at a time)."""
        if reserved_concurrency < 0:
            raise ChaosError("reserved concurrency must be 0 or more")
        self.store.remember("concurrency", read_reserved_concurrency(self.clients, self.function_name))
        self._lambda.put_function_concurrency(
            FunctionName=self.function_name, ReservedConcurrentExecutions=reserved_concurrency
        )
        self.store.record_fault({"kind": "throttle", "reserved_concurrency": reserved_concurrency})
        return [f"reserved concurrency set to {reserved_concurrency}"]

    def timeout(self, seconds: int = 1) -> list[str]:
        """Lower the function's timeout."""
        if not 1 <= seconds <= 900:
            raise ChaosError("timeout seconds must be between 1 and 900")
        self.store.remember("timeout", self._config()["Timeout"])
        self._update_config(Timeout=seconds)
        self.store.record_fault({"kind": "timeout", "seconds": seconds})
        return [f"timeout set to {seconds} s"]

    def memory(self, mb: int = 128) -> list[str]:
        """Lower the function's memory size."""
        if not 128 <= mb <= 10240:
            raise ChaosError("memory must be between 128 and 10240 MB")
        self.store.remember("memory", self._config()["MemorySize"])
        self._update_config(MemorySize=mb)
        self.store.record_fault({"kind": "memory", "mb": mb})
        return [f"memory size set to {mb} MB"]

    def env_var_removed(self, name: str) -> list[str]:
        """Remove one environment variable the function's code reads."""
        variables = dict((self._config().get("Environment") or {}).get("Variables") or {})
        if name not in variables and f"env.{name}" in self.store.slots:
            return [f"environment variable {name} is already removed"]
        if name not in variables:
            raise ChaosError(f"{self.function_name} has no environment variable {name!r} (it has {sorted(variables)})")
        self.store.remember(f"env.{name}", variables.pop(name))
        self._update_config(Environment={"Variables": variables})
        self.store.record_fault({"kind": "env_var_removed", "name": name})
        return [f"removed environment variable {name}"]

    def ephemeral_storage(self, mb: int) -> list[str]:
        """Shrink the function's /tmp (ephemeral storage)."""
        if not 512 <= mb <= 10240:
            raise ChaosError("ephemeral storage must be between 512 and 10240 MB")
        self.store.remember("storage", (self._config().get("EphemeralStorage") or {}).get("Size", 512))
        self._update_config(EphemeralStorage={"Size": mb})
        self.store.record_fault({"kind": "ephemeral_storage", "mb": mb})
        return [f"ephemeral storage set to {mb} MB"]

    def noisy_neighbor(self) -> list[str]:
        """Another function, not onboarded, runs at the account's whole unreserved concurrency (its
        ``AWS/Lambda ConcurrentExecutions`` as Lambda publishes it; the lab's workloads obey it)."""
        lam = self._lambda
        neighbor = f"{self.function_name}-neighbor"[:64]
        try:
            lam.get_function_configuration(FunctionName=neighbor)
            created = False
        except lam.exceptions.ResourceNotFoundException:
            config = self._config()
            lam.create_function(
                FunctionName=neighbor,
                Runtime="python3.12",
                Role=config["Role"],
                Handler="app.handler",
                Code={"ZipFile": deployment_package("app.py", "def handler(event, context):\n    return {}\n")},
                Timeout=900,
            )
            created = True
        self.store.remember(f"neighbor.{neighbor}", {"created": created})
        limit = lam.get_account_settings()["AccountLimit"].get("UnreservedConcurrentExecutions") or 1000
        try:
            publish_concurrency(self.clients, neighbor, float(limit))
        except ClientError as exc:
            raise ChaosError(
                f"CloudWatch refused the neighbour's load ({exc.response['Error']['Code']}): only AWS publishes AWS/ "
                "metrics in a real account, so noisy_neighbor runs against the lab"
            ) from exc
        self.store.record_fault({"kind": "noisy_neighbor"})
        return [f"function {neighbor} runs {limit} concurrent executions: the account's unreserved concurrency"]
