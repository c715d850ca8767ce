"""Plugin API 2 and 3's template of an exporter whose SDK runs in a worker, kept so that their
plugins import and export (deprecated: :mod:`evalexport.spec.compat` adapts its
subclasses when they are made, with a warning naming today's form).

Today an exporter whose SDK runs in a worker is an :class:`~evalexport.exporters.Exporter`
with an ``sdk`` (:class:`~evalexport.exporters.Sdk`) whose ``deliver`` returns a
:class:`~evalexport.exporters.WorkerDelivery`.
"""

from __future__ import annotations

import abc
import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Final, Generic, TypeVar

from typing_extensions import TypeVar as DefaultTypeVar

from evalexport.isolation.worker_results import read_worker_result
from evalexport.reading import PreparedRun
from evalexport.results import ExportResult
from evalexport.settings import TIME_LIMIT_VARIABLE, worker_time_limit
from evalexport.spec.base import Exporter
from evalexport.spec.declarations import SdkConfig, Target
from evalexport.spec.workers import DEFAULT_TIME_LIMIT, WorkerSecretsError, WorkerSpec
from evalexport.workers import WORKER_BODIES

if TYPE_CHECKING:
    from evalexport.run import RunArtifacts
    from evalexport.spec.sdk import Surface
    from evalexport.workers.protocol import WorkerResult

__all__ = [
    "DEFAULT_TIME_LIMIT",
    "TIME_LIMIT_VARIABLE",
    "WORKER_BODIES",
    "IsolatedConfig",
    "IsolatedExporter",
    "WorkerSecretsError",
    "WorkerSpec",
]

IsolatedConfig = SdkConfig
"""Plugin API 3's name of :class:`~evalexport.exporters.SdkConfig`."""

IsolatedConfigT = TypeVar("IsolatedConfigT", bound=SdkConfig)
PayloadT = DefaultTypeVar("PayloadT", bound=Mapping[str, Any], default=Mapping[str, Any])


class IsolatedExporter(
    Exporter[IsolatedConfigT, PreparedRun | None, Target], Generic[IsolatedConfigT, PayloadT]
):
    """Plugin API 2 and 3's template of an exporter whose SDK runs in a worker: its hooks'
    defaults, for plugins that define some and inherit the rest or call them with ``super()``.
    Deprecated: subclass :class:`~evalexport.exporters.Exporter` with an ``sdk``."""

    worker_body: ClassVar[Path]
    token_variables: ClassVar[tuple[str, ...]] = ()
    sdk_contract: ClassVar[Surface | None] = None
    receipt_keys: ClassVar[frozenset[str]] = frozenset()
    progress_unit: ClassVar[str] = "steps"

    @abc.abstractmethod
    def worker_payload(
        self, run: RunArtifacts, config: IsolatedConfigT, scratch: Path, fingerprint: str | None
    ) -> PayloadT:
        """The JSON the worker receives (every subclass defines it)."""

    def worker(self, config: IsolatedConfigT) -> WorkerSpec:
        """The worker: ``+requirement=``, and plugin API 2's hooks where a class defines them."""
        spec = WorkerSpec(requirements=config.requirements())
        changes: dict[str, Any] = {}
        for hook, field in _API2_WORKER_FIELDS.items():
            if getattr(type(self), hook) is not getattr(IsolatedExporter, hook):
                value = getattr(self, hook)(config)
                changes[field] = tuple(value) if hook == "requirements" else value
        return dataclasses.replace(spec, **changes)

    def worker_secrets(self, config: IsolatedConfigT) -> dict[str, str]:
        """No secrets but what plugin API 2's ``secrets_the_sdk_may_find`` names."""
        found = self.secrets_the_sdk_may_find(config)
        return {f"EVALEXPORT_SCRUBBED_{index}": value for index, value in enumerate(found)}

    def interpret(
        self, run: RunArtifacts, config: IsolatedConfigT, result: WorkerResult, environment: Path
    ) -> ExportResult:
        """The worker's result read as today's lifecycle reads it, with plugin API 2's
        ``receipt_keys`` moved from its details to the result's receipts."""
        read = read_worker_result(self.name, str(run.run_dir), environment, result)
        keys = [key for key in self.receipt_keys if key in result["details"]]
        if not keys:
            return read
        receipts = {**read.receipts, **{key: str(result["details"][key]) for key in keys}}
        details = {k: v for k, v in read.details.items() if k not in keys}
        return read.model_copy(update={"receipts": receipts, "details": details})

    def worker_time_limit(self, config: IsolatedConfigT) -> float:
        """Seconds the worker may run: ``$EVALEXPORT_WORKER_TIME_LIMIT``, else its own."""
        override = worker_time_limit()
        return self.worker(config).time_limit if override is None else override

    # Plugin API 2's worker hooks, with their defaults.

    def requirements(self, config: IsolatedConfigT) -> list[str]:
        """The SDK's requirements (``+requirement=``, one or a list)."""
        return list(config.requirements())

    def time_limit(self, config: IsolatedConfigT) -> float:
        """Seconds before the worker is killed."""
        return DEFAULT_TIME_LIMIT

    def worker_environment(self, config: IsolatedConfigT) -> dict[str, str]:
        """Environment variables (no secrets) for the worker."""
        return {}

    def local_store(self, config: IsolatedConfigT) -> Path | None:
        """A local store file workers write into one at a time."""
        return None

    def secrets_the_sdk_may_find(self, config: IsolatedConfigT) -> list[str]:
        """Secrets to scrub from what the worker reports."""
        return []


_API2_WORKER_FIELDS: Final = {
    "requirements": "requirements",
    "time_limit": "time_limit",
    "worker_environment": "environment",
    "local_store": "local_store",
}
