"""Reading a run, in one place: every reader and parser of its files, the fingerprint, the
masking of its saved config and the warnings an export gives about what it read.

:class:`~evalexport.run.RunPaths` says where each file of a run is and what rules the run
keeps; this module reads those files. An export reads each of them once (SPEC §3.1, "One
pass"): :func:`prepare` opens the aggregate metrics, the saved config and the rollouts once
each, hashes them while it parses them, and hands the export (or the dry run) one
:class:`PreparedRun`. The fingerprint an export tags its remote run with and writes in its
marker is :func:`fingerprint_of` those bytes, in the order of :func:`fingerprinted_files`,
the same function and order :func:`run_fingerprint` uses to read a run again.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import stat
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Final, Protocol, final

from evalexport.evaluation_times import EvaluationTimes, TimesSeen
from evalexport.metrics import FlatMetrics, flatten_metrics
from evalexport.progress import Progress, reading_progress

__all__ = [
    "MAX_FILE_BYTES",
    "MAX_LINE_BYTES",
    "Digest",
    "ExportableConfig",
    "PreparedRun",
    "Rollout",
    "RunFileError",
    "count_rollouts",
    "exportable_config",
    "fingerprint_of",
    "fingerprinted_files",
    "holds_no_rollouts",
    "iter_rollouts",
    "not_a_file_reason",
    "open_regular",
    "parse_aggregate_metrics",
    "parse_saved_config",
    "prepare",
    "read_file",
    "read_rollouts",
    "run_directory_files",
    "run_fingerprint",
    "too_long_message",
    "unreadable_file_reason",
]

_CHUNK: Final = 1 << 20

MAX_FILE_BYTES: Final = 64 * 1024 * 1024
"""The largest aggregate-metrics file or saved config read (a real one is a few kilobytes)."""
MAX_LINE_BYTES: Final = 512 * 1024 * 1024
"""The longest rollouts line read (a model that never stopped writes tens of megabytes): a
longer one, or a file with no line break at all, is refused naming the line, never held."""


class Digest(Protocol):
    """What the rollouts readers feed the bytes they read: a :mod:`hashlib` hash."""

    def update(self, data: bytes, /) -> None:
        """Feed the hash the next bytes read."""


class RunPaths(Protocol):
    """The paths of a run this module reads (:class:`evalexport.run.RunArtifacts` has them):
    reading stands below the run's rules, which use it."""

    @property
    def rollouts(self) -> Path:
        """The rollouts file."""

    @property
    def run_dir(self) -> Path:
        """The run directory."""

    @property
    def aggregate_metrics(self) -> Path:
        """The aggregate-metrics file."""

    @property
    def saved_config(self) -> Path:
        """The saved config."""

    @property
    def no_records_message(self) -> str:
        """What a user is told when the rollouts file holds no record."""


class RunFileError(Exception):
    """A file of the run is missing, cannot be read or cannot be exported; the message says
    which and why. ``details`` are for people to read (the rows a conversion refused)."""

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.details = details


@final
@dataclass(frozen=True)
class Rollout:
    """One line of the rollouts file, with the line number errors refer to."""

    line_number: int
    record: dict[str, Any]
    size_bytes: int = 0
    """The length of its line in the file, line break included."""

    @property
    def task_index(self) -> Any:
        """``_ng_task_index``: which task of the benchmark this rollout answers."""
        return self.record.get("_ng_task_index")

    @property
    def rollout_index(self) -> Any:
        """``_ng_rollout_index``: which repeat of its task this rollout is."""
        return self.record.get("_ng_rollout_index")

    @property
    def agent_name(self) -> str | None:
        """``agent_ref.name``, or ``None`` when the record names no agent."""
        agent_ref = self.record.get("agent_ref")
        name = agent_ref.get("name") if isinstance(agent_ref, dict) else None
        return name if isinstance(name, str) else None

    @property
    def reward(self) -> Any:
        """``reward`` as the record holds it."""
        return self.record.get("reward")


