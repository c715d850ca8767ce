"""A whole rollouts file to ATIF trajectories: strict rows, ordered output, both cores.

Every line is checked as NeMo Gym's strict exporter checks it (no blank lines, strict JSON, an
object with non-negative task and rollout indices, no duplicate ``(task, rollout)`` key), then
converted. Every rejected row is collected, so one failed export names all of them; the file
must also hold one agent only, since ``agent_version`` describes the whole batch, unless one
agent's rows are asked for (``agent=``): the others are then left out, as if the file held
that agent's rows alone.

Large files are converted by a pool of processes in chunks of lines; results come back in
file order and at most a few chunks are in flight, so memory stays flat whatever the file's
size. Each process writes the trajectory files it converts straight into the output directory
(the bytes never travel between processes); the caller receives each converted row, in file
order, to write its manifest line.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import re
from collections import deque
from collections.abc import Callable, Collection, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Final, final

from evalexport.backends.atif.file_outcome import (
    ConvertedRow,
    FileConversion,
    FirstLines,
    Rejection,
)
from evalexport.backends.atif.pool_workers import leave_ctrl_c_to_the_parent
from evalexport.backends.atif.written import opened_output, write_trajectory
from evalexport.callers import Caller, asked_from, current_caller
from evalexport.reading import MAX_LINE_BYTES, Digest, open_regular
from evalexport.trajectory.convert import (
    TrajectoryIdentity,
    agent_label,
    convert_rollout,
    options_that_accept,
    row_indices,
)
from evalexport.trajectory.relaxations import Relaxation, Relaxations, known_relaxations
from evalexport.trajectory.steps import TrajectoryError
from evalexport.trajectory.strict_json import loads_strict_line

if TYPE_CHECKING:
    from evalexport.interrupts import Deferred

__all__ = ["ConvertedRow", "FileConversion", "convert_file", "may_hold_lone_surrogate"]

POOL_THRESHOLD_BYTES: Final = 4 * 1024 * 1024
"""Files smaller than this convert in-process: starting a pool costs more than it saves."""
_CHUNK_BYTES: Final = 1024 * 1024
_IN_FLIGHT_PER_WORKER: Final = 3
_SURROGATE_ESCAPE: Final = re.compile(rb"\\u[dD][89a-fA-F]")
"""A JSON escape of a UTF-16 surrogate: the only way a lone surrogate gets into a row."""


def may_hold_lone_surrogate(raw: bytes) -> bool:
    """Whether a line's JSON holds a surrogate escape, so its strings must be searched for a
    lone one; a line without one cannot hold any."""
    return b"\\u" in raw and _SURROGATE_ESCAPE.search(raw) is not None


# One line's outcome, as a worker reports it: (line number, label, key, trajectory, or why it
# was refused (a line no option accepts: its reason alone), or None for a row of an agent that
# was not asked for).
_Outcome = tuple[int, Any, tuple[int, int] | None, "ConvertedRow | Rejection | str | None"]


@final
@dataclass(frozen=True)
class _Job:
    """What every line of one file is converted with (sent once per chunk to a worker)."""

    identity: TrajectoryIdentity
    allowed_gaps: frozenset[str]
    output: Path | None
    relaxations: frozenset[Relaxation] = frozenset()
    agent: str | None = None
    """Convert only this agent's rows (``agent_ref.name``); ``None``: every row."""
    caller: Caller = field(default_factory=current_caller)
    """Who asked for the export: a pool's worker words its refusals for them."""


