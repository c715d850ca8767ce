"""Exporters whose SDK runs in a virtual environment of its own (SPEC §3.4).

An :class:`IsolatedExporter` names its worker body (a stdlib-plus-SDK file), the variables its
SDK reads credentials from and the SDK surface its body uses; for each export it describes the
worker with one typed value (:meth:`IsolatedExporter.worker` → :class:`WorkerSpec`), hands it
its secrets (:meth:`~IsolatedExporter.worker_secrets`) and its payload
(:meth:`~IsolatedExporter.worker_payload`), and reads its result back
(:meth:`~IsolatedExporter.interpret`). The template builds or reuses the environment, starts the
worker while the run is read when the environment is there already, runs it with a time limit
and turns whatever happened (a result, a crash, a hang, a stop signal, a failed build) into an
:class:`~evalexport.results.ExportResult`.
"""

from __future__ import annotations

import abc
import contextlib
import functools
import logging
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Final, Generic, final

from pydantic import Field
from typing_extensions import TypeVar

from evalexport.contracts.surfaces import Surface
from evalexport.exporters.base import HOOKS, Delivery, Exporter, ExporterConfig, ProgressUnit
from evalexport.exporters.hooks import call_hook, takes_also
from evalexport.exporters.legacy import LegacyWorkerHooks, read_back_from_details
from evalexport.exporters.worker_spec import DEFAULT_TIME_LIMIT, WorkerSpec
from evalexport.locks import file_lock
from evalexport.masking import known_secrets
from evalexport.reading import PreparedRun
from evalexport.results import ExitCode, ExportResult, ExportStatus
from evalexport.run import RunArtifacts
from evalexport.settings import TIME_LIMIT_VARIABLE, installer_choice, worker_time_limit

if TYPE_CHECKING:
    from evalexport.isolation.environments import Environment
    from evalexport.isolation.launcher import StartedWorker, WorkerOutcome
    from evalexport.workers.protocol import WorkerResult

__all__ = [
    "DEFAULT_TIME_LIMIT",
    "ISOLATED_HOOKS",
    "TIME_LIMIT_VARIABLE",
    "WORKER_BODIES",
    "IsolatedConfig",
    "IsolatedExporter",
    "WorkerSecretsError",
    "WorkerSpec",
]

WORKER_BODIES = Path(__file__).resolve().parent.parent / "workers"
"""Where the built-in exporters' worker bodies live (``evalexport/workers/``)."""

ISOLATED_HOOKS: Final = (
    *(hook for hook in HOOKS if hook != "_export"),
    "worker_body",
    "token_variables",
    "sdk_contract",
    "worker",
    "worker_secrets",
    "worker_payload",
    "interpret",
)
"""The hooks of an isolated exporter: an exporter's (but ``_export``: the worker delivers) and
those of its worker."""

logger = logging.getLogger("evalexport.worker")

_READ_BACK = ("run_id", "skip_reason", "notices", "receipts")
"""The keys of a worker's result that become fields of the ``ExportResult`` or log lines."""


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
"""The worker body's payload type (a ``TypedDict`` defined beside the body's ``run``); an
exporter that names none (``IsolatedExporter[MyConfig]``) sends a ``Mapping[str, Any]``."""


@final
@dataclass(frozen=True)
class _StartedEarly:
    """A worker started before the run was read, and what starting it took."""

    environment: Environment
    worker: StartedWorker | None
    secrets: dict[str, str]
    secrets_seconds: float
    secrets_error: str | None = None
    """Why the secrets could not be had (no worker was started): the export says it."""