_BLANK_LINE: Final = Rollout(0, {})
"""What :func:`_parse_line` returns for a line holding only whitespace."""


@final
@dataclass(frozen=True)
class ExportableConfig:
    """The saved config as exporters send it: masked again, whatever the file holds."""

    config: dict[str, Any]
    masked_paths: list[str]
    """Where the file held a value that looks like a live secret (now masked)."""

    def warning(self, path: Path) -> str | None:
        """A warning naming the values that looked like live secrets and were masked, or ``None``."""
        if not self.masked_paths:
            return None
        return (
            f"the saved config {path} holds values that look like live secrets "
            f"({', '.join(self.masked_paths)}); they are masked in this export. Save it "
            "masked: delete it, then evalexport save-config (or evalexport.save_run_config)"
        )


# -- the rollouts --------------------------------------------------------------------------


def iter_rollouts(run: RunPaths, digest: Digest | None = None) -> Iterator[Rollout]:
    """Stream the rollouts one line at a time; blank lines are skipped.

    Raises :class:`RunFileError` naming the 1-based line number of a malformed line. One line
    may be very long (a model that never stopped): while it is parsed, only its bytes or its
    text, and the parsed record, are held, never a further copy. ``digest`` (a :mod:`hashlib`
    hash) is fed every byte of the file as it is read, so one pass both parses and hashes it.
    """
    with _open_rollouts(run) as handle:
        yield from read_rollouts(run, handle, digest)


def count_rollouts(run: RunPaths, digest: Digest | None = None) -> int:
    """How many lines of the rollouts file are not blank, without parsing them; ``digest`` is
    fed the file's bytes as for :func:`iter_rollouts`."""
    count = 0
    with _open_rollouts(run) as handle:
        while line := _line(run, handle, count + 1):
            if digest is not None:
                digest.update(line)
            count += not line.isspace()
    return count


def holds_no_rollouts(run: RunPaths) -> bool:
    """Whether the rollouts file has no line but blank ones (read up to the first that is not,
    a line at most :data:`MAX_LINE_BYTES` at a time)."""
    try:
        with open_regular(run.rollouts) as handle:
            while line := handle.readline(_CHUNK):
                if not line.isspace():
                    return False
            return True
    except (OSError, RunFileError):
        return False  # the reader names the problem


