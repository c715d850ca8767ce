"""A NeMo Gym job (``gym eval submit``'s directory) as an input: inspected as a job, each
benchmark's run named by its benchmark with the job's identity and masked config, the whole
job exported by one plan, a benchmark that never started reported as such.

The jobs here are written by hand in Gym's shape (:mod:`tests.support.jobs`);
``tests/exporters/test_gym_runs.py`` makes them with Gym's own Slurm executor and exports
them to MLflow and W&B.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalexport.gym.jobs import GymJob
from evalexport.host.files import RunFileError
from evalexport.run import RunArtifacts
from tests.support.gym import GymOracle
from tests.support.jobs import NOT_STARTED, SampleJob, make_gym_job


@pytest.fixture
def job(tmp_path: Path, canaries) -> SampleJob:
    return make_gym_job(
        tmp_path / "evals",
        canaries=canaries,
        tasks=2,
        repeats=2,
        agents=("aime24_math_tool_agent",),
    )


def test_inspect_shows_the_job_and_where_each_benchmark_stands(cli, job: SampleJob) -> None:
    shown = cli("inspect", job.directory)
    assert shown.exit_code == 0, shown.output
    record = job.job.record
    assert f"NeMo Gym job:  {record.gym_job_id} ({job.directory})" in shown.stdout
    assert "gym:           0.7.0" in shown.stdout
    assert f"submitted:     {record.submitted_at} by evaluator to cluster-a (slurm)" in shown.stdout
    assert "  aime24: Slurm job 4242; rollouts with aggregate metrics" in shown.stdout
    assert f"  gpqa: never started: {NOT_STARTED}" in shown.stdout
    data = json.loads(cli("inspect", job.directory, "--json").stdout)
    assert data["job"]["gym_job_id"] == record.gym_job_id
    assert [b["started"] for b in data["benchmarks"]] == [True, False]
    assert job.canaries.found_in(shown.output + json.dumps(data)) == []


PLANTED = {
    "submitted_by": "hf_InspectCanary0123456789abcdefXYZ",
    "hostname": "https://evaluator:pw-CANARYhost123@login.cluster.example",
}
"""Secrets in the job record's identity fields: a token pasted where a name goes, a host
written with its password. Every export masks them (the egress gate); ``inspect`` too."""


def _plant(job: SampleJob, gym_job_id: str | None = None) -> None:
    record_path = job.directory / "gym-job.json"
    record = json.loads(record_path.read_text())
    record.update(PLANTED)
    if gym_job_id is not None:
        record["gym_job_id"] = gym_job_id
    record["benchmarks"][1]["error"] = (
        "sbatch: error: Batch job submission failed (Authorization: Bearer "
        "ghp_InspectCanaryErr0123456789abcdefghij)"
    )
    record_path.write_text(json.dumps(record))


def _found(text: str) -> list[str]:
    return [
        secret
        for secret in (
            "hf_InspectCanary0123456789abcdefXYZ",
            "pw-CANARYhost123",
            "ghp_InspectCanaryErr0123456789abcdefghij",
        )
        if secret in text
    ]


def test_inspect_of_a_job_masks_secrets_in_its_records_identity(cli, job: SampleJob) -> None:
    """``inspect JOB`` shows the record's identity as an export sends it (#65): a secret in
    ``submitted_by``, ``hostname`` or a benchmark's ``error`` is masked, the rest shown."""
    _plant(job)
    shown = cli("inspect", job.directory)
    assert shown.exit_code == 0, shown.output
    assert _found(shown.output) == []
    assert "by hf_**** to cluster-a (slurm, via https://evaluator:****@login.cluster.example)" in (
        shown.stdout
    )
    assert "  gpqa: never started: sbatch: error: Batch job submission failed" in shown.stdout
    as_json = cli("inspect", job.directory, "--json")
    assert _found(as_json.output) == []
    data = json.loads(as_json.stdout)
    assert data["job"]["submitted_by"] == "hf_****"
    assert data["job"]["cluster"] == "cluster-a"
    assert data["benchmarks"][0]["state"] == "Slurm job 4242; rollouts with aggregate metrics"


