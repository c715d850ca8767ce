"""A run of several agents goes to ATIF one agent at a time (``+agent=NAME``): exactly what the
strict export writes for a file holding that agent's rows alone (under ``--with_gym``, what
Gym's own exporter writes for it), with the other agents' rows counted and left out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalexport.testing.factory import make_run
from tests.support.gym import GymOracle
from tests.trajectory.parity import tree

SIMPLE, TOOL = "aime24_math_simple_agent", "aime24_math_tool_agent"


def _atif(cli, rollouts: Path, output: Path, *extra: str):
    return cli(
        "atif",
        f"+rollouts_jsonl_fpath={rollouts}",
        f"+output_dirpath={output}",
        "+agent_version=2.0",
        *extra,
    )


def _rows_of(rollouts: Path, agent: str, into: Path) -> Path:
    """A copy of the run's rollouts file (same name, so the same session id) holding only
    ``agent``'s lines, byte for byte."""
    into.mkdir(parents=True)
    kept = [
        line
        for line in rollouts.read_bytes().splitlines(keepends=True)
        if json.loads(line)["agent_ref"]["name"] == agent
    ]
    (into / rollouts.name).write_bytes(b"".join(kept))
    return into / rollouts.name


def test_a_run_of_two_agents_is_refused_naming_the_agent_option_not_inspect(
    cli, sample_run, tmp_path
) -> None:
    run = _atif(cli, sample_run.rollouts, tmp_path / "atif")
    assert run.exit_code == 1
    assert "holds rows of 2 agents" in run.stdout
    assert "+agent=NAME" in run.stdout
    assert f"+agent={SIMPLE}" in run.stdout
    assert "evalexport inspect" not in run.stdout
    assert not (tmp_path / "atif").exists()


@pytest.mark.parametrize("agent", [SIMPLE, TOOL])
def test_one_agents_rows_give_the_files_of_a_file_holding_them_alone(
    cli, sample_run, tmp_path, agent
) -> None:
    alone = _rows_of(sample_run.rollouts, agent, tmp_path / "alone")
    by_itself = _atif(cli, alone, tmp_path / "alone-atif", "--json")
    assert by_itself.exit_code == 0, by_itself.output
    picked = _atif(cli, sample_run.rollouts, tmp_path / "picked", f"+agent={agent}", "--json")
    assert picked.exit_code == 0, picked.output
    assert tree(tmp_path / "picked") == tree(tmp_path / "alone-atif")
    result = json.loads(picked.stdout)
    other = TOOL if agent == SIMPLE else SIMPLE
    kept = len(alone.read_bytes().splitlines())
    assert result["details"]["trajectory_count"] == kept
    assert result["details"]["rows_of_other_agents"] == {other: sample_run.rollout_count - kept}
    assert result["message"].startswith(f"wrote {kept} ATIF trajectories of agent {agent} to ")


def test_each_agent_in_turn_exports_every_row_once(cli, sample_run, tmp_path) -> None:
    """The agents of the factory's run answer the same tasks, so their (task, rollout) keys,
    and file names, repeat across agents: each agent's directory holds its own."""
    written = 0
    for agent in (SIMPLE, TOOL):
        run = _atif(cli, sample_run.rollouts, tmp_path / agent, f"+agent={agent}")
        assert run.exit_code == 0, run.output
        manifest = (tmp_path / agent / "manifest.jsonl").read_text().splitlines()
        names = [json.loads(line)["trajectory_path"] for line in manifest]
        assert len(names) == len(set(names))
        assert sorted(names) == sorted(p.name for p in (tmp_path / agent).glob("*-*.json"))
        written += len(names)
    assert written == sample_run.rollout_count


def test_an_agent_with_no_rows_fails_naming_the_agents_the_run_holds(
    cli, sample_run, tmp_path
) -> None:
    run = _atif(cli, sample_run.rollouts, tmp_path / "atif", "+agent=aime24_math_simpel_agent")
    assert run.exit_code == 1
    assert "+agent=aime24_math_simpel_agent: no row of" in run.stdout
    assert f"{SIMPLE} (24 rows), {TOOL} (24 rows)" in run.stdout
    assert not (tmp_path / "atif").exists()


def test_the_dry_run_names_the_agent_and_writes_nothing(cli, sample_run, tmp_path) -> None:
    run = _atif(cli, sample_run.rollouts, tmp_path / "atif", f"+agent={TOOL}", "--dry-run")
    assert run.exit_code == 0, run.output
    assert f"24 trajectories of agent {TOOL} of {sample_run.rollouts.name} would be" in run.stdout
    assert not (tmp_path / "atif").exists()


def test_a_blank_agent_is_a_usage_error(cli, sample_run, tmp_path) -> None:
    run = _atif(cli, sample_run.rollouts, tmp_path / "atif", "+agent=' '")
    assert run.exit_code == 2
    assert "agent" in run.output


@pytest.mark.gym
def test_gyms_exporter_on_one_agents_rows_writes_what_the_agent_option_writes(
    gym_oracle: GymOracle, cli, tmp_path
) -> None:
    sample = make_run(tmp_path / "run", agents=(SIMPLE, TOOL), seed=7)
    for agent in (SIMPLE, TOOL):
        alone = _rows_of(sample.rollouts, agent, tmp_path / f"alone-{agent}")
        gym = gym_oracle.export_atif(
            alone, tmp_path / f"gym-{agent}", session_id=sample.run.stem, agent_version="2.0"
        )
        assert gym.succeeded, gym.error
        ours = _atif(cli, sample.rollouts, tmp_path / f"ours-{agent}", f"+agent={agent}")
        assert ours.exit_code == 0, ours.output
        assert tree(tmp_path / f"ours-{agent}") == tree(tmp_path / f"gym-{agent}")
