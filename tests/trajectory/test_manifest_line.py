"""A manifest line is Gym's: ``json.dumps(entry, sort_keys=True, separators=(",", ":"))`` of its
fields, though it is written from a template."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from evalexport.trajectory.files import ConvertedRow


@given(
    task=st.integers(min_value=0, max_value=10**12),
    rollout=st.integers(min_value=0, max_value=10**6),
    sha=st.text(alphabet="0123456789abcdef", min_size=64, max_size=64),
    gaps=st.lists(st.text(max_size=12), max_size=4),
)
def test_a_manifest_line_is_the_json_gym_writes(
    task: int, rollout: int, sha: str, gaps: list[str]
) -> None:
    row = ConvertedRow(1, f"{task}-{rollout}.json", task, rollout, sha, tuple(gaps))
    entry: dict[str, object] = {
        "trajectory_path": row.file_name,
        "_ng_task_index": task,
        "_ng_rollout_index": rollout,
        "expected_sha256": sha,
    }
    if gaps:
        entry["gap_codes"] = sorted(set(gaps))
    assert row.manifest_line() == json.dumps(entry, sort_keys=True, separators=(",", ":"))