def test_inspect_of_a_jobs_run_masks_the_records_secrets_cli_and_python(
    cli, job: SampleJob
) -> None:
    """A benchmark's run is named by the job's id (its benchmark source, its run name): a
    secret the record holds there is masked by ``evalexport inspect RUN`` and by
    ``evalexport.inspect``, as the export masks the run's name."""
    import evalexport

    _plant(job, gym_job_id="gym-job-20261203 hf_InspectCanary0123456789abcdefXYZ")
    rollouts = job.job.rollouts("aime24")
    shown = cli("inspect", rollouts)
    assert shown.exit_code == 0, shown.output
    assert _found(shown.output) == []
    assert "benchmark:     aime24 (named by NeMo Gym job gym-job-20261203 hf_****)" in shown.stdout
    assert _found(cli("inspect", rollouts, "--json").output) == []
    report = evalexport.inspect(rollouts)
    assert report.rollout_count == 4
    assert _found(json.dumps(report.as_json_data())) == []
    assert report.run_name == "aime24-gym-job-20261203 hf_****"


def test_a_benchmark_whose_run_has_not_come_yet_says_where_to_look(cli, job: SampleJob) -> None:
    job.runs["aime24"].rollouts.unlink()
    shown = cli("inspect", job.directory).stdout
    assert (
        f"aime24: Slurm job 4242; no rollouts yet at {job.job.rollouts('aime24')} (still "
        f"running, or it failed: see {job.directory / 'aime24' / 'logs'})"
    ) in shown


def test_a_benchmarks_run_is_named_by_it_with_the_jobs_config(job: SampleJob) -> None:
    run = RunArtifacts.from_rollouts_path(job.job.rollouts("aime24"))
    gym_job_id = job.job.record.gym_job_id
    assert run.gym_job == job.job
    assert run.benchmark == "aime24"
    assert run.default_run_name == f"aime24-{gym_job_id}"
    assert run.saved_config == job.directory / "resolved-config.yaml"
    masked = run.read_exportable_config()
    assert masked.config["services"]["policy"]["env"]["HF_TOKEN"] == "****"
    assert job.canaries.found_in(json.dumps(masked.config)) == []


def test_the_dry_run_names_the_benchmark_and_tags_the_job(cli, job: SampleJob) -> None:
    rollouts = job.job.rollouts("aime24")
    done = cli("mlflow", f"+rollouts_jsonl_fpath={rollouts}", "--dry-run", "--json")
    assert done.exit_code == 0, done.output
    result = json.loads(done.stdout)
    gym_job_id = job.job.record.gym_job_id
    assert f"as run 'aime24-{gym_job_id}' of experiment 'aime24'" in result["message"]
    tags = result["plan"]["sections"]["tags"]
    assert {"gym_job.gym_job_id", "gym_job.gym_version", "gym_job.cluster"} <= set(tags)
    assert {"gym_job.submitted_at", "gym_job.benchmark"} <= set(tags)
    assert "Note: the job's resolved config" in result["message"]
    assert (
        "as NeMo Gym writes host values into it; they are masked in this export"
        in (result["message"])
    )
    assert "save-config" not in result["message"]  # Gym's file is masked, never rewritten
    wandb = cli("wandb", f"+rollouts_jsonl_fpath={rollouts}", "+wandb_mode=offline", "--dry-run")
    assert "gym_job" in wandb.stdout
    assert job.canaries.found_in(done.output + wandb.output) == []


