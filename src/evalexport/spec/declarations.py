"""What an exporter declares and resolves (plugin API 4): its kind, its options, its target,
its SDK, and what the spec does for an exporter that says nothing of its own.

Values only, no exporter: :mod:`.base` (the spec itself) and :mod:`.compat` (earlier guides'
forms) both build on them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Literal, final, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator

from evalexport.metrics import flatten_metrics
from evalexport.reading import PreparedRun, RunFileError
from evalexport.results import DryRunPlan, PlannedFile
from evalexport.run import RunArtifacts
from evalexport.spec.workers import WorkerSpec

__all__ = [
    "EARLIER_FORMS",
    "KINDS",
    "REPLACED_BY",
    "SDK_FORM",
    "SPEC_HOOKS",
    "EarlierForm",
    "ExporterConfig",
    "ExporterKind",
    "OptionError",
    "ProgressUnit",
    "RowsConfig",
    "SdkConfig",
    "Target",
    "default_plan",
    "default_read",
]

SPEC_HOOKS: Final = ("resolve", "read", "plan", "deliver")
"""The hooks of the spec, in the order the pipeline meets them."""

ExporterKind = Literal["tracking", "directory", "output"]
"""What an exporter does with a run, which decides what the pipeline does around it:

* ``tracking``: makes one remote run per target (MLflow, W&B), so it is guarded: an export
  marker records each target's run and a rerun skips it (SPEC §3.3); the run must hold its
  aggregate metrics and saved config, which the fingerprint covers;
* ``directory``: uploads the run directory as it is (EvalRDL), so the directory must hold one
  run, its metrics and config, and every file in it must be readable;
* ``output``: writes an output of its own (ATIF files) from the rollouts, which is its own
  proof of an export.
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


class SdkConfig(ExporterConfig):
    """Options of an exporter whose SDK runs in a worker: ``requirement`` picks the SDK's
    environment (set its default to your SDK's requirement)."""

    requirement: str | list[str] = Field(
        description="The SDK requirement(s) of the exporter's environment, e.g. PKG==VER; "
        "a new pin builds a new environment."
    )

    def requirements(self) -> tuple[str, ...]:
        """``requirement`` as a tuple (one requirement, or a list)."""
        given = self.requirement
        return (given,) if isinstance(given, str) else tuple(given)


class RowsConfig(SdkConfig):
    """Options of an SDK exporter that sends a run's rows (its tables, its traces): they pass
    the egress gate masked by the rules of SPEC §2 unless ``mask_rows`` is turned off."""

    mask_rows: bool = Field(
        default=True,
        description="Mask secrets in the rows sent (the rollouts and samples tables, the "
        "traces): secret-named keys at any depth, secret-shaped texts, JSON held in texts. "
        "false sends them as they are (the tokens evalexport knows are still removed), and "
        "the result says so.",
    )

    def scratch_refusal(self, run: RunArtifacts, *, tables: bool) -> str | None:
        """Why the rows tables of ``run`` cannot be written before they are sent, when
        ``tables`` are: the temporary directory (``TMPDIR``) has less room than the rollouts
        file takes. For :meth:`Exporter.resolve`'s :attr:`Target.refusal`, so the dry run
        refuses as the export does, before anything is read."""
        from evalexport.tables.prepare import scratch_space_refusal

        return scratch_space_refusal(run.rollouts) if tables else None


class OptionError(ValueError):
    """The options given to an exporter are unknown or invalid (exit code 2)."""


@dataclass(frozen=True, kw_only=True)
class Target:
    """Where one export goes, resolved once (:meth:`Exporter.resolve`) and handed to every
    hook after it. An exporter subclasses it (a frozen dataclass, ``kw_only=True``) for the
    settings its own hooks read: the tracking URI, the experiment, the output directory."""

    where: str
    """Where the run goes, in words a user recognizes (a URL, a path, a project): shown masked,
    and the key of a tracking exporter's marker record."""
    settings: Mapping[str, str] = field(default_factory=dict)
    """Where each target setting came from (``+mlflow_tracking_uri``, ``MLFLOW_TRACKING_URI
    from the environment``, ``default``): the dry run and the result say so."""
    refusal: str | None = None
    """Why the run cannot be exported here, beyond the checks every exporter of its kind gets
    (found without opening a file of the run, before anything is read, built or written), or
    ``None``."""
    already_exported: str | None = None
    """What says this export's output is there already (ATIF's ``manifest.jsonl``): a batch's
    rerun (``plan run``, Slurm) skips it. Tracking exporters need nothing here: their export
    marker makes a rerun skip."""
    worker: WorkerSpec | None = None
    """The worker that delivers, for an exporter with an :attr:`Exporter.sdk`."""


def default_read(kind: ExporterKind, run: RunArtifacts) -> PreparedRun | None:
    """The export's read of an exporter of ``kind`` that reads nothing of its own."""
    if kind == "directory" and (reason := run.unreadable_file_reason()):
        raise RunFileError(reason)
    if kind == "tracking":
        from evalexport.reading import prepare

        return prepare(run, parse_rollouts=False)
    if run.holds_no_rollouts():
        raise RunFileError(run.no_records_message)
    return None


