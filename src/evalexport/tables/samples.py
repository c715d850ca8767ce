"""A typed table of the rollouts, one row each, beside Gym's one-column ``Rollouts`` table.

Gym's live exporters upload each rollout as one JSON string (kept as it is:
:mod:`.tables`), which no MLflow or W&B view can sort or filter by reward. This table has a
column per value: ``task_index``, ``rollout_index``, ``agent``, ``reward`` (a number; empty
where a rollout has none), NeMo Gym's ``health_verdict`` of each rollout when the run has
its verdicts, then every top-level field whose value is a scalar of one kind (a
number, a boolean, or a text) in every rollout, in the order the first rollout holds them: a
field that is a number in one rollout and a text in another is no column, as W&B's tables
refuse a column of mixed kinds. A text longer than :data:`TEXT_LIMIT` characters is cut
there, ``…`` marking the cut; a number that is not finite is an empty cell (JSON has no NaN).
Written while the rollouts are read, never held: each row goes to
a scratch file as it comes, and the table is written from it once the shared columns are known.
"""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Final

import msgspec

from evalexport import egress
from evalexport.egress import Egress
from evalexport.gym.health import RunHealth
from evalexport.reading import PreparedRun, Rollout
from evalexport.trajectory.from_conversation import recorded_output

__all__ = [
    "CONVERSATION_COLUMNS",
    "SAMPLES_FILE",
    "TEXT_LIMIT",
    "VERDICT_COLUMN",
    "SamplesSeen",
    "SamplesTable",
]

SAMPLES_FILE: Final = PreparedRun.SAMPLES_FILE
"""The MLflow table artifact, beside Gym's ``rollouts.json``."""
TEXT_LIMIT: Final = 1000
"""The longest text a cell holds, in characters; a longer one is cut, ``…`` marking it."""

_FIXED: Final = ("task_index", "rollout_index", "agent", "reward")
CONVERSATION_COLUMNS: Final = ("turns", "tool_calls", "final_answer")
"""What the rollout's conversation (``response.output``) says, readable in a table: the
agent's turns (its runs of output between tool results and input), its tool calls, and its
final answer's text; empty cells for a row that records no response."""
VERDICT_COLUMN: Final = RunHealth.VERDICT_COLUMN
"""NeMo Gym's verdict of the rollout (``rollout_verdicts.jsonl``), after the fixed columns,
when the run has a verdicts file that describes it."""
_NOT_COLUMNS: Final = frozenset({"_ng_task_index", "_ng_rollout_index", "reward", "agent_ref"})


