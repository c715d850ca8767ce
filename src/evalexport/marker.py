"""The export marker (SPEC §3.3): ``<stem>_<exporter>_export_done``, the file a tracking export
writes beside the run once it has landed, one record per target (:class:`ExportMarker`), read
only as a bounded regular file and written atomically; :mod:`evalexport.guard` decides what an
earlier export says from it."""

from __future__ import annotations

import datetime
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Final, final

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator

from evalexport.host.files import write_text_atomically
from evalexport.run import RunArtifacts

__all__ = [
    "MAX_MARKER_BYTES",
    "ExportMarker",
    "MarkerFile",
    "UnreadableMarker",
    "read_marker",
    "target_key",
    "unwritable_marker_reason",
    "write_marker",
]


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
