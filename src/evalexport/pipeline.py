"""The export pipeline: every export runs here, from start to end, whoever asks for it.

The CLI, the Python API, a plan's pool of export processes and a Slurm array task each build an
:class:`ExportRequest` and call :func:`run_export`; they only format what it returns. One
export goes through these stages, in this order, and every outcome is an
:class:`~evalexport.results.ExportResult`, never an exception:

1. **load** the exporter (a name, through the registry, or a class) and its options (typed
   values, or ``+key=value`` tokens as typed on a command line); a mistake is a usage error;
2. **build the run** (:class:`~evalexport.run.RunArtifacts`) from its rollouts file;
3. **resolve** the target, once (:meth:`~evalexport.spec.base.Exporter.resolve`): where the
   run goes and every setting the export needs, handed to every stage after it; a batch's
   rerun skips an export whose output is there already;
4. **prerequisites**: the files the exporter's kind needs, the directory rule, the marker, then
   the target's own refusal; nothing has been read, built or written yet;
5. **guard** a tracking export: its lock, and what an earlier export to this target says
   (skip it, or refuse a run that changed since);
6. **read once** (:meth:`~evalexport.spec.base.Exporter.read`), its warnings logged once;
   an exporter with an SDK has its worker opened first, so that the worker imports its SDK
   while the run is read (:func:`~evalexport.isolation.delivery.opened_worker`);
7. **describe** it, for a dry run (:meth:`~evalexport.spec.base.Exporter.plan`, and the
   worker's answer when it can ask the target), and stop; else **deliver** it
   (:meth:`~evalexport.spec.base.Exporter.deliver`: a result, or a worker delivery the
   opened worker runs);
8. **mark** a tracking export that succeeded. From the moment the delivery has landed (the
   worker reported its remote run finished, or the delivery returned a success), a stop signal
   is recorded rather than raised (:func:`~evalexport.interrupts.landing`): the export stands
   with its marker, a log line says the signal came late, and the result carries it
   (``interrupted_by``) so that a plan's worker stops before its next export.

A dry run is stages 1 to 7 with the description in place of the delivery, so its verdict
(would export, would skip and why, would fail and why) is the export's by construction.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, final

from evalexport import egress, guard
from evalexport.callers import Caller, asked_from, named_option
from evalexport.egress import Egress, sending
from evalexport.host.locks import LockWaitTimeout, Waiting
from evalexport.interrupts import Interrupted, Landing, deferred, landing, signal_name
from evalexport.isolation.delivery import OpenedWorker
from evalexport.masking import known_secrets, scrub_logs
from evalexport.progress import Progress, ProgressLog, guarded, human_size, reading, stage
from evalexport.reading import PreparedRun, RunFileError, run_fingerprint
from evalexport.results import ExitCode, ExportFailure, ExportResult, ExportStatus, SkipReason
from evalexport.run import RunArtifacts
from evalexport.settings import TIME_LIMIT_VARIABLE, SettingError
from evalexport.spec.base import OptionError, Target
from evalexport.spec.hooks import call_hook, declares
from evalexport.spec.workers import WorkerDelivery, WorkerSecretsError

if TYPE_CHECKING:
    from evalexport.spec.base import AnyExporter, ExporterConfig

__all__ = [
    "ExportRequest",
    "Progress",
    "export_run",
    "prerequisite_failure",
    "run_export",
]

logger = logging.getLogger("evalexport")


@final
@dataclass(frozen=True)
class ExportRequest:
    """One export as its caller asks for it."""

    exporter: str | type[AnyExporter]
    """An exporter's name (``evalexport list``), or an exporter class."""
    options: Mapping[str, object] = field(default_factory=dict)
    """Options as typed values, ``rollouts_jsonl_fpath`` among them."""
    overrides: Sequence[str] = ()
    """Options as ``+key=value`` tokens, as typed on a command line (after ``options``)."""
    dry_run: bool = False
    """Stop before delivery and describe what the export would do."""
    progress: Progress | None = None
    skip_finished: bool = False
    """A batch's rerun: skip an export whose output already proves it done
    (:attr:`~evalexport.spec.base.Target.already_exported`)."""
    python: bool = False
    """Asked through the Python API: advice names its calls (``evalexport.inspect(...)``),
    not commands (:mod:`evalexport.callers`)."""

    @property
    def caller(self) -> Caller:
        """Who asked (:mod:`evalexport.callers`): the command line gives ``+key=value`` tokens,
        a plan its keys, the Python API keyword arguments."""
        if self.overrides:
            return Caller.COMMAND_LINE
        return Caller.PYTHON if self.python else Caller.PLAN

    @property
    def exporter_name(self) -> str:
        """The exporter's name as the caller gave it, for results made before it is loaded."""
        if isinstance(self.exporter, str):
            return self.exporter
        return str(getattr(self.exporter, "name", self.exporter))


