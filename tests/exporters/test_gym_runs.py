"""Runs NeMo Gym itself ships, exported with the real SDKs: what a Gym user meets first.

Gym 0.7.0's wheel holds an example run for each resources server, under
``resources_servers/<name>/data/example_rollouts.jsonl``; some hold only the flat
``example_rollouts_agent_metrics.json`` of older runs. Each is copied as Gym wrote it, given
the config Gym ships beside it (``evalexport save-config``, as a user of a run made without
one does), and exported: the metrics arrive by Gym's names, the run named by its benchmark.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
from pathlib import Path
from typing import Any

import pytest

from evalexport.metrics import flatten_metrics
from evalexport.run import RunArtifacts
from tests.exporters.wandb_support import read_offline_run
from tests.support.gym import GymOracle
from tests.support.mlflow_server import read_runs

pytestmark = [pytest.mark.downloads, pytest.mark.gym]


def _gyms_example_run(gym_oracle: GymOracle, server: str, into: Path, cli) -> RunArtifacts:
    """Gym's example run of ``server``, copied into ``into`` as its wheel lays it out, its saved config made from the server's own config files."""
    source = Path(gym_oracle.site_packages) / "resources_servers" / server
    data = into / "resources_servers" / server / "data"
    shutil.copytree(source / "data", data)
    run = RunArtifacts.from_rollouts_path(data / "example_rollouts.jsonl")
    configs = sorted(str(path) for path in (source / "configs").glob("*.yaml"))
    saved = cli("save-config", run.rollouts, *configs)
    assert saved.exit_code == 0, saved.output
    return run


def test_an_older_gym_run_exports_its_agent_level_metrics_to_mlflow(
    cli, gym_oracle: GymOracle, mlflow_server, mlflow_python, tmp_path
) -> None:
    run = _gyms_example_run(gym_oracle, "ether0", tmp_path, cli)
    assert not (run.run_dir / "example_rollouts_aggregate_metrics.json").exists()
    assert run.aggregate_metrics == run.agent_metrics
    exported = cli(
        "mlflow",
        f"+rollouts_jsonl_fpath={run.rollouts}",
        f"+mlflow_tracking_uri={mlflow_server.url}",
    )
    assert exported.exit_code == 0, exported.output
    # the mlflow_server fixture gives each test an experiment of its own ($MLFLOW_EXPERIMENT_NAME)
    (stored,) = read_runs(mlflow_python, mlflow_server.url, os.environ["MLFLOW_EXPERIMENT_NAME"])
    assert stored["run_name"] == "ether0-resources_servers"
    flat = json.loads(run.agent_metrics.read_text())[0]
    expected = {
        f"ether0_simple_agent/{name}": value for name, value in flat.items() if name != "agent_ref"
    }
    assert len(expected) == 20
    assert stored["metrics"] == pytest.approx(expected)


def test_an_older_gym_run_exports_its_agent_level_metrics_to_wandb(
    cli, gym_oracle: GymOracle, wandb_python, tmp_path
) -> None:
    run = _gyms_example_run(gym_oracle, "ether0", tmp_path, cli)
    exported = cli(
        "wandb", f"+rollouts_jsonl_fpath={run.rollouts}", "+wandb_mode=offline", "--json"
    )
    assert exported.exit_code == 0, exported.output
    result = json.loads(exported.stdout)
    stored = read_offline_run(wandb_python, Path(result["details"]["run_dir"]))
    assert stored["run"]["project"] == "ether0"
    flat = flatten_metrics(run.read_aggregate_metrics())
    assert len(flat.metrics) == 20
    for name, value in flat.values.items():
        assert stored["summary"][name] == value, name
    assert os.environ["WANDB_DIR"] in result["details"]["run_dir"]


EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "aime24"


def _unhealthy_example(gym_oracle: GymOracle, into: Path, canary: str) -> RunArtifacts:
    """The sample run with rollout (task 2, rollout 1) made unhealthy as Gym finds it (its
    response reports tokens its captured model calls do not add up to), checked by Gym's own
    ``run_health_checks``, and a failed attempt whose message holds ``canary``."""
    shutil.copytree(EXAMPLE, into)
    run = RunArtifacts.from_rollouts_path(into / "aime24_rollouts.jsonl")
    rows = [json.loads(line) for line in run.rollouts.read_text().splitlines()]
    for row in rows:
        if (row["_ng_task_index"], row["_ng_rollout_index"]) == (2, 1):
            row["response"]["usage"]["output_tokens"] += 1
    run.rollouts.write_text("".join(json.dumps(row) + "\n" for row in rows))
    assert gym_oracle.health(run.rollouts, run.run_dir) == {
        "healthy": 31,
        "unhealthy": 1,
        "unobserved": 0,
    }
    failure = gym_oracle.failure_row(401, f"Unauthorized (Bearer {canary})", "http://x/run")
    failure.update(_ng_task_index=2, _ng_rollout_index=1)
    run.failures.write_text(json.dumps(failure) + "\n")
    return run


def test_the_examples_health_files_are_what_gym_writes(gym_oracle: GymOracle, tmp_path) -> None:
    shutil.copytree(EXAMPLE, tmp_path / "run")
    written = tmp_path / "gym"
    written.mkdir()
    gym_oracle.health(tmp_path / "run" / "aime24_rollouts.jsonl", written)
    for name in ("quality_summary.json", "rollout_verdicts.jsonl"):
        assert (written / name).read_bytes() == (EXAMPLE / name).read_bytes(), name
    failure = json.loads((EXAMPLE / "aime24_rollouts_failures.jsonl").read_text())
    gyms = gym_oracle.failure_row(502, "Bad Gateway", "http://127.0.0.1:8000/run")
    assert {k: v for k, v in failure.items() if k in gyms} == gyms
    assert set(failure) - set(gyms) == {"_ng_task_index", "_ng_rollout_index", "agent_ref"}


def test_gyms_health_verdicts_reach_mlflow(
    cli, gym_oracle: GymOracle, mlflow_server, mlflow_python, canaries, tmp_path
) -> None:
    run = _unhealthy_example(gym_oracle, tmp_path / "run", canaries.all[0])
    done = cli(
        "mlflow",
        f"+rollouts_jsonl_fpath={run.rollouts}",
        f"+mlflow_tracking_uri={mlflow_server.url}",
        "+mlflow_experiment_name=aime24-health",  # the session's server: an experiment of its own
    )
    assert done.exit_code == 0, done.output
    (stored,) = read_runs(
        mlflow_python, mlflow_server.url, "aime24-health", ("samples.json", tmp_path / "samples")
    )
    assert stored["tags"]["health/verdict"] == "unhealthy"
    assert stored["metrics"]["health/verdicts/unhealthy"] == 1
    assert stored["metrics"]["health/issues/rollout_token_count_mismatch"] == 1
    assert stored["metrics"]["health/failures/attempts"] == 1
    assert {"quality_summary.json", "rollout_verdicts.jsonl", run.failures.name} <= set(
        stored["artifacts"]
    )
    samples = json.loads(Path(stored["downloaded"]).read_text())
    column = samples["columns"].index("health_verdict")
    unhealthy = [row[:2] for row in samples["data"] if row[column] == "unhealthy"]
    assert unhealthy == [[2, 1]]
    (again,) = read_runs(
        mlflow_python,
        mlflow_server.url,
        "aime24-health",
        (run.failures.name, tmp_path / "failures"),
    )
    uploaded = Path(again["downloaded"]).read_text()
    assert json.loads(uploaded)["_ng_failure_http_status"] == 401
    assert canaries.found_in(uploaded) == []
    assert canaries.found_in_tree(mlflow_server.root) == []


def test_gyms_health_verdicts_reach_wandb(
    cli, gym_oracle: GymOracle, wandb_python, canaries, tmp_path
) -> None:
    run = _unhealthy_example(gym_oracle, tmp_path / "run", canaries.all[0])
    done = cli("wandb", f"+rollouts_jsonl_fpath={run.rollouts}", "+wandb_mode=offline", "--json")
    assert done.exit_code == 0, done.output
    run_dir = Path(json.loads(done.stdout)["details"]["run_dir"])
    stored = read_offline_run(wandb_python, run_dir)
    assert stored["summary"]["health/verdict"] == "unhealthy"
    assert stored["summary"]["health/verdicts/unhealthy"] == 1
    assert stored["summary"]["health/failures/attempts"] == 1
    (samples,) = (table for name, table in stored["tables"].items() if name.startswith("Samples"))
    column = samples["columns"].index("health_verdict")
    assert [row[:2] for row in samples["data"] if row[column] == "unhealthy"] == [[2, 1]]
    assert canaries.found_in_tree(run_dir.parent) == []


def test_a_hand_written_job_record_is_one_gym_loads(gym_oracle: GymOracle, tmp_path) -> None:
    from tests.support.jobs import make_gym_job

    written = make_gym_job(tmp_path, tasks=1, repeats=1)
    loaded = gym_oracle.load_job_record(written.job.record_path)
    assert loaded["error"] is None
    assert loaded["record"] == json.loads(written.job.record_path.read_text())


def test_a_gym_job_goes_to_mlflow_and_wandb_in_one_plan_each_benchmark_once(
    cli, gym_oracle: GymOracle, mlflow_server, mlflow_python, wandb_python, canaries, tmp_path
) -> None:
    from tests.support.jobs import NOT_STARTED, make_gym_job

    made = make_gym_job(
        tmp_path / "evals",
        benchmarks={"aime24": True, "gpqa": True, "hle": False},
        canaries=canaries,
        gym=gym_oracle,  # Gym's own Slurm executor writes the record, config and directories
        tasks=2,
        repeats=2,
    )
    job = made.job
    assert (job.directory / "aime24" / "job.sh").is_file()  # Gym staged it
    shown = cli("inspect", job.directory)
    assert f"  hle: never started: {NOT_STARTED}" in shown.stdout
    plan = tmp_path / "plan.yaml"
    plan.write_text(
        f"job: {{gym_job: {job.directory}}}\n"
        "exports:\n"
        f"  mlflow: {{mlflow_tracking_uri: '{mlflow_server.url}'}}\n"
        f"  wandb: {{wandb_mode: offline}}\n"
    )
    ran = cli("plan", "run", plan, "--json")
    assert ran.exit_code == 0, ran.output
    outcomes = {(o["benchmark"], o["exporter"]): o["result"] for o in json.loads(ran.stdout)}
    assert {key: result["status"] for key, result in outcomes.items()} == {
        ("aime24", "mlflow"): "succeeded",
        ("aime24", "wandb"): "succeeded",
        ("gpqa", "mlflow"): "succeeded",
        ("gpqa", "wandb"): "succeeded",
        ("hle", "mlflow"): "skipped",
        ("hle", "wandb"): "skipped",
    }
    gym_job_id = job.record.gym_job_id

    def runs_of_this_job(benchmark: str) -> list[dict[str, Any]]:
        # Both benchmarks land in this test's own experiment ($MLFLOW_EXPERIMENT_NAME, set by
        # the mlflow_server fixture); each run is tagged with its job and benchmark.
        every = read_runs(mlflow_python, mlflow_server.url, os.environ["MLFLOW_EXPERIMENT_NAME"])
        return [
            run
            for run in every
            if run["tags"].get("gym_job.gym_job_id") == gym_job_id
            and run["tags"].get("gym_job.benchmark") == benchmark
        ]

    for benchmark in ("aime24", "gpqa"):
        (stored,) = runs_of_this_job(benchmark)
        assert stored["run_name"] == f"{benchmark}-{gym_job_id}"
        assert stored["tags"]["gym_job.gym_job_id"] == gym_job_id
        assert stored["tags"]["gym_job.gym_version"] == "0.7.0"
        assert stored["tags"]["gym_job.benchmark"] == benchmark
        assert stored["params"]["services.policy.env.HF_TOKEN"] == "****"
        offline = read_offline_run(
            wandb_python, Path(outcomes[(benchmark, "wandb")]["details"]["run_dir"])
        )
        assert offline["run"]["project"] == benchmark
        assert offline["config"]["gym_job"]["gym_job_id"] == gym_job_id
    again = cli("plan", "run", plan, "--json")
    assert again.exit_code == 0, again.output
    assert {o["result"]["status"] for o in json.loads(again.stdout)} == {"skipped"}
    for benchmark in ("aime24", "gpqa"):
        assert len(runs_of_this_job(benchmark)) == 1
    seen = ran.output + again.output + shown.output
    assert canaries.found_in(seen) == []
    assert canaries.found_in_tree(mlflow_server.root) == []
    assert canaries.found_in_tree(Path(os.environ["WANDB_DIR"])) == []


def test_the_examples_aggregate_metrics_are_what_gyms_aggregation_gives(
    gym_oracle: GymOracle,
) -> None:
    """``examples/aime24``'s metrics are Gym's own aggregation of its rows (#59: its
    ``mean/reward`` was 0.5366 where the rollouts' is 0.34375): the math server's
    ``/aggregate_metrics`` over them, as rollout collection writes it."""
    written = json.loads((EXAMPLE / "aime24_rollouts_aggregate_metrics.json").read_text())
    (entry,) = written
    gyms = gym_oracle.aggregate_math(
        EXAMPLE / "aime24_rollouts.jsonl", entry["agent_ref"]["name"], "aime24_math_with_judge"
    )
    assert written == [gyms]


@pytest.mark.parametrize("example", ["aime24", "logic_puzzles"])
def test_the_examples_materialized_inputs_are_what_gyms_reward_profiling_reads(
    gym_oracle: GymOracle, example: str, tmp_path
) -> None:
    """Each example's ``<stem>_materialized_inputs.jsonl`` is in the shape rollout collection
    writes it, one line a rollout, so that Gym's ``gym eval profile`` joins it with the rows
    (it refused the old one line a task: "rows with no matching materialized input rows")."""
    run = tmp_path / example
    shutil.copytree(EXAMPLE.parent / example, run)
    rollouts = run / f"{example}_rollouts.jsonl"
    inputs = run / f"{example}_rollouts_materialized_inputs.jsonl"
    profiled = gym_oracle.command(
        "eval", "profile", "--inputs", str(inputs), "--rollouts", str(rollouts), cwd=tmp_path
    )
    assert profiled.returncode == 0, profiled.stdout + profiled.stderr
    assert (run / f"{example}_rollouts_agent_metrics.json").is_file()


def test_following_the_missing_metrics_advice_makes_a_run_gym_collected_exportable(
    gym_oracle: GymOracle, tmp_path
) -> None:
    """A run whose aggregate metrics were not collected (the factory's run, its rows and
    materialized inputs as Gym writes them, two agents on each task): the refusal names Gym's
    own command, which run as written gives agent-level metrics that evalexport then reads."""
    import evalexport
    from evalexport.testing.factory import make_run

    sample = make_run(tmp_path / "run", aggregate=False, sidecars=True)
    (problem,) = evalexport.inspect(sample.run.rollouts).problems
    assert problem.startswith("Aggregate metrics not found: ")
    command = problem[problem.index(": gym eval profile") + len(": gym ") :]
    profiled = gym_oracle.command(*shlex.split(command), cwd=tmp_path)
    assert profiled.returncode == 0, profiled.stdout + profiled.stderr
    after = evalexport.inspect(sample.run.rollouts)
    assert after.problems == []
    flat = flatten_metrics(
        RunArtifacts.from_rollouts_path(sample.run.rollouts).read_aggregate_metrics()
    )
    agents = {name.split("/")[0] for name in flat.values}
    assert agents == {"aime24_math_simple_agent", "aime24_math_tool_agent"}


def test_gyms_verdicts_of_rows_without_indices_or_sharing_them_reach_the_samples_table(
    gym_oracle: GymOracle, tmp_path
) -> None:
    """Gym's health checks number a row without indices by its place among the file's rows
    and give each of two rows that share a key a verdict line of its own; every row's verdict
    is in the samples table, as Gym gave it (they were left out as "not this run's" for 51 of
    Gym's 141 example runs)."""
    from tests.support.recorded_shapes import unindexed_row
    from tests.test_health_files import samples_table

    shutil.copytree(EXAMPLE, tmp_path / "run")
    run = RunArtifacts.from_rollouts_path(tmp_path / "run" / "aime24_rollouts.jsonl")
    rows = [unindexed_row(json.loads(line)) for line in run.rollouts.read_text().splitlines()]
    twin = {**rows[4], "_ng_task_index": 99, "_ng_rollout_index": 0}
    rows[4:5] = [twin]
    rows.append(twin)  # two rows of one key, as in Gym's graphwalks example: both flagged
    lines = [json.dumps(row) for row in rows]
    lines.insert(3, "")  # a blank line: a row's place is not its line's
    run.rollouts.write_text("\n".join(lines) + "\n")
    verdicts = gym_oracle.health(run.rollouts, run.run_dir)
    assert verdicts["unhealthy"] >= 2
    gyms: dict[int, str] = {}
    for line in run.rollout_verdicts.read_text().splitlines():
        said = json.loads(line)
        assert said["_ng_rollout_index"] == 0
        gyms[said["_ng_task_index"]] = said["verdict"]
    table, notes = samples_table(run)
    assert notes == []
    column = table["columns"].index("health_verdict")
    expected = [gyms[row.get("_ng_task_index", place)] for place, row in enumerate(rows)]
    assert [row[column] for row in table["data"]] == expected
    assert expected[4] == expected[-1] == "unhealthy"