def _convert_line(
    line_number: int, raw: bytes | None, job: _Job, directory: int | None = None
) -> _Outcome:
    """One line's outcome; its trajectory file written into the open ``directory`` (the
    output's, ``None`` converting in memory)."""
    where = f"line {line_number}"
    if raw is None:
        return (
            line_number,
            None,
            None,
            f"{where}: longer than {MAX_LINE_BYTES // (1024 * 1024)} MiB, the longest line "
            "evalexport reads; the file is not read past it",
        )
    if not raw or raw.isspace():  # (``strip`` would copy the line to say so)
        return line_number, None, None, f"{where}: blank JSONL records are not supported"
    try:
        row = loads_strict_line(raw)
    except UnicodeDecodeError as error:
        return (
            line_number,
            None,
            None,
            f"{where}: invalid JSON (not UTF-8: {error.reason} at byte {error.start})",
        )
    except json.JSONDecodeError as error:
        return (
            line_number,
            None,
            None,
            f"{where}: invalid JSON ({error.msg} at column {error.colno})",
        )
    except ValueError as error:
        return line_number, None, None, f"{where}: invalid JSON ({error})"
    except RecursionError:
        return line_number, None, None, f"{where}: invalid JSON (nested too deeply to read)"
    if not isinstance(row, dict):
        return (
            line_number,
            None,
            None,
            f"{where}: expected a JSON object, got a {type(row).__name__}",
        )
    ordinal = line_number - 1  # blank lines are refused: a row's ordinal is its line's
    try:
        key: tuple[int, int] | None = row_indices(
            row, f"{where}.", ordinal, Relaxations(job.relaxations)
        )
    except TrajectoryError:
        key = None  # the conversion refuses it, with every other reason and the options
    label = agent_label(row)
    if job.agent is not None and label != job.agent:
        return line_number, label, key, None
    try:
        converted = convert_rollout(
            row,
            job.identity,
            allowed_gaps=job.allowed_gaps,
            relaxations=job.relaxations,
            check_strings=may_hold_lone_surrogate(raw),
            ordinal=ordinal,
        )
    except TrajectoryError as error:
        return (
            line_number,
            label,
            key,
            Rejection(f"{where}: {error}", options_that_accept(row, job.identity, ordinal)),
        )
    if "unnamed_agents" in converted.relaxations:  # the row names no agent: +agent_name does
        label = job.identity.agent_name
    try:
        data = converted.encode()
    except (TypeError, ValueError) as error:
        return line_number, label, key, f"{where}: the ATIF trajectory is not valid JSON ({error})"
    return (
        line_number,
        label,
        key,
        write_trajectory(line_number, converted, data, directory, job.output),
    )


def _convert_chunk(first_line: int, lines: list[bytes | None], job: _Job) -> list[_Outcome]:
    with asked_from(job.caller), opened_output(job.output) as directory:
        return [
            _convert_line(first_line + offset, raw, job, directory)
            for offset, raw in enumerate(lines)
        ]


def _lines(handle: BinaryIO, digest: Digest) -> Iterator[tuple[bytes | None, int]]:
    """``(line, its length)`` of each line, each fed to ``digest`` as it is read, and
    ``None`` for a line longer than :data:`MAX_LINE_BYTES`, where reading stops: such a line
    is no rollout, and what follows it (a 20 GiB file without a newline) is not read."""
    while raw := handle.readline(MAX_LINE_BYTES + 1):
        digest.update(raw)
        if len(raw) <= MAX_LINE_BYTES or raw.endswith(b"\n"):
            yield raw, len(raw)
            continue
        yield None, len(raw)
        return


def _chunks(path: Path, digest: Digest) -> Iterator[tuple[int, list[bytes | None], int]]:
    """``(first line number, lines, bytes read so far)`` in chunks of about a megabyte, the
    bytes fed to ``digest`` as they are read."""
    with open_regular(path) as handle:
        line_number, size, done = 1, 0, 0
        chunk: list[bytes | None] = []
        for raw, length in _lines(handle, digest):
            chunk.append(raw)
            size += length
            if size >= _CHUNK_BYTES:
                done += size
                yield line_number, chunk, done
                line_number += len(chunk)
                chunk, size = [], 0
        if chunk:
            yield line_number, chunk, done + size


def _outcomes(
    path: Path, job: _Job, workers: int, digest: Digest
) -> Iterator[tuple[list[_Outcome], int]]:
    if workers <= 1:
        for first, lines, done in _chunks(path, digest):
            yield _convert_chunk(first, lines, job), done
        return
    from evalexport.spec import deferred

    pending: deque[tuple[Future[list[_Outcome]], int]] = deque()
    # A stop signal is held while the pool works and raised between its calls, never inside
    # one: an exception inside the executor's machinery (a submit forking a worker, a queue
    # being fed), or in a worker not yet past its initializer, can leave the pool hung.
    with (
        deferred() as held,
        ProcessPoolExecutor(
            max_workers=workers,
            initializer=leave_ctrl_c_to_the_parent,
            initargs=(os.getpid(), multiprocessing.get_start_method() == "forkserver"),
        ) as pool,
    ):
        try:
            for first, lines, done in _chunks(path, digest):
                held.raise_held()
                pending.append((pool.submit(_convert_chunk, first, lines, job), done))
                if len(pending) >= workers * _IN_FLIGHT_PER_WORKER:
                    future, read = pending.popleft()
                    yield _result(future, held), read
            while pending:
                future, read = pending.popleft()
                yield _result(future, held), read
            held.raise_held()
        except BaseException:  # interrupted, or the consumer stopped: queued chunks are moot
            pool.shutdown(wait=True, cancel_futures=True)
            raise
    held.raise_held()  # one that came while the pool was shut down is a stop all the same