def run_export(request: ExportRequest) -> ExportResult:
    """Run ``request`` through every stage, its messages worded for who asked
    (:mod:`evalexport.callers`); its result, whatever happens."""
    with asked_from(request.caller):
        return _requested(request)


def _requested(request: ExportRequest) -> ExportResult:
    """Stages 1 and 2 (the exporter and its options loaded, the run built), then the export;
    a plugin's own text named for a keyword caller."""
    from evalexport.spec.options import in_keyword_terms, options_of
    from evalexport.spec.overrides import OverrideError
    from evalexport.spec.registry import (
        ExporterLoadError,
        UnknownExporterError,
        exporter_class,
    )

    name = request.exporter_name
    try:
        chosen = exporter_class(request.exporter)
    except UnknownExporterError as error:
        return ExportResult.failed(name, "", str(error), exit_code=ExitCode.USAGE)
    except ExporterLoadError as error:
        return ExportResult.failed(name, "", str(error))
    try:
        config = options_of(chosen, request.options, request.overrides, dry_run=request.dry_run)
    except (OverrideError, OptionError) as error:
        return ExportResult.failed(name, "", str(error), exit_code=ExitCode.USAGE)
    run = RunArtifacts.from_rollouts_path(config.rollouts_jsonl_fpath)
    try:
        exporter = chosen(progress=guarded(request.progress))
    except Exception as error:  # a plugin's own __init__
        return ExportResult.failed(
            name,
            str(run.run_dir),
            f"The {name} exporter cannot be made: {type(error).__name__}: {error}",
        )
    result = export_run(exporter, run, config, skip_finished=request.skip_finished)
    if request.caller.gives_tokens:
        return result
    # evalexport words its own messages for who asked (callers.named_option); a plugin's text,
    # written for the command line as the plugin guides wrote it until 0.5, has the
    # exporter's options named as a keyword caller gives them here.
    message = in_keyword_terms(result.message, chosen.Config.model_fields)
    return result if message == result.message else result.model_copy(update={"message": message})


