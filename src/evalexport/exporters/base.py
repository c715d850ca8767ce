"""The exporter template (SPEC §3.1): what an exporter is, and the hooks it may define.

An exporter names itself (``name``, ``summary``), its options (``Config``), what kind of
exporter it is (``kind``) and defines a few hooks; :mod:`evalexport.pipeline` runs every
export with them, for the CLI, the Python API, plans and Slurm alike: it checks the shared
prerequisites, asks :meth:`Exporter.unexportable_reason`, guards a tracking export, reads the
run once with :meth:`Exporter.check_inputs`, describes it with :meth:`Exporter.dry_run_plan`
for a dry run or delivers it with :meth:`Exporter._export`, and writes the marker.

The hooks are checked when a class is made (:mod:`.hooks`): a misspelled hook or an argument a
hook is never called with is an :class:`~.hooks.ExporterDefinitionError`. Classes written from
an earlier guide are adapted to today's hooks by :mod:`.legacy`, with a ``DeprecationWarning``
naming the new form.
"""

from __future__ import annotations

import abc
import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar, Final, Generic, Literal, TypeAlias, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from typing_extensions import TypeVar

from evalexport.exporters import legacy
from evalexport.exporters.hooks import ExporterDefinitionError, call_hook, takes_also, verify
from evalexport.metrics import flatten_metrics
from evalexport.reading import PreparedRun, RunFileError
from evalexport.results import DryRunPlan, ExportResult, PlannedFile
from evalexport.run import RunArtifacts

DEPRECATED_HOOKS = legacy.DEPRECATED_HOOKS
"""Earlier guides' forms still honoured, and what replaces each (:mod:`.legacy`)."""

__all__ = [
    "DEPRECATED_HOOKS",
    "HOOKS",
    "TEMPLATE_MODULES",
    "AnyExporter",
    "Delivery",
    "DryRunPlan",
    "Exporter",
    "ExporterConfig",
    "ExporterKind",
    "OptionError",
    "PlannedFile",
    "ProgressUnit",
]

ExporterKind = Literal["tracking", "directory", "output"]
"""What an exporter does with a run, which decides what the pipeline does around it:

* ``tracking``: makes one remote run per target (MLflow, W&B), so it is guarded: an export
  marker records each target's run and a rerun skips it (SPEC §3.3);
* ``directory``: uploads the run directory as it is (EvalRDL), so the directory must hold one
  run and every file in it must be readable;
* ``output``: writes an output of its own (ATIF files), which is its own proof of an export.
"""
KINDS: Final[tuple[ExporterKind, ...]] = get_args(ExporterKind)

ProgressUnit = Literal["bytes", "steps"]
"""What ``progress(done, total)`` counts: ``bytes`` of input read, or ``steps`` of a worker."""


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
PreparedT = TypeVar("PreparedT", default=PreparedRun | None)
"""What :meth:`Exporter.check_inputs` reads: a :class:`~evalexport.reading.PreparedRun` (or
``None``) by default; an exporter whose read is its own (ATIF's conversion) names its type."""


Delivery = Callable[[object, "str | None"], "ExportResult | None"]
"""The deliver stage of an exporter's template: delivers what the run's read prepared, with the
run's fingerprint (``None`` unless the export is guarded). For a dry run it asks the target,
without changing it, what the export would find there, or returns ``None`` when it cannot ask
(an in-process exporter, an environment not built)."""


class OptionError(ValueError):
    """The options given to an exporter are unknown or invalid (exit code 2)."""


HOOKS: Final = (
    "name",
    "summary",
    "Config",
    "kind",
    "needs_metrics_and_config",
    "progress_unit",
    "target",
    "unexportable_reason",
    "check_inputs",
    "dry_run_plan",
    "already_exported",
    "_export",
)
"""Every hook of :class:`Exporter`, in the order the pipeline meets them."""

TEMPLATE_MODULES: Final = frozenset({__name__, "evalexport.exporters.isolated"})
"""The modules of the template itself: its classes define the hooks, they are not checked."""


