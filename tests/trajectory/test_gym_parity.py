"""evalexport's ATIF export against NeMo Gym's own, on the same files (``--with_gym``).

On every file Gym's strict exporter accepts, evalexport writes the same files byte for byte
(names, trajectories, manifest with its SHA-256s); on every file Gym refuses, evalexport refuses
the same rows.
"""

from __future__ import annotations

import importlib.util
import json
import random
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from evalexport.testing.factory import make_rollout, make_run, make_two_turn_rollout
from tests.support.gym import GymOracle
from tests.trajectory.parity import compare
from tests.trajectory.strategies import (
    FAULTS,
    RELAXATION_FOR_FAULT,
    agent_runs,
    rollout_files,
    rows_broken_anywhere,
)

pytestmark = pytest.mark.gym

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


@pytest.mark.parametrize("publishes_turns", [True, False])
def test_every_factory_record_is_one_gyms_model_accepts(
    gym_oracle: GymOracle, tmp_path, publishes_turns
) -> None:
    sample = make_run(tmp_path / "run", publishes_turns=publishes_turns, rows_with_gaps=[1, 5])
    for row in _rows(sample.rollouts):
        assert gym_oracle.record_error(row["ng_trajectory"]) is None


def test_every_example_record_is_one_gyms_model_accepts(gym_oracle: GymOracle) -> None:
    files = sorted(EXAMPLES.glob("*/*_rollouts.jsonl"))
    assert files
    for path in files:
        for number, row in enumerate(_rows(path), 1):
            assert gym_oracle.record_error(row["ng_trajectory"]) is None, f"{path}:{number}"


@pytest.mark.parametrize("agent", ["aime24_math_simple_agent", "aime24_math_tool_agent"])
def test_a_factory_run_gives_the_same_files_as_gyms_exporter(
    gym_oracle: GymOracle, tmp_path, agent
) -> None:
    sample = make_run(tmp_path / "run", agents=(agent,))
    comparison = compare(gym_oracle, sample.rollouts, tmp_path)
    assert comparison.gym.succeeded, comparison.gym.error
    assert comparison.disagreement() is None
    assert len(comparison.our_tree) == sample.rollout_count + 1


def test_the_two_turn_benchmark_shape_is_gyms_and_converts_as_gym_converts_it(
    gym_oracle: GymOracle, tmp_path
) -> None:
    rng = random.Random(3)
    rows = [make_two_turn_rollout(rng, task, rollout) for task in range(3) for rollout in range(4)]
    for row in rows:
        assert gym_oracle.record_error(row["ng_trajectory"]) is None
    rollouts = tmp_path / "two_turn_rollouts.jsonl"
    rollouts.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    comparison = compare(gym_oracle, rollouts, tmp_path / "work")
    assert comparison.gym.succeeded, comparison.gym.error
    assert comparison.disagreement() is None


def test_the_trajectory_benchmark_shape_is_gyms_and_converts_as_gym_converts_it(
    gym_oracle: GymOracle, tmp_path
) -> None:
    """benchmarks/atif_export.py's ``trajectory`` rows: Gym's model accepts each record, and
    both exporters write the same files for them."""
    shape = _benchmark_shapes()["trajectory"]
    rng = random.Random(3)
    rows = [shape(rng, task, rollout) for task in range(3) for rollout in range(4)]
    for row in rows:
        assert gym_oracle.record_error(row["ng_trajectory"]) is None
    rollouts = tmp_path / "trajectory_rollouts.jsonl"
    rollouts.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    comparison = compare(gym_oracle, rollouts, tmp_path / "work")
    assert comparison.gym.succeeded, comparison.gym.error
    assert comparison.disagreement() is None


def _benchmark_shapes() -> dict[str, Any]:
    """The row shapes of ``benchmarks/atif_export.py`` (a script, not a package)."""
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "atif_export.py"
    spec = importlib.util.spec_from_file_location("_atif_benchmark", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    shapes: dict[str, Any] = module.SHAPES
    return shapes


@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.iterdir() if p.is_dir()))
def test_each_example_run_ends_the_same_way_with_both_exporters(
    gym_oracle: GymOracle, tmp_path, example
) -> None:
    rollouts = next((EXAMPLES / example).glob("*_rollouts.jsonl"))
    assert compare(gym_oracle, rollouts, tmp_path).disagreement() is None


def test_gyms_own_example_rollouts_end_the_same_way(gym_oracle: GymOracle, tmp_path) -> None:
    """Gym ships example rollouts in its wheel; each file is one both exporters must agree on."""
    site = Path(gym_oracle.site_packages)
    files = sorted(site.glob("*/*/data/example_rollouts.jsonl")) + sorted(
        site.glob("*/*/data/*rollouts*.jsonl")
    )
    with_trajectories = [
        path
        for path in dict.fromkeys(files)
        if '"ng_trajectory"' in path.read_text(encoding="utf-8", errors="replace")
    ]
    assert with_trajectories, f"no example rollouts with ng_trajectory under {site}"
    for index, path in enumerate(with_trajectories):
        work = tmp_path / str(index)
        assert compare(gym_oracle, path, work).disagreement() is None, path


