"""A big rollouts file read on two cores: this process reads its start, a helper its end.

Reading a run (parsing each line, writing the rollouts and samples tables, noting the times)
costs about 110 µs of CPU a 7 KB rollout: 15 seconds for a 1 GB run, most of a tracking
export's time once the run is big (docs/performance.md). Above :data:`SPLIT_ABOVE` bytes, and
with a second core, :func:`split_reading` starts a helper process (this module's :func:`main`,
run by this interpreter from this evalexport, tagged and ended as every launch is:
:mod:`evalexport.isolation.descendants`) that reads the file from the first line that starts
past its middle to its end, writes its rows of both tables into a directory of the export's
scratch, and sends back (:class:`PartDone`) how many rollouts it read, their times, what its
rows say of the samples table's columns, and the SHA-256 of the bytes it read. The reader of
the start stops at that same line, found on its own (:func:`part_start`).

This process reads the start meanwhile, then hashes the end itself, in order, for the run's
fingerprint (one SHA-256 of the whole file, which markers and remote runs already hold), and
refuses the run if those bytes are not the ones the helper read (the file changed). The helper
is an optimisation and nothing else: if it cannot start, fails on a line, or ends without its
answer, this process reads the end itself, so every message, line number and verdict is the
sequential reader's. Nothing of the helper's leaves the scratch directory unless its answer
was taken: its rows are appended to the tables only then.

Not split: a run whose NeMo Gym verdicts are read beside it (each rollout is told against
them), a run whose traces are written (one file in order), a small file (the helper's start,
about a quarter of a second, would not pay), one core.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Final, final

import msgspec

from evalexport.egress import Egress
from evalexport.host.files import CHUNK, MAX_LINE_BYTES, open_regular
from evalexport.reading import Cursor, PartRead, Rollout, RunFileError, read_rollouts
from evalexport.reading.evaluation_times import TimesSeen
from evalexport.tables.rollouts import write_rows
from evalexport.tables.samples import SamplesSeen, SamplesTable

__all__ = [
    "SPLIT_ABOVE",
    "PartDone",
    "PartJob",
    "SecondPart",
    "main",
    "part_start",
    "split_reading",
]

_log = logging.getLogger(__name__)

SPLIT_ABOVE: Final = 64 * 2**20
"""A rollouts file of more bytes than this is read on two cores."""
ROWS_FILE: Final = "rollouts.rows"
"""The helper's rows of the rollouts table, in its directory (:func:`write_rows`)."""