def _result(future: Future[list[_Outcome]], held: Deferred) -> list[_Outcome]:
    """The chunk's outcomes; a stop signal held meanwhile is raised within a tenth of a second."""
    while True:
        held.raise_held()
        try:
            return future.result(timeout=0.1)
        except TimeoutError:
            continue


def default_workers(path: Path) -> int:
    """Processes to convert ``path`` with: one for small files, else one per core this
    process may run on (``taskset``, a Slurm allocation: not the machine's count)."""
    size = path.stat().st_size
    return 1 if size < POOL_THRESHOLD_BYTES else max(1, min(usable_cores(), 8))


def usable_cores() -> int:
    """The cores this process may run on: its CPU affinity where the system says, else the
    machine's."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def convert_file(
    path: Path,
    identity: TrajectoryIdentity,
    *,
    output: Path | None,
    on_row: Callable[[ConvertedRow], None] | None = None,
    allowed_gaps: Collection[str] = (),
    relaxations: Collection[Relaxation] = (),
    workers: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    agent: str | None = None,
) -> FileConversion:
    """Convert every line of ``path``, writing each trajectory file into ``output``.

    ``on_row`` receives each converted row in file order until a row is rejected (the export
    will fail then), but every line is still checked so all rejected rows are named.
    ``output=None`` converts in memory only, as a dry run does. ``progress(bytes_read,
    total_bytes)`` is called after each chunk. ``allowed_gaps`` and ``relaxations`` are
    :func:`~evalexport.trajectory.convert.convert_rollout`'s. ``agent``: convert only the rows of that agent
    (``agent_ref.name``), as if the file held them alone; the others are counted in
    :attr:`FileConversion.other_agents`. A line that cannot be read names no agent, and is
    rejected whichever agent is asked for.
    """
    total = path.stat().st_size
    result = FileConversion()
    first_lines = FirstLines()
    job = _Job(identity, frozenset(allowed_gaps), output, known_relaxations(relaxations), agent)
    digest = hashlib.sha256()
    for outcomes, read in _outcomes(path, job, workers or default_workers(path), digest):
        for line_number, label, key, outcome in outcomes:
            if outcome is None:  # another agent's row, left out
                result.other_agents[str(label)] += 1
                continue
            result.rows += 1
            if key is not None:
                if (earlier := first_lines.earlier(key, line_number)) is not None:
                    result.rejected.append(
                        f"line {line_number}: duplicate Gym rollout key (task {key[0]}, "
                        f"rollout {key[1]}), first on line {earlier}"
                    )
                    result.duplicate_keys += 1
                    result.accepted_by_no_option += 1
                    if isinstance(label, str):
                        result.agents.add(label)
                    continue
                if isinstance(label, str):
                    result.agents.add(label)
            elif isinstance(label, str):  # a row whose indices the conversion refuses
                result.agents.add(label)
            if isinstance(outcome, str):
                result.rejected.append(outcome)
                result.accepted_by_no_option += 1
                continue
            if isinstance(outcome, Rejection):
                result.rejected.append(outcome.reason)
                if outcome.options is None:
                    result.accepted_by_no_option += 1
                else:
                    result.options_that_accept.update(outcome.options)
                continue
            result.converted += 1
            result.images.update(outcome.images)
            if outcome.gap_codes:
                result.trajectories_with_gaps += 1
                result.gap_counts.update(outcome.gap_codes)
            if outcome.relaxations:
                result.trajectories_relaxed += 1
                result.relaxation_counts.update(outcome.relaxations)
            if on_row is not None and not result.rejected:
                on_row(outcome)
        if progress is not None:
            progress(read, total)
    result.rollouts_sha256 = f"sha256:{digest.hexdigest()}"
    return result
