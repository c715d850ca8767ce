"""The already-exported guard (SPEC §3.3).

A tracking exporter writes ``<stem>_<exporter>_export_done`` after a complete success: one
record per target the run went to (an MLflow store, a server, a W&B project), so a run tried on
a local store first still reaches the team's server. Each record carries a fingerprint of the
run's files, so a later export to that target can tell "nothing changed, skip" from "the run
changed since, refuse": never a silent skip, never a silent duplicate. Deleting the marker
exports the run again, to any target.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Final, final

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator

from evalexport.host.files import write_text_atomically
from evalexport.host.locks import Waiting, named_lock
from evalexport.reading import fingerprint_of, fingerprinted_files, run_fingerprint
from evalexport.results import ExportResult, SkipReason
from evalexport.run import RunArtifacts

__all__ = [
    "FINGERPRINT_SUMMARY_KEY",
    "FINGERPRINT_TAG",
    "AlreadyExported",
    "ChangedSinceExport",
    "ExportGuard",
    "ExportMarker",
    "GuardState",
    "MarkerFile",
    "NotExported",
    "UnreadableMarker",
    "compare",
    "export_lock",
    "fingerprint_of",
    "fingerprinted_files",
    "guard_state",
    "read_marker",
    "run_fingerprint",
    "target_key",
    "unwritable_marker_reason",
    "write_marker",
]


FINGERPRINT_TAG: Final = "evalexport.fingerprint"
"""The remote run's tag holding the run's fingerprint, as the export marker does (MLflow)."""
FINGERPRINT_SUMMARY_KEY: Final = "evalexport/fingerprint"
"""The same, as a W&B summary key (W&B groups summary keys by ``/``, as Gym's names are)."""


class ExportMarker(BaseModel):
    """One export of the run to one target: a record of ``<stem>_<exporter>_export_done``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    exporter: str
    target: str
    remote_run_id: str
    exported_at: str
    fingerprint: str

    @field_validator("target")
    @classmethod
    def _scrub_target(cls, target: str) -> str:
        """The marker is a file in the run directory: its target never holds a credential."""
        from evalexport.masking import scrub_text

        return scrub_text(target)

    @classmethod
    def now(cls, exporter: str, target: str, remote_run_id: str, fingerprint: str) -> ExportMarker:
        """A record of an export that succeeded now, its target scrubbed of credentials."""
        exported_at = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
        return cls(
            exporter=exporter,
            target=target,
            remote_run_id=remote_run_id,
            exported_at=exported_at,
            fingerprint=fingerprint,
        )

    def is_for(self, target: str) -> bool:
        """Whether this record is of an export to ``target`` (as :meth:`target_key` knows it)."""
        return self.key == target_key(target)

    @property
    def key(self) -> str:
        """:func:`target_key` of the target, scrubbed already when the record was made."""
        return self.target.rstrip("/") if "://" in self.target else self.target


class MarkerFile(BaseModel):
    """The content of ``<stem>_<exporter>_export_done``: one record per target the run was
    exported to. A marker written before targets were kept apart (one record at the top
    level) is read as a file of that one record."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    exporter: str
    exports: list[ExportMarker]

    @model_validator(mode="before")
    @classmethod
    def _one_record_of_old(cls, data: object) -> object:
        if isinstance(data, dict) and "exports" not in data and "target" in data:
            return {"exporter": data.get("exporter"), "exports": [data]}
        return data

    def record_for(self, target: str) -> ExportMarker | None:
        """The record of the export to ``target``, if the run went there (the target scrubbed
        once, not once a record)."""
        key = target_key(target)
        return next((record for record in self.exports if record.key == key), None)

    def with_record(self, record: ExportMarker) -> MarkerFile:
        """This file with ``record`` in place of the one for its target (kept last)."""
        others = [kept for kept in self.exports if kept.key != record.key]
        return self.model_copy(update={"exports": [*others, record]})


def target_key(target: str) -> str:
    """A target as the guard compares it: scrubbed of credentials (as the marker keeps it),
    without a URL's trailing slash."""
    from evalexport.masking import scrub_text

    key = scrub_text(target)
    return key.rstrip("/") if "://" in key else key


@final
@dataclass(frozen=True)
class NotExported:
    """No record of an export to this target: the run was not exported there."""

    fingerprint: str | None
    """The run's fingerprint, if the caller computed it (under the export lock)."""


@final
@dataclass(frozen=True)
class AlreadyExported:
    """A record for this target whose fingerprint is the run's: the export is skipped."""

    marker: ExportMarker
    marker_path: Path

    def skipped(self, exporter: str, run: RunArtifacts) -> ExportResult:
        """The skipped result of the export of ``run`` to the target this record names."""
        marker = self.marker
        return ExportResult.skipped(
            exporter,
            str(run.run_dir),
            f"{run.rollouts.name} was exported to {marker.target} as run {marker.remote_run_id} at "
            f"{marker.exported_at} (delete {self.marker_path} to export it again)",
            SkipReason.ALREADY_EXPORTED,
            run_id=marker.remote_run_id,
            marker=str(self.marker_path),
        )


@final
@dataclass(frozen=True)
class ChangedSinceExport:
    """A record for this target whose fingerprint is not the run's: the run changed since,
    and is refused."""

    marker: ExportMarker
    marker_path: Path
    fingerprint: str

    def message(self) -> str:
        """What changed and how to export the run again, for the user."""
        return (
            f"The run changed since it was exported to {self.marker.exporter} "
            f"({self.marker.target}, run {self.marker.remote_run_id}) at "
            f"{self.marker.exported_at}: the export marker {self.marker_path} records "
            f"{self.marker.fingerprint}, the run's files now hash to {self.fingerprint}. "
            f"Delete the marker to export the run again as a new run."
        )


@final
@dataclass(frozen=True)
class UnreadableMarker:
    """A marker that cannot be read or is not a marker: refused until it is deleted."""

    marker_path: Path
    problem: str

    def message(self) -> str:
        """What is wrong with the marker and what to do, for the user."""
        return (
            f"Cannot read the export marker {self.marker_path} ({self.problem}). "
            "Delete it to export the run again."
        )


GuardState = NotExported | AlreadyExported | ChangedSinceExport | UnreadableMarker

MAX_MARKER_BYTES: Final = 1 << 20
"""The largest export marker read (a marker of a thousand targets is a tenth of it)."""


def read_marker(run: RunArtifacts, exporter: str) -> MarkerFile | UnreadableMarker | None:
    """The export marker of ``run`` for ``exporter``, without reading the run: ``None`` when
    there is none. Only a regular file of at most :data:`MAX_MARKER_BYTES` is read: a marker
    that is a FIFO or a device is refused, never waited on."""
    marker_path = run.export_marker(exporter)
    try:
        descriptor = os.open(marker_path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as error:
        return UnreadableMarker(marker_path, error.strerror or str(error))
    status = os.fstat(descriptor)
    if not stat.S_ISREG(status.st_mode):  # a directory cannot even be opened as a file object
        os.close(descriptor)
        what = "a directory" if stat.S_ISDIR(status.st_mode) else "not a regular file"
        return UnreadableMarker(marker_path, f"it is {what}")
    with os.fdopen(descriptor, "rb") as handle:
        if status.st_size > MAX_MARKER_BYTES:
            return UnreadableMarker(
                marker_path, f"{status.st_size} bytes, more than a marker's {MAX_MARKER_BYTES}"
            )
        data = handle.read(MAX_MARKER_BYTES + 1)
    try:
        return MarkerFile.model_validate_json(data)
    except ValidationError as error:
        return UnreadableMarker(marker_path, f"not a valid marker: {error.error_count()} errors")


def guard_state(
    run: RunArtifacts, exporter: str, fingerprint: str | None = None, target: str | None = None
) -> GuardState:
    """Whether ``run`` was exported to ``target`` by ``exporter`` (to any target when
    ``target`` is ``None``: the latest record), and whether its files changed since.

    ``fingerprint`` is the run's as the caller computed it: an export computes it once, under
    the export lock, so that its marker and its remote run's tag name the same bytes. Without
    it, the run is read only if a record is there to compare with.
    """
    marker = read_marker(run, exporter)
    if isinstance(marker, UnreadableMarker):
        return marker
    record = None
    if marker is not None:
        record = (
            marker.record_for(target)
            if target is not None
            else (marker.exports[-1] if marker.exports else None)
        )
    if record is None:
        return NotExported(fingerprint)
    if fingerprint is None:
        fingerprint = run_fingerprint(run)
    return compare(record, run.export_marker(exporter), fingerprint)


def compare(
    marker: ExportMarker, marker_path: Path, fingerprint: str
) -> AlreadyExported | ChangedSinceExport:
    """Whether the run, now hashing to ``fingerprint``, is the one ``marker`` records."""
    if marker.fingerprint != fingerprint:
        return ChangedSinceExport(marker, marker_path, fingerprint)
    return AlreadyExported(marker, marker_path)


def unwritable_marker_reason(run: RunArtifacts, exporter: str) -> str | None:
    """Why the marker could not be written after an export, checked before anything remote is
    created: a remote run without its marker would be exported again by the next rerun."""
    directory = run.run_dir
    if os.access(directory, os.W_OK | os.X_OK):
        return None
    why = "it is on a read-only file system" if _read_only_mount(directory) else "no permission"
    return (
        f"Cannot write the export marker {run.export_marker(exporter)}: the run directory "
        f"{directory} is not writable ({why}). The marker is what keeps a rerun from exporting "
        "the run twice; make the directory writable, or export a writable copy of the run."
    )


def _read_only_mount(directory: Path) -> bool:
    try:
        return bool(os.statvfs(directory).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def write_marker(run: RunArtifacts, marker: ExportMarker) -> Path:
    """Add ``marker`` to the run's marker file for its exporter (in place of the record of
    the same target), atomically; call it only after a complete success, under the export
    lock."""
    path = run.export_marker(marker.exporter)
    kept = read_marker(run, marker.exporter)
    file = (
        kept if isinstance(kept, MarkerFile) else MarkerFile(exporter=marker.exporter, exports=[])
    )
    write_text_atomically(path, file.with_record(marker).model_dump_json(indent=2) + "\n")
    return path


def export_lock(
    run: RunArtifacts, exporter: str, waiting: Waiting | None = None
) -> contextlib.AbstractContextManager[None]:
    """Serialize exports of one run to one exporter across processes.

    The lock is keyed on the run directory's identity (device and inode), not on the path as
    typed: the same run reached through a symlink, a bind mount or a relative path is one run.
    The lock file lives in the cache directory, not the run directory, which an export never
    changes except for its marker. The second of two concurrent exports waits here, then finds
    the first one's marker and skips (``waiting``: at most so long, saying who it waits for).
    """
    directory = run.run_dir.stat()
    marker = run.export_marker(exporter).name
    return named_lock(f"export:{directory.st_dev}:{directory.st_ino}:{marker}", waiting=waiting)


@final
@dataclass(frozen=True)
class ExportGuard:
    """The already-exported guard of one run, for one exporter and one target, as one object:
    the check made before anything is read, the lock, the verdict on an earlier export to the
    target, and the marker's record of it.

    A tracking export goes ``unexportable_reason()`` → ``with locked():`` →
    ``earlier_export()`` (skip or refuse) → read the run and export, fingerprinting the bytes
    read → ``mark(...)``. The pipeline does this; an exporter only declares
    ``kind = "tracking"``. ``target`` is ``None`` only for a caller that asks about the latest
    export to any target.
    """

    run: RunArtifacts
    exporter: str
    target: str | None = None

    @property
    def marker_path(self) -> Path:
        """``<stem>_<exporter>_export_done`` beside the rollouts file."""
        return self.run.export_marker(self.exporter)

    def unexportable_reason(self) -> str | None:
        """Why the export must not start, read off the marker alone: it cannot be read, or it
        has no record of this target and none could be written after the export."""
        marker = read_marker(self.run, self.exporter)
        if isinstance(marker, UnreadableMarker):
            return marker.message()
        if marker is None or self._record(marker) is None:
            return unwritable_marker_reason(self.run, self.exporter)
        return None

    def locked(self, waiting: Waiting | None = None) -> contextlib.AbstractContextManager[None]:
        """Exports of this run to this exporter, one at a time (:func:`export_lock`)."""
        return export_lock(self.run, self.exporter, waiting)

    def earlier_export(
        self, *, dry_run: bool = False
    ) -> AlreadyExported | ChangedSinceExport | UnreadableMarker | None:
        """What the marker says of this target, under the lock and before the run is read for
        an export: ``None`` when it has no record of it. With one, the run is read once, only
        to compare.

        A record the marker could not take when its export finished (a full disk) is kept in
        the cache (:meth:`kept_record_path`): found there for the run as it is, the export
        is skipped, and the marker written now if it can be (not by a dry run, which writes
        nothing)."""
        marker = read_marker(self.run, self.exporter)
        if isinstance(marker, UnreadableMarker):
            return marker
        record = self._record(marker) if marker is not None else None
        if record is None:
            return self._kept_export(dry_run)
        return compare(record, self.marker_path, run_fingerprint(self.run))

    def kept_record_path(self) -> Path | None:
        """Where the record of an export whose marker could not be written is kept: in the
        cache, keyed by the run directory's identity (as its lock), the marker and the target."""
        from evalexport.host.cache import cache_dir

        if self.target is None:
            return None
        try:
            directory = self.run.run_dir.stat()
        except OSError:
            return None
        target = target_key(self.target)
        key = f"{directory.st_dev}:{directory.st_ino}:{self.marker_path.name}:{target}"
        digest = hashlib.sha256(key.encode()).hexdigest()[:32]
        return cache_dir() / "unwritten-markers" / f"{digest}.json"

    def _kept_export(self, dry_run: bool) -> AlreadyExported | None:
        path = self.kept_record_path()
        if path is None or not path.is_file():
            return None
        try:
            record = ExportMarker.model_validate_json(path.read_bytes())
        except (OSError, ValidationError):
            return None
        if not record.is_for(self.target or "") or record.fingerprint != run_fingerprint(self.run):
            return None  # another run's data now: export it
        if dry_run:
            return AlreadyExported(record, path)
        try:  # the marker the export could not write, written now
            write_marker(self.run, record)
            path.unlink(missing_ok=True)
            return AlreadyExported(record, self.marker_path)
        except OSError:
            return AlreadyExported(record, path)

    def state(self, fingerprint: str | None = None) -> GuardState:
        """:func:`guard_state` of the run as it was read (``fingerprint``)."""
        return guard_state(self.run, self.exporter, fingerprint, self.target)

    def mark(self, target: str, remote_run_id: str, fingerprint: str) -> Path:
        """Record a complete success of the export to ``target``, atomically."""
        return write_marker(
            self.run, ExportMarker.now(self.exporter, target, remote_run_id, fingerprint)
        )

    def marked(self, result: ExportResult, target: str, fingerprint: str) -> ExportResult:
        """``result``, a success, with its marker written (:meth:`mark`). A marker that cannot
        be written is a warning in the result, not a failure: the remote run exists."""
        run_id = result.run_id or ""
        details = {**result.details, "fingerprint": fingerprint}
        try:
            details["marker"] = str(self.mark(target, run_id, fingerprint))
        except OSError as error:
            kept = self._keep(ExportMarker.now(self.exporter, target, run_id, fingerprint), target)
            if kept is not None:
                details["kept_record"] = str(kept)
                then = (
                    f"its record is kept in {kept}: a rerun finds run {run_id} there, skips, "
                    "and writes the marker once it can"
                )
            else:
                then = (
                    f"nor could its record be kept in the cache: a rerun will not know run "
                    f"{run_id} exists and would export the run again; free space in "
                    f"{self.run.run_dir} and do not rerun before"
                )
            warning = (
                f"WARNING: could not write the export marker {self.marker_path} "
                f"({error.strerror or error}); {then}."
            )
            details["marker_error"] = warning
            return result.model_copy(
                update={"message": f"{result.message}. {warning}", "details": details}
            )
        return result.model_copy(update={"details": details})

    def _keep(self, record: ExportMarker, target: str) -> Path | None:
        """Keep ``record`` in the cache for the rerun, since the marker could not take it."""
        path = dataclasses.replace(self, target=target).kept_record_path()
        if path is None:
            return None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_text_atomically(path, record.model_dump_json() + "\n")
        except OSError:
            return None
        return path

    def _record(self, marker: MarkerFile) -> ExportMarker | None:
        if self.target is None:
            return marker.exports[-1] if marker.exports else None
        return marker.record_for(self.target)
