"""evalexport inspect: what a run holds, problems reported rather than raised."""

from __future__ import annotations

import json
from pathlib import Path


def test_inspect_reports_files_rollouts_agents_metrics_and_masking(cli, sample_run) -> None:
    run = cli("inspect", sample_run.rollouts)
    assert run.exit_code == 0
    assert f"run directory: {sample_run.run.run_dir}" in run.stdout
    assert "aime24_rollouts_aggregate_metrics.json  (aggregate metrics)" in run.stdout
    assert "rollouts: 48 (48 with ng_trajectory)" in run.stdout
    assert "aime24_math_simple_agent: 24 rollouts, mean reward" in run.stdout
    assert "metrics (24 after flattening):" in run.stdout
    assert "saved config: masked" in run.stdout
    assert "problems:" not in run.stdout


def test_inspect_json_has_the_same_facts(cli, sample_run) -> None:
    report = json.loads(cli("inspect", sample_run.rollouts, "--json").stdout)
    assert report["rollout_count"] == 48
    assert [agent["name"] for agent in report["agents"]] == [
        "aime24_math_simple_agent",
        "aime24_math_tool_agent",
    ]
    assert report["config_status"] == "masked"
    assert report["metrics"]["aime24_math_tool_agent/used_tools"] == 1.0


def test_inspect_warns_about_live_secrets_naming_their_paths(cli, make_sample_run) -> None:
    sample = make_sample_run(mask_saved_config=False)
    run = cli("inspect", sample.rollouts)
    assert run.exit_code == 0
    assert "saved config: unmasked" in run.stdout
    assert (
        "warning: the saved config holds values that look like live secrets at policy_api_key, hf_token"
        in run.stderr
    )
    assert "judge.endpoint" in run.stderr
    assert sample.canaries.found_in(run.output) == []


def test_inspect_lists_every_problem_at_once(cli, make_sample_run) -> None:
    sample = make_sample_run(
        aggregate=False, saved_config=False, other_run_rollouts="rollouts.jsonl"
    )
    run = cli("inspect", sample.rollouts)
    assert run.exit_code == 0
    problems = run.stdout.split("problems:\n", 1)[1].splitlines()
    exported = cli("mlflow", f"+rollouts_jsonl_fpath={sample.rollouts}", "--dry-run").stdout
    # The hints are the export's own, in full: where the metrics went, the save-config command.
    assert f"  - {exported.strip().removeprefix('failed: ')}" == problems[0]
    assert "other runs' rollouts (rollouts.jsonl)" in problems[0]
    assert problems[1].startswith("  - Saved run config not found: ")
    assert f"evalexport save-config {sample.rollouts} CONFIG.yaml" in problems[1]
    # The one-run-per-directory rule in inspect's words: who refuses, and who does not.
    assert "evalrdl and any exporter of kind directory upload the whole directory" in problems[2]
    assert "(mlflow, wandb and atif read only this run's files)" in problems[2]
    assert "this exporter" not in run.stdout


def test_inspect_of_malformed_rollouts_exits_1_with_the_line_number(cli, make_sample_run) -> None:
    sample = make_sample_run(malformed_lines=[5])
    run = cli("inspect", sample.rollouts)
    assert run.exit_code == 1
    assert "line 5 is not valid JSON" in run.stdout
    assert "rollouts: 4 " in run.stdout


def test_inspect_of_a_missing_run_exits_1(cli, tmp_path) -> None:
    run = cli("inspect", tmp_path / "nowhere" / "x_rollouts.jsonl")
    assert run.exit_code == 1
    assert run.stderr == f"evalexport: Run directory not found: {tmp_path / 'nowhere'}\n"
    assert run.stdout == ""


def test_inspect_of_a_missing_rollouts_file_says_so_in_one_line(cli, sample_run) -> None:
    """No report of a file that is not there (#67): not its benchmark, its run's name or the
    files of other runs, only the problem, and the rollouts files the directory does hold."""
    missing = sample_run.run.run_dir / "nonexist_rollouts.jsonl"
    run = cli("inspect", missing)
    assert run.exit_code == 1
    assert run.stdout == ""
    assert run.stderr == (
        f"evalexport: Rollouts file not found: {missing}; {sample_run.run.run_dir} holds "
        "aime24_rollouts.jsonl instead\n"
    )
    data = json.loads(cli("inspect", missing, "--json").stdout)
    assert (data["readable"], data["benchmark"], data["files"]) == (False, "", [])
    assert data["problems"] == [run.stderr.removeprefix("evalexport: ").rstrip("\n")]


def _link_out(path: Path, outside: Path) -> None:
    """Move the run's file ``path`` to ``outside`` and leave a symlink to it in its place."""
    outside.write_bytes(path.read_bytes())
    path.unlink()
    path.symlink_to(outside)


