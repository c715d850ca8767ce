"""Exporters whose SDK runs in a virtual environment of its own (SPEC §3.4).

An :class:`IsolatedExporter` names its worker body (a stdlib-plus-SDK file under
``evalexport/workers/``), its requirements (from ``+requirement=``), and the JSON payload the
worker needs. The parent builds or reuses the environment, runs the worker with a time limit and
turns whatever happened — a result, a crash, a hang, a failed build — into an
:class:`~evalexport.results.ExportResult`.
"""

from __future__ import annotations

import abc
import contextlib
import logging
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, final

from pydantic import Field
from typing_extensions import TypeVar

from evalexport._hooks import call_hook
from evalexport.contracts.surfaces import Surface
from evalexport.exporters.base import Exporter, ExporterConfig
from evalexport.locks import file_lock
from evalexport.results import ExitCode, ExportResult, ExportStatus
from evalexport.run import RunArtifacts
from evalexport.settings import TIME_LIMIT_VARIABLE, installer_choice, worker_time_limit

if TYPE_CHECKING:
    from evalexport.exporters.prepared import PreparedRun
    from evalexport.isolation.environments import Environment
    from evalexport.isolation.launcher import StartedWorker, WorkerOutcome
    from evalexport.workers.protocol import WorkerResult

__all__ = [
    "TIME_LIMIT_VARIABLE",
    "WORKER_BODIES",
    "IsolatedConfig",
    "IsolatedExporter",
    "WorkerSecretsError",
]

WORKER_BODIES = Path(__file__).resolve().parent.parent / "workers"
"""Where the built-in exporters' worker bodies live (``evalexport/workers/``)."""

DEFAULT_TIME_LIMIT = 3600.0

logger = logging.getLogger("evalexport.worker")


_READ_BACK = ("run_id", "skip_reason", "notices", "receipts")
"""The keys of a worker's result that become fields of the ``ExportResult`` or log lines."""


@final
@dataclass(frozen=True)
class _EarlyWorker:
    """A worker started before the run was read (``IsolatedExporter._inputs``), and what
    starting it took."""

    environment: Environment
    worker: StartedWorker | None
    secrets: dict[str, str]
    secrets_seconds: float
    secrets_error: str | None = None
    """Why the secrets could not be had (no worker was started): the export says it."""


_EARLY: ContextVar[_EarlyWorker | None] = ContextVar("evalexport_early_worker", default=None)


def _written_by(prepared: PreparedRun | None) -> list[Path]:
    """The scratch directories :func:`~evalexport.exporters.prepared.prepare` wrote into."""
    table = prepared.rollouts_table if prepared else None
    return [table.parent] if table else []


class WorkerSecretsError(Exception):
    """The secrets the worker needs could not be had (a credential helper failed or did not
    answer in time); the message says why and what to set instead."""


class IsolatedConfig(ExporterConfig):
    """Options every isolated exporter takes: ``requirement`` picks the SDK's environment."""

    requirement: str | list[str] = Field(
        description="The SDK requirement(s) of the exporter's environment, e.g. PKG==VER; "
        "a new pin builds a new environment."
    )


IsolatedConfigT = TypeVar("IsolatedConfigT", bound=IsolatedConfig)
PayloadT = TypeVar("PayloadT", bound=Mapping[str, Any], default=Mapping[str, Any])
"""The worker body's payload type (a ``TypedDict`` of ``workers/protocol.py``); an exporter
that names none (``IsolatedExporter[MyConfig]``) sends a ``Mapping[str, Any]``."""


