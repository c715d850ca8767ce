"""Where an ATIF export stages its files: a sibling of the output holding the record of the
process that stages there, renamed into place when whole and removed (with the parents made
for it) when not; what an export killed outright left there the next one removes."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, final

from evalexport.backends.atif.file_outcome import FileConversion
from evalexport.backends.atif.identity import ExportRecord
from evalexport.spec import ExportFailure, deferred

__all__ = ["StagedTrajectories", "remove_abandoned_staging", "stage_beside"]


@final
@dataclass(frozen=True)
class StagedTrajectories:
    """ATIF's one read of a run: every row converted, its files and manifest written into a
    staging sibling of the output for an export (``staging``), in memory for a dry run; or, for
    a rerun into this export's output, its record (``exported_before``)."""

    conversion: FileConversion
    staging: Path | None = None
    created_parents: tuple[Path, ...] = ()
    """The output's parent directories this export created, deepest first."""
    sizes: Sequence[int] = ()
    """The length of each trajectory file the staged manifest names, in its order."""
    exported_before: ExportRecord | None = None
    """A rerun's: the record of this very export, which its output holds already (nothing is
    staged then)."""

    def disown(self) -> None:
        """Remove the record of the staging's owner, which is not the output's to keep."""
        if self.staging is not None:
            (self.staging / _OWNER).unlink(missing_ok=True)

    def discard(self) -> None:
        """Remove the staging directory unless it became the output, and the parents created
        for it that stayed empty."""
        if self.staging is None or not self.staging.exists():
            return
        with deferred() as held:  # a second Ctrl-C must not leave half a directory
            shutil.rmtree(self.staging)
            for parent in self.created_parents:
                _remove_if_empty(parent)
        held.raise_held()


_OWNER: Final = ".evalexport-owner"
"""In a staging directory, the process that stages there: ``<pid> <start time>``."""


def _staging_prefix(output: Path) -> str:
    return f".{output.name}.partial-"


def stage_beside(output: Path) -> StagedTrajectories:
    """A new staging directory beside ``output`` holding the record of its owner (this
    process), and the parents of ``output`` made for it; what an earlier export killed outright
    left there is removed first."""
    try:
        created = tuple(_make_parents(output.parent))
        remove_abandoned_staging(output)
        staging = Path(tempfile.mkdtemp(prefix=_staging_prefix(output), dir=output.parent))
    except OSError as error:
        raise ExportFailure(
            f"Cannot create the output directory {output}: {error.strerror or error}"
        ) from None
    staged = StagedTrajectories(FileConversion(), staging, created)
    try:
        (staging / _OWNER).write_text(_this_process())
    except OSError as error:
        staged.discard()
        raise ExportFailure(
            f"Cannot write into the output's directory {output.parent}: {error.strerror or error}"
        ) from None
    return staged


def _this_process() -> str:
    return f"{os.getpid()} {_started_at(os.getpid())}"


def _started_at(pid: int) -> str:
    """When ``pid`` started (``/proc/<pid>/stat``, in clock ticks since boot): with the pid,
    names one process, whatever pid reuse does; empty where there is no ``/proc``."""
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return ""


def remove_abandoned_staging(output: Path) -> None:
    """Remove the staging directories of ``output`` whose export is gone (killed outright,
    SIGKILL or a lost node): their owner process no longer lives. A live export's is kept."""
    for staging in output.parent.glob(_staging_prefix(output) + "*"):
        try:
            pid_text, _, started = (staging / _OWNER).read_text().partition(" ")
            pid = int(pid_text)
        except (OSError, ValueError):
            continue  # not one of ours, or one that is being made now
        started = started.strip()
        alive = _started_at(pid) == started if started else _is_alive(pid)
        if not alive:
            shutil.rmtree(staging, ignore_errors=True)


def _is_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _make_parents(directory: Path) -> list[Path]:
    """Create ``directory`` and its missing parents; return those created, deepest first."""
    missing: list[Path] = []
    while not directory.exists():
        missing.append(directory)
        directory = directory.parent
    created: list[Path] = []
    try:
        for path in reversed(missing):
            path.mkdir()
            created.insert(0, path)
    except OSError:
        for path in created:
            _remove_if_empty(path)
        raise
    return created


def _remove_if_empty(directory: Path) -> None:
    with contextlib.suppress(OSError):
        directory.rmdir()
