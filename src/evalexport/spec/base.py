"""The exporter spec (SPEC §3.1, plugin API 4): what an exporter is, and the hooks it defines.

An exporter is a small typed spec. Four declared values say what it is, and four hooks what it
does, in the order :mod:`evalexport.pipeline` meets them for every export (the CLI, the Python
API, plans and Slurm alike); its options are the first type parameter, ``Exporter[MyConfig]``:

===============  ===========================================================================
``name``         how users name it (``evalexport NAME``, the export marker's name)
``summary``      one line for ``evalexport list``
``kind``         what the pipeline does around it (:data:`ExporterKind`)
``sdk``          for an exporter whose SDK runs in a worker: its :class:`Sdk`
``resolve``      ``(run, config, time_limit) -> Target``: where the run goes and every setting,
                 worked out once per export and handed to the hooks after it
``read``         ``(run, config, target) -> Prepared``: the export's one read of the run
``plan``         ``(run, config, target, prepared) -> DryRunPlan``: what a dry run says
``deliver``      ``(run, config, target, prepared, fingerprint, scratch)`` ->
                 ``ExportResult``, or a :class:`~evalexport.spec.workers.WorkerDelivery`
                 that the worker lifecycle runs in the SDK's environment
===============  ===========================================================================

A hook is called with the arguments it declares, by name, as pluggy calls a hook
implementation: declare only what you use, and an argument added later never breaks you. Every
hook is checked when the class is made (:mod:`.hooks`): a misspelled hook, an argument a hook
is never called with or one it cannot take by name is an :class:`~.hooks.ExporterDefinitionError`
naming the class, the hook and its signature. Classes written from an earlier guide are adapted
when they are made (:mod:`.compat`), with a ``DeprecationWarning`` naming the new form; nothing
of theirs is in this class's hierarchy.
"""

from __future__ import annotations

import abc
import typing
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Concatenate, Final, Generic, ParamSpec, TypeAlias

from typing_extensions import TypeVar

from evalexport.reading import PreparedRun
from evalexport.results import DryRunPlan, ExportResult
from evalexport.run import RunArtifacts
from evalexport.spec import compat
from evalexport.spec.declarations import (
    KINDS,
    SPEC_HOOKS,
    ExporterConfig,
    ExporterKind,
    OptionError,
    ProgressUnit,
    SdkConfig,
    Target,
    default_plan,
    default_read,
)
from evalexport.spec.hooks import ExporterDefinitionError, verify
from evalexport.spec.sdk import Sdk
from evalexport.spec.workers import WorkerDelivery

if TYPE_CHECKING:
    from evalexport.progress import Progress

__all__ = [
    "KINDS",
    "AnyExporter",
    "Exporter",
    "ExporterConfig",
    "ExporterKind",
    "OptionError",
    "ProgressUnit",
    "Sdk",
    "SdkConfig",
    "Target",
    "progress_unit",
]

ConfigT = TypeVar("ConfigT", bound=ExporterConfig)
PreparedT = TypeVar("PreparedT", default=PreparedRun | None)
"""What :meth:`Exporter.read` returns: a :class:`~evalexport.reading.PreparedRun` (or ``None``)
by default; an exporter whose read is its own (ATIF's conversion) names its type."""
TargetT = TypeVar("TargetT", bound=Target, default=Target)
P = ParamSpec("P")
R = TypeVar("R")
"""What :meth:`Exporter.resolve` returns: :class:`Target`, or the exporter's own subclass."""


def hook(specification: Callable[Concatenate[Any, P], R]) -> Callable[..., R]:
    """A hook of the spec, written once: as itself at runtime (its signature is the hook's
    specification), and to a type checker a callable of any arguments returning ``R``."""
    return specification


