"""A run whose metrics are only ``<stem>_agent_metrics.json`` (NeMo Gym's reward profiling
writes it flat, ``[{"mean/reward": 0.4, ..., "agent_ref": {...}}]``; older runs hold nothing
else) exports the same metrics, by the same names, as its aggregate layout would give, and an
export that would log no metric says so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalexport.metrics import flatten_metrics
from evalexport.reading import parse_aggregate_metrics
from tests.support.gym import GymOracle


def _as_reward_profiling_writes_it(aggregate: list[dict[str, object]]) -> list[dict[str, object]]:
    """Gym's flat agent-level entries: ``RewardProfiler.profile_from_data``'s agent-level
    metrics with their ``agent_ref`` (``rollout_collection`` builds ``agent_metrics`` from
    exactly these, ``agent_ref`` left out)."""
    flat = []
    for entry in aggregate:
        metrics = entry["agent_metrics"]
        assert isinstance(metrics, dict)
        flat.append({**metrics, "agent_ref": entry["agent_ref"]})
    return flat


def _older_run(make_sample_run):
    """A sample run holding only the agent-level metrics, as an older Gym run does."""
    sample = make_sample_run()
    aggregate = json.loads(sample.run.aggregate_metrics.read_text())
    sample.run.agent_metrics.write_text(json.dumps(_as_reward_profiling_writes_it(aggregate)))
    sample.run.aggregate_metrics.unlink()
    return sample, aggregate


def test_a_flat_entry_gives_the_names_and_values_its_aggregate_entry_gives(
    make_sample_run,
) -> None:
    sample, aggregate = _older_run(make_sample_run)
    assert sample.run.aggregate_metrics == sample.run.agent_metrics
    read = parse_aggregate_metrics(sample.run, sample.run.agent_metrics.read_bytes())
    expected = flatten_metrics(
        [{"agent_ref": e["agent_ref"], "agent_metrics": e["agent_metrics"]} for e in aggregate]
    )
    assert flatten_metrics(read) == expected
    assert "aime24_math_simple_agent/mean/reward" in expected.metrics


def test_an_older_run_exports_its_metrics_and_says_nothing_is_missing(cli, make_sample_run) -> None:
    sample, aggregate = _older_run(make_sample_run)
    run = cli("mlflow", f"+rollouts_jsonl_fpath={sample.rollouts}", "--dry-run", "--json")
    assert run.exit_code == 0, run.output
    plan = json.loads(run.stdout)["plan"]
    flat = flatten_metrics(
        [{"agent_ref": e["agent_ref"], "agent_metrics": e["agent_metrics"]} for e in aggregate]
    )
    assert len(plan["metric_names"]) == len(flat.metrics) > 0
    assert sample.run.agent_metrics.name in plan["sections"]["artifacts"]
    inspected = cli("inspect", sample.rollouts)
    assert f"metrics ({len(flat.metrics)} after flattening)" in inspected.stdout
    assert "aggregate metrics (agent-level layout)" in inspected.stdout


def test_the_flat_file_copied_under_the_aggregate_name_still_gives_its_metrics(
    cli, make_sample_run
) -> None:
    # Earlier versions of evalexport advised this copy; it then exported 0 metrics.
    sample, _ = _older_run(make_sample_run)
    sample.run.agent_metrics.rename(
        sample.run.run_dir / f"{sample.run.stem}_aggregate_metrics.json"
    )
    run = cli("mlflow", f"+rollouts_jsonl_fpath={sample.rollouts}", "--dry-run", "--json")
    assert run.exit_code == 0, run.output
    assert "aime24_math_tool_agent/mean/reward" in json.loads(run.stdout)["plan"]["metric_names"]


@pytest.mark.parametrize("exporter", ["mlflow", "wandb"])
def test_metrics_that_flatten_to_nothing_are_said_by_the_dry_run(
    cli, make_sample_run, exporter: str
) -> None:
    sample = make_sample_run()
    sample.run.aggregate_metrics.write_text(
        json.dumps([{"agent_ref": {"name": "a"}, "agent_metrics": {}, "key_metrics": {}}])
    )
    run = cli(exporter, f"+rollouts_jsonl_fpath={sample.rollouts}", "--dry-run", "--json")
    assert run.exit_code == 0, run.output
    result = json.loads(run.stdout)
    note = (
        f"the aggregate metrics {sample.run.aggregate_metrics} hold 1 entry but no metric (no "
        "number or text under agent_metrics or key_metrics), so the run has no metrics"
    )
    assert note in result["message"]
    assert any(notice.startswith(note) for notice in result["notices"])
    assert note[0].upper() + note[1:] in cli("inspect", sample.rollouts).stdout


@pytest.mark.gym
def test_gyms_two_files_of_one_run_give_the_same_metrics(gym_oracle: GymOracle) -> None:
    # Gym's asr_with_pc example run holds both files, written by Gym's own code.
    data = Path(gym_oracle.site_packages) / "resources_servers" / "asr_with_pc" / "data"
    from evalexport.run import RunArtifacts

    run = RunArtifacts.from_rollouts_path(data / "example_rollouts.jsonl")
    aggregate = flatten_metrics(json.loads(run.aggregate_metrics.read_bytes()))
    flat = flatten_metrics(parse_aggregate_metrics(run, run.agent_metrics.read_bytes()))
    agent = "asr_with_pc_simple_agent"
    assert flat.metrics, "the agent-level file gave no metric"
    assert {name: value for name, value in aggregate.metrics.items() if name in flat.metrics} == (
        flat.metrics
    )
    assert all(name.startswith(f"{agent}/") for name in flat.metrics)
    # Rollout collection adds the resource server's own metrics and the key metrics.
    assert set(flat.metrics) < set(aggregate.metrics)