def not_a_file_reason(path: Path) -> str | None:
    """Why ``path``, which exists, cannot be read as a run's file (a FIFO, a device, a
    socket, a directory), or ``None``."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode):
        return None
    for test, what in (
        (stat.S_ISFIFO, "a FIFO (a named pipe)"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISDIR, "a directory"),
    ):
        if test(mode):
            return f"{path} is {what}, not a regular file"
    return f"{path} is not a regular file"


def open_regular(path: Path) -> BinaryIO:
    """``path`` opened for reading if it is a regular file; :class:`RunFileError` saying what it
    is otherwise. A FIFO is never waited on (it is opened without blocking, then refused)."""
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise RunFileError(not_a_file_reason(path) or f"{path} is not a regular file")
        os.set_blocking(descriptor, True)
        return os.fdopen(descriptor, "rb")
    except BaseException:
        os.close(descriptor)
        raise


def _open_rollouts(run: RunPaths) -> BinaryIO:
    try:
        return open_regular(run.rollouts)
    except OSError as error:
        raise RunFileError(f"Cannot read rollouts file {run.rollouts}: {error}") from None


def _line(run: RunPaths, handle: BinaryIO, line_number: int) -> bytes:
    """The next line, at most :data:`MAX_LINE_BYTES`; a longer one is refused naming it."""
    raw = handle.readline(MAX_LINE_BYTES + 1)
    if len(raw) > MAX_LINE_BYTES:
        raise RunFileError(too_long_message(run.rollouts, line_number))
    return raw


def too_long_message(path: Path, line_number: int) -> str:
    """What a user is told of a rollouts line longer than :data:`MAX_LINE_BYTES`."""
    return (
        f"Malformed rollouts file {path}: line {line_number} is longer than "
        f"{MAX_LINE_BYTES // (1024 * 1024)} MiB, the longest line evalexport reads (one JSON "
        "object a line; a file with no line breaks is one such line)"
    )


def read_rollouts(
    run: RunPaths, handle: BinaryIO, digest: Digest | None = None
) -> Iterator[Rollout]:
    """:func:`iter_rollouts` from a handle the caller opened on the rollouts file."""
    line_number = 0
    while True:
        line_number += 1
        # Passed, not bound: the line's bytes are freed as soon as they are decoded.
        if digest is None:
            parsed = _parse_line(run, _line(run, handle, line_number), line_number)
        else:
            held = [_line(run, handle, line_number)]
            digest.update(held[0])
            parsed = _parse_line(run, held.pop(), line_number)
        if parsed is None:
            return
        if parsed is not _BLANK_LINE:
            yield parsed


def _parse_line(run: RunPaths, raw: bytes, line_number: int) -> Rollout | None:
    """The rollout on one line, ``_BLANK_LINE`` for a blank one, ``None`` at the end of the
    file."""
    if not raw:
        return None
    size = len(raw)
    if (decode := _fast_decode()) is not None:
        fast = decode(raw)  # None when refused: the strict parser decides, in its words
        if isinstance(fast, dict):
            return Rollout(line_number, fast, size)
        del fast
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise RunFileError(
            f"Malformed rollouts file {run.rollouts}: line {line_number} "
            f"is not UTF-8 ({error.reason} at byte {error.start})"
        ) from None
    del raw
    if line.isspace():
        return _BLANK_LINE
    try:
        record = json.loads(line)
    except json.JSONDecodeError:
        # Told without the line break, so an error's column is the column on the line.
        raise _malformed(run, line.rstrip("\r\n"), line_number) from None
    except RecursionError:
        raise RunFileError(
            f"Malformed rollouts file {run.rollouts}: line {line_number} is nested too "
            "deeply to read"
        ) from None
    if not isinstance(record, dict):
        raise RunFileError(
            f"Malformed rollouts file {run.rollouts}: line {line_number} is a JSON "
            f"{type(record).__name__}, expected an object"
        )
    return Rollout(line_number, record, size)


def _malformed(run: RunPaths, line: str, line_number: int) -> RunFileError:
    try:
        json.loads(line)
    except json.JSONDecodeError as error:
        return RunFileError(
            f"Malformed rollouts file {run.rollouts}: line {line_number} is not valid JSON "
            f"({error.msg} at column {error.colno})"
        )
    return RunFileError(f"Malformed rollouts file {run.rollouts}: line {line_number}")


@functools.cache
def _fast_decode() -> Callable[[bytes], object] | None:
    """msgspec's JSON decoder, where it is installed: 2.5x ``json.loads`` on a rollout line.

    It is exact for what it accepts (the same objects ``json.loads`` gives, the last of
    duplicate keys kept, integers of any size, floats correctly rounded) and refuses what
    ``json.loads`` reads differently (``NaN``, lone surrogates, numbers out of a float's range,
    malformed lines): those lines go to ``json.loads``, whose verdict and messages stand
    (``tests/property/test_rollout_parsing.py``). Without msgspec, every line does. The
    function returns ``None`` for a line it refuses.
    """
    try:
        import msgspec
    except ImportError:
        return None
    decode = msgspec.json.Decoder().decode
    refused = (msgspec.MsgspecError, RecursionError)

    def decoded(raw: bytes) -> object:
        try:
            return decode(raw)
        except refused:
            return None

    return decoded


# -- the aggregate metrics and the saved config ----------------------------------------------


def read_file(run: RunPaths, path: Path) -> bytes:
    """The bytes of the aggregate metrics or the saved config, read once; a file that is
    missing or cannot be read is a :class:`RunFileError` naming it."""
    what = "Aggregate metrics" if path == run.aggregate_metrics else "Saved run config"
    try:
        with open_regular(path) as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        raise RunFileError(f"{what} not found: {path}") from None
    except OSError as error:
        raise RunFileError(f"Cannot read {what[0].lower()}{what[1:]} {path}: {error}") from None
    if len(data) > MAX_FILE_BYTES:
        raise RunFileError(
            f"{what} {path} is larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB, the most "
            "evalexport reads of it (a real one is a few kilobytes): is it the right file?"
        )
    return data


def parse_aggregate_metrics(run: RunPaths, data: bytes) -> list[dict[str, Any]]:
    """The aggregate-metrics list of the file's bytes, one entry per agent, checked for its
    shape."""
    path = run.aggregate_metrics
    try:
        parsed = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise RunFileError(f"Cannot read aggregate metrics {path}: {error}") from None
    except json.JSONDecodeError as error:
        raise RunFileError(
            f"Malformed aggregate metrics {path}: {error.msg} at line {error.lineno}"
        ) from None
    except RecursionError:
        raise RunFileError(
            f"Malformed aggregate metrics {path}: nested too deeply to read"
        ) from None
    if not isinstance(parsed, list):
        raise RunFileError(
            f"Malformed aggregate metrics {path}: expected a list with one entry per agent, "
            f"found a JSON {type(parsed).__name__}"
        )
    for index, entry in enumerate(parsed):
        name = entry.get("agent_ref", {}).get("name") if isinstance(entry, dict) else None
        if not isinstance(name, str) or not name:
            raise RunFileError(
                f"Malformed aggregate metrics {path}: entry {index} has no agent_ref.name"
            )
    return parsed


def parse_saved_config(run: RunPaths, data: bytes) -> dict[str, Any]:
    """The saved (masked, unresolved) run config of the file's bytes."""
    import yaml

    path = run.saved_config
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise RunFileError(f"Cannot read saved run config {path}: {error}") from None
    try:
        # libyaml's parser where PyYAML has it: the same safe types, ten times faster.
        parsed = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as error:
        raise RunFileError(f"Malformed saved run config {path}: {error}") from None
    except RecursionError:
        raise RunFileError(
            f"Malformed saved run config {path}: nested too deeply to read"
        ) from None
    if parsed is None:
        return {}
    if not isinstance(parsed, dict):
        raise RunFileError(
            f"Malformed saved run config {path}: expected a mapping, found {type(parsed).__name__}"
        )
    return parsed


