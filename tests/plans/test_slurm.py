"""Plans as Slurm job arrays, on a real single-node cluster this suite starts (SPEC §6)."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from tests.support.slurm import SlurmCluster, unavailable_reason

# One cluster a machine: under pytest-xdist every test of it runs in the same process.
pytestmark = [pytest.mark.usefixtures("plugin_site"), pytest.mark.xdist_group("slurm")]


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory: pytest.TempPathFactory):
    reason = unavailable_reason()
    if reason:
        pytest.fail(f"--with_slurm asks for a Slurm cluster, and none can start here: {reason}")
    cluster = SlurmCluster(tmp_path_factory.mktemp("slurm"))
    cluster.start()
    yield cluster
    cluster.stop()


@pytest.fixture
def slurm(slurm_cluster: SlurmCluster, monkeypatch: pytest.MonkeyPatch) -> SlurmCluster:
    for key, value in slurm_cluster.environment.items():
        monkeypatch.setenv(key, value)
    return slurm_cluster


def _summary(report: Path) -> list[tuple[str, str, str, int]]:
    return [
        (o["benchmark"], o["exporter"], o["result"]["status"], o["result"]["exit_code"])
        for o in json.loads(report.read_text())
    ]


@pytest.mark.slurm
def test_a_job_array_exports_the_runs_as_a_local_batch_does(
    cli, slurm, write_plan, job_runs, tmp_path
) -> None:
    local_runs = tmp_path / "local-copy"
    shutil.copytree(job_runs, local_runs)

    slurm_report = tmp_path / "slurm-report.json"
    run = cli(
        "plan",
        "run",
        write_plan(store=tmp_path / "slurm-store"),
        "--slurm",
        "--wait",
        "--workers",
        "2",
        "--work-dir",
        tmp_path / "array",
        "--report",
        slurm_report,
        "--timeout",
        "600",
    )
    assert "submitted Slurm job" in run.stderr, run.output + slurm.log_tail()

    plan = write_plan(store=tmp_path / "local-store")
    plan.write_text(plan.read_text().replace(str(job_runs), str(local_runs)))
    local_report = tmp_path / "local-report.json"
    cli("plan", "run", plan, "--report", local_report)

    assert _summary(slurm_report) == _summary(local_report)
    assert len(_summary(slurm_report)) == 6
    for benchmark in ("aime24", "gpqa", "math500"):
        assert (job_runs / benchmark / "atif" / "manifest.jsonl").read_text() == (
            local_runs / benchmark / "atif" / "manifest.jsonl"
        ).read_text()
    assert len(list((tmp_path / "array" / "results").glob("*.json"))) == 6
    assert len(list((tmp_path / "slurm-store").glob("*.json"))) == 2


@pytest.mark.slurm
def test_gather_reads_a_finished_array_again(cli, slurm, write_plan, tmp_path) -> None:
    cli(
        "plan",
        "run",
        write_plan(),
        "--slurm",
        "--wait",
        "--work-dir",
        tmp_path / "array",
        "--timeout",
        "600",
    )
    gathered = cli("plan", "gather", tmp_path / "array", "--json")
    assert len(json.loads(gathered.stdout)) == 6


def test_without_slurm_on_path_the_error_says_so(cli, write_plan, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    run = cli("plan", "run", write_plan(), "--slurm", "--work-dir", tmp_path / "array")
    assert run.exit_code == 1
    assert "sbatch is not on PATH" in run.stderr
    assert os.environ["PATH"] == str(tmp_path / "empty-bin")


@pytest.mark.slurm
@pytest.mark.downloads
def test_a_job_array_exports_to_atif_and_a_real_mlflow_server(
    cli, slurm, mlflow_server, mlflow_python, job_runs, tmp_path
) -> None:
    from tests.support.mlflow_server import read_runs

    local_runs = tmp_path / "local-copy"
    shutil.copytree(job_runs, local_runs)

    def plan_for(root: Path, experiment: str) -> Path:
        path = tmp_path / f"{experiment}.yaml"
        path.write_text(
            json.dumps(
                {
                    "job": {"benchmarks": ["aime24", "gpqa", "math500"], "runs_root": str(root)},
                    "exports": {
                        "atif": {"agent_version": "1.0", "output_dirpath": "{run_dir}/atif"},
                        "mlflow": {
                            "mlflow_tracking_uri": mlflow_server.url,
                            "mlflow_experiment_name": experiment,
                        },
                    },
                }
            )
        )
        return path

    slurm_report, local_report = tmp_path / "slurm.json", tmp_path / "local.json"
    cli(
        "plan",
        "run",
        plan_for(job_runs, "via-slurm"),
        "--slurm",
        "--wait",
        "--work-dir",
        tmp_path / "array",
        "--report",
        slurm_report,
        "--timeout",
        "900",
    )
    cli("plan", "run", plan_for(local_runs, "via-local"), "--report", local_report)
    assert _summary(slurm_report) == _summary(local_report)
    assert ("aime24", "mlflow", "succeeded", 0) in _summary(slurm_report)
    slurm_runs = read_runs(mlflow_python, mlflow_server.url, "via-slurm")
    local_runs_read = read_runs(mlflow_python, mlflow_server.url, "via-local")
    assert sorted(r["run_name"] for r in slurm_runs) == ["aime24-aime24", "math500-math500"]
    assert sorted(sorted(r["metrics"]) for r in slurm_runs) == sorted(
        sorted(r["metrics"]) for r in local_runs_read
    )


@pytest.mark.slurm
def test_without_a_work_dir_the_array_works_under_the_cache_dir(
    cli, slurm, write_plan, tmp_path, monkeypatch
) -> None:
    monkeypatch.chdir(tmp_path)
    run = cli("plan", "run", write_plan(), "--slurm", "--wait", "--timeout", "600", "--json")
    assert run.exit_code == 1, run.output  # the job's gpqa run has no saved config
    assert [t["result"]["status"] for t in json.loads(run.stdout)].count("succeeded") == 5
    work_dir = Path(run.stderr.split("work directory ", 1)[1].split()[0])
    assert work_dir.parent == Path(os.environ["EVALEXPORT_CACHE_DIR"]) / "slurm"
    assert (work_dir / "tasks.json").is_file()
    assert not (tmp_path / "evalexport-slurm").exists()


@pytest.mark.slurm
def test_gather_of_a_queued_array_says_pending_with_the_job_id_and_exit_code_5(
    cli, slurm, write_plan, tmp_path
) -> None:
    import subprocess

    from evalexport.plans.model import resolve_tasks
    from evalexport.plans.slurm import submit
    from evalexport.plans.validation import load_plan

    tasks = resolve_tasks(load_plan(write_plan()))
    work_dir = tmp_path / "array"
    job_id = submit(tasks, work_dir, 1, ["--hold"])  # queued, and kept there
    try:
        gathered = cli("plan", "gather", work_dir, "--json")
        outcomes = json.loads(gathered.stdout)
        assert gathered.exit_code == 5, gathered.output
        assert {o["result"]["status"] for o in outcomes} == {"pending"}
        assert all(o["result"]["exit_code"] == 5 for o in outcomes)
        assert f"of Slurm job {job_id} is PENDING (not run yet)" in outcomes[0]["result"]["message"]
        table = cli("plan", "gather", work_dir)
        assert "pending" in table.stdout
    finally:
        subprocess.run(["scancel", job_id], check=False)
    ended = cli("plan", "gather", work_dir, "--json")  # cancelled: no longer queued
    deadline = time.monotonic() + 30
    while ended.exit_code == 5 and time.monotonic() < deadline:
        ended = cli("plan", "gather", work_dir, "--json")
    assert ended.exit_code == 1
    assert {o["result"]["status"] for o in json.loads(ended.stdout)} == {"failed"}


def test_the_array_script_is_previewed_without_sbatch_and_nothing_is_written(
    cli, write_plan, tmp_path, monkeypatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    work_dir = tmp_path / "array"
    shown = cli(
        "plan",
        "run",
        write_plan(),
        "--slurm",
        "--dry-run",
        "--work-dir",
        work_dir,
        "--partition",
        "gpu batch",
        "--account",
        "evals",
        "--time",
        "01:30:00",
    )
    assert shown.exit_code == 0, shown.output
    script = shown.stdout.splitlines()
    assert script[0] == "#!/bin/bash"
    assert "#SBATCH --array=0-5%2" in script
    assert "#SBATCH --partition='gpu batch'" in script
    assert "#SBATCH --account=evals" in script
    assert "#SBATCH --time=01:30:00" in script
    assert script[-1].endswith(f"--result-dir {work_dir / 'results'}")
    assert "nothing submitted" in shown.stderr
    assert not work_dir.exists()


@pytest.mark.parametrize(
    ("flag", "value"),
    [("--partition", "batch\ntouch PWNED #"), ("--account", "evals\r"), ("--time", "1\x00")],
)
def test_a_value_that_would_write_a_line_of_its_own_into_the_script_is_refused(
    cli, write_plan, tmp_path, monkeypatch, flag: str, value: str
) -> None:
    """``--partition $'batch\ntouch X #'`` would put ``touch X`` on a line of its own, which
    the shell runs: refused, naming the flag, before anything is written or submitted (#56)."""
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    work_dir = tmp_path / "array"
    for dry_run in (["--dry-run"], []):
        shown = cli(
            "plan", "run", write_plan(), "--slurm", "--work-dir", work_dir, flag, value, *dry_run
        )
        assert shown.exit_code == 2, shown.output
        assert f"{flag} {value!r} holds a line break or another control character" in shown.stderr
        assert "PWNED" not in shown.stdout
        assert not work_dir.exists()


def test_a_plans_dry_run_gives_each_exports_verdict_and_exports_nothing(
    cli, write_plan, tmp_path
) -> None:
    store = tmp_path / "store"
    plan = write_plan(store=store)

    def verdicts(*flags: str) -> dict[tuple[str, str], tuple[str, bool]]:
        ran = cli("plan", "run", plan, "--json", *flags)
        return {
            (o["benchmark"], o["exporter"]): (
                o["result"]["status"],
                o["result"]["message"].startswith("dry run: "),
            )
            for o in json.loads(ran.stdout)
        }

    dry = verdicts("--dry-run")
    assert len(dry) == 6
    assert not store.exists()
    assert not list(tmp_path.glob("job/*/atif"))
    exported = verdicts()
    # The dry run's verdict is each export's: the same status, said as a dry run.
    assert {key: status for key, (status, _) in dry.items()} == {
        key: status for key, (status, _) in exported.items()
    }
    assert all(said for status, said in dry.values() if status == "succeeded")
    assert not any(said for _, said in exported.values())
    refused = cli("plan", "check", write_plan(), "--dry-run")
    assert refused.exit_code == 2
    assert "--dry-run is plan run's" in refused.stderr


@pytest.mark.slurm
def test_sbatch_options_reach_the_submitted_job(cli, slurm, write_plan, tmp_path) -> None:
    import subprocess

    ran = cli(
        "plan",
        "run",
        write_plan(),
        "--slurm",
        "--work-dir",
        tmp_path / "array",
        "--partition",
        "debug",
        "--time",
        "00:20:00",
    )
    assert ran.exit_code == 0, ran.output + slurm.log_tail()
    job_id = (tmp_path / "array" / "job_id").read_text().strip()
    shown = subprocess.run(
        ["scontrol", "show", "job", job_id], capture_output=True, text=True, check=False
    ).stdout
    assert "TimeLimit=00:20:00" in shown, shown
    assert "Partition=debug" in shown, shown
    cli("plan", "gather", tmp_path / "array")


def _work_dir(tmp_path: Path, result: str | None) -> Path:
    """A work directory of one task whose result file holds ``result`` (none if ``None``)."""
    work = tmp_path / "work"
    (work / "results").mkdir(parents=True)
    task = {"benchmark": "a", "exporter": "atif", "rollouts": "/r/a_rollouts.jsonl", "options": {}}
    (work / "tasks.json").write_text(json.dumps([task]))
    if result is not None:
        (work / "results" / "0.json").write_text(result)
    return work


@pytest.mark.parametrize(
    ("result", "said"),
    [
        ('{"broken', "Malformed task result"),
        ('{"benchmark": "a"}', "a task's outcome has the keys"),
        ("[1]", "a task's outcome has the keys"),
    ],
)
def test_a_result_file_that_is_no_outcome_fails_its_task_by_name(cli, tmp_path, result, said):
    """Found by breaking a work directory: each was a traceback, and gathered nothing."""
    work = _work_dir(tmp_path, result)
    done = cli("plan", "gather", work, "--json")
    assert done.exit_code == 1, done.output
    (outcome,) = json.loads(done.stdout)
    assert said in outcome["result"]["message"]
    assert "run the plan again" in outcome["result"]["message"]
    assert "Traceback" not in done.output


def test_a_task_index_the_tasks_file_does_not_hold_is_a_usage_error(cli, tmp_path) -> None:
    work = _work_dir(tmp_path, None)
    done = cli("plan", "task", work / "tasks.json", "--index", "3", "--result-dir", work)
    assert done.exit_code == 2
    assert "holds 1 task: there is no task 3" in done.stderr
