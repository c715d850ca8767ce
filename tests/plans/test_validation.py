"""Plan validation (SPEC §6): every offending field named at once, each kind its own error."""

from __future__ import annotations

import datetime

import pytest

from evalexport.plans import PlanError, resolve_tasks, validate_plan


def _plan(**sections):
    plan = {
        "job": {"benchmarks": ["aime24", "gpqa"], "runs_root": "/results/job-42"},
        "exports": {
            "atif": {"agent_version": "1.0", "output_dirpath": "{run_dir}/atif-{benchmark}"},
            "mlflow": {"mlflow_experiment_name": "nightly"},
        },
    }
    plan.update(sections)
    return plan


def _problems(data) -> list[str]:
    with pytest.raises(PlanError) as error:
        validate_plan(data)
    return error.value.problems


def test_a_valid_plan_resolves_defaults_and_overrides_per_benchmark() -> None:
    plan = validate_plan(
        _plan(
            benchmarks={
                "gpqa": {"mlflow": {"mlflow_experiment_name": "gpqa-nightly"}, "atif": False}
            }
        )
    )
    tasks = {(t.benchmark, t.exporter): t for t in resolve_tasks(plan)}
    assert set(tasks) == {("aime24", "atif"), ("aime24", "mlflow"), ("gpqa", "mlflow")}
    assert tasks[("gpqa", "mlflow")].options == {"mlflow_experiment_name": "gpqa-nightly"}
    assert str(tasks[("aime24", "atif")].rollouts) == "/results/job-42/aime24/aime24_rollouts.jsonl"
    assert (
        tasks[("aime24", "atif")].options["output_dirpath"] == "/results/job-42/aime24/atif-aime24"
    )


def test_an_option_the_exporter_does_not_take_is_refused_by_path() -> None:
    (problem,) = _problems(_plan(benchmarks={"gpqa": {"mlflow": {"colour": "red"}}}))
    assert problem.startswith(
        "benchmarks.gpqa.mlflow.colour: mlflow takes no option 'colour' (valid: dry_run, requirement,"
    )


def test_an_override_for_a_benchmark_the_job_does_not_run_is_refused() -> None:
    (problem,) = _problems(_plan(benchmarks={"mmlu": {"atif": {"agent_version": "2"}}}))
    assert problem == "benchmarks.mmlu: the job does not run 'mmlu' (it runs aime24, gpqa)"


def test_a_value_with_no_wire_form_is_refused_naming_its_path() -> None:
    problems = _problems(
        _plan(
            exports={
                "mlflow": {"mlflow_run_name": lambda: "x"},
                "atif": {"agent_version": datetime.date(2026, 1, 1), "output_dirpath": "/o"},
            }
        )
    )
    assert (
        "exports.mlflow.mlflow_run_name: a callable has no wire form; use a string, number, boolean, list or mapping"
        in problems
    )
    assert (
        "exports.atif.agent_version: datetime.date(2026, 1, 1) is a date, which has no wire form; quote it as a string"
        in problems
    )


def test_an_arbitrary_object_is_refused_naming_its_path() -> None:
    class Endpoint:
        pass

    problems = _problems(_plan(exports={"mlflow": {"mlflow_tracking_uri": Endpoint()}}))
    assert (
        problems[0]
        == "exports.mlflow.mlflow_tracking_uri: a Endpoint object has no wire form; use a string, number, boolean, list or mapping"
    )


def test_both_run_locations_are_refused() -> None:
    (problem,) = _problems(_plan(benchmarks={"gpqa": {"rollouts": "/x/gpqa_rollouts.jsonl"}}))
    assert (
        problem == "benchmarks.gpqa.rollouts: given as well as job.runs_root; give one of the two"
    )


def test_neither_run_location_is_refused_per_benchmark() -> None:
    problems = _problems(
        {
            "job": {"benchmarks": ["aime24", "gpqa"]},
            "exports": {"atif": {"agent_version": "1", "output_dirpath": "{run_dir}/atif"}},
            "benchmarks": {"gpqa": {"rollouts": "/x/gpqa_rollouts.jsonl"}},
        }
    )
    assert problems == [
        "benchmarks.aime24: no run location; set job.runs_root or benchmarks.aime24.rollouts"
    ]


def test_several_problems_are_reported_in_one_error() -> None:
    problems = _problems(
        _plan(
            exports={
                "mlflow": {"colour": "red"},
                "nope": {},
                "atif": {"agent_version": "1", "output_dirpath": "/o"},
            },
            benchmarks={"mmlu": {}, "gpqa": {"rollouts": "/x"}},
        )
    )
    assert len(problems) == 4
    assert any(p.startswith("exports.nope: unknown exporter 'nope'") for p in problems)
    assert any(p.startswith("exports.mlflow.colour:") for p in problems)
    assert any(p.startswith("benchmarks.mmlu:") for p in problems)
    assert any(p.startswith("benchmarks.gpqa.rollouts:") for p in problems)


def test_an_invalid_value_is_refused_with_its_task() -> None:
    problems = _problems(_plan(exports={"mlflow": {"upload_rollouts": "sometimes"}}))
    assert problems[0].startswith("aime24/mlflow: invalid value for +upload_rollouts")


def test_unknown_sections_are_refused() -> None:
    problems = _problems({**_plan(), "slurm": {"partition": "debug"}})
    assert problems == ["slurm: not a key of a plan (a plan has job, exports, benchmarks)"]


def test_a_plan_shaped_wrong_is_told_in_the_plans_terms_not_pydantics() -> None:
    problems = _problems(
        {
            "runs_root": "/results",
            "benchmarks": ["aime24"],
            "exports": {"atif": False, "mlflow": 3},
        }
    )
    assert problems == [
        "job: required: the job's benchmarks and where their runs are (job.benchmarks with "
        "job.runs_root, or job.gym_job)",
        "exports.atif: false turns an exporter off for one benchmark "
        "(benchmarks.<benchmark>.atif: false); under exports, leave atif out to export nothing "
        "to it",
        "exports.mlflow: expected a mapping of mlflow's options ({} for its defaults)",
        "benchmarks: the job's benchmarks are listed in job.benchmarks; the top-level "
        "benchmarks: maps a benchmark to its overrides (benchmarks.<benchmark>.<exporter>)",
        "runs_root: belongs under job: (job.runs_root)",
    ]
    job = _problems(_plan(job={"benchmarks": ["aime24"], "runs_root": "/r", "runs": 2}))
    assert job == [
        "job.runs: not a key of job: (it has benchmarks, runs_root, gym_job, "
        "fail_job_on_export_failure, export_log_dir)"
    ]
    # What each message advises is a plan that validates.
    fixed = _plan(benchmarks={"gpqa": {"atif": False}})
    assert validate_plan(fixed).benchmarks["gpqa"]["atif"] is False


def test_options_survive_the_trip_through_the_command_line_exactly() -> None:
    from evalexport.spec.overrides import parse_overrides

    options = {
        "tags": ["a", "b c"],
        "meta": {"source": "ci", "n": "5"},
        "label": "true",
        "timeout": 600,
        "wait": False,
        "url": "https://x.example/y?z=1",
    }
    plan = validate_plan(
        {"job": {"benchmarks": ["aime24"], "runs_root": "/r"}, "exports": {"evalrdl": options}}
    )
    (task,) = resolve_tasks(plan)
    parsed = parse_overrides(task.overrides())
    assert parsed.pop("rollouts_jsonl_fpath") == "/r/aime24/aime24_rollouts.jsonl"
    assert parsed == options
