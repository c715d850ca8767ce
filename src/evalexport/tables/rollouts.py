"""The rollouts as a table, as NeMo Gym's live exporters upload them (SPEC §3.6, §3.7).

One column, ``Rollout``, one row per rollout holding the rollout as compact JSON text, without
``ng_trajectory`` and without the request and response payloads of ``ng_model_call_capture``
(Gym's ``_rollout_for_export``): the rows of a run exported afterwards are those of the same run
logged live.

Each cell passes the export's egress gate (:mod:`evalexport.egress`) as it is written: the
rules of SPEC §2 as a row reads them (free text: secret-named keys at any depth, URLs'
credentials, generated-looking secrets, JSON held in texts) and the secrets the export knows;
a cell costs a few scans for the rules' anchors, and only its strings holding one are read.
"""

from __future__ import annotations

import functools
import json
import shutil
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Final, TextIO

from evalexport import egress
from evalexport.egress import Egress
from evalexport.run import Rollout, RunArtifacts, RunFileError

__all__ = [
    "ROLLOUT_COLUMN",
    "RowTooDeep",
    "rollout_for_export",
    "write_rollouts_table",
    "write_rows",
    "write_table_rows",
]

ROLLOUT_COLUMN: Final = "Rollout"
_MODEL_CALL_PAYLOADS: Final = frozenset({"request", "response", "request_raw", "response_raw"})


def rollout_for_export(rollout: Mapping[str, object]) -> dict[str, object]:
    """A rollout as Gym's exporters upload it: no trajectory, no model-call payloads."""
    row = {key: value for key, value in rollout.items() if key != "ng_trajectory"}
    capture = row.pop("ng_model_call_capture", None)
    if isinstance(capture, Mapping):
        stripped = dict(capture)
        calls = capture.get("calls")
        if isinstance(calls, list):
            stripped["calls"] = [
                {key: value for key, value in call.items() if key not in _MODEL_CALL_PAYLOADS}
                for call in calls
                if isinstance(call, Mapping)
            ]
        else:
            stripped.pop("calls", None)
        row["ng_model_call_capture"] = stripped
    return row


def write_rollouts_table(run: RunArtifacts, path: Path) -> Path:
    """The rollouts of ``run`` as a table file (:func:`write_table_rows`)."""
    return write_table_rows(run.iter_rollouts(), path)


def write_table_rows(
    rollouts: Iterable[Rollout],
    path: Path,
    gate: Egress | None = None,
    rows_after: Callable[[], Path | None] | None = None,
) -> Path:
    """``{"columns": ["Rollout"], "data": [[...], ...]}`` (MLflow's and W&B's table JSON),
    written as the rollouts arrive, never held whole.

    Each row is one cell, the rollout's compact JSON as a JSON string. A rollout whose line is
    long (:data:`STREAMED_ABOVE`) is written piece by piece, so no copy of it is made beyond
    the record the reader parsed: its cell is the same text either way. Each cell passes
    ``gate`` (by default the export's, :func:`evalexport.egress.current`). ``rows_after``,
    asked once the rollouts are written: a file of further rows (:func:`write_rows`, another
    process's part of the run, masked there) to append, or ``None``.
    """
    gate = gate or egress.current()
    with path.open("w", encoding="utf-8", errors="backslashreplace") as handle:
        handle.write('{"columns": ["' + ROLLOUT_COLUMN + '"], "data": [')
        written = write_rows(handle, rollouts, gate)
        if rows_after is not None and (part := rows_after()) is not None:
            with part.open("rb") as rows:
                if (first := rows.read(1)) and written:
                    handle.write(",")  # the part's rows begin with their line break
                handle.flush()  # what the text layer holds first, then the part's bytes
                handle.buffer.write(first)
                shutil.copyfileobj(rows, handle.buffer, _COPIED)
        handle.write("\n]}\n")
    return path


def write_rows(handle: TextIO, rollouts: Iterable[Rollout], gate: Egress) -> int:
    """The rows of a rollouts table (:func:`write_table_rows`), one a rollout, each on a line
    of its own after a comma (but the first), without the table's head and end, each through
    ``gate``; how many were written."""
    # A lone surrogate (valid JSON as "\ud800", not UTF-8) is written as that escape, the
    # handle's errors="backslashreplace": the table stays valid UTF-8 JSON and reads back as
    # the rollout held it.
    position = 0
    for position, rollout in enumerate(rollouts, 1):
        handle.write(",\n" if position > 1 else "\n")
        try:
            _write_row(handle, rollout, gate)
        except RecursionError:  # the same in a dry run, which writes the tables too
            raise RowTooDeep(rollout.line_number) from None
    return position