class Exporter(legacy.LegacyHooks, abc.ABC, Generic[ConfigT, PreparedT]):
    """One destination a finished run can be exported to: ``Exporter[MyConfig]``."""

    template_hooks: ClassVar[tuple[str, ...]] = HOOKS
    """The hooks of this template (the isolated one has more); not a hook itself."""

    name: ClassVar[str]
    summary: ClassVar[str]
    """One line for ``evalexport list``."""
    Config: type[ConfigT]
    kind: ClassVar[ExporterKind] = "output"
    """What the exporter does with a run (:data:`ExporterKind`)."""
    needs_metrics_and_config: ClassVar[bool] = True
    """Whether the run must hold aggregate metrics and a saved config (a tracking or
    directory exporter always needs them)."""
    progress_unit: ClassVar[ProgressUnit] = "bytes"
    """What ``progress(done, total)`` counts (:data:`ProgressUnit`)."""

    def __init_subclass__(cls, **keywords: Any) -> None:
        """Adapt the forms of earlier guides (:mod:`.legacy`), then check the hooks
        (:func:`.hooks.verify`): a mistake in a hook is an error now, not a hook never
        called."""
        super().__init_subclass__(**keywords)
        if cls.__module__ in TEMPLATE_MODULES:
            return
        legacy.adapt(cls)
        template = next(base for base in cls.__mro__ if base.__module__ in TEMPLATE_MODULES)
        verify(cls, template, cls.template_hooks, legacy.ADAPTED_HOOKS)
        _check_kind(cls)

    def __init__(self, progress: Callable[[int, int], None] | None = None) -> None:
        self.progress = progress
        """Called as ``progress(done, total)`` during long work; the CLI shows it on a terminal."""

    # -- options: the template's, not hooks ----------------------------------------------------

    @classmethod
    def parse_config(cls, options: dict[str, Any], *, python: bool = False) -> ConfigT:
        """Validate options, raising :class:`OptionError` naming each bad one: as the command
        line writes them (``+upload_rollout``), or with ``python`` as a Python caller passes
        them (``'upload_rollout'``)."""
        try:
            return cls.Config.model_validate(options)
        except ValidationError as error:
            raise OptionError(cls._describe_option_errors(error, python=python)) from None

    @classmethod
    def text_options(cls) -> frozenset[str]:
        """Options typed as text: the CLI passes their values as written (``1.0`` stays text;
        a YAML-quoted value is unquoted)."""
        from pydantic import SecretStr

        return frozenset(
            name
            for name, info in cls.Config.model_fields.items()
            if info.annotation in (str, str | None, SecretStr, SecretStr | None)
        )

    @classmethod
    def path_options(cls) -> frozenset[str]:
        """Options typed as a path: the CLI takes their text exactly as given (``/x/traj #2``
        is a path, never YAML's comment), as the Python API does."""
        return frozenset(
            name
            for name, info in cls.Config.model_fields.items()
            if info.annotation in (Path, Path | None)
        )

    @classmethod
    def _describe_option_errors(cls, error: ValidationError, *, python: bool = False) -> str:
        def spelt(name: str) -> str:
            return repr(name) if python else f"+{name}"

        valid = ", ".join(spelt(name) for name in cls.Config.model_fields)
        problems: list[str] = []
        for item in error.errors():
            # A validator's own words, without pydantic's "Value error, " before them.
            item["msg"] = item["msg"].removeprefix("Value error, ")
            dotted = ".".join(str(part) for part in item["loc"])
            option = spelt(dotted) if item["loc"] else "options"
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

    # -- hooks -----------------------------------------------------------------------------------

    def target(self, run: RunArtifacts, config: ConfigT) -> str:
        """Where the run goes, in words a user recognizes (a URL, a path, a project). A
        tracking exporter's marker keeps one record per target."""
        return self.name

    def unexportable_reason(self, run: RunArtifacts, config: ConfigT) -> str | None:
        """Why this run cannot be exported here, beyond the checks every exporter of its kind
        gets (files, directory rule, marker), or ``None``.

        It runs before any environment is built, any network is touched or anything is
        written, for the dry run as for the export, and opens no file of the run
        (:meth:`check_inputs` reads them, once).
        """
        return None

    def check_inputs(self, run: RunArtifacts, config: ConfigT) -> PreparedT:
        """Read every input the export will read, before anything is built, sent or written;
        the dry run and the export both call it, so they fail on the same runs (SPEC §3.3a).

        Raises :class:`~evalexport.reading.RunFileError` naming the file and what is wrong.
        What it returns is the export's one read of the run: the pipeline passes it to
        :meth:`dry_run_plan` and :meth:`_export` as ``prepared``, and discards it (its
        ``discard()``) when the export is done.

        By default, a tracking exporter prepares the run without parsing its rollouts (the
        metrics and the config are checked, the fingerprint is had from the same pass); a
        directory exporter checks that every file of the run directory opens; another that
        :attr:`needs_metrics_and_config` checks that the rollouts file holds a record.
        """
        if self.kind == "directory" and (reason := run.unreadable_file_reason()):
            raise RunFileError(reason)
        if self.kind == "tracking":
            from evalexport.reading import prepare

            return prepare(run, parse_rollouts=False)  # type: ignore[return-value]
        if self.needs_metrics_and_config and run.holds_no_rollouts():
            raise RunFileError(run.no_records_message)
        return None  # type: ignore[return-value]

    def dry_run_plan(
        self, run: RunArtifacts, config: ConfigT, prepared: PreparedT | None = None
    ) -> DryRunPlan:
        """What the export would do, in the backend's words. By default: the run's files it
        reads and, when it needs them, the run's aggregate metrics as flattened (what the run
        holds, not a claim of what the backend is sent). Exporters say their own: sections in
        their backend's words (``metrics``/``params``/``tags``, ``config keys``/``summary``),
        a count of ``batches``, or a one-line ``summary``."""
        files = [
            PlannedFile(path=str(path), size_bytes=path.stat().st_size)
            for path in (run.rollouts, run.aggregate_metrics, run.saved_config)
            if path.is_file()
        ]
        metric_names: list[str] = []
        tag_names: list[str] = []
        if self.needs_metrics_and_config:
            flat = (
                prepared.metrics
                if isinstance(prepared, PreparedRun)
                else flatten_metrics(run.read_aggregate_metrics())
            )
            metric_names, tag_names = list(flat.metrics), list(flat.texts)
        held = metric_names + tag_names
        return DryRunPlan(
            exporter=self.name,
            target=self.target(run, config),
            files=files,
            sections={"aggregate metrics of the run": held} if held else {},
            metric_names=metric_names,
            tag_names=tag_names,
        )

    def already_exported(self, run: RunArtifacts, config: ConfigT) -> ExportResult | None:
        """A skipped result if this export's output is already there, for batches (``plan
        run``, Slurm arrays), whose reruns skip what is done. Tracking exporters need nothing
        here: their export marker makes the export skip. An exporter whose output is its own
        proof (ATIF's ``manifest.jsonl``) says so by overriding this."""
        return None

    @takes_also("prepared")
    @abc.abstractmethod
    def _export(
        self, run: RunArtifacts, config: ConfigT, *, fingerprint: str | None
    ) -> ExportResult:
        """Do the export once every prerequisite holds.

        A tracking exporter gets the run's ``fingerprint`` (always a ``str`` for it), computed
        once under the export lock from the bytes :meth:`check_inputs` read; it puts the
        remote run id in ``ExportResult.run_id`` and tags the remote run with the fingerprint,
        and the marker is written for it on success. Others get ``None``. Declare
        ``prepared: PreparedRun | None = None`` (or your read's type) to receive what
        :meth:`check_inputs` returned: each hook is called with the arguments it declares. Raise :class:`~evalexport.reading.RunFileError` or
        return :meth:`failed` for a failure.
        """

    # -- the template's own steps and helpers ----------------------------------------------------

    @contextlib.contextmanager
    def _delivery(self, run: RunArtifacts, config: ConfigT, *, dry_run: bool) -> Iterator[Delivery]:
        """How this template delivers a prepared run, entered before the run is read: in this
        process, through :meth:`_export`; for a dry run, not at all. (The isolated template
        delivers through a worker it may start here, so that the SDK loads while the run is
        read, and may ask it about the target in a dry run.)"""

        def deliver(prepared: object, fingerprint: str | None) -> ExportResult | None:
            if dry_run:
                return None  # an in-process exporter has no one to ask without exporting
            return call_hook(self._export, run, config, fingerprint=fingerprint, prepared=prepared)

        yield deliver

    def failed(self, run: RunArtifacts, message: str, **details: Any) -> ExportResult:
        """A failed result of this exporter for ``run``; ``details`` are for people to read."""
        return ExportResult.failed(self.name, str(run.run_dir), message, **details)


def _check_kind(cls: type[Exporter[Any, Any]]) -> None:
    """``kind`` is one of :data:`ExporterKind`, and a tracking or directory exporter reads the
    metrics and the config (its fingerprint or its upload covers them)."""
    where = f"{cls.__module__}.{cls.__qualname__}"
    if cls.kind not in KINDS:
        raise ExporterDefinitionError(
            f"{where}.kind is {cls.kind!r}; an exporter's kind is one of {', '.join(KINDS)}"
        )
    if cls.kind != "output" and not cls.needs_metrics_and_config:
        raise ExporterDefinitionError(
            f"{where} is a {cls.kind} exporter with needs_metrics_and_config = False; a "
            f"{cls.kind} export covers the aggregate metrics and the saved config. Leave "
            "needs_metrics_and_config as it is, or make the kind 'output'."
        )
    units = get_args(ProgressUnit)
    if cls.progress_unit not in units:
        raise ExporterDefinitionError(
            f"{where}.progress_unit is {cls.progress_unit!r}; it is one of {', '.join(units)}"
        )


AnyExporter: TypeAlias = "Exporter[Any, Any]"
"""An exporter of any options and read, as the pipeline and the registry hold one."""