def export_run(
    exporter: AnyExporter, run: RunArtifacts, config: ExporterConfig, *, skip_finished: bool = False
) -> ExportResult:
    """Stages 3 to 8 for an exporter, a run and its parsed options: the export, or its dry run
    when ``config.dry_run``; every outcome, unexpected errors included, is a result."""
    from evalexport.spec.options import secret_values

    scrub_logs()
    try:
        with known_secrets(secret_values(config)):
            return _export(exporter, run, config, skip_finished)
    except (Interrupted, KeyboardInterrupt) as stop:  # the caller's stop signals: stop cleanly
        interruption = Interrupted.from_exception(stop)
        return ExportResult.failed(
            exporter.name,
            str(run.run_dir),
            f"Interrupted by {signal_name(interruption.signum)} before the {exporter.name} "
            "export finished; nothing was exported and no export marker was written.",
            exit_code=ExitCode.for_signal(interruption.signum),
            interrupted_by=signal_name(interruption.signum),
        )
    except (SettingError, OptionError) as error:  # a setting, or an option a read found wrong
        return ExportResult.failed(
            exporter.name, str(run.run_dir), str(error), exit_code=ExitCode.USAGE
        )
    except LockWaitTimeout as error:  # before OSError: a TimeoutError is one
        return ExportResult.failed(
            exporter.name,
            str(run.run_dir),
            f"Gave up waiting: {error} (the wait is at most the worker's time limit; "
            f"{TIME_LIMIT_VARIABLE} sets it)",
        )
    except (RunFileError, ExportFailure) as error:
        return ExportResult.failed(exporter.name, str(run.run_dir), str(error), **error.details)
    except OSError as error:  # a file that cannot be read or written is no exporter bug
        where = f" {error.filename}" if error.filename else ""
        return ExportResult.failed(
            exporter.name,
            str(run.run_dir),
            f"Cannot access{where}: {error.strerror or error} (in the {exporter.name} export)",
        )
    except RecursionError:
        return ExportResult.failed(
            exporter.name, str(run.run_dir), "A file of the run is nested too deeply to read."
        )
    except SystemExit as error:  # a plugin that exits: its export fails, the caller goes on
        return ExportResult.failed(
            exporter.name,
            str(run.run_dir),
            f"the {exporter.name} exporter called sys.exit({error.code!r}) during the export",
        )
    except WorkerSecretsError as error:  # the exporter's own words for what to set
        return ExportResult.failed(exporter.name, str(run.run_dir), str(error))
    except Exception as error:  # an exporter bug must still end in a result
        return ExportResult.failed(
            exporter.name,
            str(run.run_dir),
            f"unexpected error in the {exporter.name} exporter: {type(error).__name__}: {error}",
        )


def prerequisite_failure(
    exporter: AnyExporter,
    run: RunArtifacts,
    target: Target,
    export_guard: guard.ExportGuard | None = None,
) -> str | None:
    """Stage 4: why the run cannot be exported to ``target``, read off the file system alone
    (no file of the run is opened): the checks of the exporter's kind (a tracking export's
    through its ``export_guard``), then the target's own refusal."""
    reason = run.missing_file_reason(
        needs_metrics_and_config=exporter.kind != "output", check_records=False
    )
    if reason is None and exporter.kind == "directory":
        reason = run.shared_directory_reason()
    if reason is None and exporter.kind == "tracking":
        export_guard = export_guard or guard.ExportGuard(run, exporter.name, target.where)
        reason = export_guard.unexportable_reason()
    return reason or target.refusal


def _copies_one_at_a_time(
    exporter: AnyExporter, fingerprint: str | None, waiting: Waiting
) -> contextlib.AbstractContextManager[None]:
    """The lock of a tracking export's delivery of these bytes (``fingerprint``) by this
    exporter, on this machine, whatever the target: the run directory's lock does not hold a
    copy of the run elsewhere, the SDK's lookup of an earlier copy and its creation of the run
    are not one step, and one server is named many ways (``127.0.0.1`` and ``localhost``, a
    port and none), so the lock is not keyed on the target's spelling."""
    if fingerprint is None:
        return contextlib.nullcontext()
    from evalexport.host.locks import named_lock

    return named_lock(f"delivery:{exporter.name}:{fingerprint}", waiting=waiting)


def _export(
    exporter: AnyExporter, run: RunArtifacts, config: ExporterConfig, skip_finished: bool
) -> ExportResult:
    """Stages 3 to 8: resolve, then the export's steps (:class:`_Export`) in order."""
    target, limit = _resolved(exporter, run, config)
    guarded = exporter.kind == "tracking"
    export = _Export(
        exporter,
        run,
        config,
        target,
        limit,
        guard.ExportGuard(run, exporter.name, target.where) if guarded else None,
    )
    refused = export.refused(skip_finished)
    return refused if refused is not None else export.guarded()


