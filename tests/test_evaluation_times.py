"""The evaluation's own times (``evaluation_times.py``): the span of the timestamps NeMo Gym
records in each rollout's ``ng_trajectory``, else the run files' modification times."""

from __future__ import annotations

import json
import os

from evalexport.reading import prepare
from evalexport.reading.evaluation_times import (
    FROM_FILES,
    FROM_ROLLOUTS,
    EvaluationTimes,
    TimesSeen,
)


def _stamps(rollouts_path) -> list[float]:
    stamps = []
    for line in rollouts_path.read_text(encoding="utf-8").splitlines():
        trajectory = json.loads(line).get("ng_trajectory") or {}
        stamps += [turn["timestamp"] for turn in trajectory.get("turns", [])]
        for kind in ("model_calls", "tool_calls"):
            for call in trajectory.get(kind, []):
                stamps += [call["started_at"], call["completed_at"]]
    return stamps


def test_a_run_with_trajectories_ran_from_its_first_to_its_last_recorded_moment(
    make_sample_run,
) -> None:
    sample = make_sample_run()
    stamps = _stamps(sample.rollouts)
    assert len(stamps) > 100
    times = prepare(sample.run).evaluation
    assert times == EvaluationTimes(min(stamps), max(stamps), FROM_ROLLOUTS)
    assert times.started_at < times.ended_at
    assert times.described()["started_at"].startswith("2026-08-26T")  # the factory's day


def test_a_run_without_trajectories_is_dated_by_its_files(make_sample_run) -> None:
    sample = make_sample_run(trajectory=False)
    os.utime(sample.run.saved_config, (1_700_000_000, 1_700_000_000))
    os.utime(sample.rollouts, (1_700_000_900, 1_700_000_900))
    times = prepare(sample.run).evaluation
    assert (times.started_at, times.ended_at, times.source) == (
        1_700_000_000,
        1_700_000_900,
        FROM_FILES,
    )
    assert times.described() == {
        "started_at": "2023-11-14T22:13:20+00:00",
        "ended_at": "2023-11-14T22:28:20+00:00",
        "source": FROM_FILES,
    }


def test_what_is_no_time_is_not_taken_for_one() -> None:
    seen = TimesSeen()
    for value in (None, "1787713200", True, float("nan"), float("inf"), -5, 0, [1.0]):
        seen.see({"ng_trajectory": {"turns": [{"timestamp": value}], "model_calls": "x"}})
    seen.see({"ng_trajectory": ["not", "a", "mapping"]})
    seen.see({"ng_trajectory": {"tool_calls": [{"started_at": 10.5, "completed_at": 12}]}})
    assert seen.times([]) == EvaluationTimes(10.5, 12.0, FROM_ROLLOUTS)


def test_an_integer_too_large_for_a_float_is_a_time_left_out_not_an_error() -> None:
    """JSON's integers have no bound: 10**400 was an OverflowError that failed the export."""
    seen = TimesSeen()
    for value in (10**400, -(10**400), 1_787_713_200, 1_787_713_260.5):
        seen.see({"ng_trajectory": {"turns": [{"timestamp": value}]}})
    assert seen.times([]) == EvaluationTimes(1_787_713_200.0, 1_787_713_260.5, FROM_ROLLOUTS, 1)


def test_milliseconds_are_what_mlflow_takes() -> None:
    times = EvaluationTimes(1_787_713_200.1234, 1_787_713_260.9999, FROM_ROLLOUTS)
    assert (times.started_at_ms, times.ended_at_ms) == (1_787_713_200_123, 1_787_713_260_999)