class Exporter(abc.ABC, Generic[ConfigT, PreparedT, TargetT]):
    """One destination a finished run can be exported to:
    ``Exporter[MyConfig]``, ``Exporter[MyConfig, MyRead, MyTarget]``."""

    name: ClassVar[str]
    """How users name the exporter: ``evalexport NAME``, ``<stem>_NAME_export_done``."""
    summary: ClassVar[str]
    """One line for ``evalexport list``."""
    kind: ClassVar[ExporterKind] = "output"
    """What the exporter does with a run (:data:`ExporterKind`)."""
    sdk: ClassVar[Sdk | None] = None
    """The SDK the exporter drives through a worker (:class:`Sdk`), or ``None``: it delivers
    in this process."""
    Config: type[ConfigT]
    """The options: the first type parameter (``Exporter[MyConfig]``), read when the class is
    made."""

    def __init_subclass__(cls, **keywords: object) -> None:
        """Take the options from the type parameter, adapt the forms of earlier guides
        (:mod:`.compat`), then check every hook (:func:`.hooks.verify`): a mistake in a hook is
        an error now, not a hook never called."""
        super().__init_subclass__(**keywords)
        _take_config_from_parameters(cls)
        if cls.__module__ == _ISOLATED_TEMPLATE:
            return  # plugin API 2 and 3's template itself
        accepted = compat.adapt(cls, Exporter)
        verify(
            cls,
            Exporter,
            hooks=SPEC_HOOKS,
            declared=DECLARED,
            helpers=HELPERS,
            accepted=accepted,
            replaced=compat.REPLACED_BY,
        )
        _check_declared(cls)

    def __init__(self, progress: Progress | None = None) -> None:
        self.progress = progress
        """Called as ``progress(done, total)`` during long work; the CLI shows it on a terminal."""

    # -- the hooks, in the order the pipeline meets them ----------------------------------------
    #
    # A hook declares the arguments it uses, by name: an exporter's ``read(self, run)`` is as
    # right as ``read(self, run, config, target)``. Each hook is written once, annotated;
    # ``@hook`` types it as a callable of any arguments, so that a type checker holds a
    # subclass's hook to its return type without refusing a subset of the arguments, and the
    # class check (:func:`.hooks.verify`) reads the arguments off it at runtime.

    @hook
    def resolve(self, run: RunArtifacts, config: ConfigT, time_limit: float | None) -> TargetT:
        """Where the run goes, and every setting the export needs (from the options, then
        the SDKs' own environment variables, then defaults), worked out once: the pipeline
        hands the target to every hook after it. ``time_limit``: the worker's time limit the
        user set (``$EVALEXPORT_WORKER_TIME_LIMIT``), or ``None``; it replaces the target's
        worker's own, and bounds whatever ``resolve`` waits for itself (a credential helper). Open no file of the run here (:meth:`read`
        does); say why the run cannot go there in :attr:`Target.refusal`; raise
        :class:`~evalexport.settings.SettingError` for a setting that cannot be used.

        By default: :class:`Target` named by the exporter's name."""
        return Target(where=self.name)  # type: ignore[return-value]

    @hook
    def read(self, run: RunArtifacts, config: ConfigT, target: TargetT) -> PreparedT:
        """Read every input the export will send, before anything is built, sent or
        written; the dry run and the export both call it, so they fail on the same runs
        (SPEC §3.3a).

        Raise :class:`~evalexport.reading.RunFileError` naming the file and what is wrong.
        What it returns is the export's one read of the run: the pipeline hands it to
        :meth:`plan` and :meth:`deliver` as ``prepared`` and calls its ``discard()``, if it
        has one, when the export is done. A read that found this very export done where it
        goes (a rerun into its own output) says so by an ``exported_before`` that is set (true):
        the log then announces no delivery (``exporting to``).

        By default: a tracking exporter prepares the run without parsing its rollouts (the
        metrics and the config are checked, the fingerprint had from the same pass); a
        directory exporter checks that every file of the run directory opens; an output
        exporter that the rollouts file holds a record. Return
        :func:`evalexport.reading.prepare` ``(run)`` to read the rollouts too.
        """
        return default_read(self.kind, run)  # type: ignore[return-value]

    @hook
    def plan(
        self, run: RunArtifacts, config: ConfigT, target: TargetT, prepared: PreparedT
    ) -> DryRunPlan:
        """What the export would do, in the backend's words, for a dry run. By default: the
        run's files it reads and, for a tracking or directory exporter, the run's aggregate
        metrics as flattened (what the run holds, not a claim of what the backend is sent).
        Say your own: sections in the backend's words (``metrics``/``params``/``tags``,
        ``config keys``/``summary``), a count of ``batches``, or a one-line ``summary``."""
        return default_plan(self.name, run, target, prepared, metrics=self.kind != "output")

    @hook
    @abc.abstractmethod
    def deliver(
        self,
        run: RunArtifacts,
        config: ConfigT,
        target: TargetT,
        prepared: PreparedT,
        fingerprint: str | None,
        scratch: Path | None,
    ) -> ExportResult | WorkerDelivery[Any]:
        """Export what :meth:`read` prepared, once every check has passed.

        A tracking exporter gets the run's ``fingerprint`` (always a ``str`` for it),
        computed once under the export lock from the bytes :meth:`read` read: it tags the
        remote run with it and puts the remote run's id in ``ExportResult.run_id``; the
        marker is written for it on success. Others get ``None``. ``scratch`` is a
        temporary directory, removed when the export is done (never the run directory,
        which an export does not change).

        Return the result (:meth:`failed` for a failure, or raise
        :class:`~evalexport.results.ExportFailure`); an exporter with an :attr:`sdk`
        returns a :class:`~evalexport.spec.workers.WorkerDelivery` instead: its
        worker body's payload, run in the SDK's environment by the one worker lifecycle.
        """

    # -- a helper of the spec's own, not a hook ---------------------------------------------------

    @typing.final
    def failed(self, run: RunArtifacts, message: str, **details: Any) -> ExportResult:
        """A failed result of this exporter for ``run``; ``details`` are for people to read."""
        return ExportResult.failed(self.name, str(run.run_dir), message, **details)


