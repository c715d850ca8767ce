"""The typed samples table (``tables/samples.py``) written beside Gym's rollouts table:
a column per scalar the rollouts share, so MLflow and W&B can sort and filter by them."""

from __future__ import annotations

import json
from pathlib import Path

from evalexport.reading import Rollout
from evalexport.tables.prepare import prepare
from evalexport.tables.samples import SAMPLES_FILE, TEXT_LIMIT, SamplesTable


def _table(records: list[dict], tmp_path: Path) -> dict:
    table = SamplesTable(tmp_path)
    rollouts = (Rollout(number, record) for number, record in enumerate(records, 1))
    assert [r.record for r in table.rows(rollouts)] == records  # passed on as they are
    return json.loads(table.write(tmp_path / SAMPLES_FILE).read_text(encoding="utf-8"))


def test_a_factory_run_has_a_row_per_rollout_with_its_reward(make_sample_run) -> None:
    sample = make_sample_run()
    prepared = prepare(sample.run, rollouts_table=True)
    try:
        assert prepared.rollouts_table is not None
        path = prepared.rollouts_table.parent / SAMPLES_FILE
        table = json.loads(path.read_text(encoding="utf-8"))
    finally:
        prepared.discard()
    assert not path.exists()
    records = [json.loads(line) for line in sample.rollouts.read_text().splitlines()]
    assert table["columns"] == [
        "task_index",
        "rollout_index",
        "agent",
        "reward",
        "turns",
        "tool_calls",
        "final_answer",
        "expected_answer",
        "symbolic_correct",
    ]
    assert table["data"] == [
        [
            r["_ng_task_index"],
            r["_ng_rollout_index"],
            r["agent_ref"]["name"],
            r["reward"],
            1,
            0,
            r["response"]["output"][-1]["content"][0]["text"],
            r["expected_answer"],
            r["symbolic_correct"],
        ]
        for r in records
    ]
    assert all(isinstance(row[3], float) for row in table["data"])


def test_a_column_is_a_scalar_of_one_kind_in_every_rollout(tmp_path: Path) -> None:
    base = {"_ng_task_index": 0, "_ng_rollout_index": 0, "reward": 1}
    table = _table(
        [
            {**base, "answer": "4", "score": 1, "flag": True, "mixed": 1, "sometimes": "x"},
            {**base, "answer": "5", "score": 2.5, "flag": False, "mixed": "1", "nested": {}},
        ],
        tmp_path,
    )
    assert table["columns"][7:] == ["answer", "score", "flag"]
    assert table["data"][0] == [0, 0, None, 1.0, None, None, None, "4", 1, True]


def test_cells_hold_what_json_and_the_tables_can(tmp_path: Path) -> None:
    long = "é" * (TEXT_LIMIT + 5)
    table = _table(
        [
            {"reward": float("nan"), "text": long, "big": 10**400, "odd": "a\ud800b"},
            {"reward": True, "text": "short", "big": 1, "odd": "c"},
        ],
        tmp_path,
    )
    first, second = table["data"]
    assert (first[3], second[3]) == (None, 1.0)
    assert len(first[7]) == TEXT_LIMIT
    assert first[7].endswith("…")
    assert first[7][:-1] == long[: TEXT_LIMIT - 1]
    assert first[8] is None  # an integer no float holds
    assert first[9] == "a\ufffdb"
    assert "NaN" not in (tmp_path / SAMPLES_FILE).read_text(encoding="utf-8")


def test_the_conversation_is_readable_turns_tool_calls_and_final_answer(tmp_path: Path) -> None:
    """A tool loop as Gym's agents record it in ``response.output`` (#43)."""
    loop = [
        {"type": "reasoning", "summary": [{"type": "summary_text", "text": "think"}]},
        {"type": "function_call", "call_id": "a", "name": "python", "arguments": "{}"},
        {"type": "function_call", "call_id": "b", "name": "python", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "a", "output": "1"},
        {"type": "function_call_output", "call_id": "b", "output": "2"},
        {
            "type": "message",
            "role": "assistant",
            "content": [
                {"type": "output_text", "text": "The answer "},
                {"type": "output_text", "text": "is 3."},
            ],
        },
    ]
    table = _table(
        [{"reward": 1.0, "response": {"output": loop}}, {"reward": 0.0, "response": None}],
        tmp_path,
    )
    assert table["columns"][4:7] == ["turns", "tool_calls", "final_answer"]
    assert [row[4:7] for row in table["data"]] == [[2, 2, "The answer is 3."], [None, None, None]]


def test_an_aviary_rows_conversation_is_read_from_its_last_transition(tmp_path: Path) -> None:
    """Gym's aviary agent with ``return_transitions``: ``response.output`` is a list of
    conversations, the last holding the others (its columns were 0 turns, 0 tool calls)."""
    from tests.support.recorded_shapes import transitions_row

    table = _table([transitions_row(0)], tmp_path)
    at = table["columns"].index("turns")
    assert table["data"][0][at : at + 3] == [2, 2, None]


def _written(records: list[dict], directory: Path, *, as_noted: bool) -> bytes:
    directory.mkdir()
    table = SamplesTable(directory)
    for _ in table.rows(Rollout(number, record) for number, record in enumerate(records, 1)):
        pass
    if not as_noted:
        table._same_keys = False  # as if one row had other columns: each row written again
    return table.write(directory / SAMPLES_FILE).read_bytes()


def test_rows_of_the_tables_columns_are_copied_as_noted_and_read_back_alike(
    make_sample_run, tmp_path: Path
) -> None:
    """Most runs' rows have the same columns: they are copied as noted, not parsed and
    written again, and the table is the same either way, byte for byte."""
    sample = make_sample_run()
    records = [json.loads(line) for line in sample.rollouts.read_text().splitlines()]
    records[1]["odd"] = records[0]["odd"] = "a\ud800b é\u2028"  # a column of their own
    for record in records[2:]:
        record["odd"] = "x"
    copied = _written(records, tmp_path / "copied", as_noted=True)
    rewritten = _written(records, tmp_path / "rewritten", as_noted=False)
    assert copied == rewritten
    assert len(json.loads(copied)["data"]) == len(records)
    assert json.loads(copied)["columns"][-1] == "odd"


def test_rows_of_other_columns_are_each_read_by_their_own_names(tmp_path: Path) -> None:
    """A row's columns are named wherever they change: rows in another order, or with a
    field the others lack, land in the table's columns all the same."""
    base = {"_ng_task_index": 0, "_ng_rollout_index": 0, "reward": 1}
    table = _table(
        [
            {**base, "a": "1", "b": 2},
            {**base, "b": 3, "a": "4", "extra": True},
            {**base, "b": 5, "a": "6", "extra": True},
            {**base, "a": "7", "b": 8},
        ],
        tmp_path,
    )
    assert table["columns"][7:] == ["a", "b"]
    assert [row[7:] for row in table["data"]] == [["1", 2], ["4", 3], ["6", 5], ["7", 8]]
