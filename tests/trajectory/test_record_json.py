"""A model call cited by an ATIF step is dumped as pydantic's
``model_dump(mode="json", exclude_none=True)`` dumps the model :mod:`.record_schema` derives:
the same keys in the same order and the same values (the bytes Gym writes depend on both)."""

from __future__ import annotations

import json
import random
from typing import Any

import msgspec
from hypothesis import given, settings

from evalexport.testing.factory import make_rollout, make_two_turn_rollout
from evalexport.trajectory.record import ModelCallRecord, RecordError, validate_record
from evalexport.trajectory.record_schema import model_of
from tests.trajectory.strategies import rollout_files


def _same(call: ModelCallRecord) -> None:
    as_pydantic = model_of(ModelCallRecord).model_validate(msgspec.to_builtins(call))
    expected = as_pydantic.model_dump(mode="json", exclude_none=True)
    assert json.dumps(call.as_json()) == json.dumps(expected)  # key order included


def test_the_nested_models_come_last_in_a_model_call() -> None:
    assert ModelCallRecord.__struct_fields__[-2:] == ("response_metadata", "token_stats")


def test_factory_model_calls_dump_as_pydantic_dumps_them() -> None:
    rng = random.Random(11)
    for task in range(8):
        for row in (
            make_rollout(rng, task, 0, "aime24_math_tool_agent"),
            make_two_turn_rollout(rng, task, 1),
        ):
            for call in validate_record(row["ng_trajectory"]).model_calls:
                _same(call)


def test_integers_for_floats_nulls_in_bodies_and_empty_nested_models() -> None:
    calls: list[dict[str, Any]] = [
        {
            "model_call_id": "m",
            "started_at": 5,
            "duration_ms": 0,
            "request": {"input": None, "tools": [None, {"x": None}]},
            "response": [1, 2.5, "x", True],
            "response_metadata": {
                "model_ref": {"type": "responses_api_models", "name": "p"},
                "latency_ttft_ms": 3,
                "upstream_attempted": False,
            },
        },
        {"token_stats": {"prompt_tokens": 0}},
        {"response": None, "request": 0},
    ]
    record = validate_record({"task_id": "t", "rollout_id": "r", "model_calls": calls})
    for call in record.model_calls:
        _same(call)


@settings(max_examples=60)
@given(lines=rollout_files())
def test_drawn_model_calls_dump_as_pydantic_dumps_them(lines: list[str]) -> None:
    for line in lines:
        try:
            record = validate_record(json.loads(line).get("ng_trajectory"))
        except (RecordError, ValueError, AttributeError):
            continue
        for call in record.model_calls:
            _same(call)
