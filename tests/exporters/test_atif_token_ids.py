"""harbor's own validator accepts trajectories that carry token IDs and log probabilities in
their step metrics (``+relax=[token_ids]``), as it accepts Gym's strict ones."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.trajectory.test_token_ids import _row


@pytest.mark.downloads
def test_trajectories_with_token_ids_pass_harbors_validator(
    cli, tmp_path: Path, harbor_validator
) -> None:
    rollouts = tmp_path / "run" / "math_rollouts.jsonl"
    rollouts.parent.mkdir()
    rollouts.write_text(json.dumps(_row()) + "\n")
    output = tmp_path / "atif"
    done = cli(
        "atif",
        f"+rollouts_jsonl_fpath={rollouts}",
        f"+output_dirpath={output}",
        "+agent_version=1.0",
        "+relax=[token_ids]",
    )
    assert done.exit_code == 0, done.output
    written = output / "0-0.json"
    assert "completion_token_ids" in written.read_text()
    completed = harbor_validator(written)
    assert completed.returncode == 0, completed.stdout + completed.stderr