@final
@dataclass(frozen=True)
class _Export:
    """One export from its resolved target to its result, a step a method, in the order they
    run: :meth:`refused` (stage 4), :meth:`guarded` (5 and 8) around :meth:`earlier` and
    :meth:`read_and_send` (6 and 7)."""

    exporter: AnyExporter
    run: RunArtifacts
    config: ExporterConfig
    target: Target
    limit: float
    """The worker's time limit: every wait of the export keeps to it."""
    guard: guard.ExportGuard | None
    """A tracking export's guard (its lock, the earlier exports, the marker)."""

    @property
    def dry_run(self) -> bool:
        return bool(self.config.dry_run)

    def waiting(self, what: str) -> Waiting:
        """How a lock another export holds is waited for: said on the stage log, at most the
        time limit."""
        return Waiting(what, self.limit, lambda line: stage(self.exporter.name, line))

    def refused(self, skip_finished: bool) -> ExportResult | None:
        """Stage 4 (and a batch's rerun): why nothing is to be done, read off the file system
        alone; ``None`` to go on."""
        exporter, run, target = self.exporter, self.run, self.target
        if skip_finished and target.already_exported is not None:
            finished = ExportResult.skipped(
                exporter.name,
                str(run.run_dir),
                target.already_exported,
                SkipReason.ALREADY_EXPORTED,
            )
            return finished.said_as_dry_run() if self.dry_run else finished
        if reason := prerequisite_failure(exporter, run, target, self.guard):
            return ExportResult.failed(exporter.name, str(run.run_dir), reason)
        return None

    def guarded(self) -> ExportResult:
        """Stages 5 to 8 under the run's lock, the landing window and the export's gate. Once
        the delivery has landed, a stop signal is recorded, not raised, so the export it cannot
        undo keeps its marker (:mod:`evalexport.interrupts`); a dry run lands nothing."""
        what = f"an export of {self.run.rollouts.name} to {self.exporter.name}"
        locked = (
            self.guard.locked(self.waiting(what))
            if self.guard is not None and not self.dry_run
            else contextlib.nullcontext()
        )
        window = landing() if not self.dry_run else contextlib.nullcontext(Landing())
        worker = self.target.worker
        with (
            known_secrets(worker.secrets.values() if worker is not None else ()),
            locked,
            window as delivery,
            _gate(self.config) as gate,
        ):
            if (earlier := self.earlier()) is not None:
                return earlier
            result, fingerprint = self.read_and_send(gate, delivery)
            if self.dry_run:
                return result  # described, never marked
            if self.guard is not None and _landed(result):
                assert fingerprint is not None
                result = self.guard.marked(result, self.target.where, fingerprint)
        if delivery.signum is None:
            return result
        logger.warning(
            "%s arrived after the %s export had landed; the export stands",
            signal_name(delivery.signum),
            self.exporter.name,
        )
        # Whoever runs the next export (a plan's worker) stops now.
        return result.model_copy(update={"interrupted_by": signal_name(delivery.signum)})

    def earlier(self) -> ExportResult | None:
        """Stage 5, under the lock (a concurrent export may have finished meanwhile): what an
        earlier export to this target says, a skip or a refusal; ``None`` to go on."""
        if self.guard is None:
            return None
        earlier = self.guard.earlier_export(dry_run=self.dry_run)
        if isinstance(earlier, guard.AlreadyExported):
            copies = "second_copy" in type(self.config).model_fields
            skipped = earlier.skipped(self.exporter.name, self.run, copies=copies)
            return skipped.said_as_dry_run() if self.dry_run else skipped
        return (
            ExportResult.failed(self.exporter.name, str(self.run.run_dir), earlier.message())
            if earlier
            else None
        )

    def read_and_send(self, gate: Egress, delivery: Landing) -> tuple[ExportResult, str | None]:
        """Stages 6 and 7: the worker opened, the run read once, then described (a dry run)
        or delivered; the result, and the fingerprint of the bytes read (a tracking export's,
        under the lock: the marker and the remote run's tag name them)."""
        exporter, run, config, target = self.exporter, self.run, self.config, self.target
        with _opened_worker(exporter, config, target, self.dry_run) as worker:
            prepared: object = None
            try:
                prepared = _read_once(exporter, run, config, target)
                # What the read changes on the way (secrets masked, metrics left out) ends
                # the result, the dry run's and the export's alike.
                notes = prepared.warnings() if isinstance(prepared, PreparedRun) else []
                notes += gate.notes()
                fingerprint = None
                if self.guard is not None:
                    fingerprint = (
                        prepared.fingerprint
                        if isinstance(prepared, PreparedRun)
                        else run_fingerprint(run)
                    )
                handed = _Handed(run, config, target, prepared, fingerprint)
                if self.dry_run:
                    described = _described(exporter, handed, _asked(exporter, handed, worker))
                    return _with_notes(described, notes), fingerprint
                if not _found_done(prepared):  # a rerun its read found done says only that
                    stage(exporter.name, f"exporting to {_shown(target)}", delivering=True)
                # Copies of one run (other directories, the same bytes) exported at once to one
                # target: one delivery at a time, so each looks up what the other made.
                copy = self.waiting(f"an export of the same run to {exporter.name}")
                with _copies_one_at_a_time(exporter, fingerprint, copy):
                    result = _with_notes(_delivered(exporter, handed, worker), notes)
                if result.status is ExportStatus.SUCCEEDED:
                    delivery.landed()
                return result, fingerprint
            finally:
                _discard(prepared)


