"""A manifest line is Gym's: ``json.dumps(entry, sort_keys=True, separators=(",", ":"))`` of its
four fields whatever the row needed, though it is written from a template; what a relaxed row
needed goes to its ``relaxed.jsonl`` line."""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence

from hypothesis import example, given
from hypothesis import strategies as st

from evalexport.backends.atif.file_outcome import ConvertedRow, FirstLines
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
        1, f"{task}-{rollout}.json", task, rollout, sha, 100, tuple(gaps), tuple(relaxations)
    )
    identity: dict[str, object] = {
        "trajectory_path": row.file_name,
        "_ng_task_index": task,
        "_ng_rollout_index": rollout,
    }
    entry = identity | {"expected_sha256": sha}
    assert row.manifest_line() == json.dumps(entry, sort_keys=True, separators=(",", ":"))
    if not gaps and not relaxations:
        assert row.relaxed_line() is None
        return
    needed = dict(identity)
    if gaps:
        needed["gap_codes"] = sorted(set(gaps))
    if relaxations:
        needed["relaxations"] = sorted(relaxations)
    assert json.loads(row.relaxed_line() or "") == needed


def _remembered_as_a_dict_would(keys: Sequence[tuple[int, int]]) -> None:
    first_lines, reference = FirstLines(), {}
    for line_number, key in enumerate(keys, 1):
        assert first_lines.earlier(key, line_number) == reference.get(key), (keys, line_number)
        reference.setdefault(key, line_number)


def test_a_key_first_seen_far_then_passed_by_its_growing_array_is_a_duplicate() -> None:
    # The file: (0, 8) is far past an empty array, (0, 1) and (0, 9) grow the array
    # past 8, and the second (0, 8) must still be found.
    first_lines = FirstLines()
    assert [first_lines.earlier(key, n) for n, key in enumerate([(0, 8), (0, 1), (0, 9)], 1)] == [
        None,
        None,
        None,
    ]
    assert first_lines.earlier((0, 8), 4) == 1


# Every order of four keys drawn from rollouts just inside, at and past the array's reach of
# two tasks: each far key is later overtaken by a growing array in some of these orders, so
# the fast path meets every interleaving of its two stores on every run, not on a lucky seed.
_NEAR_AND_FAR = [(0, r) for r in (0, 1, 7, 8, 9, 15, 16, 17)] + [(1, 0), (1, 8)]


def test_every_order_of_near_and_far_keys_is_remembered_as_a_dict_would() -> None:
    for keys in itertools.product(_NEAR_AND_FAR, repeat=4):
        _remembered_as_a_dict_would(keys)


@example(keys=[(0, 8), (0, 0), (0, 8)])  # first far past its task's array, then within reach
@example(keys=[(0, 8), (0, 1), (0, 9), (0, 8)])  # far, then overtaken by the array's growth
@given(
    keys=st.lists(
        st.tuples(
            st.integers(min_value=0, max_value=3),
            st.integers(min_value=0, max_value=40) | st.integers(min_value=0, max_value=2**40),
        ),
        max_size=80,
    )
)
def test_the_first_line_of_each_rollout_key_is_remembered_as_a_dict_would(
    keys: list[tuple[int, int]],
) -> None:
    _remembered_as_a_dict_would(keys)
