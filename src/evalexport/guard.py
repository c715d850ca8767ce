"""The already-exported guard (SPEC §3.3).

A tracking exporter writes ``<stem>_<exporter>_export_done`` after a complete success: one
record per target the run went to (an MLflow store, a server, a W&B project), so a run tried on
a local store first still reaches the team's server. Each record carries a fingerprint of the
run's files, so a later export to that target can tell "nothing changed, skip" from "the run
changed since, refuse": never a silent skip, never a silent duplicate. Deleting the marker
has the next export ask the target again (a finished run of the data there is skipped for,
and marked: SPEC §3.3).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Final, final

from pydantic import ValidationError

from evalexport.callers import named_option
from evalexport.host.files import write_text_atomically
from evalexport.host.locks import Waiting, named_lock
from evalexport.marker import (
    ExportMarker,
    MarkerFile,
    UnreadableMarker,
    read_marker,
    target_key,
    unwritable_marker_reason,
    write_marker,
)
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

    def skipped(self, exporter: str, run: RunArtifacts, *, copies: bool = False) -> ExportResult:
        """The skipped result of the export of ``run`` to the target this record names;
        ``copies``: the exporter takes ``second_copy`` (it finds a run of the data at the
        target and keeps it, unless asked for another copy)."""
        marker = self.marker
        again = f"to export it again, delete {self.marker_path}"
        if copies:
            again += (
                "; a finished run of it the exporter finds at the target is then kept, unless "
                f"{named_option('second_copy', 'true')} asks for another copy"
            )
        return ExportResult.skipped(
            exporter,
            str(run.run_dir),
            f"{run.rollouts.name} was exported to {marker.target} as run {marker.remote_run_id} at "
            f"{marker.exported_at} ({again})",
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


GuardState = NotExported | AlreadyExported | ChangedSinceExport | UnreadableMarker


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