def _landed(result: ExportResult) -> bool:
    """Whether the target holds the run's data, finished, after ``result``: an export that
    succeeded, or one that found a finished run of the data there (the marker records it, so
    a rerun skips here rather than ask the target again)."""
    return result.status is ExportStatus.SUCCEEDED or (
        result.status is ExportStatus.SKIPPED
        and result.skip_reason is SkipReason.FOUND_AT_TARGET
        and bool(result.run_id)
    )


def _gate(config: ExporterConfig) -> contextlib.AbstractContextManager[Egress]:
    """The export's egress gate (:mod:`evalexport.egress`), made once the secrets it knows are
    all known (its token options, its worker's secrets, the environment's): what the read
    writes for the service passes it, and so does the delivery's payload."""
    from evalexport.spec.declarations import RowsConfig

    mask_rows = config.mask_rows if isinstance(config, RowsConfig) else True
    return sending(Egress(mask_rows=mask_rows))


def _with_notes(result: ExportResult, notes: list[str]) -> ExportResult:
    """``result`` saying ``notes``, unless it failed (then they do not matter)."""
    return result if result.status is ExportStatus.FAILED else result.noted(notes)


@final
@dataclass(frozen=True)
class _Handed:
    """What the pipeline hands the hooks after the read: each takes what it declares."""

    run: RunArtifacts
    config: ExporterConfig
    target: Target
    prepared: object
    fingerprint: str | None

    def arguments(self, scratch: Path | None = None) -> dict[str, object]:
        return {
            "run": self.run,
            "config": self.config,
            "target": self.target,
            "prepared": self.prepared,
            "fingerprint": self.fingerprint,
            "scratch": scratch,
        }