class PartJob(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """What the helper is asked to do, on its standard input (never its arguments, which any
    user of the machine can list: they hold no secret)."""

    rollouts: str
    """The rollouts file."""
    middle: int
    """Its part begins with the first line that starts here or after (:func:`part_start`)."""
    directory: str
    """Where it writes its rows (an empty directory of the export's scratch)."""
    secrets: list[str]
    """The secrets the export's gate removes from every row (:class:`~evalexport.egress.Egress`)."""
    mask_rows: bool
    """Whether the gate masks the rows by the rules (``+mask_rows``)."""


class PartDone(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """What the helper answers on its standard output, once its rows are written."""

    start: int
    """Where its part began (:func:`part_start`)."""
    size_bytes: int
    sha256: str
    """The hex SHA-256 of the bytes it read."""
    rollouts: int
    earliest: float | None
    latest: float | None
    left_out: int
    samples: SamplesSeen
    masked_lines: list[int]
    """The line numbers of its part's rollouts in which the gate masked anything."""


def part_start(handle: BinaryIO, middle: int) -> int:
    """Where the helper's part begins: the first line that starts at ``middle`` or after (the
    end of the file if none does), the offset where the reader of the start stops
    (:func:`~evalexport.reading.read_rollouts`'s ``end``). Raises :class:`ValueError` when
    the line across the middle is longer than :data:`MAX_LINE_BYTES` (the reader of the start
    refuses it, naming it)."""
    if middle == 0:
        return 0
    handle.seek(middle - 1)
    scanned = 0  # a megabyte at a time: the line is looked through, never held
    while scanned <= MAX_LINE_BYTES:
        chunk = handle.read(CHUNK)
        if not chunk:
            return middle - 1 + scanned
        if (line_break := chunk.find(b"\n")) >= 0:
            return middle - 1 + scanned + line_break + 1
        scanned += len(chunk)
    raise ValueError("the line across the middle is too long to read")


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


@final
@dataclass
class SecondPart:
    """The end of the rollouts file, read by the helper (:class:`~evalexport.reading.
    PartReadElsewhere`): :meth:`wait` for its answer, then :meth:`rows` and
    :meth:`absorb_samples` join its rows to this process's tables."""

    middle: int
    directory: Path
    process: subprocess.Popen[bytes]
    done: PartDone | None = None
    """Its answer, once :meth:`wait` had it."""
    taken: bool = False
    """Whether the reader took its part (:meth:`take`): only then do its rows join the
    tables."""

    def wait(self) -> PartRead | None:
        """The helper's answer, or ``None`` when it failed (this process reads the part)."""
        stdout, stderr = self.process.communicate()
        if self.process.returncode != 0:
            _log.debug(
                "The second reader of the rollouts ended with %s; reading its part here: %s",
                self.process.returncode,
                stderr.decode("utf-8", "replace")[-2000:],
            )
            return None
        try:
            done = msgspec.json.decode(stdout, type=PartDone)
            digest = bytes.fromhex(done.sha256)
        except (msgspec.MsgspecError, ValueError) as error:
            _log.debug("The second reader's answer is not one (%s); reading its part here", error)
            return None
        self.done = done
        return PartRead(
            start=done.start,
            size_bytes=done.size_bytes,
            sha256=digest,
            rollouts=done.rollouts,
            earliest=done.earliest,
            latest=done.latest,
            left_out=done.left_out,
        )

    def take(self) -> None:
        """The reader took its part: its rows join the tables."""
        self.taken = True

    def rows(self) -> Path | None:
        """Its rows of the rollouts table, if its part was taken."""
        return self.directory / ROWS_FILE if self.taken else None

    def absorb_samples(self, samples: SamplesTable, gate: Egress, lines_before: int) -> None:
        """Its rows of the samples table joined to ``samples``, and what its gate masked
        counted in ``gate``, if its part was taken. The helper numbers its lines from its
        part's start: they go on from ``lines_before``, the last line this process read (they
        were counted as this process's own, and the result said half the rows)."""
        if self.taken and self.done is not None:
            samples.absorb(self.directory / SamplesTable.ROWS_FILE, self.done.samples)
            gate.count(line + lines_before for line in self.done.masked_lines)

    def discard(self) -> None:
        """Remove its rows, once joined (the scratch holds the tables twice meanwhile)."""
        shutil.rmtree(self.directory, ignore_errors=True)


def _can_run_helper() -> bool:
    """Whether this interpreter can run the helper: not a frozen application (whose executable
    runs the application), and one that knows its own executable."""
    return bool(sys.executable) and not getattr(sys, "frozen", False)


def _helper_command() -> list[str]:
    """This interpreter, running this module of this evalexport (wherever it is imported
    from), with no directory of the caller's put first on its path."""
    package_root = str(Path(__file__).resolve().parents[2])  # src/evalexport/exporters/…
    return [
        sys.executable,
        "-P",
        "-c",
        "import sys; sys.path.insert(0, sys.argv[1]); "
        "from evalexport.tables.split_read import main; main()",
        package_root,
    ]


@contextlib.contextmanager
def split_reading(rollouts: Path, scratch: Path, gate: Egress) -> Iterator[SecondPart | None]:
    """A helper reading the end of ``rollouts`` while the block reads its start, or ``None``
    when the file is not split; the helper and all it started have ended when the block does,
    however it ends (a stop signal, a bad line)."""
    try:
        size = rollouts.stat().st_size
    except OSError:
        size = 0  # the reader names what cannot be read
    if size <= SPLIT_ABOVE or _cores() < 2 or not _can_run_helper():
        yield None
        return
    from evalexport.isolation.descendants import tracked_launch

    directory = scratch / "second-part"
    directory.mkdir()
    middle = size // 2
    job = PartJob(str(rollouts), middle, str(directory), list(gate.secrets), gate.mask_rows)
    with tracked_launch() as launch:
        try:
            process = subprocess.Popen(
                _helper_command(),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=launch.environment,
            )
        except OSError as error:
            _log.debug("No second reader of the rollouts (%s): reading them here", error)
            yield None
            return
        with process:
            launch.started(process.pid)
            stdin, process.stdin = process.stdin, None  # written once here, not by communicate()
            try:
                assert stdin is not None
                with stdin:
                    stdin.write(msgspec.json.encode(job))
            except OSError:
                pass  # it ended already: wait() finds it failed
            try:
                yield SecondPart(middle, directory, process)
            finally:
                if process.poll() is None:  # not waited for: the block ended early
                    process.kill()
                    process.wait()


def read_part(job: PartJob) -> PartDone:
    """The helper's work: read ``job.rollouts`` from :func:`part_start` to its end, write its rows
    of both tables into ``job.directory``, and say what they hold."""
    directory = Path(job.directory)
    gate = Egress(mask_rows=job.mask_rows, secrets=job.secrets)
    samples = SamplesTable(directory, None, gate)
    seen = TimesSeen()
    digest = hashlib.sha256()
    run = _PartPaths(Path(job.rollouts))

    def noted(rollouts: Iterator[Rollout]) -> Iterator[Rollout]:
        for rollout in rollouts:
            seen.see(rollout.record)
            yield rollout

    with open_regular(run.rollouts) as handle:
        start = part_start(handle, job.middle)
        handle.seek(start)
        cursor = Cursor(offset=start, rows=None)  # its rows' places are the parent's to know
        read = read_rollouts(run, handle, digest, cursor=cursor)
        with (directory / ROWS_FILE).open("w", encoding="utf-8", errors="backslashreplace") as out:
            count = write_rows(out, samples.rows(noted(read)), gate)
    size = cursor.offset - start
    earliest, latest = seen.seen()
    return PartDone(
        start=start,
        size_bytes=size,
        sha256=digest.hexdigest(),
        rollouts=count,
        earliest=earliest,
        latest=latest,
        left_out=seen.left_out,
        samples=samples.seen(),
        masked_lines=gate.masked_lines(),
    )


@final
@dataclass(frozen=True)
class _PartPaths:
    """The paths :func:`read_rollouts` names in a message (the helper's are never shown: this
    process reads a part that failed again and words the error)."""

    rollouts: Path

    @property
    def run_dir(self) -> Path:
        return self.rollouts.parent

    @property
    def aggregate_metrics(self) -> Path:
        return self.rollouts

    @property
    def saved_config(self) -> Path:
        return self.rollouts

    @property
    def no_records_message(self) -> str:
        return ""


def main() -> None:
    """The helper: a :class:`PartJob` on standard input, a :class:`PartDone` on standard
    output; any failure ends it with a non-zero code (its caller reads the part instead)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C ends it quietly; its caller words it
    try:
        job = msgspec.json.decode(sys.stdin.buffer.read(), type=PartJob)
        done = read_part(job)
    except (RunFileError, OSError, ValueError, msgspec.MsgspecError) as error:
        sys.stderr.write(f"{type(error).__name__}: {error}\n")
        raise SystemExit(1) from None
    sys.stdout.buffer.write(msgspec.json.encode(done))
    sys.stdout.buffer.flush()


if __name__ == "__main__":
    main()
