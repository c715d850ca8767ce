"""The rollouts as a table (one row per rollout), shared by the tracking exporters."""

from __future__ import annotations

import json
from pathlib import Path

from evalexport.run import RunArtifacts

__all__ = ["ROLLOUT_COLUMNS", "write_rollouts_table"]

ROLLOUT_COLUMNS = ("task_index", "rollout_index", "agent", "reward", "rollout")
"""The last column holds the whole rollout record as JSON text: nothing is dropped."""


def write_rollouts_table(run: RunArtifacts, path: Path) -> Path:
    """``{"columns": [...], "data": [[...], ...]}`` (MLflow's and W&B's table JSON), streamed."""
    with path.open("w", encoding="utf-8") as handle:
        handle.write('{"columns": ' + json.dumps(list(ROLLOUT_COLUMNS)) + ', "data": [')
        for position, rollout in enumerate(run.iter_rollouts()):
            row = [
                rollout.task_index,
                rollout.rollout_index,
                rollout.agent_name,
                rollout.reward,
                json.dumps(rollout.record, ensure_ascii=False),
            ]
            handle.write(("," if position else "") + "\n" + json.dumps(row, ensure_ascii=False))
        handle.write("\n]}\n")
    return path