@pytest.mark.downloads
def test_the_job_records_own_fields_pass_the_egress_gate(
    cli, job: SampleJob, mlflow_python, tmp_path: Path
) -> None:
    """The job's identity goes to ``gym_job.*`` tags through the egress gate: a record field
    holding a secret's shape (a host written with its credentials) is masked, the rest kept
    (#56)."""
    from tests.support.mlflow_server import read_runs

    record_path = job.directory / "gym-job.json"
    record = json.loads(record_path.read_text())
    record["hostname"] = "https://evaluator:pw-CANARYhost123@login.cluster.example"
    record_path.write_text(json.dumps(record))
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    rollouts = job.job.rollouts("aime24")
    done = cli("mlflow", f"+rollouts_jsonl_fpath={rollouts}", f"+mlflow_tracking_uri={uri}")
    assert done.exit_code == 0, done.output
    (stored,) = read_runs(mlflow_python, uri, "aime24")
    assert stored["tags"]["gym_job.hostname"] == "https://evaluator:****@login.cluster.example"
    assert stored["tags"]["gym_job.submitted_by"] == "evaluator"


def test_a_plan_of_the_job_exports_what_started_and_says_what_never_did(
    cli, job: SampleJob, tmp_path: Path
) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text(
        f"job: {{gym_job: {job.directory}}}\n"
        "exports:\n"
        f"  atif: {{agent_version: '1.0', output_dirpath: '{tmp_path}/atif/{{benchmark}}'}}\n"
    )
    checked = cli("plan", "check", plan)
    assert checked.exit_code == 0, checked.output
    assert "1 exports over 2 benchmarks; 1 never started (gpqa)" in checked.stdout
    ran = cli("plan", "run", plan, "--json")
    assert ran.exit_code == 0, ran.output
    outcomes = {(o["benchmark"], o["exporter"]): o["result"] for o in json.loads(ran.stdout)}
    assert outcomes[("aime24", "atif")]["status"] == "succeeded"
    never = outcomes[("gpqa", "atif")]
    assert never["status"] == "skipped"
    assert never["skip_reason"] == "benchmark never started"
    assert never["message"].endswith(
        f"never started gpqa: {NOT_STARTED}; there is no run to export"
    )
    assert (tmp_path / "atif" / "aime24" / "manifest.jsonl").is_file()
    assert not (tmp_path / "atif" / "gpqa").exists()
    again = cli("plan", "run", plan)
    assert again.exit_code == 0
    assert again.stdout.splitlines()[-1] == "1 skipped, 1 skipped (benchmark never started)"


@pytest.mark.parametrize(
    ("job_section", "said"),
    [
        ("{gym_job: JOB, benchmarks: [aime24]}", "job.benchmarks: given as well as job.gym_job"),
        ("{gym_job: JOB, runs_root: /x}", "job.runs_root: given as well as job.gym_job"),
        ("{gym_job: NOWHERE}", "job.gym_job: Job record not found: "),
        ("{runs_root: /x}", "job.benchmarks: name the job's benchmarks, or give job.gym_job"),
    ],
)
def test_a_plan_of_a_job_refuses_what_contradicts_it(
    cli, job: SampleJob, tmp_path: Path, job_section: str, said: str
) -> None:
    plan = tmp_path / "plan.yaml"
    section = job_section.replace("JOB", str(job.directory))
    plan.write_text(
        f"job: {section.replace('NOWHERE', str(tmp_path / 'none'))}\nexports: {{atif: {{}}}}\n"
    )
    checked = cli("plan", "check", plan)
    assert checked.exit_code == 2
    assert said in checked.stderr


def test_a_record_from_a_newer_gym_is_refused_by_name(cli, job: SampleJob) -> None:
    record = json.loads(job.job.record_path.read_text())
    record["schema_version"] = 2
    job.job.record_path.write_text(json.dumps(record))
    shown = cli("inspect", job.directory)
    assert shown.exit_code == 1
    assert "has schema_version 2, written by a newer nemo-gym; this evalexport reads up to 1" in (
        shown.stderr
    )
    # A run of that job is told why it has no config, not only that it has none.
    done = cli("mlflow", f"+rollouts_jsonl_fpath={job.job.rollouts('aime24')}", "--dry-run")
    assert done.exit_code == 1
    assert "and the run's NeMo Gym job gives none: The job record" in done.stdout


