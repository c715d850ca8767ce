"""A manifest line is Gym's: ``json.dumps(entry, sort_keys=True, separators=(",", ":"))`` of its
fields (with evalexport's ``gap_codes`` and ``relaxations`` when a row has any), though it is
written from a template."""

from __future__ import annotations

import json

from hypothesis import example, given
from hypothesis import strategies as st

from evalexport.trajectory.files import ConvertedRow, _FirstLines
from evalexport.trajectory.relaxations import RELAXATIONS


@given(
    task=st.integers(min_value=0, max_value=10**12),
    rollout=st.integers(min_value=0, max_value=10**6),
    sha=st.text(alphabet="0123456789abcdef", min_size=64, max_size=64),
    gaps=st.lists(st.text(max_size=12), max_size=4),
    relaxations=st.lists(st.sampled_from(sorted(RELAXATIONS)), max_size=4, unique=True),
)
def test_a_manifest_line_is_the_json_gym_writes(
    task: int, rollout: int, sha: str, gaps: list[str], relaxations: list[str]
) -> None:
    row = ConvertedRow(
        1, f"{task}-{rollout}.json", task, rollout, sha, tuple(gaps), tuple(relaxations)
    )
    entry: dict[str, object] = {
        "trajectory_path": row.file_name,
        "_ng_task_index": task,
        "_ng_rollout_index": rollout,
        "expected_sha256": sha,
    }
    if gaps:
        entry["gap_codes"] = sorted(set(gaps))
    if relaxations:
        entry["relaxations"] = sorted(relaxations)
    assert row.manifest_line() == json.dumps(entry, sort_keys=True, separators=(",", ":"))


@example(keys=[(0, 8), (0, 0), (0, 8)])  # first far past its task's array, then within reach
@given(
    keys=st.lists(
        st.tuples(
            st.integers(min_value=0, max_value=5),
            st.integers(min_value=0, max_value=12) | st.integers(min_value=0, max_value=2**40),
        ),
        max_size=60,
    )
)
def test_the_first_line_of_each_rollout_key_is_remembered_as_a_dict_would(
    keys: list[tuple[int, int]],
) -> None:
    first_lines, reference = _FirstLines(), {}
    for line_number, key in enumerate(keys, 1):
        assert first_lines.earlier(key, line_number) == reference.get(key)
        reference.setdefault(key, line_number)
