"""The one worker lifecycle that runs an SDK exporter's delivery (SPEC §3.4).

What an exporter says of its worker and sends through it are the plugin API's types
(:mod:`evalexport.spec.workers`: ``WorkerSpec``, ``WorkerDelivery``); this module reads them
through its own protocols (:class:`WorkerPlan`, :class:`Delivered`) and knows nothing of the
spec, which sits above it. A fake SDK is just another SDK behind the same delivery.

:func:`opened_worker` is that worker for one export, opened by the pipeline before the run is
read. When the SDK's environment is built already, the worker starts at once and imports its
SDK while the run is read; otherwise the environment is built after the read (a dry run builds
none). Either way there is one launch (:func:`~evalexport.isolation.launcher.started_worker`),
one time limit, one place a stop signal meets the worker, and one reading of what it reports.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, final

from evalexport.callers import named_option
from evalexport.host.locks import Waiting, file_lock
from evalexport.isolation.variables import BASE, Admitted
from evalexport.isolation.worker_results import ReadBack, Reading, scrubbed
from evalexport.masking import known_secrets
from evalexport.results import ExportResult
from evalexport.settings import TIME_LIMIT_VARIABLE, installer_choice

if TYPE_CHECKING:
    from evalexport.isolation.environments import Environment
    from evalexport.isolation.launcher import StartedWorker

__all__ = ["Delivered", "OpenedWorker", "WorkerPlan", "opened_worker"]

logger = logging.getLogger("evalexport.worker")


class WorkerPlan(Protocol):
    """What the lifecycle reads of the worker an exporter described with its target
    (:class:`evalexport.spec.WorkerSpec`, whose fields say what each is)."""

    @property
    def requirements(self) -> tuple[str, ...]:
        """The SDK's requirements, one environment per list."""

    @property
    def time_limit(self) -> float:
        """Seconds before the worker is stopped."""

    @property
    def environment(self) -> Mapping[str, str]:
        """Variables set for the worker only, never secrets."""

    @property
    def local_store(self) -> Path | None:
        """A store file workers write into one at a time."""

    @property
    def secrets(self) -> Mapping[str, str]:
        """Variables that are secrets: scrubbed from what the worker reports."""


class Delivered(Protocol):
    """What the lifecycle reads of what an exporter's ``deliver`` returned
    (:class:`evalexport.spec.WorkerDelivery`): the payload, and how the result is read back."""

    @property
    def payload(self) -> Mapping[str, Any]:
        """What the worker body receives, through the egress gate already."""

    @property
    def read_back(self) -> ReadBack | None:
        """How the body's result is read into the export's."""


@final
class OpenedWorker:
    """The worker of one export (:func:`opened_worker`): started already, or to be started
    once the run is read."""

    def __init__(
        self,
        exporter: str,
        body: Path,
        spec: WorkerPlan,
        progress: Callable[[int, int], None] | None,
        stack: contextlib.ExitStack,
        *,
        start_now: bool,
        timeout_option: bool,
        admitted: Admitted = BASE,
    ) -> None:
        from evalexport.isolation.environments import EnvironmentSpec, existing_environment

        self._exporter = exporter
        self._body = body
        self._admitted = admitted
        self._spec = spec
        self._progress = progress
        self._stack = stack
        self._more_time = (
            f"Raise {named_option('timeout')} if the service is slow, or set {TIME_LIMIT_VARIABLE}."
            if timeout_option
            else f"Set {TIME_LIMIT_VARIABLE} (seconds) to allow it longer."
        )
        installer_choice()  # checked before anything is read, built or started
        self.time_limit = spec.time_limit  # the user's, if set: the pipeline resolved it
        self._environment_spec = EnvironmentSpec(exporter, spec.requirements)
        self.environment: Environment | None = existing_environment(self._environment_spec)
        self._started: StartedWorker | None = None
        if start_now and self.environment is not None:
            self._started = self._start(self.environment)

    def _start(self, environment: Environment) -> StartedWorker:
        from evalexport.isolation import started_worker

        variables = {**self._spec.environment, **self._spec.secrets}
        return self._stack.enter_context(
            started_worker(
                environment,
                self._body,
                variables,
                self._progress,
                self._admitted,
                say=lambda text: logger.info("%s: %s", self._exporter, text),
            )
        )

    def not_asked(self, run_dir: str) -> ExportResult | None:
        """A dry run's answer when the worker could answer it but its environment is not built
        (a dry run builds none); ``None`` when it can be asked."""
        if self.environment is not None:
            return None
        return ExportResult.succeeded(
            self._exporter,
            run_dir,
            "the target was not asked",
            target_not_asked=f"the {self._exporter} environment is not built yet; a dry run "
            "builds none, the export will",
        )

    def deliver(
        self, delivery: Delivered, run_dir: str, scratch: Sequence[Path] = ()
    ) -> ExportResult:
        """Run ``delivery`` in the worker (building its environment first if need be), and
        what came of it. ``scratch`` lists the export's temporary directories, which the
        worker removes if evalexport dies before it does."""
        from evalexport.isolation.environments import EnvironmentBuildError, ensure_environment

        if self.environment is None:
            try:
                self.environment = ensure_environment(self._environment_spec)
            except EnvironmentBuildError as error:
                return ExportResult.failed(
                    self._exporter,
                    run_dir,
                    f"Cannot build the {self._exporter} environment: {error}",
                )
        store = self._spec.local_store
        waiting = Waiting(
            f"the store {store} (one export writes into it at a time)",
            self.time_limit,
            lambda line: logger.info("%s: %s", self._exporter, line),
        )
        with file_lock(store, waiting=waiting) if store else contextlib.nullcontext():
            worker = self._started or self._start(self.environment)
            self._started = None  # a started worker runs one payload
            outcome = worker.run(delivery.payload, self.time_limit, scratch)
        secrets = list(self._spec.secrets.values())
        with known_secrets(secrets):  # the worker's log tail, its log records
            reading = Reading(self._exporter, run_dir, self.environment.path, self._more_time)
            result = reading.of(outcome, delivery.read_back)
        return scrubbed(result, secrets)


@contextlib.contextmanager
def opened_worker(
    exporter: str,
    body: Path,
    spec: WorkerPlan,
    progress: Callable[[int, int], None] | None = None,
    *,
    start_now: bool = True,
    timeout_option: bool = False,
    admitted: Admitted = BASE,
) -> Iterator[OpenedWorker]:
    """The worker of one export of ``exporter`` through ``body``: started now when its
    environment is built and ``start_now`` (an export), else once a delivery is given.
    However the block ends, nothing it started outlives it. ``timeout_option``: the export
    has a ``+timeout`` option, which a worker that ran out of time names. ``admitted``: what
    the worker is given of this process's environment (:mod:`.variables`), besides the spec's
    ``environment`` and ``secrets``.

    Raises :class:`~evalexport.settings.SettingError` for an evalexport setting it cannot use
    (the time limit, the installer), before anything is started."""
    with contextlib.ExitStack() as stack:
        yield OpenedWorker(
            exporter,
            body,
            spec,
            progress,
            stack,
            start_now=start_now,
            timeout_option=timeout_option,
            admitted=admitted,
        )
