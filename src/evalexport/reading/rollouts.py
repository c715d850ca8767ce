"""The rollouts file, one line at a time: each line parsed (by msgspec where that is exact,
else by ``json``), hashed as it is read, bounded in length, and named by its line number in
every error."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Final

from evalexport.host.files import MAX_LINE_BYTES
from evalexport.reading.files import CHUNK, Digest, RunFileError, RunPaths, open_regular

__all__ = [
    "MAX_LINE_BYTES",
    "Cursor",
    "Rollout",
    "count_rollouts",
    "holds_no_rollouts",
    "iter_rollouts",
    "open_rollouts",
    "read_rollouts",
    "too_long_message",
]


@dataclass(frozen=True)
class Rollout:
    """One line of the rollouts file, with the line number errors refer to."""

    line_number: int
    record: dict[str, object]
    size_bytes: int = 0
    """The length of its line in the file, line break included."""
    strict_json: bool = False
    """Its line is JSON as RFC 8259 has it (no ``NaN``, infinity or lone surrogate), read by
    msgspec: any strict JSON encoder writes its values back as they are (the tables' cells
    are written by msgspec then, :mod:`evalexport.tables.rollouts`)."""
    ordinal: int | None = None
    """Its place among the file's rows (lines not blank), from 0, as NeMo Gym's health checks
    count it to number a row without indices; ``None`` where a read began mid-file."""

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


def iter_rollouts(run: RunPaths, digest: Digest | None = None) -> Iterator[Rollout]:
    """Stream the rollouts one line at a time; blank lines are skipped.

    Raises :class:`RunFileError` naming the 1-based line number of a malformed line. One line
    may be very long (a model that never stopped): while it is parsed, only its bytes or its
    text, and the parsed record, are held, never a further copy. ``digest`` (a :mod:`hashlib`
    hash) is fed every byte of the file as it is read, so one pass both parses and hashes it.
    """
    with open_rollouts(run) as handle:
        yield from read_rollouts(run, handle, digest)


def count_rollouts(run: RunPaths, digest: Digest | None = None) -> int:
    """How many lines of the rollouts file are not blank, without parsing them; ``digest`` is
    fed the file's bytes as for :func:`iter_rollouts`."""
    count = 0
    with open_rollouts(run) as handle:
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
            while line := handle.readline(CHUNK):
                if not line.isspace():
                    return False
            return True
    except (OSError, RunFileError):
        return False  # the reader names the problem


def open_rollouts(run: RunPaths) -> BinaryIO:
    """The rollouts file, opened for reading; :class:`RunFileError` names what stops it."""
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


@dataclass
class Cursor:
    """Where a read of the rollouts file stands: the lines, rows (lines not blank) and bytes
    read so far; ``rows`` is ``None`` for a read that began mid-file, which does not know it."""

    lines: int = 0
    offset: int = 0
    rows: int | None = 0


def read_rollouts(
    run: RunPaths,
    handle: BinaryIO,
    digest: Digest | None = None,
    *,
    cursor: Cursor | None = None,
    end: int | None = None,
) -> Iterator[Rollout]:
    """:func:`iter_rollouts` from a handle the caller opened on the rollouts file.

    ``cursor``: where the handle stands (line numbers go on from its ``lines``), moved on as
    lines are read. ``end``: stop before a line that starts at this byte offset or after it
    (a line boundary, :mod:`evalexport.tables.split_read`), the rest left unread.
    """
    if cursor is None:
        cursor = Cursor()
    while end is None or cursor.offset < end:
        line_number = cursor.lines + 1
        # Passed, not bound: the line's bytes are freed as soon as they are decoded.
        held = [_line(run, handle, line_number)]
        if not held[0]:
            return  # the end of the file
        if digest is not None:
            digest.update(held[0])
        cursor.offset += len(held[0])
        cursor.lines = line_number
        parsed = _parse_line(run, held.pop(), line_number, cursor.rows)
        if parsed is not None and parsed is not _BLANK_LINE:
            if cursor.rows is not None:
                cursor.rows += 1
            yield parsed


def _parse_line(
    run: RunPaths, raw: bytes, line_number: int, ordinal: int | None = None
) -> Rollout | None:
    """The rollout on one line (the file's row ``ordinal``), ``_BLANK_LINE`` for a blank
    one, ``None`` at the end of the file."""
    if not raw:
        return None
    size = len(raw)
    fast = _fast_decode()(raw)  # None when refused: the strict parser decides, in its words
    if isinstance(fast, dict):
        return Rollout(line_number, fast, size, strict_json=True, ordinal=ordinal)
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
    except ValueError as error:  # an integer longer than Python reads (4,300 digits)
        raise RunFileError(
            f"Malformed rollouts file {run.rollouts}: line {line_number} cannot be read "
            f"({error}); NeMo Gym's own json.loads refuses it too"
        ) from None
    if not isinstance(record, dict):
        raise RunFileError(
            f"Malformed rollouts file {run.rollouts}: line {line_number} is a JSON "
            f"{type(record).__name__}, expected an object"
        )
    return Rollout(line_number, record, size, ordinal=ordinal)


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
def _fast_decode() -> Callable[[bytes], object]:
    """msgspec's JSON decoder: 2.5x ``json.loads`` on a rollout line.

    It is exact for what it accepts (the same objects ``json.loads`` gives, the last of
    duplicate keys kept, integers of any size, floats correctly rounded) and refuses what
    ``json.loads`` reads differently (``NaN``, lone surrogates, numbers out of a float's range,
    malformed lines): those lines go to ``json.loads``, whose verdict and messages stand
    (``tests/property/test_rollout_parsing.py``). The function returns ``None`` for a line it
    refuses.
    """
    import msgspec  # a dependency; imported when the first line is read, not at startup

    decode = msgspec.json.Decoder().decode
    refused = (msgspec.MsgspecError, RecursionError)

    def decoded(raw: bytes) -> object:
        try:
            return decode(raw)
        except refused:
            return None

    return decoded
