"""Whatever JSON a rollout row holds wherever, a tracking export's read of it (the rollouts and
samples tables, Gym's health, MLflow's traces) reads it or refuses the run by name
(:class:`RunFileError`), never another exception that fails the export as "unexpected". A list
or an object where a role belongs, a summary that is a number, a time past 64-bit nanoseconds:
each once broke MLflow's traces."""

from __future__ import annotations

import contextlib
import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalexport.backends.mlflow.traces import TracesFile, trace_of
from evalexport.reading import RunFileError
from evalexport.reading.rollouts import Rollout
from evalexport.run import RunArtifacts
from evalexport.tables.prepare import prepare
from evalexport.testing.factory import make_run

ODD_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.sampled_from([0, -1, 1.5, 1e308, 10**30, "", "x", "user", "reasoning", "message"]),
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.just("type"), inner, max_size=1),
    max_leaves=3,
)


def _objects(value: Any, found: list[dict[str, Any]]) -> list[dict[str, Any]]:
    if isinstance(value, dict):
        found.append(value)
        for each in value.values():
            _objects(each, found)
    elif isinstance(value, list):
        for each in value:
            _objects(each, found)
    return found


@pytest.fixture(scope="module")
def lines(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    sample = make_run(tmp_path_factory.mktemp("run") / "run", tasks=2, repeats=2)
    return sample.rollouts.read_text(encoding="utf-8").splitlines()


@st.composite
def broken_rows(draw: st.DrawFn, lines: list[str]) -> list[dict[str, Any]]:
    rows = [json.loads(line) for line in lines]
    for _ in range(draw(st.integers(1, 4))):
        place = draw(st.sampled_from(_objects(draw(st.sampled_from(rows)), [])))
        key = draw(st.sampled_from([*sorted(place), "role", "summary", "started_at", "reward"]))
        place[key] = copy.deepcopy(draw(ODD_VALUES))
    return rows


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_a_tracking_read_reads_or_refuses_whatever_a_row_holds(
    data: st.DataObject, lines: list[str], tmp_path: Path
) -> None:
    rows = data.draw(broken_rows(lines))
    rollouts = tmp_path / "run" / "aime24_rollouts.jsonl"
    rollouts.parent.mkdir(exist_ok=True)
    rollouts.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    run = RunArtifacts.from_rollouts_path(rollouts)
    with contextlib.suppress(RunFileError):
        prepare(run, rollouts_table=True, health=True, row_files=[TracesFile]).discard()


def test_a_trace_is_made_of_a_row_with_odd_values_where_roles_summaries_and_times_belong(
    lines: list[str],
) -> None:
    row = json.loads(lines[0])
    conversation = row["ng_trajectory"]["invocations"][0]["conversation"]
    conversation[0]["role"] = {}
    next(item for item in conversation if item["type"] == "reasoning")["summary"] = 1.5
    row["ng_trajectory"]["model_calls"][0]["started_at"] = 1e308
    trace = trace_of(Rollout(line_number=1, record=row))
    assert [span["type"] for span in trace["spans"]][:1] == ["LLM"]