def test_inspect_reads_no_metrics_file_that_links_out_and_says_every_export_refuses_it(
    cli, make_sample_run, tmp_path: Path
) -> None:
    """``inspect`` reads the run's files through the ingress gate the export uses (#65): the
    aggregate metrics linking out of the run are not read (their metrics not shown), and the
    problem names the file and the rule, in the export's words."""
    import evalexport

    sample = make_sample_run()
    metrics = sample.run.aggregate_metrics
    entries = json.loads(metrics.read_text())
    entries[0]["agent_metrics"]["CANARYoutside"] = 0.5  # a metric read from outside the run
    metrics.write_text(json.dumps(entries))
    outside = tmp_path / "outside_metrics.json"
    _link_out(metrics, outside)
    run = cli("inspect", sample.rollouts)
    assert run.exit_code == 0, run.output
    assert "CANARYoutside" not in run.output
    assert "metrics (0 after flattening):" in run.stdout
    problems = run.stdout.split("problems:\n", 1)[1]
    exported = cli("mlflow", f"+rollouts_jsonl_fpath={sample.rollouts}", "--dry-run")
    assert exported.exit_code == 1
    refusal = exported.stdout.strip().removeprefix("failed: ")
    assert f"  - {refusal[0].upper()}{refusal[1:]}. Every export refuses the run for it" in (
        problems
    )
    assert f"is a symlink to {outside}, outside {sample.run.run_dir}" in refusal
    assert "(a symlink inside a root points inside it)" in refusal  # the rule
    report = evalexport.inspect(sample.rollouts)
    assert report.metrics == {}
    assert any(f"symlink to {outside}" in problem for problem in report.problems)


def test_inspect_reads_no_saved_config_that_links_out(cli, make_sample_run, tmp_path: Path) -> None:
    sample = make_sample_run(mask_saved_config=False)
    outside = tmp_path / "outside_config.yaml"
    _link_out(sample.run.saved_config, outside)
    data = json.loads(cli("inspect", sample.rollouts, "--json").stdout)
    assert data["config_status"] == "refused"
    assert data["unmasked_secret_paths"] == []  # not read, so nothing of it is named
    (problem,) = [p for p in data["problems"] if "saved config" in p]
    assert problem.startswith(f"The saved config {sample.run.saved_config} is a symlink to ")
    shown = cli("inspect", sample.rollouts)
    assert "saved config: refused" in shown.stdout
    assert "warning" not in shown.stderr


def test_inspect_reports_gaps_and_whether_strict_atif_export_accepts_the_run(
    cli, make_sample_run
) -> None:
    clean = make_sample_run("clean", agents=("aime24_math_tool_agent",))
    report = cli("inspect", clean.rollouts).stdout
    assert "coverage gaps: none" in report
    assert "strict ATIF export: accepts all 24 rollouts" in report
    gappy = make_sample_run("gappy", agents=("aime24_math_tool_agent",), rows_with_gaps=[1, 4])
    report = cli("inspect", gappy.rollouts).stdout
    assert "coverage gaps: 2 rollouts record gaps (resolution_unavailable x2)" in report
    assert "strict ATIF export: refuses 2 rollouts" in report
    assert "  - line 2: ng_trajectory.gaps: source coverage gaps" in report
    assert "with +allow_gaps=[resolution_unavailable] it would accept every rollout" in report


def test_inspect_says_when_allowing_the_gaps_would_not_be_enough(cli, make_sample_run) -> None:
    sample = make_sample_run(agents=("a",), publishes_turns=False, tasks=2, repeats=1)
    data = json.loads(cli("inspect", sample.rollouts, "--json").stdout)
    assert data["gap_counts"] == {"conversation_unavailable": 2, "turns_unavailable": 2}
    assert data["atif"]["accepted"] is False
    assert data["atif"]["rejected_rows"] == 2
    assert data["atif"]["accepted_with_gaps_allowed"] is False
    assert (
        "allowing the recorded gaps would not be enough" in cli("inspect", sample.rollouts).stdout
    )


def test_inspect_names_the_agents_problem_of_a_two_agent_run(cli, sample_run) -> None:
    data = json.loads(cli("inspect", sample_run.rollouts, "--json").stdout)
    assert data["atif"]["accepted"] is False


def test_inspect_of_a_run_directory_inspects_its_one_rollouts_file(cli, sample_run) -> None:
    by_file = cli("inspect", str(sample_run.rollouts), "--json")
    by_directory = cli("inspect", str(sample_run.run.run_dir), "--json")
    assert by_directory.exit_code == by_file.exit_code == 0, by_directory.output
    assert by_directory.stdout == by_file.stdout


def test_inspect_of_a_directory_of_several_runs_names_them(cli, make_sample_run) -> None:
    sample = make_sample_run(other_run_rollouts="gpqa_rollouts.jsonl")
    run = cli("inspect", str(sample.run.run_dir))
    assert run.exit_code == 1
    assert "holds 2 runs' rollouts files (aime24_rollouts.jsonl, gpqa_rollouts.jsonl)" in run.stderr
    assert "Traceback" not in run.output


def test_inspect_of_a_directory_without_a_run_says_so(cli, tmp_path) -> None:
    run = cli("inspect", str(tmp_path))
    assert run.exit_code == 1
    assert "is a directory with no rollouts file in it" in run.stderr


def test_the_sample_runs_metrics_agree_with_its_rollouts() -> None:
    """The README's sample run says one mean reward wherever it is read (#59)."""
    import json
    from pathlib import Path

    import pytest

    from evalexport.inspection import inspect_run
    from evalexport.run import RunArtifacts

    example = Path(__file__).resolve().parents[1] / "examples" / "aime24"
    run = RunArtifacts.from_rollouts_path(example / "aime24_rollouts.jsonl")
    rewards = [json.loads(line)["reward"] for line in run.rollouts.read_text().splitlines()]
    (entry,) = json.loads(run.aggregate_metrics.read_text())
    assert entry["agent_metrics"]["mean/reward"] == pytest.approx(sum(rewards) / len(rewards))
    assert inspect_run(run).readable