class RowTooDeep(RunFileError):
    """A rollout nested too deeply to write as a row (its reader names the file)."""

    def __init__(self, line_number: int) -> None:
        super().__init__(
            f"line {line_number} is nested too deeply to export (a rollout nests 18 levels at "
            "most in NeMo Gym's own runs)"
        )
        self.line_number = line_number


def _write_row(handle: TextIO, rollout: Rollout, gate: Egress) -> None:
    """One row of a rollouts table, its cell through ``gate``."""
    row = rollout_for_export(rollout.record)
    if rollout.size_bytes > STREAMED_ABOVE:
        # Masked as a value, never held as one text; its pieces are written as they are.
        handle.write('["')
        masked = gate.row_value(row, rollout.line_number)
        for piece in _escaped_pieces(masked, rollout.strict_json):
            handle.write(piece)
        handle.write('"]')
    else:
        encode = _strict_compact if rollout.strict_json else _COMPACT.encode
        text = gate.row_record(row, rollout.line_number, encode)
        handle.write("[" + _as_string(text) + "]")


_COMPACT: Final = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
"""``json.dumps(row, ensure_ascii=False, separators=(",", ":"))``, one encoder for all rows."""


def _compact(row: object, strict_json: bool) -> str:
    """A row's compact JSON text: msgspec's for a row read as strict JSON (five times
    ``json``'s speed; its numbers differ from ``json``'s only in how an exponent is spelled,
    ``1e16`` for ``1e+16``, as NeMo Gym's own cells, orjson's, spell theirs differently again),
    ``json``'s for any other row (its ``NaN``, infinities and lone surrogates as ``json`` writes
    them, where msgspec would write ``null`` or refuse)."""
    if strict_json:
        try:
            return _strict_encoder()(row).decode()
        except Exception:  # a value a hook put in the record, say: json's verdict stands
            pass
    return _COMPACT.encode(row)


def _strict_compact(row: object) -> str:
    """:func:`_compact` of a row read as strict JSON."""
    return _compact(row, True)


@functools.cache
def _strict_encoder() -> Callable[[object], bytes]:
    """msgspec's JSON encoder (as the rollouts' reader uses its decoder)."""
    import msgspec

    return msgspec.json.Encoder().encode


_as_string: Final = json.encoder.encode_basestring
"""``json.dumps(text, ensure_ascii=False)`` of a ``str``, without building an encoder."""

STREAMED_ABOVE: Final = 4 * 2**20
"""Rollout lines longer than this many bytes are written to a table piece by piece."""
_PIECE: Final = 2**20
_COPIED: Final = 2**20
"""Bytes a read when another process's rows are appended to a table."""


def _escaped_pieces(row: object, strict_json: bool = False) -> Iterator[str]:
    """The row's cell, ``json.dumps(_compact(row, strict_json), ensure_ascii=False)``, without
    its quotes, in pieces of about :data:`_PIECE` characters.

    JSON escapes a string one character at a time, so escaping the pieces of a text one by one
    gives the escaped text.
    """
    pending: list[str] = []
    size = 0
    for piece in _compact_pieces(row, strict_json):
        pending.append(piece)
        size += len(piece)
        if size >= _PIECE:
            yield json.dumps("".join(pending), ensure_ascii=False)[1:-1]
            pending, size = [], 0
    if pending:
        yield json.dumps("".join(pending), ensure_ascii=False)[1:-1]


def _compact_pieces(value: object, strict_json: bool = False) -> Iterator[str]:
    """``_compact(value, strict_json)`` in pieces; a long string is cut into pieces of
    :data:`_PIECE` characters. ``value`` is parsed JSON, masked whole already. (msgspec and
    ``json`` escape text alike, character for character; they differ only in numbers,
    written here by the row's own encoder.)"""
    if isinstance(value, str):
        if len(value) <= _PIECE:
            yield json.dumps(value, ensure_ascii=False)
            return
        yield '"'
        for start in range(0, len(value), _PIECE):
            yield json.dumps(value[start : start + _PIECE], ensure_ascii=False)[1:-1]
        yield '"'
    elif isinstance(value, Mapping):
        yield "{"
        for position, (key, item) in enumerate(value.items()):
            yield ("," if position else "") + json.dumps(str(key), ensure_ascii=False) + ":"
            yield from _compact_pieces(item, strict_json)
        yield "}"
    elif isinstance(value, list | tuple):
        yield "["
        for position, item in enumerate(value):
            if position:
                yield ","
            yield from _compact_pieces(item, strict_json)
        yield "]"
    else:  # a number, true, false, null: as the whole row's encoder writes them (_compact)
        yield _compact(value, strict_json)