def default_plan(
    exporter: str, run: RunArtifacts, target: Target, prepared: object, *, metrics: bool
) -> DryRunPlan:
    """The dry run's plan of an exporter that says nothing of its own: the run's files its
    read reads and, with ``metrics`` (a tracking or directory exporter), the aggregate metrics
    as flattened. An output exporter's read reads the rollouts alone, so they alone are
    listed."""
    read = (run.rollouts, run.aggregate_metrics, run.saved_config) if metrics else (run.rollouts,)
    files = [
        PlannedFile(path=str(path), size_bytes=path.stat().st_size)
        for path in read
        if path.is_file()
    ]
    metric_names: list[str] = []
    tag_names: list[str] = []
    if metrics:
        flat = (
            prepared.metrics
            if isinstance(prepared, PreparedRun)
            else flatten_metrics(run.read_aggregate_metrics())
        )
        metric_names, tag_names = list(flat.metrics), list(flat.texts)
    held = metric_names + tag_names
    return DryRunPlan(
        exporter=exporter,
        target=target.where,
        files=files,
        sections={"aggregate metrics of the run": held} if held else {},
        metric_names=metric_names,
        tag_names=tag_names,
    )


# -- earlier guides' forms, as data: what replaced each (adapted by :mod:`.compat`) ---------


@final
@dataclass(frozen=True)
class EarlierForm:
    """One form an earlier guide taught, and what replaces it today."""

    replaced_by: str
    """Today's hook or declared value that does its job."""
    advice: str
    """What to write instead, for the deprecation warning."""
    called_with: tuple[str, ...] | None = None
    """For a hook: the arguments its guide passed by position, in order (``None``: not a
    hook but a value the class set)."""
    keywords: tuple[str, ...] = ()
    """For a hook: the arguments its guide passed by name, when the hook declared them."""


_WORKER_FORM = (
    "resolve it with the target: Target(worker=WorkerSpec(...)) from resolve(self, run, config)"
)
SDK_FORM = (
    "declare sdk = Sdk(body=..., token_variables=..., contract=...) on an Exporter (plugin API "
    "4: IsolatedExporter's hooks are gone)"
)
EARLIER_FORMS: Final[Mapping[str, EarlierForm]] = {
    "target": EarlierForm(
        "resolve",
        "define resolve(self, run, config) returning Target(where=...) instead (the target "
        "and every setting it needs, worked out once)",
        ("run", "config"),
    ),
    "unexportable_reason": EarlierForm(
        "resolve",
        "return Target(..., refusal=REASON) from resolve(self, run, config) instead",
        ("run", "config"),
    ),
    "already_exported": EarlierForm(
        "resolve",
        "return Target(..., already_exported=WHAT_SAYS_SO) from resolve(self, run, config) instead",
        ("run", "config"),
    ),
    "check_inputs": EarlierForm(
        "read", "define read(self, run, config, target) instead", ("run", "config")
    ),
    "dry_run_plan": EarlierForm(
        "plan",
        "define plan(self, run, config, target, prepared) instead",
        ("run", "config", "prepared"),
    ),
    "_export": EarlierForm(
        "deliver",
        "define deliver(self, run, config, target, prepared, fingerprint, scratch), declaring "
        "the arguments you use, instead",
        ("run", "config"),
        ("fingerprint", "prepared"),
    ),
    "worker_payload": EarlierForm(
        "deliver",
        "return WorkerDelivery(payload) from deliver(self, run, config, target, prepared, "
        "fingerprint, scratch) instead",
        ("run", "config", "scratch", "fingerprint"),
        ("prepared",),
    ),
    "interpret": EarlierForm(
        "deliver",
        "return WorkerDelivery(payload, read_back=...) from deliver instead: read_back(result, "
        "reported) refines the result read from the worker's",
        ("run", "config", "result", "environment"),
    ),
    "worker": EarlierForm("resolve", _WORKER_FORM, ("config",)),
    "worker_secrets": EarlierForm(
        "resolve",
        "put the worker's secrets in WorkerSpec(..., secrets={...}) from resolve instead",
        ("config",),
    ),
    "worker_body": EarlierForm("sdk", SDK_FORM),
    "token_variables": EarlierForm("sdk", SDK_FORM),
    "sdk_contract": EarlierForm("sdk", SDK_FORM),
    "needs_metrics_and_config": EarlierForm(
        "kind",
        'set kind instead: "tracking" and "directory" exports need the metrics and the '
        'config, an "output" export the rollouts only (read them in read if you need them)',
    ),
    "progress_unit": EarlierForm(
        "sdk", "leave it out: progress counts a worker's steps when sdk is set, else bytes"
    ),
    "guards_exports": EarlierForm(
        "kind", 'set kind = "tracking" instead (one kind replaces plugin API 2\'s flags)'
    ),
    "uploads_directory": EarlierForm(
        "kind", 'set kind = "directory" instead (one kind replaces plugin API 2\'s flags)'
    ),
    "requirements": EarlierForm("resolve", _WORKER_FORM, ("config",)),
    "time_limit": EarlierForm("resolve", _WORKER_FORM, ("config",)),
    "worker_environment": EarlierForm("resolve", _WORKER_FORM, ("config",)),
    "local_store": EarlierForm("resolve", _WORKER_FORM, ("config",)),
    "receipt_keys": EarlierForm(
        "deliver",
        "return receipts={...} from the worker body instead (protocol.result(..., "
        "receipts={...})): they reach ExportResult.receipts unmasked",
    ),
    "secrets_the_sdk_may_find": EarlierForm(
        "resolve",
        "put such secrets in WorkerSpec(..., secrets={...}) from resolve instead: the worker "
        "receives them and they are scrubbed from what it reports",
        ("config",),
    ),
}
"""Every earlier form still honoured, by the name a class defines, and what replaces it."""

REPLACED_BY: Final[Mapping[str, str]] = {
    name: form.replaced_by for name, form in EARLIER_FORMS.items()
}
"""Each earlier name and today's hook or value that replaced it: a misspelling of an earlier
name is told today's (:func:`~evalexport.spec.hooks.verify`)."""
