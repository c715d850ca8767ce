"""What an export ends with: an :class:`ExportResult` and its exit code.

Every path through an exporter, the CLI and the worker ends in one of these, never in a
traceback. The result is scrubbed of secrets when it is built, so nothing that carries it
(the CLI's ``--json``, a batch report, a log) can leak a token that slipped into a message.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

from evalexport.masking import scrub_text, scrub_value
from evalexport.workers.exit_codes import ExitCode

__all__ = [
    "DryRunPlan",
    "ExitCode",
    "ExportFailure",
    "ExportResult",
    "ExportStatus",
    "PlannedFile",
    "SkipReason",
]


class ExportStatus(enum.StrEnum):
    """How an export ended: succeeded, skipped or failed."""

    SUCCEEDED = "succeeded"
    SKIPPED = "skipped"
    FAILED = "failed"
    PENDING = "pending"
    """Not run yet (a queued Slurm array task): gather its result again later."""


class SkipReason(enum.StrEnum):
    """Why a skipped export did nothing."""

    ALREADY_EXPORTED = "already exported"
    """The export marker, or the exporter's own output, says this run went there already."""
    DEDUPED = "deduped"
    """The service already holds this content (EvalRDL) and stored nothing new."""
    FOUND_AT_TARGET = "found at target"
    """The target already holds a finished run of this run's data (its fingerprint; made from
    a copy of the run directory, by an export this one waited for, or before the marker was
    deleted), which the export skips for unless ``+second_copy=true``; or, with
    ``+skip_existing``, one someone reopened since. The marker records it, as it records an
    export."""
    IN_PROGRESS_AT_TARGET = "in progress at target"
    """Another export is making a run of this run's data at the target (it holds the run's
    lease), and ``+skip_existing`` asked to skip rather than wait for it. No marker is
    written: that export may still fail."""
    NOT_STARTED = "benchmark never started"
    """The NeMo Gym job never started this benchmark (its submission failed): there is no run
    to export, and no export failed."""


class PlannedFile(BaseModel):
    """A file a dry run says the export would read or send, with its size."""

    model_config = ConfigDict(frozen=True)

    path: str
    size_bytes: int


class DryRunPlan(BaseModel):
    """What an export would do, shown by ``--dry-run`` without doing any of it."""

    model_config = ConfigDict(frozen=True)

    exporter: str
    target: str
    files: list[PlannedFile] = []
    sections: dict[str, list[str]] = {}
    """What the export would send, in the backend's own words and order: MLflow's
    ``metrics``/``params``/``tags``, W&B's ``config keys``/``summary``/``tables``. Shown as
    given, an empty one as ``none``; a plan without sections shows the names below that it
    fills, and nothing it leaves empty."""
    metric_names: list[str] = []
    param_names: list[str] = []
    tag_names: list[str] = []
    batches: int = 0
    """Requests the export would send, where the backend counts them (MLflow's ``log_batch``
    calls); ``0``: not counted, and not shown."""
    settings: dict[str, str] = {}
    """Where each target setting came from: ``{"mlflow_tracking_uri": "MLFLOW_TRACKING_URI from
    the environment"}`` (an option, the SDK's own variable, or the default)."""
    summary: str = ""
    """What the export would do, in one line of the backend's words (``24 trajectories of
    R would be written to DIR``); empty: the pipeline says it plainly."""
    counts: dict[str, Any] = Field(default={}, exclude=True)
    """Counts for people (``trajectory_count``): they go in the dry run's result ``details``."""
    skip_reason: SkipReason | None = Field(default=None, exclude=True)
    """Set when the export would be skipped (``summary`` says why): what an exporter's read
    found at the target (an ATIF output that holds this export already). The dry run's result
    is then that skip's, said as a dry run's."""

    @field_validator("target", "summary")
    @classmethod
    def _scrub_target(cls, text: str) -> str:
        """A target is often a URL, and a URL may carry a password: shown, it never does."""
        return scrub_text(text)

    @field_validator("sections", mode="before")
    @classmethod
    def _sections_as_text(cls, sections: object) -> object:
        """A section names what it holds as texts: a key a YAML config wrote as a number
        (``1: one``) is shown as the text it is sent as, never a refused plan."""
        if not isinstance(sections, Mapping):
            return sections
        return {
            str(label): [str(item) for item in items] if isinstance(items, list | tuple) else items
            for label, items in sections.items()
        }

    @field_validator("sections")
    @classmethod
    def _scrub_sections(cls, sections: dict[str, list[str]]) -> dict[str, list[str]]:
        """A plugin's sections are shown as given, but never with a secret in them."""
        return {
            scrub_text(label): [scrub_text(item) for item in items]
            for label, items in sections.items()
        }


