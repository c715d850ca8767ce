"""The rollouts as a table, as NeMo Gym's live exporters upload them (SPEC §3.6, §3.7).

One column, ``Rollout``, one row per rollout holding the rollout as compact JSON text, without
``ng_trajectory`` and without the request and response payloads of ``ng_model_call_capture``
(Gym's ``_rollout_for_export``): the rows of a run exported afterwards are those of the same run
logged live.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Final

from evalexport.run import Rollout, RunArtifacts

__all__ = [
    "ROLLOUTS_TABLE_KEY",
    "ROLLOUT_COLUMN",
    "rollout_for_export",
    "write_rollouts_table",
    "write_table_rows",
]

ROLLOUT_COLUMN: Final = "Rollout"
ROLLOUTS_TABLE_KEY: Final = "Rollouts"
"""The key of the W&B table (Gym's ``WandbExporter.ROLLOUTS_TABLE_KEY``)."""
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


def write_table_rows(rollouts: Iterable[Rollout], path: Path) -> Path:
    """``{"columns": ["Rollout"], "data": [[...], ...]}`` (MLflow's and W&B's table JSON),
    written as the rollouts arrive, never held whole.

    Each row is one cell, the rollout's compact JSON as a JSON string. A rollout whose line is
    long (:data:`STREAMED_ABOVE`) is written piece by piece, so no copy of it is made beyond
    the record the reader parsed: its cell is the same text either way.
    """
    # A lone surrogate (valid JSON as "\ud800", not UTF-8) is written as that escape: the
    # table stays valid UTF-8 JSON and reads back as the rollout held it.
    with path.open("w", encoding="utf-8", errors="backslashreplace") as handle:
        handle.write('{"columns": ["' + ROLLOUT_COLUMN + '"], "data": [')
        for position, rollout in enumerate(rollouts):
            handle.write(",\n" if position else "\n")
            row = rollout_for_export(rollout.record)
            if rollout.size_bytes > STREAMED_ABOVE:
                handle.write('["')
                for piece in _escaped_pieces(row):
                    handle.write(piece)
                handle.write('"]')
            else:
                handle.write("[" + _as_string(_COMPACT.encode(row)) + "]")
        handle.write("\n]}\n")
    return path


_COMPACT: Final = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
"""``json.dumps(row, ensure_ascii=False, separators=(",", ":"))``, one encoder for all rows."""
_as_string: Final = json.encoder.encode_basestring
"""``json.dumps(text, ensure_ascii=False)`` of a ``str``, without building an encoder."""

STREAMED_ABOVE: Final = 4 * 2**20
"""Rollout lines longer than this many bytes are written to a table piece by piece."""
_PIECE: Final = 2**20


def _escaped_pieces(row: object) -> Iterator[str]:
    """``json.dumps(json.dumps(row, ensure_ascii=False, separators=(",", ":")),
    ensure_ascii=False)`` without its quotes, in pieces of about :data:`_PIECE` characters.

    JSON escapes a string one character at a time, so escaping the pieces of a text one by one
    gives the escaped text.
    """
    pending: list[str] = []
    size = 0
    for piece in _compact_pieces(row):
        pending.append(piece)
        size += len(piece)
        if size >= _PIECE:
            yield json.dumps("".join(pending), ensure_ascii=False)[1:-1]
            pending, size = [], 0
    if pending:
        yield json.dumps("".join(pending), ensure_ascii=False)[1:-1]


def _compact_pieces(value: object) -> Iterator[str]:
    """``json.dumps(value, ensure_ascii=False, separators=(",", ":"))`` in pieces; a long
    string is cut into pieces of :data:`_PIECE` characters. ``value`` is parsed JSON."""
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
            yield from _compact_pieces(item)
        yield "}"
    elif isinstance(value, list | tuple):
        yield "["
        for position, item in enumerate(value):
            if position:
                yield ","
            yield from _compact_pieces(item)
        yield "]"
    else:  # a number, true, false, null: as json.dumps writes them
        yield json.dumps(value)
