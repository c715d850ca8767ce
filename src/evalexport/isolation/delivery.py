"""An SDK exporter's delivery, and the one worker lifecycle that runs it (SPEC §3.4).

An exporter whose SDK must not enter the user's environment describes, when it resolves its
target, the worker that will deliver (:class:`WorkerSpec`: requirements, time limit,
environment, local store, secrets), and returns from ``deliver`` a :class:`WorkerDelivery`:
the payload its worker body receives, and how the body's result is read back. It never runs a
process itself, as an httpx transport never opens a socket for the client that holds it: a fake
SDK is just another SDK behind the same delivery.

:func:`opened_worker` is that worker for one export, opened by the pipeline before the run is
read. When the SDK's environment is built already, the worker starts at once and imports its
SDK while the run is read; otherwise the environment is built after the read (a dry run builds
none). Either way there is one launch (:func:`~evalexport.isolation.launcher.started_worker`),
one time limit, one place a stop signal meets the worker, and one reading of what it reports.
"""

from __future__ import annotations

import contextlib
import logging
import signal
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Generic, final

from typing_extensions import TypeVar

from evalexport.callers import named_option
from evalexport.host.locks import Waiting, file_lock
from evalexport.interrupts import signal_name
from evalexport.isolation.variables import BASE, Admitted
from evalexport.masking import known_secrets
from evalexport.results import ExitCode, ExportResult, ExportStatus
from evalexport.settings import TIME_LIMIT_VARIABLE, installer_choice
from evalexport.workers.protocol import WorkerResult

if TYPE_CHECKING:
    from evalexport.isolation.environments import Environment
    from evalexport.isolation.launcher import StartedWorker, WorkerOutcome

__all__ = [
    "DEFAULT_TIME_LIMIT",
    "OpenedWorker",
    "WorkerDelivery",
    "WorkerSecretsError",
    "WorkerSpec",
    "opened_worker",
    "read_worker_result",
]

logger = logging.getLogger("evalexport.worker")

DEFAULT_TIME_LIMIT: Final = 3600.0
"""Seconds a worker may run unless its exporter says otherwise (SPEC §3.4)."""

PayloadT = TypeVar("PayloadT", bound=Mapping[str, Any], default=Mapping[str, Any])
"""A worker body's payload type: a ``TypedDict`` defined beside the body's ``run``."""


class WorkerSecretsError(Exception):
    """The secrets the worker needs could not be had (a credential helper failed or did not
    answer in time); the message says why and what to set instead."""


@final
@dataclass(frozen=True)
class WorkerSpec:
    """The worker of one export, resolved with its target: everything it needs before the
    run is read, so that it can start while the run is read."""

    requirements: tuple[str, ...]
    """The SDK's requirements: the environment is built once per list (and Python)."""
    time_limit: float = DEFAULT_TIME_LIMIT
    """Seconds before the worker is stopped (``$EVALEXPORT_WORKER_TIME_LIMIT`` overrides)."""
    environment: Mapping[str, str] = field(default_factory=dict)
    """Environment variables set for the worker only (never secrets: see ``secrets``), such as
    the SDK's timeouts and retries: added to what it is given of the caller's environment
    (:mod:`evalexport.isolation.variables`), replacing a variable of the same name."""
    local_store: Path | None = None
    """A local store file the worker writes into, which other exports may share (an embedded
    MLflow database): workers writing into one store run one at a time."""
    answers_dry_runs: bool = False
    """The worker body takes a dry run's payload (``dry_run`` true in it) and answers what an
    export would find at the target, changing nothing: a dry run asks it when the
    environment is built (a dry run builds none)."""
    secrets: Mapping[str, str] = field(default_factory=dict, repr=False)
    """Environment variables for the worker that are secrets (a token given as an option, or
    asked of a credential helper once): scrubbed from whatever the worker reports, never
    written to disk, never shown."""


ReadBack = Callable[[ExportResult, WorkerResult], ExportResult]
"""How an exporter refines what its worker reported: it gets the result as read from the
worker's typed keys, and the worker's own :class:`~evalexport.workers.protocol.WorkerResult`."""


@final
@dataclass(frozen=True)
class WorkerDelivery(Generic[PayloadT]):
    """What an SDK exporter's ``deliver`` returns: its worker body's payload (never a token:
    those are the target's ``worker.secrets``), and how the body's result is read back."""

    payload: PayloadT
    read_back: ReadBack | None = None
    """Called with the result as read and the worker's own; returns the export's result
    (a sync command added, a detail the exporter reads off the worker's details)."""
    addresses: frozenset[str] = frozenset()
    """The payload's keys the worker needs as they are: where to send (a tracking URI, its
    password in it) and which local files to read. The pipeline passes every other value
    through the export's egress gate (:meth:`evalexport.egress.Egress.payload`), so what the
    worker sends is masked; an address is never content."""