_ISOLATED_TEMPLATE: Final = "evalexport.spec.isolated"

AnyExporter: TypeAlias = "Exporter[Any, Any, Any]"
"""An exporter of any options, read and target, as the pipeline and the registry hold one."""

DECLARED: Final = ("name", "summary", "kind", "sdk", "Config")
"""What an exporter declares besides its hooks (its options are the first type parameter, or
``Config``)."""
HELPERS: Final = frozenset({"failed"})
"""The spec's own helpers: called by exporters, never replaced by them."""


def progress_unit(exporter: type[AnyExporter]) -> ProgressUnit:
    """What an exporter's ``progress(done, total)`` counts: a worker's steps for an exporter
    with an SDK, else bytes read (an earlier guide's class may say otherwise)."""
    said = getattr(exporter, "progress_unit", None)
    if said == "bytes" or said == "steps":
        return "bytes" if said == "bytes" else "steps"
    return "steps" if exporter.sdk is not None else "bytes"


def _take_config_from_parameters(cls: type) -> None:
    """``Config`` is the options type named as the first type parameter (``Exporter[C]``), or
    what the class (or a base) sets itself."""
    for base in getattr(cls, "__orig_bases__", ()):
        origin = typing.get_origin(base)
        arguments = typing.get_args(base)
        if not (isinstance(origin, type) and issubclass(origin, Exporter) and arguments):
            continue
        options = arguments[0]
        if isinstance(options, type) and issubclass(options, ExporterConfig):
            if "Config" not in cls.__dict__:
                cls.Config = options  # type: ignore[attr-defined]
            return


def _check_declared(cls: type[AnyExporter]) -> None:
    """``kind`` is one of :data:`ExporterKind`, ``sdk`` an :class:`Sdk`, and ``Config`` the
    options' type."""
    where = f"{cls.__module__}.{cls.__qualname__}"
    if cls.kind not in KINDS:
        raise ExporterDefinitionError(
            f"{where}.kind is {cls.kind!r}; an exporter's kind is one of {', '.join(KINDS)}"
        )
    if cls.sdk is not None and not isinstance(cls.sdk, Sdk):
        raise ExporterDefinitionError(
            f"{where}.sdk is {cls.sdk!r}; declare sdk = Sdk(body=..., token_variables=..., "
            "contract=...) (evalexport.exporters.Sdk), or leave it None"
        )
    options = cls.__dict__.get("Config")
    if options is not None and not (
        isinstance(options, type) and issubclass(options, ExporterConfig)
    ):
        raise ExporterDefinitionError(
            f"{where}.Config is {options!r}; an exporter's options are a subclass of "
            "evalexport.exporters.ExporterConfig, named as Exporter[MyConfig]"
        )