class ExportFailure(Exception):
    """Raised by an exporter's hook: the export fails with this message (exit code 1), and
    ``details`` for people to read. Returning ``self.failed(run, message)`` does the same."""

    def __init__(self, message: str, **details: object) -> None:
        super().__init__(message)
        self.details = details


class ExportResult(BaseModel):
    """The outcome of one export of one run to one exporter.

    What callers read back has a field of its own; ``details`` holds what only a person reads
    (paths, counts, notices) and may differ between exporters.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    exporter: str
    status: ExportStatus
    exit_code: ExitCode
    message: str
    run_dir: str
    run_id: str | None = None
    """The remote run (MLflow, W&B, EvalRDL) this export made, or found already made."""
    skip_reason: SkipReason | None = None
    """Why a skipped export did nothing; set on skipped results only."""
    plan: DryRunPlan | None = None
    """What a dry run would do; set on dry-run results only."""
    receipts: dict[str, str] = {}
    """Identifiers a service handed back that grant nothing, shown as they are although named
    like secrets (EvalRDL's ``upload_token`` looks one upload up). A worker body returns its own
    (``protocol.result(..., receipts={...})``); everything else named like a secret is masked."""
    notices: list[str] = []
    """What the export did that a user should know (a table too big for a run's history, a
    second copy at the target, metrics left out); each also ends the message (``Note: …``)."""
    interrupted_by: str | None = None
    """The stop signal (``SIGTERM``) that ended the export, or that arrived once it had landed
    (it stands, succeeded): whoever runs the next export (a plan's worker) stops."""
    existing_run_ids: list[str] = []
    """The target's runs of this run's data found before this export (by a dry run, or by the
    export's own lookup): more than none means a skip, or a second copy asked for."""
    target_not_asked: str | None = None
    """Why a dry run could not ask the target whether it holds this run already."""
    environment: str | None = None
    """The SDK environment the worker ran in (``evalexport envs list`` names it)."""
    details: dict[str, object] = {}

    def __bool__(self) -> bool:
        """True when the export succeeded or was skipped (exit code 0): ``if result:`` reads as
        "did it go well". A failed, pending or usage-error result is false."""
        return self.exit_code is ExitCode.OK

    @field_validator("message")
    @classmethod
    def _scrub_message(cls, message: str) -> str:
        return scrub_text(message)

    @field_validator("details")
    @classmethod
    def _scrub_details(cls, details: dict[str, object]) -> dict[str, object]:
        scrubbed = scrub_value(details)
        assert isinstance(scrubbed, dict)
        return scrubbed

    @field_validator("receipts")
    @classmethod
    def _scrub_receipts(cls, receipts: dict[str, str]) -> dict[str, str]:
        return {key: scrub_text(value) for key, value in receipts.items()}

    @field_validator("notices")
    @classmethod
    def _scrub_notices(cls, notices: list[str]) -> list[str]:
        return [scrub_text(notice) for notice in notices]

    @model_serializer(mode="wrap")
    def _with_details_as_0_4_had_them(self, handler: SerializerFunctionWrapHandler) -> Any:
        """The result as JSON (``--json``, a plan's report) keeps 0.4.0's keys of ``details``
        beside the typed fields that replaced them: ``details.notices`` and
        ``details.environment`` (deprecated; removed at 1.0: read ``notices`` and
        ``environment``), so a script reading them goes on working."""
        data = handler(self)
        if isinstance(data, dict) and isinstance(details := data.get("details"), dict):
            kept = dict(details)
            if self.notices:
                kept.setdefault("notices", list(self.notices))
            if self.environment is not None:
                kept.setdefault("environment", self.environment)
            data["details"] = kept
        return data

    @model_validator(mode="after")
    def _exit_code_matches_status(self) -> ExportResult:
        pending = self.status is ExportStatus.PENDING
        failed = self.status is ExportStatus.FAILED
        if pending != (self.exit_code is ExitCode.PENDING) or (
            not pending and failed == (self.exit_code is ExitCode.OK)
        ):
            raise ValueError(
                f"a {self.status.value} result cannot exit {int(self.exit_code)}: failed results "
                "exit non-zero, pending ones 5, succeeded and skipped ones 0"
            )
        if (self.status is ExportStatus.SKIPPED) != (self.skip_reason is not None):
            raise ValueError("a skipped result, and only a skipped one, carries a skip_reason")
        return self

    @classmethod
    def succeeded(
        cls,
        exporter: str,
        run_dir: str,
        message: str,
        run_id: str | None = None,
        plan: DryRunPlan | None = None,
        *,
        existing_run_ids: Sequence[str] = (),
        target_not_asked: str | None = None,
        **details: object,
    ) -> ExportResult:
        """A succeeded result; ``run_id`` names the remote run; ``details`` are for people."""
        return cls(
            exporter=exporter,
            status=ExportStatus.SUCCEEDED,
            exit_code=ExitCode.OK,
            message=message,
            run_dir=run_dir,
            run_id=run_id,
            plan=plan,
            existing_run_ids=list(existing_run_ids),
            target_not_asked=target_not_asked,
            details=details,
        )

    @classmethod
    def skipped(
        cls,
        exporter: str,
        run_dir: str,
        message: str,
        reason: SkipReason = SkipReason.ALREADY_EXPORTED,
        run_id: str | None = None,
        **details: object,
    ) -> ExportResult:
        """A skipped result, with why (default: already exported) and the remote run it found."""
        return cls(
            exporter=exporter,
            status=ExportStatus.SKIPPED,
            exit_code=ExitCode.OK,
            message=message,
            run_dir=run_dir,
            run_id=run_id,
            skip_reason=reason,
            details=details,
        )

    @classmethod
    def failed(
        cls,
        exporter: str,
        run_dir: str,
        message: str,
        exit_code: ExitCode = ExitCode.FAILED,
        *,
        interrupted_by: str | None = None,
        **details: object,
    ) -> ExportResult:
        """A failed result with exit code 1 (or the one given) and a message a user can act on;
        ``interrupted_by``: the stop signal that ended it."""
        return cls(
            exporter=exporter,
            status=ExportStatus.FAILED,
            exit_code=exit_code,
            message=message,
            run_dir=run_dir,
            interrupted_by=interrupted_by,
            details=details,
        )

    @classmethod
    def pending(cls, exporter: str, run_dir: str, message: str, **details: object) -> ExportResult:
        """A result of an export that has not run yet (exit code 5)."""
        return cls(
            exporter=exporter,
            status=ExportStatus.PENDING,
            exit_code=ExitCode.PENDING,
            message=message,
            run_dir=run_dir,
            details=details,
        )

    def noted(self, notes: Sequence[str]) -> ExportResult:
        """This result, saying ``notes`` too: each ends its message (``Note: …``) and is
        listed in :attr:`notices`, so no caller needs a log to learn it."""
        if not notes:
            return self
        said = " ".join(f"Note: {note.rstrip('.')}." for note in notes)
        return self.model_copy(
            update={
                "message": f"{self.message.rstrip('.')}. {said}",
                "notices": [*self.notices, *(scrub_text(note) for note in notes)],
            }
        )

    def said_as_dry_run(self) -> ExportResult:
        """This verdict, reached before anything would be sent, said as a dry run's."""
        return self.model_copy(
            update={
                "message": f"dry run: the export would be skipped: {self.message}",
                "details": {**self.details, "dry_run": True},
            }
        )

    def summary_line(self) -> str:
        """The one human line the CLI prints, e.g. ``skipped (already exported): ...``."""
        if self.skip_reason is not None:
            return f"skipped ({self.skip_reason.value}): {self.message}"
        return f"{self.status.value}: {self.message}"