def _resolved(
    exporter: AnyExporter, run: RunArtifacts, config: ExporterConfig
) -> tuple[Target, float]:
    """Stage 3: the exporter's target, resolved once, with the worker's time limit the user
    set (``$EVALEXPORT_WORKER_TIME_LIMIT``, read here and only here) in place of the
    exporter's; and the time limit every wait of the export keeps to."""
    from evalexport.settings import worker_time_limit
    from evalexport.spec.workers import DEFAULT_TIME_LIMIT, WorkerSpec

    limit = worker_time_limit()
    target = call_hook(exporter.resolve, run=run, config=config, time_limit=limit)
    if not isinstance(target, Target):
        raise ExportFailure(
            f"the {exporter.name} exporter's resolve returned {type(target).__name__}; it "
            "returns a Target (evalexport.exporters.Target(where=...)). This is a bug in "
            "the exporter."
        )
    worker = target.worker
    if worker is None:
        return target, DEFAULT_TIME_LIMIT if limit is None else limit
    if not isinstance(worker, WorkerSpec):
        raise ExportFailure(
            f"the {exporter.name} exporter's resolve gave Target(worker=) a "
            f"{type(worker).__name__}; it takes a WorkerSpec(requirements=...) from "
            "evalexport.spec. This is a bug in the exporter."
        )
    if limit is not None:
        worker = replace(worker, time_limit=limit)
    return replace(target, worker=worker), worker.time_limit


@contextlib.contextmanager
def _opened_worker(
    exporter: AnyExporter, config: ExporterConfig, target: Target, dry_run: bool
) -> Iterator[OpenedWorker | None]:
    """The worker of an exporter with an SDK, opened before the run is read: started now when
    its environment is built (an export), so that it imports its SDK while the run is read."""
    sdk = exporter.sdk
    if sdk is None:
        yield None
        return
    if target.worker is None:
        raise ExportFailure(
            f"the {exporter.name} exporter declares an sdk but its resolve gave no worker; it "
            "returns Target(..., worker=WorkerSpec(requirements=...)). This is a bug in the "
            "exporter."
        )
    from evalexport.isolation.delivery import opened_worker

    with opened_worker(
        exporter.name,
        sdk.body,
        target.worker,
        exporter.progress,
        start_now=not dry_run,
        timeout_option="timeout" in type(config).model_fields,
        admitted=sdk.admitted(),
    ) as worker:
        yield worker


def _read_once(
    exporter: AnyExporter, run: RunArtifacts, config: ExporterConfig, target: Target
) -> object:
    """Stage 6: the exporter reads the run, once; a line says so, and long reads report
    their bytes (:mod:`evalexport.progress`)."""
    try:
        size = f" ({human_size(run.rollouts.stat().st_size)})"
    except OSError:
        size = ""  # the read names the problem
    stage(exporter.name, f"reading {run.rollouts.name}{size}")
    prepared: object = None
    try:
        with reading(ProgressLog(f"{exporter.name}: reading {run.rollouts.name}")):
            prepared = call_hook(exporter.read, run=run, config=config, target=target)
    except BaseException:  # a stop signal as the read ended: what it wrote is not left behind
        _discard(prepared)
        raise
    return prepared


def _found_done(prepared: object) -> bool:
    """Whether the read found this very export done at its target (an output exporter's
    rerun into its own output: ATIF's ``exported_before``, set): nothing is exported then."""
    return bool(getattr(prepared, "exported_before", None))


def _discard(prepared: object) -> None:
    """Remove what an exporter's read wrote (its ``discard()``, if it has one), whole: a second
    stop signal waits until it is done."""
    discard = getattr(prepared, "discard", None)
    if callable(discard):
        with deferred() as held:
            discard()
        held.raise_held()


