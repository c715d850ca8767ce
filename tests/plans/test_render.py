"""Rendered job-script tails, run by bash after a driver step that succeeds and one that fails."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml

pytestmark = pytest.mark.usefixtures("plugin_site")


def _tails(cli, plan) -> dict[str, str]:
    run = cli("plan", "render", plan, "--command", f"{sys.executable} -m evalexport")
    assert run.exit_code == 0, run.output
    tails, current = {}, None
    for line in run.stdout.splitlines():
        if line.startswith("### ") and ":" in line and "needs" not in line:
            current = line[4:].split(":")[0]
            tails[current] = ""
        elif line.startswith("### "):
            current = None
        elif current:
            tails[current] += line + "\n"
    return tails


@pytest.mark.parametrize("driver_code", [0, 3])
def test_the_tail_runs_the_exports_logs_each_result_and_exits_with_the_drivers_code(
    cli, write_plan, job_runs, driver_code
) -> None:
    tails = _tails(cli, write_plan())
    script = f"(exit {driver_code})\n" + tails["aime24"]
    completed = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=300)
    assert completed.returncode == driver_code, completed.stderr
    lines = (job_runs / "evalexport-logs" / "aime24_exports.jsonl").read_text().splitlines()
    results = [json.loads(line) for line in lines]
    assert [(r["exporter"], r["status"]) for r in results] == [
        ("atif", "succeeded"),
        ("recording", "succeeded"),
    ]
    assert (job_runs / "aime24" / "atif" / "manifest.jsonl").is_file()


def test_an_export_failure_does_not_fail_the_job_by_default(cli, write_plan, job_runs) -> None:
    tails = _tails(cli, write_plan())
    completed = subprocess.run(
        ["bash", "-c", "true\n" + tails["gpqa"]], capture_output=True, text=True, timeout=300
    )
    assert completed.returncode == 0
    results = [
        json.loads(line)
        for line in (job_runs / "evalexport-logs" / "gpqa_exports.jsonl").read_text().splitlines()
    ]
    assert [(r["exporter"], r["status"]) for r in results] == [
        ("atif", "succeeded"),
        ("recording", "failed"),
    ]
    assert results[1]["message"].startswith("Saved run config not found:")


def test_the_plan_can_make_an_export_failure_fail_the_job(cli, write_plan) -> None:
    tails = _tails(cli, write_plan(fail_job=True))
    completed = subprocess.run(
        ["bash", "-c", "true\n" + tails["gpqa"]], capture_output=True, text=True, timeout=300
    )
    assert completed.returncode == 1
    failing_driver = subprocess.run(
        ["bash", "-c", "(exit 7)\n" + tails["gpqa"]], capture_output=True, text=True, timeout=300
    )
    assert failing_driver.returncode == 7


def test_render_lists_what_each_exporter_needs(cli, write_plan) -> None:
    outside = {"agent_version": "1.0", "output_dirpath": "{run_dir}-atif"}  # EvalRDL uploads it
    run = cli("plan", "render", write_plan(evalrdl={"label": "nightly"}, atif=outside))
    assert "# evalrdl: its own environment with evalrdl>=0.0.241, built on first use" in run.stdout
    assert "# atif: nothing beyond evalexport itself" in run.stdout


@pytest.mark.parametrize(
    ("flag", "value"), [("--workers", "two"), ("--workers", "0"), ("--timeout", "soon")]
)
def test_a_bad_number_for_a_plan_flag_exits_2_naming_it(cli, write_plan, flag, value) -> None:
    run = cli("plan", "run", write_plan(), flag, value)
    assert run.exit_code == 2
    assert flag in run.stderr
    assert "Traceback" not in run.output


def test_an_invalid_plan_exits_2_listing_every_problem(cli, tmp_path) -> None:
    plan = tmp_path / "bad.yaml"
    plan.write_text(
        "job: {benchmarks: [a]}\nexports: {mlflow: {colour: red}}\nbenchmarks: {b: {}}\n"
    )
    run = cli("plan", "check", plan)
    assert run.exit_code == 2
    assert f"{plan} has 3 problems:" in run.stderr


def test_the_tail_writes_its_log_outside_the_run_directory(cli, tmp_path, job_runs) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text(
        yaml.safe_dump(
            {
                "job": {"benchmarks": ["aime24"], "runs_root": str(job_runs)},
                "exports": {"recording": {"store_dir": str(tmp_path / "store")}},
            }
        )
    )
    before = sorted(p.name for p in (job_runs / "aime24").rglob("*"))
    tails = _tails(cli, plan)
    completed = subprocess.run(
        ["bash", "-c", "true\n" + tails["aime24"]], capture_output=True, text=True, timeout=300
    )
    assert completed.returncode == 0, completed.stderr
    # The recording exporter writes its marker (a tracking exporter); the tail writes nothing.
    after = sorted(p.name for p in (job_runs / "aime24").rglob("*"))
    assert set(after) - set(before) <= {"aime24_rollouts_recording_export_done"}
    assert (job_runs / "evalexport-logs" / "aime24_exports.jsonl").is_file()


def test_a_log_directory_inside_a_run_directory_is_refused(cli, tmp_path, job_runs) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text(
        yaml.safe_dump(
            {
                "job": {
                    "benchmarks": ["aime24"],
                    "runs_root": str(job_runs),
                    "export_log_dir": str(job_runs / "aime24" / "logs"),
                },
                "exports": {"recording": {"store_dir": str(tmp_path / "store")}},
            }
        )
    )
    run = cli("plan", "check", plan)
    assert run.exit_code == 2
    assert "job.export_log_dir:" in run.stderr
    assert "is inside the run directory of aime24" in run.stderr


def test_plan_check_says_which_runs_are_not_there_yet(cli, tmp_path, job_runs) -> None:
    """A plan checked before its job has run is valid, and says which runs it does not find
    yet (#59: it said "valid", and plan run then failed those rows)."""
    plan = tmp_path / "plan.yaml"
    plan.write_text(
        yaml.safe_dump(
            {
                "job": {"benchmarks": ["aime24", "later"], "runs_root": str(job_runs)},
                "exports": {"recording": {"store_dir": str(tmp_path / "store")}},
            }
        )
    )
    checked = cli("plan", "check", plan)
    assert checked.exit_code == 0, checked.output
    later = job_runs / "later" / "later_rollouts.jsonl"
    assert f"note: later: no run yet at {later}" in checked.stdout
    assert "note: aime24" not in checked.stdout