def exportable_config(config: dict[str, Any]) -> ExportableConfig:
    """The saved config masked again (masking is idempotent), with what that pass changed: a
    hand-written or older unmasked config never reaches a backend (SPEC §2). One pass of
    masking gives both."""
    from evalexport.masking import mask_config_reporting

    masked, changed = mask_config_reporting(config)
    assert isinstance(masked, dict)
    return ExportableConfig(masked, changed)


# -- the run directory as it is uploaded ---------------------------------------------------


def unreadable_file_reason(
    run: RunPaths, readers: Mapping[Path, Callable[[BinaryIO], None]] | None = None
) -> str | None:
    """Why the run directory cannot be uploaded as it is, or ``None``: every file in it
    (through symlinks, as an upload walks it) must open for reading and be a regular file.

    Each file is opened, not checked with ``os.access``: root passes every access check, and a
    permission is not the only way a file fails to open (a dangling symlink, a FIFO).
    ``readers`` maps a file of the run (its path as :class:`~evalexport.run.RunArtifacts` names
    it) to a function that reads it through the handle this check opened, so a file that is
    both checked and read is opened once; a reader may raise :class:`RunFileError`.
    """
    readers = {Path(path): read for path, read in (readers or {}).items()}
    problems: list[str] = []
    for path in run_directory_files(run.run_dir, problems):
        if problem := _unreadable(path, readers.get(path)):
            problems.append(problem)
    if not problems:
        return None
    shown = "; ".join(problems[:3]) + (f"; and {len(problems) - 3} more" if problems[3:] else "")
    return (
        f"Cannot upload {run.run_dir} as it is: {shown}. Every file of the run directory "
        "is uploaded: make each one a readable file (chmod a+r), or move it out."
    )