@final
class OpenedWorker:
    """The worker of one export (:func:`opened_worker`): started already, or to be started
    once the run is read."""

    def __init__(
        self,
        exporter: str,
        body: Path,
        spec: WorkerSpec,
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
        self, delivery: WorkerDelivery[Any], run_dir: str, scratch: Sequence[Path] = ()
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
            reading = _Reading(self._exporter, run_dir, self.environment.path, self._more_time)
            result = reading.of(outcome, delivery.read_back)
        return _scrubbed(result, secrets)


@contextlib.contextmanager
def opened_worker(
    exporter: str,
    body: Path,
    spec: WorkerSpec,
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


@final
@dataclass(frozen=True)
class _Reading:
    """What a worker's outcome means for the export of ``exporter``."""

    exporter: str
    run_dir: str
    environment: Path
    more_time: str

    def failed(self, message: str, **details: Any) -> ExportResult:
        return ExportResult.failed(self.exporter, self.run_dir, message, **details)

    def of(self, outcome: WorkerOutcome, read_back: ReadBack | None) -> ExportResult:
        for line in outcome.log_tail().splitlines() if outcome.result is None else []:
            logger.debug("%s worker: %s", self.exporter, line)
        if outcome.interrupted_by is not None:
            return self._interrupted(outcome, read_back)
        if outcome.timed_out:
            said = str(outcome.result.get("message", "")) if outcome.result else ""
            return self.failed(
                f"The {self.exporter} worker exceeded its time limit of "
                f"{outcome.time_limit:g} s and was stopped. {said + ' ' if said else ''}"
                f"{self.more_time}",
                environment=str(self.environment),
            )
        if outcome.result is None:
            return self.failed(
                f"The {self.exporter} worker {outcome.describe_exit()} without writing a "
                f"result. Its output ends with:\n{outcome.log_tail() or '(nothing)'}",
                worker_exit_code=outcome.exit_code,
                environment=str(self.environment),
            )
        return self._reported(outcome.result, read_back)

    def _reported(self, reported: WorkerResult, read_back: ReadBack | None) -> ExportResult:
        try:
            result = _result_from(self.exporter, self.run_dir, self.environment, reported)
        except (KeyError, TypeError, ValueError) as error:  # pydantic's ValidationError too
            return self.failed(
                f"The {self.exporter} worker wrote an invalid result ({error}): {reported!r}"
            )
        return read_back(result, reported) if read_back is not None else result

    def _interrupted(self, outcome: WorkerOutcome, read_back: ReadBack | None) -> ExportResult:
        """A stop signal arrived while the worker ran: the export failed with ``128 + signal``,
        unless the worker had already finished (then what it did stands, marker and all)."""
        from evalexport.isolation.launcher import GRACE_SECONDS

        assert outcome.interrupted_by is not None
        stopped_by = signal_name(outcome.interrupted_by)
        if outcome.result is not None and outcome.result.get("status") != "failed":
            logger.warning(
                "%s arrived after the %s export had finished; the export stands",
                stopped_by,
                self.exporter,
            )
            return self._reported(outcome.result, read_back)
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
            self.exporter,
            self.run_dir,
            f"Interrupted by {stopped_by}: the {self.exporter} export was stopped before it "
            f"finished and no export marker was written. {what}".strip(),
            exit_code=ExitCode.for_signal(outcome.interrupted_by),
            interrupted_by=stopped_by,
        )


def read_worker_result(
    exporter: str, run_dir: str, environment: Path, reported: WorkerResult
) -> ExportResult:
    """The export's result from its worker's: the typed keys become the result's fields (its
    notices, the message's end and :attr:`~evalexport.results.ExportResult.notices`; the
    environment that ran); ``details`` stay for people."""
    try:
        return _result_from(exporter, run_dir, environment, reported)
    except (KeyError, TypeError, ValueError) as error:  # pydantic's ValidationError too
        return ExportResult.failed(
            exporter,
            run_dir,
            f"The {exporter} worker wrote an invalid result ({error}): {reported!r}",
        )


def _result_from(
    exporter: str, run_dir: str, environment: Path, reported: WorkerResult
) -> ExportResult:
    typed, details = _typed_keys(reported)
    run_id = typed.get("run_id")
    result = ExportResult(
        exporter=exporter,
        status=ExportStatus(reported["status"]),
        exit_code=ExitCode(int(reported["exit_code"])),
        message=str(reported["message"]),
        run_dir=run_dir,
        run_id=None if run_id is None else str(run_id),
        skip_reason=typed.get("skip_reason"),
        receipts=typed["receipts"],
        existing_run_ids=typed.get("existing_run_ids") or [],
        environment=str(environment),
        details=details,
    )
    # The result says them, not a log line beside it (a second copy, a big table).
    return result.noted([str(notice) for notice in typed.get("notices") or []])


_TYPED_KEYS: Final = ("run_id", "skip_reason", "notices", "receipts", "existing_run_ids")
"""The keys of a worker's result that become fields of the ``ExportResult`` (notices: its
message's end)."""


def _typed_keys(reported: WorkerResult) -> tuple[dict[str, Any], dict[str, object]]:
    """``(typed keys, details)`` of a worker's result. A worker body written before the typed
    keys existed (plugin API 2) put ``run_id``, ``skip_reason`` and ``notices`` in
    ``details``: they are read from there, with a notice in the log."""
    details = dict(reported["details"])
    typed: dict[str, Any] = {key: reported.get(key) for key in _TYPED_KEYS if key in reported}
    smuggled = sorted(key for key in ("run_id", "skip_reason", "notices") if key in details)
    if smuggled:
        logger.info(
            "the worker returns %s in details, which is deprecated: return them with "
            "result(..., run_id=..., skip_reason=..., notices=[...], receipts={...})",
            ", ".join(smuggled),
        )
        for key in smuggled:
            typed.setdefault(key, details.pop(key))
    receipts: Mapping[str, object] = typed.get("receipts") or {}
    typed["receipts"] = {str(k): str(v) for k, v in receipts.items()}
    return typed, details


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
