"""The plan task as a message (#21): one typed definition, with ``to_json``/``from_json``, that
the pool, its export processes and a Slurm array all use; a task that is not one is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalexport.plans.model import ExportTask, TaskOutcome
from evalexport.results import ExportStatus

TASK = ExportTask("aime24", "mlflow", Path("/r/aime24/aime24_rollouts.jsonl"), {"a": {"b": [1]}})


def test_a_task_crosses_as_one_line_and_comes_back_equal() -> None:
    line = TASK.to_json()
    assert "\n" not in line
    assert ExportTask.from_json(line) == TASK
    assert ExportTask.from_json_data(TASK.to_json_data()) == TASK


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"benchmark": "a", "exporter": "m", "rollouts": "/r"}, "has the keys"),
        ({**TASK.to_json_data(), "option": {}}, "has the keys"),
        ({**TASK.to_json_data(), "rollouts": 5}, "are text"),
        ({**TASK.to_json_data(), "options": []}, "options are a mapping"),
        ([], "got list"),
    ],
)
def test_a_message_that_is_not_a_task_is_refused_naming_why(data, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ExportTask.from_json_data(data)


def test_a_task_that_ended_without_a_result_fails_with_its_own_names() -> None:
    result = TASK.failed(
        "not started: the plan was interrupted by SIGTERM", 143, interrupted_by="SIGTERM"
    )
    assert result.status is ExportStatus.FAILED
    assert (result.exporter, result.run_dir, int(result.exit_code)) == ("mlflow", "/r/aime24", 143)
    assert result.interrupted_by == "SIGTERM"
    outcome = TaskOutcome.of(TASK, 0.5, result)
    assert TaskOutcome.from_json_data(outcome.as_json_data()) == outcome