class IsolatedExporter(Exporter[IsolatedConfigT], Generic[IsolatedConfigT, PayloadT]):
    """An exporter that drives its SDK through a worker subprocess in its own environment:
    ``IsolatedExporter[MyConfig, MyPayload]``."""

    progress_unit = "steps"
    worker_body: ClassVar[Path]
    """The worker body file: defines ``run(payload: <Sdk>Payload) -> WorkerResult`` with the
    types of ``workers/protocol.py`` (see ``workers/runner.py``)."""
    token_variables: ClassVar[tuple[str, ...]] = ()
    """The environment variables the SDK reads credentials from: the worker inherits them, the
    pytest plugin's isolation removes them (``testing.plugin.token_variables()``)."""
    sdk_contract: ClassVar[Surface | None] = None
    """The SDK surface the worker body uses (what it calls and reads back), where its fake
    and its committed manifests are: ``evalexport contract manifest|check|verify|matrix SDK``,
    the recorded-call checks and the pytest plugin's ``--with_<sdk>_sdk`` switch serve it
    (``docs/plugins.md``, "SDK contracts")."""

    def requirements(self, config: IsolatedConfigT) -> list[str]:
        """The requirements of the SDK's environment (``+requirement=``, one or a list)."""
        requirement = config.requirement
        return [requirement] if isinstance(requirement, str) else list(requirement)

    def time_limit(self, config: IsolatedConfigT) -> float:
        """Seconds before the worker is killed; ``$EVALEXPORT_WORKER_TIME_LIMIT`` overrides."""
        return DEFAULT_TIME_LIMIT

    @abc.abstractmethod
    def worker_payload(
        self, run: RunArtifacts, config: IsolatedConfigT, scratch: Path, fingerprint: str | None
    ) -> PayloadT:
        """The JSON the worker receives, of the worker body's payload type in
        ``workers/protocol.py``. Never put a token here: see :meth:`worker_secrets`.

        ``scratch`` is a temporary directory, removed after the worker ends, for files the
        worker should upload (never the run directory, which an export does not change).
        ``fingerprint`` is the run's, computed once under the export lock, for the remote run's
        tag (``None`` for an exporter that writes no marker). An exporter whose
        :meth:`check_inputs` prepares the run adds ``prepared: PreparedRun | None = None`` to
        receive what it read (``None`` when called outside an export).
        """

    def worker_secrets(self, config: IsolatedConfigT) -> dict[str, str]:
        """Environment variables to add for the worker only: tokens given as options, or asked
        of a credential helper once, here, so the SDK need not ask again.

        Called right before the worker starts; the time it takes counts against the worker's
        time limit (``self.worker_time_limit(config)``, which bounds any helper it runs). The
        values are scrubbed from whatever the worker reports. Raises
        :class:`WorkerSecretsError` when a secret the worker needs cannot be had.
        """
        return {}

    def secrets_the_sdk_may_find(self, config: IsolatedConfigT) -> list[str]:
        """Deprecated (``DEPRECATED_HOOKS``): secrets to scrub from what the worker reports.
        Kept so that a plugin overriding it, or calling ``super()``, still works; return such
        secrets from :meth:`worker_secrets` instead."""
        return []

    def worker_time_limit(self, config: IsolatedConfigT) -> float:
        """Seconds the worker may run: ``$EVALEXPORT_WORKER_TIME_LIMIT``, else
        :meth:`time_limit`."""
        override = worker_time_limit()
        return self.time_limit(config) if override is None else override

    def unexportable_reason(self, run: RunArtifacts, config: IsolatedConfigT) -> str | None:
        """The shared checks, after evalexport's own settings: a setting it cannot use raises
        :class:`~evalexport.settings.SettingError` (exit code 2) before anything is read."""
        worker_time_limit()
        installer_choice()
        return super().unexportable_reason(run, config)

    def _export(
        self,
        run: RunArtifacts,
        config: IsolatedConfigT,
        *,
        fingerprint: str | None,
        prepared: PreparedRun | None = None,
    ) -> ExportResult:
        return self._export_through_worker(run, config, fingerprint, prepared)

    @staticmethod
    def _scrubbed(result: ExportResult, secrets: list[str]) -> ExportResult:
        secrets = [secret for secret in secrets if len(secret) >= 8]
        if not secrets:
            return result
        from evalexport.masking import scrub_text, scrub_value

        return result.model_copy(
            update={
                "message": scrub_text(result.message, also=secrets),
                "details": scrub_value(result.details, also=secrets),
            }
        )

    def worker_environment(self, config: IsolatedConfigT) -> dict[str, str]:
        """Environment variables (no secrets) that set the SDK's retries and timeouts."""
        return {}

    def local_store(self, config: IsolatedConfigT) -> Path | None:
        """A local store file the worker writes into, which other exports may share (an
        embedded MLflow database): workers writing into one store run one at a time."""
        return None

    @contextlib.contextmanager
    def _inputs(self, run: RunArtifacts, config: IsolatedConfigT) -> Iterator[PreparedRun | None]:
        """:meth:`check_inputs`; for an export whose environment is built already, with its
        worker started first, so that it loads the SDK (seconds, for MLflow) while the run is
        read. Nothing is built before the checks: a missing environment is built after them."""
        environment = None if config.dry_run else self._built_environment(config)
        with contextlib.ExitStack() as stack:
            early = None
            if environment is not None:
                from evalexport.isolation import started_worker

                started = time.monotonic()
                try:
                    secrets = self.worker_secrets(config)
                except WorkerSecretsError as error:  # said by the export, after the checks
                    early = _EarlyWorker(environment, None, {}, 0.0, str(error))
                else:
                    spent = time.monotonic() - started
                    worker = stack.enter_context(
                        started_worker(
                            environment,
                            self.worker_body,
                            {**self.worker_environment(config), **secrets},
                            self.progress,
                        )
                    )
                    early = _EarlyWorker(environment, worker, secrets, spent)
            token = _EARLY.set(early)
            try:
                with super()._inputs(run, config) as prepared:
                    yield prepared
            finally:
                _EARLY.reset(token)

    def _built_environment(self, config: IsolatedConfigT) -> Environment | None:
        from evalexport.isolation import EnvironmentSpec, existing_environment

        return existing_environment(EnvironmentSpec(self.name, tuple(self.requirements(config))))

    def _export_through_worker(
        self,
        run: RunArtifacts,
        config: IsolatedConfigT,
        fingerprint: str | None,
        prepared: PreparedRun | None = None,
    ) -> ExportResult:
        from evalexport.isolation import (
            EnvironmentBuildError,
            EnvironmentSpec,
            ensure_environment,
            run_worker,
        )

        early = _EARLY.get()
        if early is not None and early.secrets_error is not None:
            return self.failed(run, early.secrets_error)
        if early is not None:
            environment = early.environment
        else:
            spec = EnvironmentSpec(self.name, tuple(self.requirements(config)))
            try:
                environment = ensure_environment(spec)
            except EnvironmentBuildError as error:
                return self.failed(run, f"Cannot build the {self.name} environment: {error}")
        limit = self.worker_time_limit(config)
        store = self.local_store(config)
        with (
            tempfile.TemporaryDirectory(prefix=f"evalexport-{self.name}-") as scratch,
            file_lock(store) if store else contextlib.nullcontext(),
        ):
            payload = call_hook(
                self.worker_payload, run, config, Path(scratch), fingerprint, prepared=prepared
            )
            scratches = [Path(scratch), *_written_by(prepared)]
            if early is not None and early.worker is not None:
                secrets = early.secrets
                outcome = early.worker.run(
                    payload, max(limit - early.secrets_seconds, 0.001), scratches
                )
            else:
                started = time.monotonic()
                try:
                    secrets = self.worker_secrets(config)
                except WorkerSecretsError as error:
                    return self.failed(run, str(error))
                outcome = run_worker(
                    environment,
                    self.worker_body,
                    payload,
                    max(limit - (time.monotonic() - started), 0.001),
                    secrets={**self.worker_environment(config), **secrets},
                    progress=self.progress,
                    scratch=scratches,
                )
        result = self._result_of(run, config, outcome, environment.path, limit)
        found = self.secrets_the_sdk_may_find(config)  # deprecated; [] unless a plugin's
        return self._scrubbed(result, [*secrets.values(), *found])

    def _result_of(
        self,
        run: RunArtifacts,
        config: IsolatedConfigT,
        outcome: WorkerOutcome,
        environment: Path,
        limit: float,
    ) -> ExportResult:
        """What the worker's outcome means for the export."""
        for line in outcome.log_tail().splitlines() if outcome.result is None else []:
            logger.debug("%s worker: %s", self.name, line)
        if outcome.interrupted_by is not None:
            return self._interrupted(run, config, outcome, environment)
        if outcome.timed_out:
            raise_it = (
                f"Raise +timeout if the service is slow, or set {TIME_LIMIT_VARIABLE}."
                if "timeout" in self.Config.model_fields
                else f"Set {TIME_LIMIT_VARIABLE} (seconds) to allow it longer."
            )
            said = str(outcome.result.get("message", "")) if outcome.result else ""
            return self.failed(
                run,
                f"The {self.name} worker exceeded its time limit of {limit:g} s and was "
                f"stopped. {said + ' ' if said else ''}{raise_it}",
                environment=str(environment),
            )
        if outcome.result is None:
            return self.failed(
                run,
                f"The {self.name} worker {outcome.describe_exit()} without writing a result. "
                f"Its output ends with:\n{outcome.log_tail() or '(nothing)'}",
                worker_exit_code=outcome.exit_code,
                environment=str(environment),
            )
        return self.interpret(run, config, outcome.result, environment)

    def _interrupted(
        self, run: RunArtifacts, config: IsolatedConfigT, outcome: WorkerOutcome, environment: Path
    ) -> ExportResult:
        """A stop signal arrived while the worker ran: the export failed with ``128 + signal``,
        unless the worker had already finished (then what it did stands, marker and all)."""
        from evalexport.interrupts import signal_name
        from evalexport.isolation.launcher import GRACE_SECONDS

        assert outcome.interrupted_by is not None
        if outcome.result is not None and outcome.result.get("status") != "failed":
            finished = self.interpret(run, config, outcome.result, environment)
            logger.warning(
                "%s arrived after the %s export had finished; the export stands",
                signal_name(outcome.interrupted_by),
                self.name,
            )
            return finished
        if outcome.result is not None:
            what = str(outcome.result.get("message", ""))
        else:
            what = (
                f"The worker did not stop within {GRACE_SECONDS:g} s and was killed; "
                "its remote run may be left unfinished."
            )
        return ExportResult.failed(
            self.name,
            str(run.run_dir),
            f"Interrupted by {signal_name(outcome.interrupted_by)}: the {self.name} export was "
            f"stopped before it finished and no export marker was written. {what}".strip(),
            exit_code=ExitCode.for_signal(outcome.interrupted_by),
            interrupted_by=signal_name(outcome.interrupted_by),
        )

    def interpret(
        self,
        run: RunArtifacts,
        config: IsolatedConfigT,
        result: WorkerResult,
        environment: Path,
    ) -> ExportResult:
        """Turn the worker's result into an :class:`ExportResult`; exporters may refine it.

        What the parent reads back comes from the result's typed keys. A worker body written
        before they existed put ``run_id``, ``skip_reason``, ``notices`` and its receipts in
        ``details``: they are still read from there, with a deprecation notice in the log.
        """
        details = dict(result["details"])
        typed = {key: result[key] for key in _READ_BACK if key in result}  # type: ignore[literal-required]
        receipt_keys = self.receipt_keys  # deprecated; empty unless a plugin's
        if smuggled := sorted(
            key for key in (*_READ_BACK, *receipt_keys) if key in details and key != "receipts"
        ):
            logger.info(
                "the %s worker returns %s in details, which is deprecated: return them with "
                "result(..., run_id=..., skip_reason=..., notices=[...], receipts={...})",
                self.name,
                ", ".join(smuggled),
            )
            for key in _READ_BACK:
                if key in details:
                    typed.setdefault(key, details.pop(key))
        receipts = {str(k): str(v) for k, v in dict(typed.get("receipts") or {}).items()}
        receipts |= {key: str(details.pop(key)) for key in receipt_keys if key in details}
        for notice in typed.get("notices") or []:
            logger.warning("%s", notice)
        run_id = typed.get("run_id")
        try:
            return ExportResult(
                exporter=self.name,
                status=ExportStatus(result["status"]),
                exit_code=ExitCode(int(result["exit_code"])),
                message=str(result["message"]),
                run_dir=str(run.run_dir),
                run_id=None if run_id is None else str(run_id),
                skip_reason=typed.get("skip_reason"),
                receipts=receipts,
                details={**details, "environment": str(environment)},
            )
        except (KeyError, TypeError, ValueError) as error:  # pydantic's ValidationError too
            return self.failed(
                run, f"The {self.name} worker wrote an invalid result ({error}): {result!r}"
            )