class IsolatedExporter(
    LegacyWorkerHooks,
    Exporter[IsolatedConfigT, PreparedRun | None],
    Generic[IsolatedConfigT, PayloadT],
):
    """An exporter that drives its SDK through a worker subprocess in its own environment:
    ``IsolatedExporter[MyConfig, MyPayload]``."""

    template_hooks = ISOLATED_HOOKS
    progress_unit: ClassVar[ProgressUnit] = "steps"
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

    # -- hooks -----------------------------------------------------------------------------------

    def worker(self, config: IsolatedConfigT) -> WorkerSpec:
        """The worker of this export: its requirements (by default ``+requirement=``, one or
        a list), time limit, environment variables and local store."""
        requirement = config.requirement
        return WorkerSpec(
            requirements=(requirement,) if isinstance(requirement, str) else tuple(requirement)
        )

    def worker_secrets(self, config: IsolatedConfigT) -> dict[str, str]:
        """Environment variables to add for the worker only: tokens given as options, or asked
        of a credential helper once, here, so the SDK need not ask again.

        Called right before the worker starts; the time it takes counts against the worker's
        time limit (``self.worker_time_limit(config)``, which bounds any helper it runs). The
        values are scrubbed from whatever the worker reports. Raises
        :class:`WorkerSecretsError` when a secret the worker needs cannot be had.
        """
        return {}

    @takes_also("prepared")
    @abc.abstractmethod
    def worker_payload(
        self, run: RunArtifacts, config: IsolatedConfigT, scratch: Path, fingerprint: str | None
    ) -> PayloadT:
        """The JSON the worker receives, of the payload type defined beside the worker body.
        Never put a token here: see :meth:`worker_secrets`.

        ``scratch`` is a temporary directory, removed after the worker ends, for files the
        worker should upload (never the run directory, which an export does not change).
        ``fingerprint`` is the run's, computed once under the export lock, for the remote run's
        tag (``None`` for an exporter that writes no marker). ``prepared`` is what
        :meth:`check_inputs` read (``None`` when called outside an export); declare it only if
        you use it.
        """

    def interpret(
        self,
        run: RunArtifacts,
        config: IsolatedConfigT,
        result: WorkerResult,
        environment: Path,
    ) -> ExportResult:
        """Turn the worker's result into an :class:`ExportResult`; exporters may refine it.

        What the parent reads back comes from the result's typed keys (a worker body written
        before they existed is read by :func:`.legacy.read_back_from_details`).
        """
        typed, details = read_back_from_details(result, _READ_BACK, self.receipt_keys)
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
                receipts=typed["receipts"],
                details={**details, "environment": str(environment)},
            )
        except (KeyError, TypeError, ValueError) as error:  # pydantic's ValidationError too
            return self.failed(
                run, f"The {self.name} worker wrote an invalid result ({error}): {result!r}"
            )

    # -- the template's own steps and helpers ----------------------------------------------------

    def worker_time_limit(self, config: IsolatedConfigT) -> float:
        """Seconds the worker may run: ``$EVALEXPORT_WORKER_TIME_LIMIT``, else the time limit
        of :meth:`worker`."""
        override = worker_time_limit()
        return self.worker(config).time_limit if override is None else override

    def _export(
        self,
        run: RunArtifacts,
        config: IsolatedConfigT,
        *,
        fingerprint: str | None,
        prepared: PreparedRun | None = None,
    ) -> ExportResult:
        """An isolated exporter delivers through its worker (:meth:`_delivery`)."""
        with self._delivery(run, config, dry_run=False) as deliver:
            delivered = deliver(prepared, fingerprint)
        assert delivered is not None, "an export's delivery always has a result"
        return delivered

    @contextlib.contextmanager
    def _delivery(
        self, run: RunArtifacts, config: IsolatedConfigT, *, dry_run: bool
    ) -> Iterator[Delivery]:
        """Delivery through the worker. evalexport's own settings are checked first (a setting
        it cannot use raises :class:`~evalexport.settings.SettingError`, exit code 2, before
        anything is read). For an export whose environment is built already, the worker is
        started now, so that it loads its SDK (seconds, for MLflow) while the run is read;
        nothing is built before the run is read: a missing environment is built after."""
        worker_time_limit()
        installer_choice()
        spec = self.worker(config)
        if dry_run:
            # A worker that answers dry runs is asked what the export would find at the target,
            # when its environment is built; else the dry run says the target was not asked.
            if not spec.answers_dry_runs:
                yield _unasked
            elif _built_environment(self.name, spec) is None:
                yield functools.partial(self._not_asked, run)
            else:
                yield functools.partial(self._run_worker, run, config, spec, None)
            return
        environment = _built_environment(self.name, spec)
        with contextlib.ExitStack() as stack:
            early = None
            if environment is not None:
                early = self._start_early(stack, environment, spec, config)
            yield functools.partial(self._run_worker, run, config, spec, early)

    def _not_asked(
        self, run: RunArtifacts, prepared: PreparedRun | None, fingerprint: str | None
    ) -> ExportResult:
        """A dry run's answer when the worker could have asked the target but its environment
        is not built (a dry run builds none)."""
        return ExportResult.succeeded(
            self.name,
            str(run.run_dir),
            "the target was not asked",
            target_not_asked=f"the {self.name} environment is not built yet; a dry run "
            "builds none, the export will",
        )

    def _start_early(
        self,
        stack: contextlib.ExitStack,
        environment: Environment,
        spec: WorkerSpec,
        config: IsolatedConfigT,
    ) -> _StartedEarly:
        from evalexport.isolation import started_worker

        started = time.monotonic()
        try:
            secrets = self.worker_secrets(config)
        except WorkerSecretsError as error:  # said by the export, after the checks
            return _StartedEarly(environment, None, {}, 0.0, str(error))
        spent = time.monotonic() - started
        worker = stack.enter_context(
            started_worker(
                environment, self.worker_body, {**spec.environment, **secrets}, self.progress
            )
        )
        return _StartedEarly(environment, worker, secrets, spent)

    def _run_worker(
        self,
        run: RunArtifacts,
        config: IsolatedConfigT,
        spec: WorkerSpec,
        early: _StartedEarly | None,
        prepared: PreparedRun | None,
        fingerprint: str | None,
    ) -> ExportResult:
        """The worker's run of ``prepared``, and its result."""
        from evalexport.isolation import (
            EnvironmentBuildError,
            EnvironmentSpec,
            ensure_environment,
            run_worker,
        )
        from evalexport.isolation.descendants import owned_scratch

        if early is not None and early.secrets_error is not None:
            return self.failed(run, early.secrets_error)
        if early is not None:
            environment = early.environment
        else:
            try:
                environment = ensure_environment(EnvironmentSpec(self.name, spec.requirements))
            except EnvironmentBuildError as error:
                return self.failed(run, f"Cannot build the {self.name} environment: {error}")
        limit = self.worker_time_limit(config)
        store = spec.local_store
        with (
            owned_scratch(f"evalexport-{self.name}-") as scratch,
            file_lock(store) if store else contextlib.nullcontext(),
        ):
            payload = call_hook(
                self.worker_payload, run, config, Path(scratch), fingerprint, prepared=prepared
            )
            scratches = [Path(scratch), *(prepared.scratch if prepared else [])]
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
                    secrets={**spec.environment, **secrets},
                    progress=self.progress,
                    scratch=scratches,
                )
            with known_secrets(secrets.values()):  # the worker's log tail, its log records
                result = self._result_of(run, config, outcome, environment.path, limit)
        return _scrubbed(result, list(secrets.values()))

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
        import signal

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
        elif outcome.exit_code == -signal.SIGKILL:
            what = (
                f"The worker did not stop within {GRACE_SECONDS:g} s and was killed; "
                "its remote run may be left unfinished."
            )
        else:  # it stopped at once (loading its SDK, say), before it could say how far it got
            what = (
                f"The worker stopped ({outcome.describe_exit()}) before it reported; a remote "
                "run it had made, if any, is ended by the next export of this run."
            )
        return ExportResult.failed(
            self.name,
            str(run.run_dir),
            f"Interrupted by {signal_name(outcome.interrupted_by)}: the {self.name} export was "
            f"stopped before it finished and no export marker was written. {what}".strip(),
            exit_code=ExitCode.for_signal(outcome.interrupted_by),
            interrupted_by=signal_name(outcome.interrupted_by),
        )


def _unasked(prepared: object, fingerprint: str | None) -> None:
    """A dry run's delivery that asks no worker."""
    return None


def _built_environment(name: str, spec: WorkerSpec) -> Environment | None:
    from evalexport.isolation import EnvironmentSpec, existing_environment

    return existing_environment(EnvironmentSpec(name, spec.requirements))


def _scrubbed(result: ExportResult, secrets: list[str]) -> ExportResult:
    """``result`` with the worker's secrets masked in its message and details."""
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