class SamplesTable:
    """The samples table of the rollouts fed to :meth:`rows`, written by :meth:`write`."""

    ROWS_FILE: Final = "samples.rows.jsonl"
    """Where :meth:`rows` notes each row in its scratch directory, one JSON line a row."""

    def __init__(
        self, scratch: Path, health: RunHealth | None = None, gate: Egress | None = None
    ) -> None:
        """``gate``: what each row passes on its way out (the rollouts table's); by default
        the export's (:func:`evalexport.egress.current`)."""
        self._rows_file = scratch / self.ROWS_FILE
        self._gate = gate
        self._health = health
        self._shared: dict[str, type] | None = None
        """The candidate columns so far, each with the kind of value it holds."""
        self._text_indexes: set[str] = set()
        """Index columns that met a value other than an integer: written as text."""
        self._count = 0
        self._keys: tuple[str, ...] | None = None
        """The first row's columns, in order (:meth:`_row`)."""
        self._same_keys = True
        """Whether every row noted so far had the first row's columns."""

    def rows(self, rollouts: Iterator[Rollout]) -> Iterator[Rollout]:
        """The rollouts, passed on as they are, each row noted on the way.

        A row is noted as the JSON array of its values, after a line ``{"keys": [...]}``
        naming them wherever they differ from the row before's (so before the first row,
        and a part noted by another process begins with its own): when every row has the
        table's columns in its order, :meth:`write` copies the arrays as they are.
        """
        # A lone surrogate is written as its JSON escape (see tables.write_table_rows), and
        # each row passes the export's gate, as in every table.
        gate = self._gate or egress.current()
        last: tuple[str, ...] | None = None
        with self._rows_file.open("w", encoding="utf-8", errors="backslashreplace") as rows:
            for rollout in rollouts:
                keys, values = self._row(rollout.record, rollout.ordinal)
                if keys != last:
                    rows.write(_ENCODER.encode({"keys": keys}) + "\n")
                    self._note_keys(keys)
                    last = keys
                rows.write(gate.row_record(values, rollout.line_number, _ENCODER.encode) + "\n")
                self._count += 1
                yield rollout

    def _note_keys(self, keys: tuple[str, ...] | None) -> None:
        """Rows of columns ``keys`` (``None``: no row) follow the rows noted so far."""
        if self._keys is None:
            self._keys = keys
        elif keys is not None and keys != self._keys:
            self._same_keys = False

    def _index(self, column: str, value: object) -> object:
        """An index as its cell: an integer as it is; anything else (not Gym's) as its JSON
        text, and then the whole column as text, as W&B's tables take one kind a column."""
        if value is None:
            return None
        if isinstance(value, int) and not isinstance(value, bool) and _number(value):
            return value
        self._text_indexes.add(column)
        return _cell(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))

    def _row(
        self, record: Mapping[str, object], ordinal: int | None = None
    ) -> tuple[tuple[str, ...], list[object]]:
        """A rollout's columns and their values, in the table's order: the fixed columns, the
        verdict, the conversation's, then its scalar fields in the order it holds them."""
        agent_ref = record.get("agent_ref")
        name = agent_ref.get("name") if isinstance(agent_ref, Mapping) else None
        values: list[object] = [
            self._index("task_index", record.get("_ng_task_index")),
            self._index("rollout_index", record.get("_ng_rollout_index")),
            name if isinstance(name, str) else None,
            _reward(record.get("reward")),
        ]
        keys: tuple[str, ...] = _FIXED
        if self._health is not None and self._health.verdicts is not None:
            values.append(self._health.verdict_of(record, ordinal))
            keys += (VERDICT_COLUMN,)
        values += _conversation(record).values()
        keys += CONVERSATION_COLUMNS
        scalars: dict[str, type] = {}
        for key, value in record.items():
            if (
                key not in _NOT_COLUMNS
                and key not in _FIXED
                and key not in CONVERSATION_COLUMNS
                and (kind := _kind(value))
            ):
                scalars[key] = kind
        if self._shared is None:
            self._shared = dict(scalars)
        else:
            shared = self._shared
            self._shared = {k: kind for k, kind in shared.items() if scalars.get(k) is kind}
        values += [_cell(record[key]) for key in scalars]
        return keys + tuple(scalars), values

    def seen(self) -> SamplesSeen:
        """What the rows noted so far say of the columns: for another table's :meth:`absorb`."""
        return SamplesSeen(
            rows=self._count,
            columns=None
            if self._shared is None
            else [(key, _KIND_NAMES[kind]) for key, kind in self._shared.items()],
            text_indexes=sorted(self._text_indexes),
            keys=None if self._keys is None else list(self._keys),
            same_keys=self._same_keys,
        )

    def absorb(self, rows_file: Path, seen: SamplesSeen) -> None:
        """Take in the rows another table noted (``rows_file``, after this table's own) and
        what they say of the columns, as if this table had noted them: a column is shared
        when it is in both, of one kind."""
        with rows_file.open("rb") as rows, self._rows_file.open("ab") as own:
            shutil.copyfileobj(rows, own, 2**20)
        self._count += seen.rows
        self._text_indexes.update(seen.text_indexes)
        self._same_keys &= seen.same_keys
        self._note_keys(None if seen.keys is None else tuple(seen.keys))
        if seen.columns is None:
            return
        theirs = {key: _KINDS[name] for key, name in seen.columns}
        if self._shared is None:
            self._shared = theirs
        else:
            self._shared = {k: kind for k, kind in self._shared.items() if theirs.get(k) is kind}

    def write(self, path: Path) -> Path:
        """``{"columns": [...], "data": [[...], ...]}``, MLflow's and W&B's table JSON, from the
        rows noted: the fixed columns and the scalar fields every rollout has."""
        verdict = (
            [VERDICT_COLUMN] if self._health is not None and self._health.verdicts_fit() else []
        )
        columns = [*_FIXED, *verdict, *CONVERSATION_COLUMNS, *(self._shared or {})]
        # Every row of the table's columns, in its order, and no index to write as text: the
        # rows are the table's as noted (most runs), else each is read and written again.
        as_noted = self._same_keys and self._keys == tuple(columns) and not self._text_indexes
        with (
            self._rows_file.open(encoding="utf-8") as rows,
            path.open("w", encoding="utf-8", errors="backslashreplace") as out,
        ):
            out.write(json.dumps({"columns": columns})[:-1] + ', "data": [')
            separator = "\n"
            keys: list[str] = []
            for line in rows:
                if line.startswith("{"):  # the columns of the rows that follow
                    keys = json.loads(line)["keys"]
                    continue
                out.write(separator)
                separator = ",\n"
                if as_noted:
                    out.write(line[:-1])
                    continue
                row = dict(zip(keys, json.loads(line), strict=True))
                for column in self._text_indexes:
                    if isinstance(row.get(column), int):
                        row[column] = str(row[column])
                out.write(_ENCODER.encode([row.get(column) for column in columns]))
            out.write("\n]}\n")
        self._rows_file.unlink()
        return path