def _delivered(exporter: AnyExporter, handed: _Handed, worker: OpenedWorker | None) -> ExportResult:
    """Stage 7 of an export: what ``deliver`` returned, or what its worker made of it, with
    where the target's settings came from."""
    from contextlib import nullcontext

    from evalexport.isolation.descendants import owned_scratch

    wants_scratch = declares(exporter.deliver, "scratch")
    with (
        owned_scratch(f"evalexport-{exporter.name}-") if wants_scratch else nullcontext() as scratch
    ):
        delivered = call_hook(exporter.deliver, **handed.arguments(scratch))
        if isinstance(delivered, WorkerDelivery):
            if worker is None:
                raise ExportFailure(
                    f"the {exporter.name} exporter's deliver returned a WorkerDelivery but it "
                    "declares no sdk (sdk = Sdk(body=...)). This is a bug in the exporter."
                )
            scratches = [*([scratch] if scratch else []), *_scratch_of(handed.prepared)]
            # The door out: what the worker sends passes the export's gate, but its addresses.
            sent = replace(
                delivered,
                payload=egress.current().payload(delivered.payload, delivered.addresses),
            )
            delivered = worker.deliver(sent, str(handed.run.run_dir), scratches)
    if not isinstance(delivered, ExportResult):
        raise ExportFailure(
            f"the {exporter.name} exporter's deliver returned {type(delivered).__name__}; it "
            "returns an ExportResult (or, with an sdk, a WorkerDelivery). This is a bug in "
            "the exporter."
        )
    return _with_settings(delivered, handed.target)


def _scratch_of(prepared: object) -> list[Path]:
    """The directories the read wrote into, which the worker removes if we die first."""
    return list(prepared.scratch) if isinstance(prepared, PreparedRun) else []


def _asked(
    exporter: AnyExporter, handed: _Handed, worker: OpenedWorker | None
) -> ExportResult | None:
    """A dry run's question to the target, through the worker, when the worker can answer
    without changing it and its environment is built; ``None`` when it cannot be asked."""
    spec = handed.target.worker
    if worker is None or spec is None or not spec.answers_dry_runs:
        return None
    if (not_asked := worker.not_asked(str(handed.run.run_dir))) is not None:
        return not_asked
    return _delivered(exporter, handed, worker)


def _with_settings(result: ExportResult, target: Target) -> ExportResult:
    """``result`` saying where each target setting came from, as the dry run does."""
    if not target.settings or "settings" in result.details:
        return result
    details = {**result.details, "settings": dict(target.settings)}
    return result.model_copy(update={"details": details})


def _shown(target: Target) -> str:
    """Where the run goes, for the stage line: never a URL's password."""
    from evalexport.masking import mask_text

    return mask_text(target.where)


def _described(exporter: AnyExporter, handed: _Handed, answer: ExportResult | None) -> ExportResult:
    """Stage 7 of a dry run: the target's answer, if it was asked (a failure or a skip is the
    verdict; what else it found or would do there, its notices), and the plan, in the
    backend's words."""
    run = handed.run
    if answer is not None and answer.status is ExportStatus.FAILED:
        return answer.model_copy(
            update={
                "message": f"dry run: the export would fail: {answer.message}",
                "details": {**answer.details, "dry_run": True},
            }
        )
    if answer is not None and answer.status is ExportStatus.SKIPPED:
        return answer.said_as_dry_run()
    arguments = handed.arguments()
    plan = call_hook(exporter.plan, **arguments)
    if plan.skip_reason is not None:  # what the read found there: the export would skip
        skipped = ExportResult.skipped(
            exporter.name, str(run.run_dir), plan.summary, plan.skip_reason, **plan.counts
        )
        return skipped.said_as_dry_run()
    if handed.target.settings and not plan.settings:
        plan = plan.model_copy(update={"settings": dict(handed.target.settings)})
    said = plan.summary or f"{run.rollouts.name} would be exported to {plan.target}"
    existing = answer.existing_run_ids if answer is not None else []
    not_asked = answer.target_not_asked if answer is not None else None
    if existing:
        said += (
            f"; the target already holds run {', '.join(existing)} of this run's data, and the "
            f"export would add a second copy, as {named_option('second_copy')} asks"
        )
    if not_asked is not None:
        said += f"; the target was not asked whether it holds this run's data already ({not_asked})"
    described = ExportResult.succeeded(
        exporter.name,
        str(run.run_dir),
        f"dry run: {said}",
        plan=plan,
        existing_run_ids=existing,
        target_not_asked=not_asked,
        dry_run=True,
        **plan.counts,
    )
    return described.noted(answer.notices if answer is not None else [])
