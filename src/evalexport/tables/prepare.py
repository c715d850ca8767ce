"""A run read once, with Gym's rollouts table written from the same pass (SPEC §3.3a).

:func:`evalexport.reading.prepare` reads the run; :func:`prepare` here adds what the tracking
exporters upload beside it: the rollouts as NeMo Gym's one-column table (:mod:`.tables`),
written into a scratch directory while the rollouts are read, so the file is opened once. The
dry run describes the :class:`PreparedRun`; the export sends it. Plugins of API 2 import both
names from here.
"""

from __future__ import annotations

import errno
import functools
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import Protocol

from evalexport import egress
from evalexport.callers import named_option
from evalexport.gym.health import read_health
from evalexport.progress import human_size
from evalexport.reading import PreparedRun, Rollout
from evalexport.reading import prepare as read_run
from evalexport.results import ExportFailure
from evalexport.run import RunArtifacts, RunFileError
from evalexport.tables.rollouts import RowTooDeep, write_rollouts_table, write_table_rows
from evalexport.tables.samples import SAMPLES_FILE, SamplesTable
from evalexport.tables.split_read import SecondPart, split_reading

__all__ = [
    "PreparedRun",
    "RowFile",
    "RowFileMaker",
    "for_payload",
    "prepare",
    "scratch_space_refusal",
]


def prepare(
    run: RunArtifacts,
    *,
    rollouts_table: bool = False,
    parse_rollouts: bool = True,
    health: bool = False,
    row_files: Sequence[RowFileMaker] = (),
) -> PreparedRun:
    """Read the aggregate metrics, the saved config and the rollouts, each opened once
    (:func:`evalexport.reading.prepare`); raise :class:`~evalexport.reading.RunFileError`
    naming the first file that cannot be exported.

    ``rollouts_table``: write Gym's rollouts table while the rollouts are read, and the typed
    samples table beside it (:mod:`.samples`, ``samples.json`` in the same directory); both
    are removed with :meth:`~PreparedRun.discard`. ``parse_rollouts=False``: only hash the rollouts and count
    their lines, for an exporter that sends none of them. ``health``: read NeMo Gym's health
    files too (:mod:`evalexport.gym.health`); the samples table then has a
    ``health_verdict`` column when the verdicts describe the run. ``row_files``: files of
    the exporter's own written from each rollout in the same pass (MLflow's traces), each
    made with the scratch directory and the export's gate (:class:`RowFile`).
    """
    run_health = read_health(run) if health else None
    if not rollouts_table and not row_files:
        return read_run(run, parse_rollouts=parse_rollouts, health=run_health)
    from evalexport.isolation.descendants import claim_scratch, release_scratch

    scratch = Path(tempfile.mkdtemp(prefix="evalexport-rollouts-"))
    claim_scratch(scratch)  # removed by the reaper if this process dies before discard()
    table = scratch / "rollouts.json"
    gate = egress.current()  # every row, of every table and trace, passes the export's gate
    samples = SamplesTable(scratch, run_health, gate)
    written = [make(scratch, gate) for make in row_files]
    # Read on two cores when only the tables are written (split_read says when it pays).
    split = rollouts_table and not written and (run_health is None or run_health.verdicts is None)

    def write_table(rollouts: Iterator[Rollout], second: SecondPart | None) -> None:
        try:
            for row_file in written:
                rollouts = row_file.rows(rollouts)
            if not rollouts_table:
                for _ in rollouts:
                    pass
                return
            rows_after = second.rows if second is not None else None
            last = _LastLine()
            write_table_rows(samples.rows(last.of(rollouts)), table, gate, rows_after)
            if second is not None:
                second.absorb_samples(samples, gate, lines_before=last.number)
                second.discard()
            samples.write(scratch / SAMPLES_FILE)
        except RowTooDeep as error:
            raise RunFileError(f"Malformed rollouts file {run.rollouts}: {error}") from None
        except OSError as error:
            if error.errno != errno.ENOSPC:
                raise
            raise ExportFailure(
                f"No space left in {scratch.parent} (TMPDIR) for the rollouts tables of "
                f"{run.rollouts.name}, written there before they are sent: free space there, "
                "or set TMPDIR to a directory with room for about the rollouts file's size"
            ) from None

    try:
        with split_reading(run.rollouts, scratch, gate) if split else nullcontext() as second:
            return read_run(
                run,
                rollouts_sink=functools.partial(write_table, second=second),
                rollouts_table=table if rollouts_table else None,
                scratch=[scratch],
                released=release_scratch,
                health=run_health,
                elsewhere=second,
            )
    except BaseException:
        # Removed again once the second reader has ended: it may have written since.
        shutil.rmtree(scratch, ignore_errors=True)
        raise


class RowFile(Protocol):
    """A file an exporter writes from the rollouts in the export's one read (MLflow's traces):
    :meth:`rows` passes each rollout on, writing its line on the way, through the gate."""

    def rows(self, rollouts: Iterator[Rollout]) -> Iterator[Rollout]:
        """The rollouts, passed on as they are."""
        ...


RowFileMaker = Callable[[Path, egress.Egress], RowFile]
"""How :func:`prepare` makes a :class:`RowFile`: with the scratch directory it writes in
(removed with the run's tables) and the export's gate."""


def scratch_space_refusal(rollouts: Path) -> str | None:
    """Why the rollouts tables cannot be written in the temporary directory (``TMPDIR``), found
    before anything is built, the dry run's as the export's: it has less room than the
    rollouts file takes (the tables hold the rollouts without their trajectories)."""
    directory = tempfile.gettempdir()
    try:
        room = shutil.disk_usage(directory).free
        needed = rollouts.stat().st_size
    except OSError:
        return None  # the read names what cannot be read
    if room >= needed:
        return None
    return (
        f"{directory} (TMPDIR) has {human_size(room)} free, and the rollouts tables of "
        f"{rollouts.name} ({human_size(needed)}) are written there before they are sent: free "
        "space there, set TMPDIR to a directory with room, or export without them "
        f"({named_option('upload_rollouts', 'false')})"
    )


def for_payload(
    run: RunArtifacts, prepared: PreparedRun | None, scratch: Path, *, rollouts_table: bool
) -> tuple[PreparedRun, Path | None]:
    """What a worker payload is built from, and the rollouts table if it is wanted: what the
    export read (``prepared``), or, for a payload built on its own (a benchmark, a test), the
    run read now, its table written into ``scratch``."""
    if prepared is not None:
        return prepared, prepared.rollouts_table if rollouts_table else None
    table = write_rollouts_table(run, scratch / "rollouts.json") if rollouts_table else None
    return read_run(run), table


class _LastLine:
    """The line number of the last rollout this process read (the helper's part goes on
    from there)."""

    def __init__(self) -> None:
        self.number = 0

    def of(self, rollouts: Iterator[Rollout]) -> Iterator[Rollout]:
        for rollout in rollouts:
            self.number = rollout.line_number
            yield rollout