_ENCODER: Final = json.JSONEncoder(ensure_ascii=False)
"""``json.dumps(value, ensure_ascii=False)``, one encoder for every row (``json.dumps`` makes
one a call when given an argument)."""


def _conversation(record: Mapping[str, object]) -> dict[str, object]:
    """The conversation columns of one rollout (:data:`CONVERSATION_COLUMNS`)."""
    response = record.get("response")
    if not isinstance(response, Mapping) or not isinstance(response.get("output"), list):
        return dict.fromkeys(CONVERSATION_COLUMNS)
    output = recorded_output(response)
    turns = tool_calls = 0
    answering = False  # within a run of the agent's own output
    final_answer: str | None = None
    for item in output:
        mapping = type(item) is dict or isinstance(item, Mapping)  # a dict without the ABC
        kind = item.get("type") if mapping else None
        role = item.get("role") if mapping else None
        if kind in ("reasoning", "function_call") or (kind == "message" and role == "assistant"):
            turns += not answering
            answering = True
            tool_calls += kind == "function_call"
            if kind == "message" and mapping:
                final_answer = _text_of(item.get("content"))
        else:  # a tool's result, or input: the agent's next output is its next turn
            answering = False
    return {
        "turns": turns,
        "tool_calls": tool_calls,
        "final_answer": None if final_answer is None else _cell(final_answer),
    }


def _text_of(content: object) -> str | None:
    """A message's text: its ``output_text`` parts joined, or the content when it is text."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return None
    texts = [
        part["text"]
        for part in content
        if isinstance(part, Mapping) and isinstance(part.get("text"), str)
    ]
    return "".join(texts) if texts else None


class SamplesSeen(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """What a :class:`SamplesTable`'s rows say of its columns (:meth:`SamplesTable.seen`):
    sent from the process that read part of a run to the one that writes the table."""

    rows: int
    columns: list[tuple[str, str]] | None
    """The scalar fields every row so far holds, in order, each with its kind's name
    (``str``, ``bool``, ``float``); ``None`` before the first row."""
    text_indexes: list[str]
    """Index columns that met a value other than an integer."""
    keys: list[str] | None
    """The first row's columns, in order; ``None`` before the first row."""
    same_keys: bool
    """Whether every row had the first row's columns."""


_KINDS: Final[dict[str, type]] = {"str": str, "bool": bool, "float": float}
_KIND_NAMES: Final[dict[type, str]] = {kind: name for name, kind in _KINDS.items()}


def _kind(value: object) -> type | None:
    """The kind of a scalar, as a table column holds it: text, boolean or number."""
    if isinstance(value, str):
        return str
    if isinstance(value, bool):
        return bool
    if isinstance(value, int | float):
        return float
    return None


def _reward(value: object) -> float | None:
    """The reward as a number (Gym's is a float; a boolean reward counts as 1.0 or 0.0), or
    ``None``: none, or not a finite number (JSON has no NaN, and MLflow's UI parses JSON)."""
    return float(value) if isinstance(value, bool | int | float) and _number(value) else None


def _cell(value: object) -> Any:
    """A scalar as a table cell: text cut at :data:`TEXT_LIMIT` characters, others as they
    are (``None`` for what is no scalar)."""
    if isinstance(value, str):
        text = value if len(value) <= TEXT_LIMIT else value[: TEXT_LIMIT - 1] + "…"
        if text.isascii():  # known without a scan: no surrogate in it
            return text
        # A lone surrogate (JSON's "\ud800") has no UTF-8: it is shown as U+FFFD.
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return value if _number(value) else None


def _number(value: object) -> bool:
    """A boolean, or a number a float holds (JSON's integers have no bound, floats'
    NaN and infinity no JSON)."""
    if isinstance(value, bool):
        return True
    if isinstance(value, int):
        return abs(value) <= 2**53
    return isinstance(value, float) and math.isfinite(value)