def run_directory_files(run_dir: Path, problems: list[str]) -> Iterator[Path]:
    """Every file of the run directory as an upload takes it, in order: through a link to a
    directory inside it, never through one that leads out of it (``rootfs -> /``) or around
    in a loop. What cannot be listed, and each link out, goes to ``problems``."""
    top = Path(os.path.realpath(run_dir))
    seen: set[str] = set()

    def walk(directory: Path) -> Iterator[Path]:
        real = os.path.realpath(directory)
        if real in seen:
            return  # a link back to a directory already walked
        seen.add(real)
        try:
            entries = sorted(os.scandir(directory), key=lambda entry: entry.name)
        except OSError as error:
            problems.append(f"{directory} cannot be listed ({error.strerror or error})")
            return
        for entry in entries:
            path = Path(entry.path)
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            if not is_dir:
                yield path
            elif entry.is_symlink() and not Path(os.path.realpath(path)).is_relative_to(top):
                problems.append(
                    f"{path} links to {os.path.realpath(path)}, outside the run directory"
                )
            else:
                yield from walk(path)

    yield from walk(run_dir)


def _unreadable(path: Path, read: Callable[[BinaryIO], None] | None = None) -> str | None:
    """Why ``path`` cannot be read as a regular file, or ``None``; ``read`` reads it through
    the same handle when it can be."""
    try:
        # O_NONBLOCK: a FIFO must not hang the check; it is refused below.
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as error:
        return f"{path} cannot be opened ({error.strerror or error})"
    with os.fdopen(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            return f"{path} is not a regular file"
        if read is not None:
            os.set_blocking(descriptor, True)
            read(handle)
    return None


# -- fingerprints --------------------------------------------------------------------------


def fingerprinted_files(run: RunPaths) -> tuple[Path, Path, Path]:
    """The files a fingerprint covers, in the order it hashes them."""
    return (run.rollouts, run.aggregate_metrics, run.saved_config)


def fingerprint_of(file_digests: Iterable[tuple[str, bytes]]) -> str:
    """``sha256:<hex>`` of ``(file name, sha256 digest of its bytes)`` pairs, in the order of
    :func:`fingerprinted_files`: for a caller that hashed the files while it read them."""
    digest = hashlib.sha256()
    for name, file_digest in file_digests:
        digest.update(name.encode() + b"\0")
        digest.update(file_digest)
    return f"sha256:{digest.hexdigest()}"


def run_fingerprint(run: RunPaths) -> str:
    """``sha256:<hex>`` over the rollouts, aggregate-metrics and saved-config files, read now."""
    digests: list[tuple[str, bytes]] = []
    for path in fingerprinted_files(run):
        file_digest = hashlib.sha256()
        with open_regular(path) as handle:
            while chunk := handle.read(_CHUNK):
                file_digest.update(chunk)
        digests.append((path.name, file_digest.digest()))
    return fingerprint_of(digests)


# -- a run read once -----------------------------------------------------------------------


@final
@dataclass(frozen=True)
class PreparedRun:
    """Everything an export sends, read from the run's files once."""

    run: RunPaths
    fingerprint: str
    """``sha256:…`` of the bytes read (:func:`fingerprint_of` them)."""
    aggregate_metrics: bytes
    """The aggregate-metrics file as it is: uploaded as it is."""
    metrics: FlatMetrics
    """The aggregate metrics, flattened (:func:`~evalexport.metrics.flatten_metrics`)."""
    saved_config: ExportableConfig
    """The saved config as exporters send it: masked again."""
    rollout_count: int
    evaluation: EvaluationTimes
    """When the evaluation ran (:mod:`evalexport.evaluation_times`): the remote run's times."""
    rollouts_table: Path | None = None
    """The rollouts as Gym's one-column table, if it was asked for: in a scratch directory of
    its own, removed by :meth:`discard`."""
    scratch: list[Path] = field(default_factory=list)
    """Directories written while the run was read (the table's), removed by :meth:`discard`."""
    released: Callable[[Path], None] | None = None
    """Told of each scratch directory :meth:`discard` removed (the reaper, which would
    otherwise remove it if this process died)."""

    def warnings(self) -> list[str]:
        """What the export changes on the way, for the log: live-looking secrets masked,
        non-finite metrics. The pipeline logs them once, for the dry run and the export."""
        return [
            warning
            for warning in (
                self.saved_config.warning(self.run.saved_config),
                self.metrics.non_finite_warning(),
            )
            if warning
        ]

    def discard(self) -> None:
        """Remove what :func:`prepare` wrote (the rollouts table); the run is untouched."""
        for directory in self.scratch:
            shutil.rmtree(directory, ignore_errors=True)
            if self.released is not None:
                self.released(directory)


def _size_or_zero(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0  # the read names the problem


class _ReportingDigest:
    """A digest that also reports how many of the file's ``total`` bytes it has been fed."""

    def __init__(self, digest: Digest, report: Progress, total: int) -> None:
        self._digest = digest
        self._report = report
        self._total = total
        self._done = 0

    def update(self, data: bytes, /) -> None:
        self._digest.update(data)
        self._done += len(data)
        self._report(self._done, max(self._total, self._done))


RolloutsSink = Callable[[Iterator[Rollout]], None]
"""Consumes every rollout while :func:`prepare` reads them (writes Gym's rollouts table)."""


def prepare(
    run: RunPaths,
    *,
    parse_rollouts: bool = True,
    rollouts_sink: RolloutsSink | None = None,
    rollouts_table: Path | None = None,
    scratch: Iterable[Path] = (),
    released: Callable[[Path], None] | None = None,
) -> PreparedRun:
    """Read the aggregate metrics, the saved config and the rollouts, in that order, each
    opened once; raise :class:`RunFileError` naming the first file that cannot be exported.

    ``rollouts_sink`` consumes the rollouts as they are read, ``rollouts_table`` is the file it
    writes and ``scratch`` the directories it wrote into (removed by
    :meth:`~PreparedRun.discard`, and here if the read fails). ``parse_rollouts=False``: only
    hash the rollouts and count their lines, for an exporter that sends none of them.
    """
    scratch = list(scratch)
    try:
        metrics_bytes = read_file(run, run.aggregate_metrics)
        metrics = flatten_metrics(parse_aggregate_metrics(run, metrics_bytes))
        config_bytes = read_file(run, run.saved_config)
        saved_config = exportable_config(parse_saved_config(run, config_bytes))
        rollouts_digest = hashlib.sha256()
        read: Digest = rollouts_digest
        if (report := reading_progress()) is not None:
            read = _ReportingDigest(rollouts_digest, report, _size_or_zero(run.rollouts))
        count = 0
        seen = TimesSeen()

        def counted() -> Iterator[Rollout]:
            nonlocal count
            for rollout in iter_rollouts(run, read):
                count += 1
                seen.see(rollout.record)
                yield rollout

        if rollouts_sink is not None:
            rollouts_sink(counted())
        elif not parse_rollouts:
            count = count_rollouts(run, read)
        else:
            for _ in counted():
                pass
        if count == 0:
            raise RunFileError(run.no_records_message)
    except BaseException:  # a bad line or a stop signal: leave nothing behind
        for directory in scratch:
            shutil.rmtree(directory, ignore_errors=True)
            if released is not None:
                released(directory)
        raise
    digests = {
        run.rollouts: rollouts_digest.digest(),
        run.aggregate_metrics: hashlib.sha256(metrics_bytes).digest(),
        run.saved_config: hashlib.sha256(config_bytes).digest(),
    }
    return PreparedRun(
        run=run,
        fingerprint=fingerprint_of((path.name, digests[path]) for path in fingerprinted_files(run)),
        aggregate_metrics=metrics_bytes,
        metrics=metrics,
        saved_config=saved_config,
        rollout_count=count,
        evaluation=seen.times(fingerprinted_files(run)),
        rollouts_table=rollouts_table,
        scratch=scratch,
        released=released,
    )