def test_an_older_record_missing_later_fields_is_read(job: SampleJob) -> None:
    record = json.loads(job.job.record_path.read_text())
    for later in ("gym_commit", "hostname", "executor_metadata"):
        del record[later]
    job.job.record_path.write_text(json.dumps(record))
    assert GymJob.load(job.directory).record.gym_commit is None


def test_the_plans_guide_job_plan_is_valid_for_a_gym_job(cli, job: SampleJob, tmp_path) -> None:
    import re

    guide = (Path(__file__).resolve().parents[1] / "docs" / "plans.md").read_text()
    section = guide.split("## A NeMo Gym job", 1)[1]
    block = re.search(r"<!-- tested: tests/test_gym_jobs.py -->\n```yaml\n(.*?)```", section, re.S)
    assert block is not None
    plan = tmp_path / "plan.yaml"
    written = re.sub(r"gym_job: \S+", f"gym_job: {job.directory}", block.group(1))
    plan.write_text(written.replace("\n  gpqa:", "\n  aime24:"))  # the fixture's started one
    checked = cli("plan", "check", plan)
    assert checked.exit_code == 0, checked.output
    assert "2 exports over 2 benchmarks" not in checked.stdout  # aime24's wandb is off
    assert "1 exports over 2 benchmarks; 1 never started (gpqa)" in checked.stdout


_ODD_FIELD_VALUES = (None, True, False, 0, 2, 1.5, "", "x", [], {}, {"a": "b"}, {"a": 1})
_REMOVED = object()
"""An edit that removes the field."""


def _started_as_we_read_it(job_dir: Path) -> list[str] | None:
    """The benchmarks evalexport finds started in the job, or ``None`` when it refuses it."""
    try:
        job = GymJob.load(job_dir)
    except RunFileError:
        return None
    return sorted(b.benchmark for b in job.record.benchmarks if b.job_id is not None)


def _started_as_gym_reads_it(loaded: dict) -> list[str] | None:
    """The same, from what Gym's ``SubmissionRecord.load`` made of the record."""
    if loaded["error"] is not None:
        return None
    return sorted(b["benchmark"] for b in loaded["record"]["benchmarks"] if b["job_id"] is not None)


@pytest.mark.gym
def test_a_job_record_broken_at_any_field_is_read_as_gyms_load_reads_it(
    gym_oracle: GymOracle, tmp_path
) -> None:
    """Each field of the record and of a benchmark's entry set to each odd value, or removed:
    evalexport reads the record, and finds the same benchmarks started, exactly when Gym's
    ``SubmissionRecord.load`` does. But a benchmark named ``""``, which names no directory
    of the job: the ingress gate refuses it (docs/reliability.md, "One way in")."""
    written = make_gym_job(tmp_path / "job", tasks=1, repeats=1).job
    record = json.loads(written.record_path.read_text())
    fields = [(False, key) for key in record] + [(True, key) for key in record["benchmarks"][0]]
    disagreements = []
    for of_a_benchmark, key in fields:
        for value in (*_ODD_FIELD_VALUES, _REMOVED):
            if of_a_benchmark and key == "benchmark" and value == "":
                continue
            edited = json.loads(json.dumps(record))
            target = edited["benchmarks"][0] if of_a_benchmark else edited
            if value is _REMOVED:
                del target[key]
            else:
                target[key] = value
            written.record_path.write_text(json.dumps(edited))
            gyms = _started_as_gym_reads_it(gym_oracle.load_job_record(written.record_path))
            ours = _started_as_we_read_it(written.directory)
            if ours != gyms:
                where = f"benchmarks[0].{key}" if of_a_benchmark else key
                shown = "removed" if value is _REMOVED else repr(value)
                disagreements.append(f"{where} {shown}: Gym read {gyms}, evalexport {ours}")
    assert disagreements == []