def _same_ending(oracle: GymOracle, lines: list[str]) -> None:
    work = Path(tempfile.mkdtemp(prefix="parity-"))
    try:
        rollouts = work / "drawn_rollouts.jsonl"
        rollouts.write_text("\n".join(lines) + "\n", encoding="utf-8")
        comparison = compare(oracle, rollouts, work)
        event("both accept" if comparison.gym.succeeded else "both refuse")
        disagreement = comparison.disagreement()
        assert disagreement is None, disagreement
    finally:
        shutil.rmtree(work)


_HEALTH = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture]


@settings(max_examples=200, suppress_health_check=_HEALTH)
@given(lines=rollout_files())
def test_drawn_files_are_accepted_or_refused_row_for_row_as_gym_does(
    gym_oracle: GymOracle, lines: list[str]
) -> None:
    _same_ending(gym_oracle, lines)


@settings(max_examples=80, suppress_health_check=_HEALTH)
@given(row=rows_broken_anywhere())
def test_a_row_broken_anywhere_with_any_json_ends_as_gyms_export_ends_it(
    gym_oracle: GymOracle, row: dict
) -> None:
    """Up to three keys of a factory row's record set to any JSON value: the same trajectory,
    or the same row refused (a list where a role belongs once failed the whole export)."""
    _same_ending(gym_oracle, [json.dumps(row)])


@pytest.mark.parametrize("fault", ["none", *FAULTS])
@settings(max_examples=12, suppress_health_check=_HEALTH)
@given(data=st.data())
def test_each_kind_of_fault_ends_the_same_way_with_both_exporters(
    gym_oracle: GymOracle, fault: str, data
) -> None:
    _same_ending(gym_oracle, data.draw(rollout_files(fault=fault)))


@pytest.mark.parametrize("fault", sorted(RELAXATION_FOR_FAULT))
@settings(max_examples=10, suppress_health_check=_HEALTH)
@given(data=st.data())
def test_each_relaxable_fault_is_a_record_gyms_model_accepts(
    gym_oracle: GymOracle, fault: str, data
) -> None:
    """The rows ``+relax`` exists for are real Gym records: Gym's ``TrajectoryRecord`` takes
    them (and ``test_each_kind_of_fault_ends_the_same_way_with_both_exporters`` shows Gym's
    strict exporter refuses them as evalexport does without the opt-in)."""
    row = data.draw(agent_runs(0, 0, fault))
    assert gym_oracle.record_error(row["ng_trajectory"]) is None


def _without_each_key(row: dict) -> list[tuple[str, dict]]:
    """The row once for each key of each conversation item and content part, without it."""
    edits = []
    conversation = row["ng_trajectory"]["invocations"][0]["conversation"]
    for index, item in enumerate(conversation):
        parts = item.get("content") if isinstance(item.get("content"), list) else []
        places = [(f"[{index}]", (index, None))]
        places += [(f"[{index}].content[{at}]", (index, at)) for at in range(len(parts))]
        for where, (item_at, part_at) in places:
            keys = conversation[item_at] if part_at is None else parts[part_at]
            for key in keys:
                edited = json.loads(json.dumps(row))
                item_of = edited["ng_trajectory"]["invocations"][0]["conversation"][item_at]
                del (item_of if part_at is None else item_of["content"][part_at])[key]
                edits.append((f"conversation{where} without {key!r}", edited))
    return edits


@pytest.mark.parametrize("two_turn", [False, True])
def test_a_conversation_item_without_any_one_key_ends_as_gyms_export_ends_it(
    gym_oracle: GymOracle, tmp_path, two_turn
) -> None:
    """Gym's item models default some keys (an output message's ``role``): where Gym's strict
    exporter accepts an item without a key, evalexport writes the same files; where it refuses
    the row, so does evalexport."""
    rng = random.Random(5)
    row = (
        make_two_turn_rollout(rng, 0, 1)
        if two_turn
        else make_rollout(rng, 3, 0, "aime24_math_tool_agent")
    )
    disagreements = []
    for number, (edit, edited) in enumerate(_without_each_key(row)):
        rollouts = tmp_path / f"{number}" / "rollouts.jsonl"
        rollouts.parent.mkdir()
        rollouts.write_text(json.dumps(edited) + "\n", encoding="utf-8")
        if disagreement := compare(gym_oracle, rollouts, rollouts.parent).disagreement():
            disagreements.append(f"{edit}: {disagreement}")
    assert disagreements == []
