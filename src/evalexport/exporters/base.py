"""The exporter contract (SPEC §3.1): a config model, one prerequisite check, one export.

:meth:`Exporter.export` is the one entry point. It runs :meth:`Exporter.unexportable_reason`
before anything else, answers ``--dry-run`` from :meth:`Exporter.dry_run_plan`, holds the
already-exported guard for tracking exporters, and turns every unexpected error into a failed
:class:`~evalexport.results.ExportResult`. Subclasses implement :meth:`Exporter._export`.
"""

from __future__ import annotations

import abc
import contextlib
import logging
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Final, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from evalexport import guard
from evalexport._hooks import call_hook, positional_count
from evalexport.interrupts import Interrupted, deferred, signal_name
from evalexport.metrics import flatten_metrics
from evalexport.results import (
    DryRunPlan,
    ExitCode,
    ExportResult,
    ExportStatus,
    PlannedFile,
    SkipReason,
)
from evalexport.run import RunArtifacts, RunFileError
from evalexport.settings import SettingError

if TYPE_CHECKING:
    from evalexport.exporters.prepared import PreparedRun

logger = logging.getLogger("evalexport")

__all__ = ["DryRunPlan", "Exporter", "ExporterConfig", "OptionError", "PlannedFile"]


class ExporterConfig(BaseModel):
    """Options every exporter takes. Unknown options are refused, never ignored."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    rollouts_jsonl_fpath: Path = Field(
        description="The run's rollouts file; every other file of the run is found beside it."
    )

    @field_validator("rollouts_jsonl_fpath", mode="before")
    @classmethod
    def _names_a_file(cls, value: object) -> object:
        """An empty path would be the current directory: never what a user meant."""
        if isinstance(value, str) and not value.strip():
            raise ValueError("expected the path of the run's rollouts file, got an empty value")
        return value

    dry_run: bool = Field(
        default=False,
        description="Run every check and print what would be exported, without exporting.",
    )


ConfigT = TypeVar("ConfigT", bound=ExporterConfig)


DEPRECATED_HOOKS: Final = {
    "receipt_keys": "return receipts={...} from the worker body instead "
    "(protocol.result(..., receipts={...})): they reach ExportResult.receipts unmasked",
    "secrets_the_sdk_may_find": "return such secrets from worker_secrets(config) instead: "
    "the worker receives them and they are scrubbed from what it reports",
    "target(self, config)": "define target(self, run, config) instead (plugin API 1, the "
    "0.1.0 guide, took the config only)",
    'details["run_id"]': "return ExportResult.succeeded(..., run_id=...) instead: run_id is a "
    "field of the result (plugin API 1, the 0.1.0 guide, put it in details)",
}
"""Hooks of earlier plugin guides that are still called when a plugin defines them, with the
form that replaces each (docs/architecture.md, "The exporter template")."""


_TEMPLATE_MODULES: Final = frozenset({__name__, "evalexport.exporters.isolated"})


class OptionError(ValueError):
    """The options given to an exporter are unknown or invalid (exit code 2)."""


class Exporter(abc.ABC, Generic[ConfigT]):
    """One destination a finished run can be exported to."""

    name: ClassVar[str]
    summary: ClassVar[str]
    """One line for ``evalexport list``."""
    Config: type[ConfigT]
    needs_metrics_and_config: ClassVar[bool] = True
    """Whether the run must hold aggregate metrics and a saved config."""
    uploads_directory: ClassVar[bool] = False
    """Directory exporters upload the run directory as it is, so it must hold one run only."""
    guards_exports: ClassVar[bool] = False
    """Tracking exporters write an export marker and skip a run already exported (§3.3)."""

    receipt_keys: ClassVar[frozenset[str]] = frozenset()
    """Deprecated (``DEPRECATED_HOOKS``): keys of ``details`` shown as receipts. Kept so that a
    plugin reading or extending it still works; a worker body returns ``receipts={...}``."""

    progress_unit: ClassVar[str] = "bytes"
    """What ``progress(done, total)`` counts: ``bytes`` of input, or ``steps`` of a worker."""

    def __init_subclass__(cls, **keywords: Any) -> None:
        """Warn, naming the new form, of each deprecated hook a subclass still defines; it
        keeps working (see :data:`DEPRECATED_HOOKS`)."""
        super().__init_subclass__(**keywords)
        if cls.__module__ in _TEMPLATE_MODULES:  # the template defines them, for old plugins
            return
        deprecated = [hook for hook in DEPRECATED_HOOKS if hook in cls.__dict__]
        target = cls.__dict__.get("target")
        if callable(target) and positional_count(target) == 2:  # self, config
            deprecated.append("target(self, config)")
        for hook in deprecated:
            warnings.warn(
                f"{cls.__module__}.{cls.__qualname__}.{hook} is deprecated and still "
                f"honoured; {DEPRECATED_HOOKS[hook]}",
                DeprecationWarning,
                stacklevel=3,  # the class statement (through ABCMeta.__new__)
            )

    def __init__(self, progress: Callable[[int, int], None] | None = None) -> None:
        self.progress = progress
        """Called as ``progress(done, total)`` during long work; the CLI shows it on a terminal."""

    # -- configuration -----------------------------------------------------------------------

    @classmethod
    def parse_config(cls, options: dict[str, Any]) -> ConfigT:
        """Validate CLI or plan options, raising :class:`OptionError` naming each bad one."""
        try:
            return cls.Config.model_validate(options)
        except ValidationError as error:
            raise OptionError(cls._describe_option_errors(error)) from None

    @classmethod
    def text_options(cls) -> frozenset[str]:
        """Options typed as text: the CLI passes their values as written (``1.0`` stays text)."""
        from pydantic import SecretStr

        return frozenset(
            name
            for name, info in cls.Config.model_fields.items()
            if info.annotation in (str, str | None, SecretStr, SecretStr | None)
        )

    @classmethod
    def _describe_option_errors(cls, error: ValidationError) -> str:
        valid = ", ".join(f"+{name}" for name in cls.Config.model_fields)
        problems: list[str] = []
        for item in error.errors():
            option = "+" + ".".join(str(part) for part in item["loc"]) if item["loc"] else "options"
            if item["type"] == "extra_forbidden":
                problems.append(f"unknown option {option} for exporter {cls.name!r}")
            elif item["type"] == "missing":
                problems.append(f"missing required option {option}")
            elif cls._is_secret_option(item["loc"]):
                problems.append(f"invalid value for {option}: {item['msg']} (value not shown)")
            else:
                from evalexport.masking import scrub_value

                problems.append(
                    f"invalid value for {option}: {item['msg']} "
                    f"(got {scrub_value(item['input'])!r})"
                )
        return "; ".join(problems) + f". Valid options: {valid}"

    @classmethod
    def _is_secret_option(cls, location: tuple[int | str, ...]) -> bool:
        from pydantic import SecretStr

        from evalexport.masking import is_secret_key

        field = cls.Config.model_fields.get(str(location[0])) if location else None
        secret_typed = field is not None and field.annotation in (SecretStr, SecretStr | None)
        return secret_typed or any(is_secret_key(str(part)) for part in location)

    # -- the export ----------------------------------------------------------------------------

    def target(self, run: RunArtifacts, config: ConfigT) -> str:
        """Where the run goes, in words a user recognizes (a URL, a path, a project)."""
        return self.name

    def target_of(self, run: RunArtifacts, config: ConfigT) -> str:
        """:meth:`target`, called as the exporter defines it (plugin API 1 took the config
        only)."""
        if positional_count(self.target) == 1:
            return self.target(config)  # type: ignore[call-arg,arg-type]
        return self.target(run, config)

    def unexportable_reason(self, run: RunArtifacts, config: ConfigT) -> str | None:
        """Why this run cannot be exported here, or ``None``: the one shared prerequisite check.

        It runs before any environment is built, any network is touched or anything is written,
        and opens no file of the run (:meth:`check_inputs` reads them, once). A run already
        exported is not unexportable (it is skipped); a run that changed since it was exported
        is, once its files are read.
        """
        reason = run.missing_file_reason(
            needs_metrics_and_config=self.needs_metrics_and_config, check_records=False
        )
        if reason is None and self.uploads_directory:
            reason = run.shared_directory_reason()
        if reason is None and self.guards_exports:
            reason = guard.ExportGuard(run, self.name).unexportable_reason()
        return reason

    def already_exported(self, run: RunArtifacts, config: ConfigT) -> ExportResult | None:
        """A skipped result if this export's output is already there, for batches (``plan
        run``, Slurm arrays), whose reruns skip what is done. Tracking exporters need nothing
        here: their export marker makes :meth:`export` skip. An exporter whose output is its own
        proof (ATIF's ``manifest.jsonl``) says so by overriding this."""
        return None

    def export(self, run: RunArtifacts, config: ConfigT) -> ExportResult:
        """Export ``run``; every outcome, including unexpected errors, is a result.

        The run's files are read once, by :meth:`check_inputs`: a dry run describes what it
        read, an export sends it. A tracking exporter reads them under its export lock, so the
        marker it writes names the bytes it sent.
        """
        try:
            if reason := self.unexportable_reason(run, config):
                return self.failed(run, reason)
            if self.guards_exports and not config.dry_run:
                export_guard = guard.ExportGuard(run, self.name)
                with export_guard.locked():
                    return self._guarded_export(run, config, export_guard)
            with self._inputs(run, config) as prepared:
                if not config.dry_run:
                    return self._call_export(run, config, None, prepared)
                if self.guards_exports:
                    fingerprint = prepared.fingerprint if prepared else None
                    state = guard.ExportGuard(run, self.name).state(fingerprint)
                    if isinstance(state, guard.ChangedSinceExport | guard.UnreadableMarker):
                        return self.failed(run, state.message())
                return call_hook(self._dry_run_result, run, config, prepared=prepared)
        except Interrupted as interruption:  # the CLI's signals: stop here, cleanly
            return ExportResult.failed(
                self.name,
                str(run.run_dir),
                f"Interrupted by {signal_name(interruption.signum)} before the {self.name} "
                "export finished; nothing was exported and no export marker was written.",
                exit_code=ExitCode(interruption.exit_code),
                interrupted_by=signal_name(interruption.signum),
            )
        except SettingError as error:
            return self.failed(run, str(error), exit_code=ExitCode.USAGE)
        except RunFileError as error:
            return self.failed(run, str(error))
        except OSError as error:  # a file that cannot be read or written is no exporter bug
            where = f" {error.filename}" if error.filename else ""
            return self.failed(
                run, f"Cannot access{where}: {error.strerror or error} (in the {self.name} export)"
            )
        except RecursionError:
            return self.failed(run, "A file of the run is nested too deeply to read.")
        except Exception as error:  # an exporter bug must still end in a result
            return self.failed(
                run,
                f"unexpected error in the {self.name} exporter: {type(error).__name__}: {error}",
            )

    @contextlib.contextmanager
    def _inputs(self, run: RunArtifacts, config: ConfigT) -> Iterator[PreparedRun | None]:
        """:meth:`check_inputs`, and what it wrote removed when the export is done."""
        prepared = self.check_inputs(run, config)
        try:
            yield prepared
        finally:
            if prepared is not None:
                prepared.discard()

    def _call_export(
        self,
        run: RunArtifacts,
        config: ConfigT,
        fingerprint: str | None,
        prepared: PreparedRun | None,
    ) -> ExportResult:
        """:meth:`_export` with the arguments it declares; a result of plugin API 1 (the remote
        run id in ``details["run_id"]``) gets it as :attr:`ExportResult.run_id`."""
        result = call_hook(self._export, run, config, fingerprint=fingerprint, prepared=prepared)
        if result.run_id is None and "run_id" in result.details:
            instead = DEPRECATED_HOOKS['details["run_id"]']
            warnings.warn(
                f"{type(self).__module__}.{type(self).__qualname__}._export puts the remote run "
                f'id in details["run_id"], which is deprecated and still honoured; {instead}',
                DeprecationWarning,
                stacklevel=2,
            )
            details = dict(result.details)
            run_id = details.pop("run_id")
            result = result.model_copy(
                update={"run_id": None if run_id is None else str(run_id), "details": details}
            )
        return result

    def _guarded_export(
        self, run: RunArtifacts, config: ConfigT, export_guard: guard.ExportGuard
    ) -> ExportResult:
        # Under the lock: a concurrent export may have finished meanwhile.
        earlier = export_guard.earlier_export()
        if isinstance(earlier, guard.AlreadyExported):
            marker = earlier.marker
            return ExportResult.skipped(
                self.name,
                str(run.run_dir),
                f"{run.rollouts.name} was exported to {marker.target} as run "
                f"{marker.remote_run_id} at {marker.exported_at} "
                f"(delete {earlier.marker_path} to export it again)",
                SkipReason.ALREADY_EXPORTED,
                run_id=marker.remote_run_id,
                marker=str(earlier.marker_path),
            )
        if earlier is not None:
            return self.failed(run, earlier.message())
        with self._inputs(run, config) as prepared:
            # The bytes read, under the lock: the marker and the remote run's tag name them.
            fingerprint = prepared.fingerprint if prepared else guard.run_fingerprint(run)
            result = self._call_export(run, config, fingerprint, prepared)
        if result.status is not ExportStatus.SUCCEEDED:
            return result
        # The remote run exists: a stop signal now must not cost it its marker.
        with deferred() as held:
            result = self._mark(run, config, result, fingerprint, export_guard)
        if held.signum is not None:
            logger.warning(
                "%s arrived while the export marker was written; the export stands",
                signal_name(held.signum),
            )
        return result

    def _mark(
        self,
        run: RunArtifacts,
        config: ConfigT,
        result: ExportResult,
        fingerprint: str,
        export_guard: guard.ExportGuard,
    ) -> ExportResult:
        """Write the marker of a successful export; a failed write is a warning, not a failure."""
        run_id = result.run_id or ""
        details = {**result.details, "fingerprint": fingerprint}
        try:
            details["marker"] = str(
                export_guard.mark(self.target_of(run, config), run_id, fingerprint)
            )
        except OSError as error:
            # The remote run exists: the export succeeded. Say so, with what a rerun needs.
            path = run.export_marker(self.name)
            warning = (
                f"WARNING: could not write the export marker {path} "
                f"({error.strerror or error}); a rerun will not know run {run_id} exists and "
                f"would export the run again. Write the marker yourself or do not rerun."
            )
            details["marker_error"] = warning
            return result.model_copy(
                update={"message": f"{result.message}. {warning}", "details": details}
            )
        return result.model_copy(update={"details": details})

    def check_inputs(self, run: RunArtifacts, config: ConfigT) -> PreparedRun | None:
        """Read every input the export will read, before anything is built, sent or written.

        The dry run and the export both call it, so they fail on the same runs (SPEC §3.3a).
        Raises :class:`RunFileError` naming the file and what is wrong with it. An exporter
        that sends the aggregate metrics, the saved config or the rollouts returns what
        :func:`~evalexport.exporters.prepared.prepare` read, so that the export sends it
        without reading the files again; its hooks receive it as ``prepared``.

        By default, a tracking exporter (:attr:`guards_exports`) prepares the run without
        parsing its rollouts: the metrics and the config are checked, the rollouts file must
        hold a record, and the fingerprint is had from the same pass. Another exporter that
        :attr:`needs_metrics_and_config` checks that the rollouts file holds a record; a
        directory exporter (:attr:`uploads_directory`), that every file of the run directory
        opens, since it is uploaded as it is. An override does these itself (or calls this).
        """
        if self.uploads_directory and (reason := run.unreadable_file_reason()):
            raise RunFileError(reason)
        if self.guards_exports and self.needs_metrics_and_config:
            from evalexport.exporters.prepared import prepare

            return prepare(run, parse_rollouts=False)
        if self.needs_metrics_and_config and run.holds_no_rollouts():
            raise RunFileError(run.no_records_message)
        return None

    @abc.abstractmethod
    def _export(
        self, run: RunArtifacts, config: ConfigT, *, fingerprint: str | None
    ) -> ExportResult:
        """Do the export once every prerequisite holds.

        A tracking exporter (``guards_exports``) gets the run's ``fingerprint`` (always a
        ``str`` for it), computed once under the export lock, puts the remote run id in
        ``ExportResult.run_id`` and tags the remote run with the fingerprint; the marker is
        written for it on success. Others get ``None``. An exporter whose
        :meth:`check_inputs` prepares the run adds ``prepared: PreparedRun | None = None``
        to receive it: each hook is called with only the arguments it declares.
        """

    # -- dry run -------------------------------------------------------------------------------

    def dry_run_plan(
        self, run: RunArtifacts, config: ConfigT, prepared: PreparedRun | None = None
    ) -> DryRunPlan:
        """The generic plan: the run's files and the flattened metric names.

        Exporters extend it with sanitized names, params and batch counts.
        """
        files = [
            PlannedFile(path=str(path), size_bytes=path.stat().st_size)
            for path in (run.rollouts, run.aggregate_metrics, run.saved_config)
            if path.is_file()
        ]
        metric_names: list[str] = []
        tag_names: list[str] = []
        if self.needs_metrics_and_config:
            flat = prepared.metrics if prepared else flatten_metrics(run.read_aggregate_metrics())
            metric_names, tag_names = list(flat.metrics), list(flat.texts)
        return DryRunPlan(
            exporter=self.name,
            target=self.target_of(run, config),
            files=files,
            metric_names=metric_names,
            tag_names=tag_names,
            batches=1,
        )

    def _dry_run_result(
        self, run: RunArtifacts, config: ConfigT, prepared: PreparedRun | None = None
    ) -> ExportResult:
        plan = call_hook(self.dry_run_plan, run, config, prepared=prepared)
        return ExportResult.succeeded(
            self.name,
            str(run.run_dir),
            f"dry run: {run.rollouts.name} would be exported to {plan.target}",
            plan=plan,
            dry_run=True,
        )

    # -- helpers -------------------------------------------------------------------------------

    def failed(self, run: RunArtifacts, message: str, **details: Any) -> ExportResult:
        """A failed result of this exporter for ``run``; ``details`` are for people to read."""
        return ExportResult.failed(self.name, str(run.run_dir), message, **details)
